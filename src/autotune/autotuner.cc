#include "autotune/autotuner.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <tuple>

#include "autotune/model.h"
#include "autotune/optimizer.h"
#include "runtime/async_payoff.h"
#include "core/logging.h"
#include "runtime/async_buffer.h"
#include "runtime/executor.h"

namespace sluice {
namespace {

// The key of a knob's trial floor and history: the names a Repeat's re-made iterators
// keep (ids change every epoch).
std::string KnobKey(const KnobState& k) { return k.prefix + "/" + k.name; }

std::string Us(double ns) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f us", ns / 1e3);
  return buf;
}

// The CPU ns per element of the work an async op would move off its consumer's thread,
// over the window: its own CPU (for Prefetch, which does no work of its own, its whole
// input subtree's); -1 when the window saw no element. One element is enough: a slow op
// (a batch of decoded images) produces a few per window, and it is the one that must
// leave inline mode quickly. CPU, not wall time: on a busy machine an inline op's wall
// time is mostly its thread waiting for a core, which moving the op would not save (a
// no-op map measured 5 us of "work" that way). So an op that only waits (a remote read)
// stays inline; see docs/autotune.md.
double MovableWorkNs(const StatsDelta& delta, size_t i, bool subtree) {
  const IteratorStats& n = delta.nodes[i];
  if (n.elements_produced < 1) return -1;
  double cpu = static_cast<double>(n.cpu_ns);
  if (subtree) {
    // Pre-order: the subtree is the run of nodes after i whose parent chain reaches i.
    std::vector<bool> under(delta.nodes.size(), false);
    under[i] = true;
    for (size_t j = i + 1; j < delta.nodes.size(); ++j) {
      const int p = delta.nodes[j].parent;
      if (p < 0 || !under[p]) break;
      under[j] = true;
      cpu += static_cast<double>(delta.nodes[j].cpu_ns);
    }
  }
  return cpu / static_cast<double>(n.elements_produced);
}

// Whether an op running async (`running_async`, by node index) is reached from node i
// through ops that run on the calling thread: i's input then works on other threads.
bool AsyncBelow(const StatsDelta& delta, size_t i, const std::vector<bool>& running_async) {
  std::vector<bool> sync(delta.nodes.size(), false);
  sync[i] = true;
  for (size_t j = i + 1; j < delta.nodes.size(); ++j) {
    const int p = delta.nodes[j].parent;
    if (p < static_cast<int>(i)) break;  // left i's subtree (pre-order)
    if (!sync[p]) continue;
    if (running_async[j]) return true;
    sync[j] = true;
  }
  return false;
}

}  // namespace

TrialBackoff Autotuner::Failed(TrialBackoff h, std::chrono::steady_clock::time_point now) {
  h.backoff = std::min<std::chrono::seconds>(
      h.backoff.count() == 0 ? kTrialBackoff : h.backoff * 2, kMaxTrialBackoff);
  h.next = now + h.backoff;
  return h;
}

std::unique_ptr<Autotuner> Autotuner::Start(Runtime* runtime,
                                            std::function<PipelineStats()> snapshot,
                                            const TunedState& carried) {
  if (runtime == nullptr || !runtime->autotune()) return nullptr;
  std::unique_ptr<Autotuner> t(new Autotuner(runtime, std::move(snapshot)));
  // Before the thread starts (it owns them then).
  t->floors_ = carried.floors;
  t->trial_history_ = carried.trials;
  Autotuner* self = t.get();
  auto start = [self] {
    MutexLock l(&self->mu_);
    if (self->started_ || self->stop_) return;
    self->started_ = true;
    self->thread_ = std::thread([self] { self->Loop(); });
  };
  // Knobs registered later (repeat, interleave's inner pipelines) start it then.
  runtime->tunables().SetListener(start);
  if (runtime->tunables().size() > 0) start();
  return t;
}

