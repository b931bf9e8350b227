// Autotuner: tunes a live pipeline's AUTOTUNE knobs (parallelism, buffer sizes) online,
// within the runtime's hard CPU and RAM budgets (tf.data's model-based autotuning, Murray
// et al. VLDB 2021, section 4.3; the model is in model.h, the search in optimizer.h).
//
// Made by Dataset::MakeIterator when Runtime::autotune() is on. Operators register their
// AUTOTUNE arguments in the runtime's TunableRegistry (runtime/tunable.h) as their
// iterators initialize; a background thread ("sluice-autotune", started when the first
// knob appears) then, every round:
//   1. reads the knobs and a snapshot of the stats plane (Iterator::Snapshot);
//   2. measures, over the window since the last round, the root's throughput, and the
//      consumer's own time per element (time outside GetNext) over windows of at least
//      kConsumerSpan;
//   3. sets each async op's execution mode ("inline" knobs, async_buffer.h): async when
//      the work it moves exceeds a handoff; for a Prefetch at the root, when
//      min(work moved, consumer's own time) clears runtime/async_payoff.h's line;
//   4. builds a Model and runs HillClimb within the budgets;
//   5. applies the plan when it lowers the modelled period by at least kMinImprovement,
//      when the current values break a budget, or when it frees resources at no modelled
//      cost (hysteresis, so noise does not make knobs flap); writes only changed knobs;
//   6. when the model has nothing to change, checks it by measurement (trials, below).
// Rounds run every kFastInterval (50 ms) at first and after any change (of a knob or of
// the set of knobs); after kStableRounds rounds without change the interval doubles, up
// to kSlowInterval (1 s).
//
// Trials. The model reads CPU from the stats plane, and for ops that cost a few us per
// element that reading (and the model's saturation bound built on it) can be wrong: on
// 2 cores the Fashion-MNIST pipeline runs 10-20% faster with its batch at parallelism 2
// than the model predicts. A map that waits (a remote read) shows little CPU at all. So
// once the knobs have been still for kStableRounds rounds, the tuner measures a step the
// model did not take: one knob one step up (parallelism +1, the op doing the most work
// first; then an op running inline, tried async, or a root prefetch running async over
// an async input, tried inline; then a buffer doubled), only within the budgets, never a
// parallelism step for an op running inline. It compares the root's rate in four
// slices, A B B A (A: the current value, B: the step),
// each at least kTrialSlice and kSliceElements root elements, measured kTrialSettle after
// a switch; the symmetric order cancels a drift of the machine's load. The step is kept
// when the B slices' rate beats the A slices' by kTrialGain: the knob's value becomes a
// floor the model's plans start from (floors are by prefix and name, so they survive
// Restore and repeat like the values; a mode kept async is never probed inline again,
// and a root prefetch kept inline stays inline while its input runs async).
// Otherwise the knob goes back and that knob's next
// trial waits twice as long (kTrialBackoff up to kMaxTrialBackoff). A model change or a
// mode change during a trial cancels it (the knob goes back, no back-off): the slices
// would not compare like with like. Floors are not lowered again by trials: a kept step
// costs CPU within the budget, never throughput.
//
// Budgets. No parallelism knob exceeds the CPU budget, and the modelled busy threads
// (Model::BusyThreads) stay within it: the model's saturation bound stops growth once the
// pool is full, and the pool (cpu_budget threads) enforces it at run time. Knobs of ops
// that are not busy all the time may sum to more than the budget (on 2 cores, a pipeline
// of three parallel ops does best with each allowed 2 calls). The modelled buffered bytes
// stay within the RAM budget (the MemoryBudget also enforces it at run time).
//
// Observability. Every change is logged at INFO (core/logging.h; SLUICE_LOG_LEVEL=info
// shows them), each round at DEBUG; Parameters() returns the current values.
//
// Restore and repeat. Iterators are re-created (Iterator::Restore swaps the tree, repeat
// re-makes its input each epoch): their knobs unregister when the old iterators die and
// register again, starting at the values last chosen for the same prefix and name.
//
// Carry-over. A training job makes a new iterator of the same Dataset every epoch
// (Python's `for batch in ds`); tuning each from scratch spent the start of every epoch
// re-learning the same values. So an iterator of a Dataset's cached graph (MakeIterator()
// without rewrite options of its own) hands what its tuning ended with to the next one.
// State() (at the end of input) and Stop() (the destructor) return the remembered knob
// values and the trial floors, with steps not yet judged at their value before (a trial
// under way at its A value, an op being probed inline as async). The Iterator stores them
// with the graph when its GetNext first returns the end of input and again when it is
// destroyed (so a loop that keeps the old iterator in a variable while it makes the next
// one still hands it on), and the next MakeIterator() preloads them (TunableRegistry::
// Preload, Start's `floors`), clamped to that iterator's budgets as any start is. The
// knobs then start where the last epoch ended, and the rounds go on from there. Output is
// unchanged: parallelism and modes never change what a deterministic pipeline yields.
//
// Thread-safety: thread-safe; the destructor stops and joins the tuning thread, and must
// run before the iterator tree and the runtime go.
#ifndef SLUICE_AUTOTUNE_AUTOTUNER_H_
#define SLUICE_AUTOTUNE_AUTOTUNER_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "autotune/optimizer.h"
#include "core/mutex.h"
#include "runtime/runtime.h"
#include "sluice/dataset.h"

