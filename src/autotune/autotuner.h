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
//      cost (hysteresis, so noise does not make knobs flap); writes only changed knobs.
// Rounds run every kFastInterval (50 ms) at first and after any change (of a knob or of
// the set of knobs); after kStableRounds rounds without change the interval doubles, up
// to kSlowInterval (1 s).
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

  // Starts tuning the knobs of `runtime`'s pipeline; `snapshot` reads the live stats tree
  // (it must stay callable until the Autotuner is destroyed). Null when the runtime does
  // not tune.
  static std::unique_ptr<Autotuner> Start(Runtime* runtime,
                                          std::function<PipelineStats()> snapshot);
  ~Autotuner();
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
  // One round; true when it changed a knob.
  bool Round();

  Runtime* const runtime_;
  const std::function<PipelineStats()> snapshot_;
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
};

}  // namespace sluice

#endif  // SLUICE_AUTOTUNE_AUTOTUNER_H_