Autotuner::Autotuner(Runtime* runtime, std::function<PipelineStats()> snapshot)
    : runtime_(runtime), snapshot_(std::move(snapshot)) {}

Autotuner::~Autotuner() { Stop(); }

Autotuner::TunedState Autotuner::Stop() {
  runtime_->tunables().SetListener(nullptr);
  std::thread thread;
  {
    MutexLock l(&mu_);
    stop_ = true;
    thread = std::move(thread_);
  }
  cv_.SignalAll();
  if (thread.joinable()) thread.join();
  return StateBetweenRounds();  // the tuning thread is gone
}

Autotuner::TunedState Autotuner::State() {
  MutexLock round(&round_mu_);
  return StateBetweenRounds();
}

Autotuner::TunedState Autotuner::StateBetweenRounds() const {
  TunedState state;
  state.values = runtime_->tunables().Remembered();
  // Steps not yet judged count at their value before: a trial's knob at its A value, an
  // op probed inline (see Round) as async.
  state.trials = trial_history_;
  if (trial_.active) {
    state.values[{trial_.prefix, trial_.name}] = trial_.from;
    // A trial the iterator's end cut short counts as one that gained nothing: the next
    // iterator waits its back-off instead of starting it over (epochs shorter than a
    // trial restarted the same one every epoch, and never finished it).
    TrialBackoff& h = state.trials[trial_.key];
    h = Failed(h, std::chrono::steady_clock::now());
  }
  for (const auto& [prefix, probe] : probes_) {
    if (probe.probing) state.values[{prefix, "inline"}] = 0;
  }
  state.floors = floors_;
  return state;
}

std::vector<TunedParameter> Autotuner::Parameters() const {
  std::vector<TunedParameter> out;
  for (const KnobState& k : runtime_->tunables().List()) {
    out.push_back(TunedParameter{k.prefix, k.name, k.value, k.min, k.max, k.op});
  }
  return out;
}

void Autotuner::Loop() {
  SetCurrentThreadName("sluice-autotune");
  auto interval = kFastInterval;
  int stable = 0;
  uint64_t generation = runtime_->tunables().generation();
  MutexLock l(&mu_);
  while (!cv_.WaitFor(&mu_, interval, [this]() REQUIRES(mu_) { return stop_; })) {
    l.Unlock();
    bool changed;
    {
      MutexLock round(&round_mu_);
      changed = Round();
    }
    const uint64_t g = runtime_->tunables().generation();
    l.Lock();
    if (changed || g != generation) {
      interval = kFastInterval;
      stable = 0;
      generation = g;
    } else if (++stable >= kStableRounds) {
      interval = std::min<std::chrono::milliseconds>(interval * 2, kSlowInterval);
      stable = 0;
    }
  }
}