namespace sluice {

class Autotuner {
 public:
  static constexpr std::chrono::milliseconds kFastInterval{50};
  static constexpr std::chrono::milliseconds kSlowInterval{1000};
  static constexpr int kStableRounds = 5;
  static constexpr double kMinImprovement = 0.03;
  // Trials (see above).
  static constexpr std::chrono::milliseconds kTrialSlice{150};
  static constexpr std::chrono::milliseconds kTrialSettle{30};
  static constexpr std::chrono::seconds kTrialMaxSpan{5};  // per slice
  static constexpr int64_t kSliceElements = 4;
  static constexpr double kTrialGain = 0.05;
  static constexpr std::chrono::seconds kTrialBackoff{2};
  static constexpr std::chrono::seconds kMaxTrialBackoff{64};

  // Starts tuning the knobs of `runtime`'s pipeline; `snapshot` reads the live stats tree
  // (it must stay callable until the Autotuner is destroyed). Null when the runtime does
  // not tune.
  // `carried`: the trial floors and back-offs to start from (Carry-over; its values are
  // preloaded into the registry by the caller).
  static std::unique_ptr<Autotuner> Start(Runtime* runtime,
                                          std::function<PipelineStats()> snapshot,
                                          const TunedState& carried = {});
  ~Autotuner();

  // What tuning ended with (Carry-over; runtime/tunable.h).
  using TunedState = sluice::TunedState;
  // The state now, between two rounds (waits for a round under way).
  TunedState State();
  // Stops tuning (joins the thread; no knob changes afterwards) and returns its state.
  TunedState Stop();
  Autotuner(const Autotuner&) = delete;
  Autotuner& operator=(const Autotuner&) = delete;

  // The knobs' current values, in registration order.
  std::vector<TunedParameter> Parameters() const;
  // Rounds run and knob changes made so far (tests, reports).
  int64_t rounds() const { return rounds_.load(std::memory_order_relaxed); }
  int64_t changes() const { return changes_.load(std::memory_order_relaxed); }

 private:
  Autotuner(Runtime* runtime, std::function<PipelineStats()> snapshot);
  void Loop();
  // One round; true when it changed a knob or a trial is under way (rounds stay fast).
  bool Round();
  // Step 5: applies `plan` when it pays (above); true when it changed a knob.
  bool Apply(const Model& model, const std::vector<KnobState>& knobs,
             const std::vector<int64_t>& current, const std::vector<int64_t>& plan,
             const OptimizerLimits& limits, double measured);
  // Step 6: the trial state machine, given this round's stats, the resource knobs and
  // their model, the ops running inline (candidates to try async), the root prefetches
  // running async over an async input (candidates to try inline), and whether the model
  // or a mode changed a knob this round. True while a trial is under way or when it
  // changed a knob.
  bool Trial(const PipelineStats& stats, const std::vector<KnobState>& knobs,
             const std::vector<KnobState>& inline_knobs,
             const std::vector<KnobState>& async_roots, const Model& model,
             const OptimizerLimits& limits, bool changed);
  // Starts slice `slice` of the trial (0..3: A B B A), setting the knob when it changes.
  void StartSlice(int slice, std::chrono::steady_clock::time_point now);
  // The knobs as HillClimb must see them: each floored by its trial floor, the knob under
  // trial pinned to its value in the current slice.
  std::vector<KnobState> Bounded(std::vector<KnobState> knobs) const;
  // `knobs` with each one the model moved in the last kMoveHold kept from going back the
  // other way (min or max at its value): the model's figures shift with every move (a
  // buffer dropped 2 -> 1 as "cheaper" was raised 1 -> 2 as "better" the next round),
  // and each move cancels the trial under way. Not while over a CPU or RAM budget.
  std::vector<KnobState> Held(std::vector<KnobState> knobs,
                              const std::vector<int64_t>& current, const Model& model,
                              const OptimizerLimits& limits) const;

