#include "autotune/autotuner.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "autotune/model.h"
#include "autotune/optimizer.h"
#include "runtime/async_payoff.h"
#include "core/logging.h"
#include "runtime/async_buffer.h"
#include "runtime/executor.h"

namespace sluice {
namespace {

std::string Us(double ns) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f us", ns / 1e3);
  return buf;
}

// The CPU ns per element of the work an async op would move off its consumer's thread,
// over the window: its own CPU (for Prefetch, which does no work of its own, its whole
// input subtree's); -1 when the window saw no element. One element is enough: a slow op
// (a batch of decoded images) produces a few per window, and it is the one that must
// leave inline mode quickly.
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

std::unique_ptr<Autotuner> Autotuner::Start(Runtime* runtime,
                                            std::function<PipelineStats()> snapshot) {
  if (runtime == nullptr || !runtime->autotune()) return nullptr;
  std::unique_ptr<Autotuner> t(new Autotuner(runtime, std::move(snapshot)));
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

Autotuner::~Autotuner() {
  runtime_->tunables().SetListener(nullptr);
  {
    MutexLock l(&mu_);
    stop_ = true;
  }
  cv_.SignalAll();
  if (thread_.joinable()) thread_.join();
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
    const bool changed = Round();
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
  std::vector<bool> running_async(delta.nodes.size(), false);
  for (size_t i = 0; i < delta.nodes.size(); ++i) {
    running_async[i] = delta.nodes[i].async;
    for (const KnobState& k : knobs) {
      if (k.kind == KnobKind::kMode && k.name == "inline" && k.value != 0 &&
          k.prefix == delta.nodes[i].prefix) {
        running_async[i] = false;
      }
    }
  }
  bool mode_changed = false;
  std::vector<KnobState> resources;
  for (const KnobState& k : knobs) {
    if (k.kind != KnobKind::kMode) {
      resources.push_back(k);
      continue;
    }
    if (k.name != "inline") continue;
    for (size_t i = 0; i < delta.nodes.size(); ++i) {
      if (delta.nodes[i].prefix != k.prefix) continue;
      const bool prefetch = k.op == "Prefetch";
      const double work = MovableWorkNs(delta, i, prefetch);
      if (work < 0) break;
      // Over an input already running async (its workers on the pool), a root prefetch
      // is a second buffer between those workers and the consumer's scheduling: the
      // work rule alone decides it (see async_payoff.h).
      const bool root_prefetch = prefetch && i == 0 && !AsyncBelow(delta, i, running_async);
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
      } else if (k.value == 0 && gain < kProbeFactor * handoff && --probe.wait < 0) {
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
  const Model model = Model::Build(stats, knobs, std::max(0.0, consumer_ns_));
  if (!model.ready()) return mode_changed;
  OptimizerLimits limits;
  limits.cpu_budget = runtime_->cpu_budget();
  limits.ram_budget = runtime_->memory().limit();
  std::vector<int64_t> current(knobs.size());
  for (size_t k = 0; k < knobs.size(); ++k) current[k] = knobs[k].value;
  const std::vector<int64_t> plan = HillClimb(model, knobs, current, limits);
  if (plan == current) return mode_changed;

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
  SLUICE_LOG(kDebug) << "autotune: round " << rounds() << ": measured " << measured
                     << " elements/s, consumer " << Us(std::max(0.0, consumer_ns_)) << "/element, model "
                     << Us(now_period) << " -> " << Us(plan_period) << " per element";
  if (!(better || cheaper || over_cpu || over_ram)) return mode_changed;
  bool changed = mode_changed;
  for (size_t k = 0; k < knobs.size(); ++k) {
    if (plan[k] == current[k]) continue;
    if (!registry.Set(knobs[k].id, plan[k])) continue;  // the iterator is gone
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

}  // namespace sluice