bool Autotuner::Round() {
  rounds_.fetch_add(1, std::memory_order_relaxed);
  TunableRegistry& registry = runtime_->tunables();
  std::vector<KnobState> knobs = registry.List();
  if (knobs.empty()) return false;
  const PipelineStats stats = snapshot_();
  if (stats.nodes.empty()) return false;
  // The window since the last round: throughput and the consumer's own time.
  const StatsDelta delta = window_.Delta(stats);
  if (delta.restarted) {  // the tree was swapped (Restore): start the window again
    window_.Reset(stats);
    return false;
  }
  const IteratorStats& root = delta.nodes[0];
  const int64_t dt = delta.duration_ns;
  const int64_t droot = root.elements_produced;
  // The consumer's own time over a longer window of its own (kConsumerSpan): the sampled
  // wall time of the root moves by up to a few elements' worth between two 50 ms rounds,
  // which would read as tens of us per element. Not over the first window either: it
  // starts when the iterator was made, and would charge the caller's setup to it.
  if (consumer_window_primed_) {
    const StatsDelta c = consumer_window_.Delta(stats);
    const int64_t n = c.nodes.empty() ? 0 : c.nodes[0].elements_produced;
    if (c.restarted) {
      consumer_window_.Reset(stats);
    } else if (n >= 2 && c.duration_ns >= kConsumerSpan.count() * 1000000) {
      const double window_ns =
          std::max<double>(0, static_cast<double>(c.duration_ns - c.nodes[0].wall_ns)) / n;
      if (consumer_last_window_ns_ >= 0) {
        consumer_ns_ = std::min(consumer_last_window_ns_, window_ns);
      }
      consumer_last_window_ns_ = window_ns;
      consumer_window_.Reset(stats);
    }
  } else if (droot >= 1) {
    consumer_window_.Reset(stats);
    consumer_window_primed_ = true;
  }
  const double measured = dt > 0 ? droot * 1e9 / dt : 0;
  if (droot >= 2 || dt > 1000000000) window_.Reset(stats);

  // Execution modes first (async_buffer.h, "Inline mode"): inline while the work an op
  // would hand off costs less than the handoff, async once it costs more. For a Prefetch
  // at the root the gain is min(work, consumer's own time) (runtime/async_payoff.h, the
  // rule inject_prefetch applies too): an idle consumer keeps it inline; until the
  // consumer has been measured its mode waits. Measured async, an op's CPU includes the
  // handoff machinery itself, so an async op that looks cheap (below kProbeFactor
  // handoffs) is probed inline for a round; a probe that measures more than a handoff
  // goes back async and the next probe of that op waits twice as long. The model sees
  // only resources.
  // An op under a mode trial counts at its A value: its B slices are a measurement,
  // and a root prefetch that went async because a map below was tried async stayed so.
  std::vector<bool> running_async(delta.nodes.size(), false);
  for (size_t i = 0; i < delta.nodes.size(); ++i) {
    running_async[i] = delta.nodes[i].async;
    for (const KnobState& k : knobs) {
      if (k.kind != KnobKind::kMode || k.name != "inline" ||
          k.prefix != delta.nodes[i].prefix) {
        continue;
      }
      const bool tried = trial_.active && trial_.prefix == k.prefix && trial_.name == k.name;
      if ((tried ? trial_.from : k.value) != 0) running_async[i] = false;
    }
  }
  bool mode_changed = false;
  std::vector<KnobState> resources, inline_knobs, async_roots;
  for (const KnobState& k : knobs) {
    if (k.kind != KnobKind::kMode) {
      resources.push_back(k);
      continue;
    }
    if (k.name == "inline" && k.value != 0) inline_knobs.push_back(k);
    if (k.name != "inline") continue;
    // A trial of this mode owns it until it ends; one that kept it async keeps it so,
    // and one that kept a root prefetch inline over an async input (below) keeps that.
    if (trial_.active && k.prefix == trial_.prefix && k.name == trial_.name) continue;
    const auto floor = floors_.find(KnobKey(k));
    const bool kept_async = floor != floors_.end() && floor->second == 0;
    const bool kept_inline = floor != floors_.end() && floor->second != 0;
    for (size_t i = 0; i < delta.nodes.size(); ++i) {
      if (delta.nodes[i].prefix != k.prefix) continue;
      const bool prefetch = k.op == "Prefetch";
      const double work = MovableWorkNs(delta, i, prefetch);
      if (work < 0) break;
      // Over an input already running async (its workers on the pool), a root prefetch
      // is a second buffer between those workers and the consumer's scheduling: the
      // work rule alone decides it (see async_payoff.h), and a trial (Trial, "modes")
      // measures whether inline is faster after all: the rule counts the pool's CPU as
      // work, and a Python loop over bucketed text ran at 0.5-0.6x with that prefetch
      // async, its consumer asleep and woken for every batch.
      const bool over_async = prefetch && i == 0 && AsyncBelow(delta, i, running_async);
      const bool root_prefetch = prefetch && i == 0 && !over_async;
      if (over_async && k.value == 0 && !kept_async) async_roots.push_back(k);
      if (over_async && kept_inline) break;
      if (root_prefetch && consumer_ns_ < 0) break;  // not measured yet
      const double gain = root_prefetch ? RootAsyncGainNs(work, consumer_ns_) : work;
      SLUICE_LOG(kDebug) << "autotune: " << k.prefix << " inline " << k.value << ", work "
                         << Us(work) << " per element"
                         << (root_prefetch ? ", consumer " + Us(consumer_ns_) : "");
      const double handoff = static_cast<double>(AsyncBufferIterator::kHandoffNs);
      Probe& probe = probes_[k.prefix];
      int64_t want = k.value;
      if (k.value != 0 && (root_prefetch ? RootAsyncPaysOff(work, consumer_ns_, handoff)
                                         : work > handoff)) {
        want = 0;
        if (probe.probing) probe.backoff = std::min(probe.backoff * 2 + 1, kMaxProbeBackoff);
        probe.wait = probe.backoff;
      } else if (k.value == 0 && !kept_async && gain < kProbeFactor * handoff &&
                 --probe.wait < 0) {
        want = 1;
      }
      probe.probing = want == 1 && k.value == 0;
      if (k.value == 1 && want == 1) probe.backoff = 0;  // settled inline
      if (want != k.value && registry.Set(k.id, want)) {
        mode_changed = true;
        changes_.fetch_add(1, std::memory_order_relaxed);
        SLUICE_LOG(kInfo) << "autotune: " << k.prefix << " (" << k.op << ") inline "
                          << k.value << " -> " << want << " (work " << Us(work)
                          << " per element"
                          << (root_prefetch ? ", consumer " + Us(consumer_ns_) : "")
                          << ", handoff " << Us(handoff) << ")";
      }
      break;
    }
  }
  knobs = std::move(resources);
  if (knobs.empty()) return mode_changed;
  // An op running inline does its work on its consumer's thread: its parallelism and
  // buffer stay where they are until it goes async. Moving them changed nothing but the
  // model's figures (from a snapshot taken before the op switched, the model still
  // counts it async): Fashion-MNIST's inline label cast went 1 -> 2 -> 1 every half
  // second, each move cancelling the trial under way.
  for (KnobState& k : knobs) {
    for (const KnobState& m : inline_knobs) {
      if (m.prefix == k.prefix) k.min = k.max = k.value;
    }
  }
  const Model model = Model::Build(stats, knobs, std::max(0.0, consumer_ns_));
  if (!model.ready()) return mode_changed;
  OptimizerLimits limits;
  limits.cpu_budget = runtime_->cpu_budget();
  limits.ram_budget = runtime_->memory().limit();
  std::vector<int64_t> current(knobs.size());
  for (size_t k = 0; k < knobs.size(); ++k) current[k] = knobs[k].value;
  const std::vector<int64_t> plan =
      HillClimb(model, Held(Bounded(knobs), current, model, limits), current, limits);
  bool changed = mode_changed;
  if (plan != current) changed |= Apply(model, knobs, current, plan, limits, measured);
  return Trial(stats, knobs, inline_knobs, async_roots, model, limits, changed) || changed;
}