  // The state of the fields below (StateBetweenRounds).
  TunedState StateBetweenRounds() const;

  Runtime* const runtime_;
  const std::function<PipelineStats()> snapshot_;
  // Held by the tuning thread through each Round, so State() reads the tuning thread's
  // fields (trial_, probes_, floors_) and the knobs between rounds.
  Mutex round_mu_;
  std::atomic<int64_t> rounds_{0};
  std::atomic<int64_t> changes_{0};

  Mutex mu_;
  CondVar cv_;
  bool stop_ GUARDED_BY(mu_) = false;
  bool started_ GUARDED_BY(mu_) = false;
  // Joined by ~Autotuner once the listener is gone.
  std::thread thread_ GUARDED_BY(mu_);

  // Tuning thread only: the window since the previous round's figures.
  StatsWindow window_;
  // The consumer's own time per root element (outside GetNext), over windows of at least
  // kConsumerSpan that start after the first round: the smaller of the last two windows'
  // figures, so that one window's stall (a consumer preempted or waiting on a lock on a
  // busy machine, a call in progress at an edge) does not flip a mode; -1 until two
  // windows are measured.
  static constexpr std::chrono::milliseconds kConsumerSpan{500};
  StatsWindow consumer_window_;
  bool consumer_window_primed_ = false;
  double consumer_last_window_ns_ = -1;
  double consumer_ns_ = -1;
  // Inline-mode probes per async op (by prefix): rounds to wait before the next probe, and
  // the wait after a failed one (doubling). Only the tuning thread touches them.
  static constexpr double kProbeFactor = 2;
  static constexpr int kMaxProbeBackoff = 64;
  struct Probe {
    int wait = 0;
    int backoff = 0;
    bool probing = false;
  };
  std::map<std::string, Probe> probes_;
  // Trials (tuning thread only). Keys are "prefix/name".
  struct TrialState {
    bool active = false;
    std::string key, prefix, name;  // key: prefix/name
    int64_t from = 0, to = 0;
    int slice = 0;     // 0..3: A B B A
    bool measuring = false;  // past the slice's settle time
    std::chrono::steady_clock::time_point settle_until;
    StatsWindow window;  // since the slice's measurement began
    double ns[2] = {0, 0};       // measured time of the A and the B slices
    int64_t elements[2] = {0, 0};  // root elements produced in them
    int64_t Value() const { return slice == 1 || slice == 2 ? to : from; }
  };
  using TrialHistory = TrialBackoff;  // next: no trial of this knob before
  // `h` after a trial that gained nothing (reverted, or cut short by the iterator's end):
  // the back-off doubles, from kTrialBackoff up to kMaxTrialBackoff.
  static TrialBackoff Failed(TrialBackoff h, std::chrono::steady_clock::time_point now);
  TrialState trial_;
  int quiet_rounds_ = 0;  // rounds since a knob last changed
  std::map<std::string, int64_t> floors_;
  std::map<std::string, TrialHistory> trial_history_;
  // The model's last move of each knob (Held).
  static constexpr std::chrono::seconds kMoveHold{3};
  struct Move {
    int direction = 0;  // +1 up, -1 down
    std::chrono::steady_clock::time_point at;
  };
  std::map<std::string, Move> moves_;
};

}  // namespace sluice

#endif  // SLUICE_AUTOTUNE_AUTOTUNER_H_