bool Autotuner::Apply(const Model& model, const std::vector<KnobState>& knobs,
                      const std::vector<int64_t>& current, const std::vector<int64_t>& plan,
                      const OptimizerLimits& limits, double measured) {
  const double now_period = model.Period(current);
  const double plan_period = model.Period(plan);
  bool over_cpu = false;  // a knob above the budget (the budget shrank: affinity, cgroup)
  for (size_t k = 0; k < knobs.size(); ++k) {
    over_cpu |= knobs[k].kind == KnobKind::kParallelism && current[k] > limits.cpu_budget &&
                plan[k] < current[k];
  }
  const bool over_ram = limits.ram_budget > 0 &&
                        model.BufferedBytes(current) > static_cast<double>(limits.ram_budget);
  const bool better = plan_period < now_period * (1 - kMinImprovement);
  const bool cheaper = plan_period <= now_period * 1.01 &&
                       TotalParallelism(knobs, plan) <= TotalParallelism(knobs, current) &&
                       model.BufferedBytes(plan) <= model.BufferedBytes(current);
  // A floor raised by a trial above the current value (just kept) is applied as a plan.
  bool floored = false;
  for (size_t k = 0; k < knobs.size(); ++k) {
    auto f = floors_.find(KnobKey(knobs[k]));
    floored |= f != floors_.end() && current[k] < f->second && plan[k] > current[k];
  }
  SLUICE_LOG(kDebug) << "autotune: round " << rounds() << ": measured " << measured
                     << " elements/s, consumer " << Us(std::max(0.0, consumer_ns_))
                     << "/element, model " << Us(now_period) << " -> " << Us(plan_period)
                     << " per element";
  if (!(better || cheaper || over_cpu || over_ram || floored)) return false;
  bool changed = false;
  for (size_t k = 0; k < knobs.size(); ++k) {
    if (plan[k] == current[k]) continue;
    // By name: under a Repeat the knob's iterator (and id) may be re-made meanwhile.
    if (!runtime_->tunables().Set(knobs[k].prefix, knobs[k].name, plan[k])) continue;
    moves_[KnobKey(knobs[k])] = {plan[k] > current[k] ? 1 : -1,
                                 std::chrono::steady_clock::now()};
    changed = true;
    changes_.fetch_add(1, std::memory_order_relaxed);
    SLUICE_LOG(kInfo) << "autotune: " << knobs[k].prefix << " (" << knobs[k].op << ") "
                      << knobs[k].name << " "
                      << current[k] << " -> " << plan[k] << " (model " << Us(now_period)
                      << " -> " << Us(plan_period) << " per element; measured " << measured
                      << " elements/s; parallelism " << TotalParallelism(knobs, plan) << ", busy threads "
                      << model.BusyThreads(plan) << "/" << limits.cpu_budget << ", buffers "
                      << model.BufferedBytes(plan) / (1 << 20) << " MiB)";
  }
  return changed;
}

std::vector<KnobState> Autotuner::Bounded(std::vector<KnobState> knobs) const {
  for (KnobState& k : knobs) {
    const std::string key = KnobKey(k);
    auto f = floors_.find(key);
    if (f != floors_.end()) k.min = std::max(k.min, std::min(f->second, k.max));
    if (trial_.active && key == trial_.key) k.min = k.max = trial_.Value();
  }
  return knobs;
}

std::vector<KnobState> Autotuner::Held(std::vector<KnobState> knobs,
                                       const std::vector<int64_t>& current,
                                       const Model& model,
                                       const OptimizerLimits& limits) const {
  // Over a budget (it shrank, or a buffer grew past it) every knob may go down at once.
  for (const KnobState& k : knobs) {
    if (k.kind == KnobKind::kParallelism && k.value > limits.cpu_budget) return knobs;
  }
  if (limits.ram_budget > 0 &&
      model.BufferedBytes(current) > static_cast<double>(limits.ram_budget)) {
    return knobs;
  }
  const auto now = std::chrono::steady_clock::now();
  for (KnobState& k : knobs) {
    auto m = moves_.find(KnobKey(k));
    if (m == moves_.end() || now - m->second.at >= kMoveHold) continue;
    if (m->second.direction > 0) {
      k.min = std::max(k.min, std::min(k.value, k.max));
    } else {
      k.max = std::min(k.max, std::max(k.value, k.min));
    }
  }
  return knobs;
}

void Autotuner::StartSlice(int slice, std::chrono::steady_clock::time_point now) {
  const int64_t before = trial_.Value();
  trial_.slice = slice;
  trial_.measuring = false;
  trial_.settle_until = now;
  if (trial_.Value() != before) {
    // By name: under a Repeat the knob's iterator (and id) is re-made every epoch and
    // starts at the value set last.
    runtime_->tunables().Set(trial_.prefix, trial_.name, trial_.Value());
    changes_.fetch_add(1, std::memory_order_relaxed);
    trial_.settle_until = now + kTrialSettle;
  }
}

bool Autotuner::Trial(const PipelineStats& stats, const std::vector<KnobState>& knobs,
                      const std::vector<KnobState>& inline_knobs,
                      const std::vector<KnobState>& async_roots, const Model& model,
                      const OptimizerLimits& limits, bool changed) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point now = Clock::now();
  auto end_trial = [&] {
    if (trial_.Value() != trial_.from) {
      runtime_->tunables().Set(trial_.prefix, trial_.name, trial_.from);
      changes_.fetch_add(1, std::memory_order_relaxed);
    }
    trial_.active = false;
  };
  if (changed) {  // the slices would not compare like with like
    if (trial_.active) {
      SLUICE_LOG(kDebug) << "autotune: trial of " << trial_.key << " cancelled by a change";
      end_trial();
    }
    quiet_rounds_ = 0;
    return false;
  }
  if (trial_.active) {
    if (!trial_.measuring) {
      if (now < trial_.settle_until) return true;
      trial_.window.Reset(stats);
      trial_.measuring = true;
      return true;
    }
    const StatsDelta w = trial_.window.Delta(stats);
    if (w.restarted) {  // the tree was swapped (Restore)
      end_trial();
      return false;
    }
    const int64_t n = w.nodes.empty() ? 0 : w.nodes[0].elements_produced;
    const int64_t ns = w.duration_ns;
    const bool too_slow = ns > std::chrono::nanoseconds(kTrialMaxSpan).count();
    if (!too_slow && (n < kSliceElements ||
                      ns < std::chrono::nanoseconds(kTrialSlice).count())) {
      return true;
    }
    TrialHistory& h = trial_history_[trial_.key];
    if (too_slow) {  // too few elements to measure a rate: not worth trying now
      end_trial();
      h.backoff = kMaxTrialBackoff;
      h.next = now + h.backoff;
      return true;
    }
    const int ab = trial_.slice == 1 || trial_.slice == 2 ? 1 : 0;
    trial_.ns[ab] += static_cast<double>(ns);
    trial_.elements[ab] += n;
    if (trial_.slice < 3) {
      StartSlice(trial_.slice + 1, now);
      return true;
    }
    const double a = static_cast<double>(trial_.elements[0]) * 1e9 / trial_.ns[0];
    const double b = static_cast<double>(trial_.elements[1]) * 1e9 / trial_.ns[1];
    const bool keep = b >= a * (1 + kTrialGain);
    SLUICE_LOG(kInfo) << "autotune: trial " << trial_.key << " " << trial_.from << " -> "
                      << trial_.to << ": " << a << " -> " << b << " elements/s, "
                      << (keep ? "kept" : "reverted");
    if (keep) {  // the last slice (A) ran at the old value
      floors_[trial_.key] = trial_.to;
      runtime_->tunables().Set(trial_.prefix, trial_.name, trial_.to);
      trial_.from = trial_.to;  // end_trial leaves it there
      h = TrialHistory{now, std::chrono::seconds(0)};
    } else {
      h = Failed(h, now);
    }
    end_trial();
    quiet_rounds_ = kStableRounds;  // the next trial may start at the next round
    return true;
  }
  // Idle: start a trial once the knobs have been still for a while.
  if (++quiet_rounds_ < kStableRounds) return false;
  std::vector<int64_t> v(knobs.size());
  for (size_t k = 0; k < knobs.size(); ++k) v[k] = knobs[k].value;
  // Order: parallelism steps (the op doing the most work first, then the step the model
  // rates best), then modes (below), then buffers (a buffer step rarely gains as much).
  int best = -1;
  int64_t best_to = 0;
  std::tuple<int, double, double> best_rank;
  for (size_t k = 0; k < knobs.size(); ++k) {
    const KnobState& knob = knobs[k];
    if (knob.kind != KnobKind::kParallelism && knob.kind != KnobKind::kBuffer) continue;
    if (!model.knob_ready(k) || knob.value >= knob.max) continue;
    // Parallelism one call at a time; a buffer doubles (a slot more of a deep buffer
    // changes little).
    const int64_t to = knob.kind == KnobKind::kBuffer
                           ? std::min(knob.max, std::max(knob.value + 1, 2 * knob.value))
                           : knob.value + 1;
    if (knob.kind == KnobKind::kParallelism && to > limits.cpu_budget) continue;
    bool runs_inline = false;
    for (const KnobState& m : inline_knobs) runs_inline |= m.prefix == knob.prefix;
    if (runs_inline) continue;
    auto h = trial_history_.find(KnobKey(knob));
    if (h != trial_history_.end() && now < h->second.next) continue;
    const int64_t at = v[k];
    v[k] = to;
    const bool fits =
        limits.ram_budget <= 0 ||
        model.BufferedBytes(v) <= static_cast<double>(limits.ram_budget);
    const double p = model.Period(v);
    v[k] = at;
    if (!fits) continue;
    const std::tuple<int, double, double> rank = {
        knob.kind == KnobKind::kParallelism ? 0 : 2, -model.knob_work(k), p};
    if (best < 0 || rank < best_rank) best = static_cast<int>(k), best_rank = rank, best_to = to;
  }
  // Modes: a parallel op running inline, tried async (the mode rule reads CPU per
  // element, which can say "cheap" for an op that pays off on another thread). After the
  // parallelism steps, before the buffers.
  const KnobState* mode = nullptr;
  const double root = stats.nodes.empty() ? 0 : static_cast<double>(stats.nodes[0].elements_produced);
  for (const KnobState& m : inline_knobs) {
    // Not a Prefetch: it does no work of its own, and at the root its rule already
    // weighs the measured consumer (async_payoff.h).
    if (m.op == "Prefetch") continue;
    auto h = trial_history_.find(KnobKey(m));
    if (h != trial_history_.end() && now < h->second.next) continue;
    double work = -1;
    for (const IteratorStats& n : stats.nodes) {
      if (n.prefix == m.prefix && n.elements_produced > 0 && root > 0) {
        work = static_cast<double>(n.cpu_ns) / root;
      }
    }
    if (work < 0) continue;  // not measured yet
    const std::tuple<int, double, double> rank = {1, -work, 0};
    if ((best < 0 && mode == nullptr) || rank < best_rank) {
      best = -1, mode = &m, best_rank = rank, best_to = 0;
    }
  }
  // And a root prefetch running async over an async input, tried inline (Round).
  for (const KnobState& m : async_roots) {
    auto h = trial_history_.find(KnobKey(m));
    if (h != trial_history_.end() && now < h->second.next) continue;
    const std::tuple<int, double, double> rank = {1, 0, 0};
    if ((best < 0 && mode == nullptr) || rank < best_rank) {
      best = -1, mode = &m, best_rank = rank, best_to = 1;
    }
  }
  if (best < 0 && mode == nullptr) return false;
  const KnobState& knob = mode != nullptr ? *mode : knobs[best];
  trial_ = TrialState{};
  trial_.active = true;
  trial_.key = KnobKey(knob);
  trial_.prefix = knob.prefix;
  trial_.name = knob.name;
  trial_.from = knob.value;
  trial_.to = best_to;
  StartSlice(0, now);
  SLUICE_LOG(kDebug) << "autotune: trial " << trial_.key << " " << trial_.from << " -> "
                     << trial_.to;
  return true;
}

}  // namespace sluice
