#include "runtime/async_buffer.h"

#include <algorithm>
#include <chrono>

#include "core/cpu.h"
#include "graph/attr.h"
#include "runtime/exception_status.h"
#include "runtime/resources.h"

namespace sluice {

namespace {

// Runs f on a pipeline thread, where an escaping exception would end the process: it
// becomes the unit's error instead.
template <typename F>
Result<std::optional<Element>> FinishSafely(F&& f) {
  try {
    return f();
  } SLUICE_RETHROW_FORCED_UNWIND catch (...) {
    return StatusFromException("pipeline thread");
  }
}

}  // namespace

namespace {
// How long the consumer of an empty ring polls it before sleeping (and the runner of a
// full one, after the last pop it saw).
constexpr int64_t kRingSpinNs = 2000;
// ... when the other side is fast (kRingFastNs): a pause of a few us in a side that hands
// over an element every 100 ns is a timer tick or an interrupt (tens of us on a virtual
// machine), not the end of its work; sleeping through it cost a sleep and a wake-up on
// each side (a membarrier each, see spsc_ring.h) some twenty times per 10 ms of
// handoff_bench's Prefetch, 10% of its time.
constexpr int64_t kRingFastSpinNs = 20000;
int64_t RingSpinNs(bool other_side_fast) {
  return other_side_fast ? kRingFastSpinNs : kRingSpinNs;
}
// How long a side that just woke the other keeps polling before it sleeps itself: a
// wake-up takes tens of us on a loaded or virtual machine, longer than a small buffer
// lasts, so a side that slept after kRingSpinNs found the other still waking, slept too,
// and the two took turns sleeping (two sleeps and two wakes per buffer: 370 ns per
// element in handoff_bench).
constexpr int64_t kRingWakeNs = 100000;
// ... but only while the other side is fast: a push (or pop) every kRingFastNs or less.
// A side that makes an element in 100 us (a batch) is not waking up when the ring is
// empty, it is working; polling for it burnt a core that its workers needed.
constexpr int64_t kRingFastNs = 5000;
// The intervals are averaged (1/8 weight to the newest): elements often come in bursts
// (two buffered batches taken back to back), and one short gap is no reason to poll.
int64_t Ewma(int64_t average, int64_t sample) { return average + (sample - average) / 8; }
// Temporal slipping (GetNextRing): behind a runner that pushes every kRingSlipNs or
// faster, the consumer of an empty ring waits for kRingSlip elements before it takes one.
constexpr int64_t kRingSlipNs = 1000;
constexpr int64_t kRingSlip = 8;
// Whether the other side of the ring goes at kRingFastNs or faster (its averaged pace).
bool Fast(const std::atomic<int64_t>& interval_ns) {
  return interval_ns.load(std::memory_order_relaxed) <= kRingFastNs;
}
// A sleeping consumer is woken by the push that ends its wait, never later: deferring the
// wake to gather a group deadlocked when the runner's next fetch blocked on an input
// that waits for memory the un-woken consumer would have released (AsyncBuffer.
// MemoryBudgetBoundsBufferedBytes). The consumer's spin (kRingSpinNs) and the runner's
// runs are what keep wakes few for fast inputs.
// How many pushes ahead the runner fetches a ring slot for writing (SpscRing::
// PrefetchAhead): a cross-core miss takes 100-300 ns, several pushes of small elements.
constexpr size_t kRingPrefetchAhead = 4;
// The longest a spinning side waits between looks at the ring (PaceUntil): a pace
// estimate that is off (a burst after a stall) delays a wake-up by at most this.
constexpr int64_t kRingPaceMaxNs = 2000;
// A consumer waiting for a group polls (for up to twice this) when the group takes at
// most this long; a longer one is worth a sleep and a wake-up. (Polling for twice the
// group's own work was too short: a group's wall time on a shared core is longer.)
constexpr int64_t kGroupSpinNs = 20000;
// How many pops ahead the consumer starts fetching an element's lines
// (PrefetchRingAhead).
constexpr size_t kRingReadAhead = 6;
// Spins until `deadline_ns` (a few hundred ns at most: see the callers) without touching
// any shared line, so that the side it waits for works undisturbed; returns at once for
// a deadline past. At least one pause, so that a caller that loops always yields the
// core's pipeline to its sibling thread.
void PaceUntil(int64_t deadline_ns) {
  deadline_ns = std::min(deadline_ns, MonotonicNs() + kRingPaceMaxNs);
  do {
    for (int i = 0; i < 4; ++i) CpuRelax();
  } while (MonotonicNs() < deadline_ns);
}
constexpr int64_t kMaxCheckpointSlots = int64_t{1} << 20;
// The smallest group the runner runs itself (see "Groups"): cheap work only (at most
// 1/16 of the group target per element), where the pool's wake-up is a large share.
constexpr int64_t kRunnerGroupMin = 16;
// How long the runner sleeps between retries when the memory budget is full (other
// operators' releases do not wake it).
constexpr auto kBudgetRetry = std::chrono::milliseconds(2);
// The FetchScope of this thread, if it is fetching for a buffer.
thread_local FetchScope* tls_fetch = nullptr;
// GroupSignalsForTesting's counts (once per group or wake, never per element).
std::atomic<int64_t> test_groups{0};
std::atomic<int64_t> test_runner_signals{0};
std::atomic<int64_t> test_consumer_signals{0};
std::atomic<int64_t> test_runner_groups{0};
}  // namespace

FetchScope::FetchScope(bool reserved, const std::atomic<bool>* starving)
    : reserved_(reserved), starving_(starving), outer_(tls_fetch) {
  tls_fetch = this;
}

FetchScope::~FetchScope() { tls_fetch = outer_; }

FetchScope* FetchScope::Current() { return tls_fetch; }

Result<ParallelAttrs> GetParallelAttrs(const std::string& op, const AttrMap& attrs) {
  ParallelAttrs a;
  SLUICE_ASSIGN_OR_RETURN(a.num_parallel_calls,
                          GetAttrOr<int64_t>(attrs, op, "num_parallel_calls", kAutotune));
  SLUICE_ASSIGN_OR_RETURN(a.deterministic, GetAttrOr<int64_t>(attrs, op, "deterministic", -1));
  if (a.num_parallel_calls <= 0 && a.num_parallel_calls != kAutotune) {
    return InvalidArgumentError(op + ": num_parallel_calls must be > 0 or AUTOTUNE (-1), got " +
                                std::to_string(a.num_parallel_calls));
  }
  if (a.deterministic < -1 || a.deterministic > 1) {
    return InvalidArgumentError(op + ": deterministic must be -1 (default), 0 or 1, got " +
                                std::to_string(a.deterministic));
  }
  return a;
}

OpDef WithParallelAttrs(OpDef def) {
  return def
      .Attr("num_parallel_calls", AttrType::kInt, kAutotune,
            "Calls running at once, > 0, or AUTOTUNE (-1) to let sluice choose.")
      .Attr("deterministic", AttrType::kInt, int64_t{-1},
            "1: keep the input order; 0: yield elements as they are ready; -1: the "
            "pipeline's Options.deterministic.");
}

int64_t ResolveParallelism(int64_t value, const Runtime& rt) {
  return value == kAutotune ? std::max<int64_t>(1, rt.initial_parallelism())
                            : std::max<int64_t>(1, value);
}

AsyncBufferIterator::AsyncBufferIterator(DatasetPtr node, std::string prefix,
                                         std::unique_ptr<const UnitProcessor> processor,
                                         AsyncBufferOptions options)
    : IteratorBase(std::move(node), std::move(prefix)),
      processor_(std::move(processor)),
      options_(options),
      work_prefix_(this->prefix() + "/fn"),
      work_op_(this->node().op() + ":fn") {
  inline_unit_.exclusive = true;
}

AsyncBufferIterator::~AsyncBufferIterator() {
  // First: after these the tuner never calls the setters again.
  parallelism_knob_.Reset();
  capacity_knob_.Reset();
  inline_knob_.Reset();
  Cancel();
  if (runner_.joinable()) runner_.join();
  if (ring_ != nullptr) {
    FlushRingPops();
    RingItem item;
    while (ring_->TryPop(&item)) runtime_->memory().Release(item.reserved);
  }
  MutexLock l(&mu_);
  idle_cv_.Wait(&mu_, [this]() REQUIRES(mu_) { return running_tasks_ == 0; });
  for (const auto& s : slots_) runtime_->memory().Release(s->reserved);
  slots_.clear();
  if (group_ != nullptr) runtime_->memory().Release(group_->reserved);
}

Status AsyncBufferIterator::Initialize(const IteratorContext& ctx) {
  runtime_ = ctx.runtime();
  deterministic_ = runtime_->Deterministic(options_.deterministic);
  int64_t p = ResolveParallelism(options_.parallelism, *runtime_);
  const bool tune = runtime_->autotune();
  capacity_follows_ = options_.capacity == 0;  // before the setter can run
  grouped_ = processor_->groupable() && !processor_->passthrough();
  static_bytes_ = processor_->StaticOutputBytes();
  if (tune && options_.parallelism == kAutotune) {
    const int64_t max = std::max<int64_t>(1, runtime_->cpu_budget());
    std::vector<int64_t> slots;
    if (capacity_follows_) {
      for (int64_t v = 1; v <= max; ++v) slots.push_back(processor_->Capacity(v));
    }
    parallelism_knob_ = runtime_->tunables().Register(
        {prefix(), "parallelism", KnobKind::kParallelism, 1, max,
         [this](int64_t v) { set_parallelism(v); }, std::move(slots), node().op()},
        &p);
  }
  int64_t c = options_.capacity > 0 ? options_.capacity : processor_->Capacity(p);
  if (tune && options_.capacity == kAutotune) {
    capacity_knob_ = runtime_->tunables().Register(
        {prefix(), "buffer_size", KnobKind::kBuffer, 1, std::max(c, kMaxTunedCapacity),
         [this](int64_t v) { set_capacity(v); }, {}, node().op()},
        &c);
  }
  if (tune && (options_.parallelism == kAutotune || options_.capacity == kAutotune)) {
    int64_t m = 1;  // start inline; the tuner moves work off the thread when it pays
    inline_knob_ = runtime_->tunables().Register(
        {prefix(), "inline", KnobKind::kMode, 0, 1,
         [this](int64_t v) { set_inline(v != 0); }, {}, node().op()},
        &m);
    inline_.store(m != 0, std::memory_order_relaxed);
  }
  set_parallelism(p);
  set_capacity(c);
  // The ring holds every capacity the buffer may be given (the tuner's range included).
  const int64_t max_capacity =
      tune && options_.capacity == kAutotune ? std::max(c, kMaxTunedCapacity) : c;
  passthrough_ = processor_->passthrough();
  maps_in_place_ = processor_->maps_in_place() && processor_->inputs_per_unit() == 1;
  if (passthrough_ && max_capacity <= kMaxRingSlots) {
    ring_ = std::make_unique<SpscRing<RingItem>>(static_cast<size_t>(max_capacity));
  }
  {
    MutexLock l(&mu_);
    estimate_ = processor_->StaticOutputBytes();
  }
  SLUICE_ASSIGN_OR_RETURN(input_, MakeInput(ctx));
  return Status::OK();
}

void AsyncBufferIterator::set_parallelism(int64_t p) {
  parallelism_.store(std::max<int64_t>(1, p), std::memory_order_relaxed);
  RecordParallelism(inline_mode() ? 1 : parallelism());
  if (capacity_follows_) set_capacity(processor_->Capacity(parallelism()));
  std::vector<Part> start;
  {
    MutexLock l(&mu_);
    start = TakePartsToStart();
  }
  Schedule(std::move(start));
}

void AsyncBufferIterator::set_capacity(int64_t c) {
  capacity_.store(std::max<int64_t>(1, c), std::memory_order_relaxed);
  {
    MutexLock l(&mu_);
    RecordLimitLocked();
    runner_cv_.SignalAll();
  }
  ring_producer_ec_.Notify();
}

void AsyncBufferIterator::set_inline(bool on) {
  inline_.store(on, std::memory_order_relaxed);
  RecordParallelism(on ? 1 : parallelism());
  {
    MutexLock l(&mu_);
    runner_cv_.SignalAll();    // a runner leaves its loop
    consumer_cv_.SignalAll();  // a waiting consumer starts the runner or runs inline
  }
  ring_producer_ec_.Notify();
  ring_consumer_ec_.Notify();
}

void AsyncBufferIterator::Cancel() {
  cancel_requested_.store(true, std::memory_order_relaxed);
  {
    MutexLock l(&mu_);
    cancelled_ = true;
    pending_.clear();
  }
  runner_cv_.SignalAll();
  consumer_cv_.SignalAll();
  idle_cv_.SignalAll();
  ring_producer_ec_.Notify();
  ring_consumer_ec_.Notify();
  IteratorBase::Cancel();
}

void AsyncBufferIterator::RunnerLoop() {
  SetCurrentThreadName("sluice-" + node().op());
  MutexLock l(&mu_);
  while (true) {
    // Groups: a full buffer waits until it is half empty (see "Groups").
    if (grouped_ && buffered_elements_ >= ElementLimit()) runner_refill_ = true;
    runner_cv_.Wait(&mu_, [this]() REQUIRES(mu_) {
      return cancelled_ || inline_mode() || (!paused_ && HasRoomLocked());
    });
    runner_refill_ = false;
    if (cancelled_ || inline_mode()) break;
    // Admission against the memory budget (rules in memory_budget.h). A unit reserves its
    // estimate before it starts; before the first result tells the size, at most
    // `parallelism` units start under a limited budget. When the budget is full, an empty
    // buffer still fetches if the demand is urgent (UrgentLocked); that unit is charged on
    // arrival.
    int64_t reserve = 0;
    MemoryBudget& budget = runtime_->memory();
    const bool admitted =
        estimate_ < 0 ? budget.limit() <= 0 || static_cast<int64_t>(slots_.size()) < parallelism()
                      : budget.TryReserve(estimate_);
    if (admitted) {
      reserve = std::max<int64_t>(estimate_, 0);
    } else if (!UrgentLocked()) {
      runner_budget_wait_ = true;  // a waiting consumer wakes it (BeginWaitLocked)
      runner_cv_.WaitFor(&mu_, kBudgetRetry);
      runner_budget_wait_ = false;
      continue;
    }
    std::unique_ptr<Slot> slot;
    if (!free_slots_.empty()) {  // a used group's, with its vectors' room (groups)
      slot = std::move(free_slots_.back());
      free_slots_.pop_back();
    } else {
      slot = std::make_unique<Slot>();
    }
    slot->reserved = reserve;
    // A group's size (see "Groups"): one element when admitted unreserved, or when the
    // size of an element is unknown under a limited budget.
    const int64_t estimate = estimate_;
    int64_t want = 1;
    if (grouped_ && admitted && (estimate >= 0 || budget.limit() <= 0)) {
      want = std::max<int64_t>(
          1, std::min(group_size(), ElementLimit() - buffered_elements_));
      // At most kGroupMaxBytes of elements of the largest size seen so far.
      if (estimate > 0) want = std::min(want, std::max<int64_t>(1, kGroupMaxBytes / estimate));
    }
    fetching_ = true;
    l.Unlock();
    const int64_t start_ns = want > 1 ? MonotonicNs() : 0;
    // Pull one unit from the input. On an input error the rows pulled before it are
    // dropped and the slot carries the error (as the sequential batch does).
    Status error;
    bool end = false;
    int64_t dropped = 0;  // rows pulled before an input error
    {
      FetchScope scope(reserve > 0, &starving_);
      PullUnit(&slot->unit, &error, &end, &dropped);
      slot->reserved += scope.TakeTransferred();
    }
    if (want > 1 && error.ok() && !end) {
      PullGroupRest(slot.get(), want, std::max<int64_t>(estimate, 0), start_ns, &error,
                    &end, &slot->reserved);
    }
    l.Lock();
    fetching_ = false;
    idle_cv_.SignalAll();
    const int64_t n = static_cast<int64_t>(slot->unit.inputs.size());
    if (end && (n == 0 || processor_->drop_partial_unit())) {
      runtime_->memory().Release(slot->reserved);
      input_end_ = true;
      consumer_cv_.SignalAll();
      break;
    }
    if (end) input_end_ = true;
    slot->unit.first_position = next_position_;
    // Dropped rows were consumed: they keep their input positions, as in map().batch().
    next_position_ += n + dropped;
    Slot* s = slot.get();
    slots_.push_back(std::move(slot));
    if (grouped_) {
      // The input error ends the group: its last result, after the elements before it.
      s->elements = n + (error.ok() ? 0 : 1);
      buffered_elements_ += s->elements;
      s->input_error = std::move(error);
      error = Status::OK();
      if (n == 0) {
        CompleteLocked(s, std::nullopt);
        PublishGaugesLocked();
        if (input_end_) break;
        continue;
      }
    }
    int parts = !error.ok() ? 0
                : grouped_      ? 1
                                : processor_->NumParts(s->unit, parallelism());
    if (!error.ok()) {
      CompleteLocked(s, error);
    } else if (parts == 0) {
      // Inline (prefetch): finish on this thread, outside the lock.
      l.Unlock();
      Result<std::optional<Element>> out =
          FinishSafely([&] { return processor_->Finish(&s->unit); });
      l.Lock();
      CompleteLocked(s, std::move(out));
    } else if (grouped_ && s->elements >= kRunnerGroupMin &&
               running_parts_ < parallelism() &&
               2 * buffered_elements_ >= ElementLimit()) {
      // The buffer is at least half full: the runner is ahead of the consumer and has
      // time to run the group itself, sparing a pool task's handoff (see "Groups").
      s->parts = s->parts_left = 1;
      ++running_parts_;
      ++running_tasks_;
      test_runner_groups.fetch_add(1, std::memory_order_relaxed);
      l.Unlock();
      RunPart(Part{s, 0});
      l.Lock();
    } else {
      s->parts = s->parts_left = parts;
      for (int i = 0; i < parts; ++i) pending_.push_back(Part{s, i});
      std::vector<Part> start = TakePartsToStart();
      l.Unlock();
      Schedule(std::move(start));
      l.Lock();
    }
    PublishGaugesLocked();
    if (input_end_) break;
  }
  runner_active_ = false;
  consumer_cv_.SignalAll();
  idle_cv_.SignalAll();
}

int64_t AsyncBufferIterator::RingLimit() const {
  return std::min<int64_t>(capacity(), static_cast<int64_t>(ring_->capacity()));
}

bool AsyncBufferIterator::RingRunnerMustStop() const {
  return cancel_requested_.load(std::memory_order_relaxed) || inline_mode() ||
         pause_requested_.load(std::memory_order_relaxed);
}

void AsyncBufferIterator::WaitForRingRoom(int64_t woke_consumer_ns) {
  // Room for a run: at most half the buffer full (a full buffer wakes the runner once per
  // half buffer consumed, see GetNextRing).
  const auto room = [this] {
    return static_cast<int64_t>(ring_->Size()) <= RingLimit() / 2 || RingRunnerMustStop();
  };
  if (room()) return;
  // Poll first, for as long as the consumer keeps popping (it took a value within the
  // last kRingSpinNs): a consumer that is draining the ring frees the room within
  // microseconds, sooner than a sleep and a wake-up (whose latency, tens of us on a busy
  // or virtual machine, is longer than a small buffer takes to drain: the consumer then
  // found the ring empty and slept too). A consumer that stopped taking (a training
  // step) lets the runner sleep after kRingSpinNs.
  //
  // Each look at the ring reads the consumer's index, a line the consumer writes with
  // every pop: looked at on every pause, it went back and forth between the cores per
  // element and the consumer's pops waited for it. So the runner looks again when the
  // room it needs should be there at the consumer's pace (PaceUntil).
  size_t popped = ring_->Popped();
  const int64_t pop_ns = ring_pop_interval_ns_.load(std::memory_order_relaxed);
  const bool fast = pop_ns <= kRingFastNs;
  const int64_t spin_ns = RingSpinNs(fast);
  int64_t spin_until =
      std::max(MonotonicNs() + spin_ns, fast ? woke_consumer_ns + kRingWakeNs : kNeverNs);
  while (true) {
    const int64_t excess = static_cast<int64_t>(ring_->Size()) - RingLimit() / 2;
    if (excess <= 0 || RingRunnerMustStop()) return;
    const int64_t now = MonotonicNs();
    const size_t p = ring_->Popped();
    if (p != popped) {
      popped = p;
      spin_until = now + spin_ns;
    } else if (now >= spin_until) {
      break;
    }
    PaceUntil(std::min(now + excess * pop_ns, spin_until));
  }
  while (!room()) {  // (the wait's mode was chosen at the run's start)
    const uint32_t key = ring_producer_ec_.PrepareWait();
    if (room()) {
      ring_producer_ec_.CancelWait();
      return;
    }
    ring_producer_ec_.Wait(key);
  }
}

void AsyncBufferIterator::FlushRingPops() {
  if (ring_popped_ == 0) return;
  const int64_t now = MonotonicNs();
  if (ring_flushed_ns_ != 0) {  // (the first flush has no interval to measure)
    ring_pop_interval_ns_.store(Ewma(ring_pop_interval_ns_.load(std::memory_order_relaxed),
                                     (now - ring_flushed_ns_) / ring_popped_),
                                std::memory_order_relaxed);
  }
  ring_flushed_ns_ = now;
  // The consumer waits on ring_consumer_ec_: its mode follows the runner's pace.
  ring_consumer_ec_.SetAsymmetric(Fast(ring_push_interval_ns_));
  ring_bytes_out_.store(ring_bytes_out_.load(std::memory_order_relaxed) + ring_popped_bytes_,
                        std::memory_order_relaxed);
  if (ring_unreleased_ != 0) runtime_->memory().Release(ring_unreleased_);
  ring_popped_ = ring_popped_bytes_ = ring_unreleased_ = 0;
  PublishRingGauges();
}

void AsyncBufferIterator::PublishRingGauges() {
  // (In is added once per run, so the consumer may have counted out a run's first
  // elements before the runner counts them in: a gauge, clamped at zero.)
  RecordBuffered(std::max<int64_t>(0, ring_bytes_in_.load(std::memory_order_relaxed) -
                                          ring_bytes_out_.load(std::memory_order_relaxed)),
                 static_cast<int64_t>(ring_->Size()));
}

void AsyncBufferIterator::RingRunnerLoop() {
  SetCurrentThreadName("sluice-" + node().op());
  MemoryBudget& budget = runtime_->memory();
  MutexLock l(&mu_);
  int64_t woke_consumer_ns = kNeverNs;  // when this runner last woke a sleeping consumer
  while (true) {
    l.Unlock();
    WaitForRingRoom(woke_consumer_ns);
    l.Lock();
    runner_cv_.Wait(
        &mu_, [this]() REQUIRES(mu_) { return cancelled_ || inline_mode() || !paused_; });
    if (cancelled_ || inline_mode()) break;
    const int64_t room = RingLimit() - static_cast<int64_t>(ring_->Size());
    if (room <= 0) continue;  // (a pause came first)
    // Admission as in RunnerLoop, per element: each reserves its estimate; before the
    // first size is known, a limited budget admits only an empty ring's fetch; a full
    // budget admits the run's first element unreserved when the demand is urgent. The
    // reservations are taken in batches (`credit`: reserved, not yet any element's; at
    // most kReleaseBatchBytes ahead, the rest given back at the end of the run), so the
    // budget's shared counter is touched once per batch, not two or three times per
    // element; when a batch does not fit, one element's estimate is tried alone, as
    // before.
    const bool urgent = UrgentLocked();
    int64_t estimate = estimate_;
    fetching_ = true;
    l.Unlock();
    const int64_t run_start_ns = MonotonicNs();
    // The runner waits on ring_producer_ec_: its mode follows the consumer's pace (see
    // spsc_ring.h), chosen here between waits as well as before one.
    ring_producer_ec_.SetAsymmetric(Fast(ring_pop_interval_ns_));
    int64_t fetched = 0;  // elements (not errors): their input positions
    int64_t pushed = 0;
    int64_t credit = 0;
    int64_t bytes_in = 0;  // pushed bytes, added to ring_bytes_in_ once per run
    bool end = false;
    const int64_t run = std::min(room, kRingRun);
    for (int64_t i = 0; i < run; ++i) {
      if (i > 0 && RingRunnerMustStop()) break;
      bool admitted;
      if (estimate < 0) {
        admitted = budget.limit() <= 0 || ring_->Empty();
      } else if (credit >= estimate) {
        admitted = true;
      } else {
        const int64_t batch =
            std::max(estimate, std::min(estimate * (run - i), kReleaseBatchBytes)) - credit;
        if (budget.TryReserve(batch)) {
          credit += batch;
          admitted = true;
        } else {
          admitted = budget.TryReserve(estimate - credit);
          if (admitted) credit = estimate;
        }
      }
      int64_t reserve = 0;
      if (admitted) {
        reserve = std::max<int64_t>(estimate, 0);
        credit -= reserve;
      } else if (!(i == 0 && urgent)) {
        break;
      }
      // Made in its ring slot (the room was checked; only this thread pushes): moved
      // there instead, the element's fields were read back right after the input wrote
      // them, which waited for the stores before them (the last slot's, on a line the
      // consumer holds) and cost a third of the runner's time per small element.
      void* slot = ring_->TryReserve();  // never null: the room was checked
      ring_->PrefetchAhead(kRingPrefetchAhead);
      if (slot == nullptr) [[unlikely]] {
        credit += reserve;
        break;
      }
      RingItem* placed;
      {
        FetchScope scope(reserve > 0, &starving_);
        placed = new (slot) RingItem{
            FinishSafely([&] { return input_->GetNext(); }), 0};
        placed->reserved = reserve + scope.TakeTransferred();
      }
      RingItem& item = *placed;
      if (item.result.ok() && !item.result->has_value()) {
        credit += item.reserved;
        item.~RingItem();  // not committed
        end = true;
        break;
      }
      // Charged exactly its bytes from here on (as CompleteLocked).
      const int64_t bytes = item.result.ok() ? ElementBytes(**item.result) : 0;
      if (bytes > item.reserved) {
        const int64_t more = bytes - item.reserved;
        const int64_t from_credit = std::min(credit, more);
        credit -= from_credit;
        if (more > from_credit) budget.ForceReserve(more - from_credit);
      } else {
        credit += item.reserved - bytes;
        if (credit > kReleaseBatchBytes) {
          budget.Release(credit - kReleaseBatchBytes);
          credit = kReleaseBatchBytes;
        }
      }
      item.reserved = bytes;
      if (item.result.ok()) {
        ++fetched;
        estimate = std::max(estimate, bytes);
      }
      bytes_in += bytes;
      ring_->Commit();
      ++pushed;
      if (starving_.load(std::memory_order_relaxed)) {
        starving_.store(false, std::memory_order_relaxed);
      }
      if (ring_consumer_ec_.Notify()) woke_consumer_ns = MonotonicNs();  // at once
    }
    if (credit > 0) budget.Release(credit);
    ring_bytes_in_.store(ring_bytes_in_.load(std::memory_order_relaxed) + bytes_in,
                         std::memory_order_relaxed);
    if (pushed > 0) {
      ring_push_interval_ns_.store(
          Ewma(ring_push_interval_ns_.load(std::memory_order_relaxed),
               (MonotonicNs() - run_start_ns) / pushed),
          std::memory_order_relaxed);
    }
    if (ring_consumer_ec_.Notify()) woke_consumer_ns = MonotonicNs();  // (no call if none waits)
    l.Lock();
    fetching_ = false;
    next_position_ += fetched;
    estimate_ = std::max(estimate_, estimate);
    if (end) input_end_ = true;
    idle_cv_.SignalAll();
    PublishRingGauges();
    if (end) break;
    if (pushed == 0 && !RingRunnerMustStop()) {
      runner_cv_.WaitFor(&mu_, kBudgetRetry);  // the budget is full
    }
  }
  runner_active_ = false;
  idle_cv_.SignalAll();
  l.Unlock();
  ring_consumer_ec_.Notify();
}

void AsyncBufferIterator::PrefetchRingAhead() const {
  // An element the runner made is on lines its core wrote: the ring slot, the element's
  // tensor list, each tensor's buffer (header and first data line). Read in that order,
  // each a miss that needs the one before: four trips between the cores per element. So
  // in stages, a few pops ahead of use: the slot kRingReadAhead pops ahead, the tensor
  // list of the element two thirds as far (its slot came earlier), the buffers of the
  // element a third as far (its list came earlier). Only elements this side already
  // knows were pushed (no read of the runner's line).
  constexpr size_t kSlot = kRingReadAhead, kList = kRingReadAhead * 2 / 3,
                   kBuffers = kRingReadAhead / 3;
  if (const RingItem* slot = ring_->PeekKnown(kSlot)) __builtin_prefetch(slot);
  const auto element = [this](size_t ahead) -> const Element* {
    const RingItem* item = ring_->PeekKnown(ahead);
    if (item == nullptr || !item->result.ok() || !item->result->has_value()) return nullptr;
    return &**item->result;
  };
  if (const Element* e = element(kList); e != nullptr && !e->empty()) {
    __builtin_prefetch(e->tensors().data());
  }
  if (const Element* e = element(kBuffers)) {
    const size_t n = std::min<size_t>(e->size(), 2);
    for (size_t i = 0; i < n; ++i) {
      if (const Buffer* b = e->tensors()[i].buffer().get()) {
        __builtin_prefetch(b);
        __builtin_prefetch(reinterpret_cast<const char*>(b) + 64);
      }
    }
  }
}

Result<std::optional<Element>> AsyncBufferIterator::GetNextRing() {
  while (true) {
    if (cancel_requested_.load(std::memory_order_relaxed)) {
      return CancelledError(node().op() + ": iterator cancelled");
    }
    RingItem item;
    if (ring_->TryPop(&item)) {
      PrefetchRingAhead();
      // Wake the runner only when it sleeps and the ring just fell to half. (The true
      // size: a stale lower bound woke a runner that waits for room too early, and it
      // slept again, a wake per pop when the consumer is the slower side. Read only when
      // the runner sleeps: the ring's tail is on a line the runner writes with every
      // push, and reading it after every pop moved it between the cores per element.)
      if (ring_producer_ec_.Waiting() &&
          static_cast<int64_t>(ring_->Size()) <= RingLimit() / 2 &&
          ring_producer_ec_.Notify()) {
        woke_runner_ns_ = MonotonicNs();
      }
      // Handing the element to a buffer's fetch moves its charge along (TakeReadyLocked);
      // otherwise its charge leaves the budget, in batches (FlushRingPops).
      ring_popped_bytes_ += item.reserved;
      if (tls_fetch != nullptr) {
        tls_fetch->AddTransferred(item.reserved);
      } else {
        ring_unreleased_ += item.reserved;
      }
      if (++ring_popped_ >= kReleaseBatch || ring_unreleased_ >= kReleaseBatchBytes) {
        FlushRingPops();
      }
      return std::move(item.result);
    }
    FlushRingPops();  // before it may sleep
    // Empty: spin a little before sleeping. A runner that keeps up refills the ring
    // within a few hundred ns, much less than a sleep and a wake-up.
    const int64_t push_ns = ring_push_interval_ns_.load(std::memory_order_relaxed);
    const bool fast = push_ns <= kRingFastNs;
    const int64_t now = MonotonicNs();
    const int64_t spin_until =
        std::max(now + RingSpinNs(fast), fast ? woke_runner_ns_ + kRingWakeNs : kNeverNs);
    // Temporal slipping (FastForward, Giacomoni et al., PPoPP 2008): behind a runner that
    // pushes every few hundred ns, wait until kRingSlip elements are in (or a few of its
    // intervals passed) before taking the first. A consumer that takes each element the
    // moment it lands reads the slot's cache line while the runner writes the next slot
    // in it, and both slow down in lock step: 350-400 ns per element instead of 80, in
    // the runs where the consumer caught up and stayed there.
    const size_t slip = push_ns <= kRingSlipNs ? static_cast<size_t>(std::min<int64_t>(
                                                     kRingSlip, RingLimit() / 2))
                                               : 1;
    const int64_t slip_until = now + kRingSlip * std::max<int64_t>(push_ns, 50) * 2;
    // Looks at the ring when the elements it waits for should be in at the runner's pace
    // (PaceUntil): each look reads the tail, a line the runner writes with every push.
    while (true) {
      const size_t size = ring_->Size();
      if (size >= std::max<size_t>(slip, 1)) break;
      const int64_t t = MonotonicNs();
      if (size > 0 && t > slip_until) break;  // enough waiting for the rest of a slip
      if (t > spin_until) break;
      PaceUntil(std::min(t + static_cast<int64_t>(std::max<size_t>(slip, 1) - size) * push_ns,
                         spin_until));
    }
    if (!ring_->Empty()) continue;
    MutexLock l(&mu_);
    runner_started_ = true;
    if (cancelled_) return CancelledError(node().op() + ": iterator cancelled");
    if (!ring_->Empty()) continue;
    if (input_end_) return std::nullopt;
    if (inline_mode() && !runner_active_) {
      inline_owned_ = true;
      l.Unlock();
      return GetNextInline();
    }
    if (!inline_mode() && !runner_active_) {
      if (runner_.joinable()) runner_.join();
      inline_owned_ = false;
      runner_active_ = true;
      runner_ = std::thread([this] { RingRunnerLoop(); });
    }
    // Sleep until the runner pushes, ends or leaves, telling it who waits (UrgentLocked).
    const std::atomic<bool>* waiter = BeginWaitLocked();
    ring_consumer_ec_.SetAsymmetric(fast);
    const uint32_t key = ring_consumer_ec_.PrepareWait();
    if (ring_->Empty() && !cancelled_ && runner_active_) {
      l.Unlock();
      ring_consumer_ec_.Wait(key);
      l.Lock();
    } else {
      ring_consumer_ec_.CancelWait();
    }
    EndWaitLocked(waiter);
  }
}

void AsyncBufferIterator::PullUnit(WorkUnit* unit, Status* error, bool* end,
                                   int64_t* dropped) {
  const int64_t want = processor_->inputs_per_unit();
  unit->inputs.reserve(BatchReserve(want));
  while (static_cast<int64_t>(unit->inputs.size()) < want) {
    Result<std::optional<Element>> r = FinishSafely([&] { return input_->GetNext(); });
    if (!r.ok()) {
      *error = r.status();
      *dropped = static_cast<int64_t>(unit->inputs.size());
      unit->inputs.clear();
      return;
    }
    if (!*r) {
      *end = true;
      return;
    }
    unit->inputs.push_back(std::move(**r));
    const int64_t n = static_cast<int64_t>(unit->inputs.size());
    if (BatchMemoryCheckDue(n, want)) {
      *error = CheckBufferMemory("a batch", want, input_->node().Cardinality(), n,
                                 unit->inputs.front());
      if (!error->ok()) {
        *dropped = n;
        unit->inputs.clear();
        return;
      }
    }
  }
}

Status AsyncBufferIterator::MapInPlaceSafely(Element* e, int64_t position) const {
  try {
    return processor_->MapInPlace(e, position);
  } SLUICE_RETHROW_FORCED_UNWIND catch (...) {
    return StatusFromException(node().op());
  }
}

Result<std::optional<Element>> AsyncBufferIterator::ProcessInline(WorkUnit* unit) {
  // The parts in order, each whatever the others returned (as on the pool), then Finish.
  // Only this thread touches the unit (exclusive): its status needs no lock.
  const int parts = processor_->NumParts(*unit, 1);
  Status first;
  for (int i = 0; i < parts; ++i) {
    Status st;
    try {
      st = processor_->ProcessPart(unit, i, parts);
    } SLUICE_RETHROW_FORCED_UNWIND catch (...) {
      st = StatusFromException(node().op());
    }
    if (!st.ok() && first.ok()) first = st;
  }
  if (!first.ok() && unit->status.ok()) unit->status = first;
  Status unit_status = std::move(unit->status);
  if (!unit_status.ok()) {
    unit->status = Status::OK();  // the unit is reused (inline_unit_)
    unit->status_row = -1;
  }
  Result<std::optional<Element>> out{std::nullopt};
  if (unit_status.ok()) {
    out = FinishSafely([&] { return processor_->Finish(unit); });
  } else {
    out = std::move(unit_status);
  }
  unit->inputs.clear();
  unit->output = Element();
  return out;
}

const std::atomic<bool>* AsyncBufferIterator::BeginWaitLocked() {
  const std::atomic<bool>* waiter =
      tls_fetch != nullptr && tls_fetch->reserved() ? tls_fetch->starving() : nullptr;
  if (waiter != nullptr) {
    reserved_waiters_.push_back(waiter);
  } else {
    ++waiting_unreserved_;
  }
  starving_.store(true, std::memory_order_relaxed);
  // Only a runner waiting on the budget looks at waiters (UrgentLocked); one waiting for
  // room is woken by the room.
  if (ring_ != nullptr || runner_budget_wait_) {
    if (grouped_) test_runner_signals.fetch_add(1, std::memory_order_relaxed);
    runner_cv_.SignalAll();
  }
  return waiter;
}

void AsyncBufferIterator::EndWaitLocked(const std::atomic<bool>* waiter) {
  starving_.store(false, std::memory_order_relaxed);
  if (waiter != nullptr) {
    reserved_waiters_.erase(
        std::find(reserved_waiters_.begin(), reserved_waiters_.end(), waiter));
  } else {
    --waiting_unreserved_;
  }
}

bool AsyncBufferIterator::UrgentLocked() const {
  // What is in flight will serve the consumer.
  if (!slots_.empty() || (ring_ != nullptr && !ring_->Empty())) return false;
  if (waiting_unreserved_ > 0) return true;
  return std::any_of(reserved_waiters_.begin(), reserved_waiters_.end(),
                     [](const std::atomic<bool>* f) { return f->load(std::memory_order_relaxed); });
}

std::vector<AsyncBufferIterator::Part> AsyncBufferIterator::TakePartsToStart() {
  std::vector<Part> start;
  while (!cancelled_ && !pending_.empty() && running_parts_ < parallelism()) {
    start.push_back(pending_.front());
    pending_.pop_front();
    ++running_parts_;
    ++running_tasks_;
  }
  return start;
}

void AsyncBufferIterator::Schedule(std::vector<Part> parts) {
  for (Part p : parts) runtime_->executor().Schedule([this, p] { RunPart(p); });
}

void AsyncBufferIterator::RunPart(Part p) {
  std::optional<TaskTimer> timer(&stats());  // the part, and Finish after the last one
  Status st;
  // With a profiler attached, each part is a span "<prefix>/fn" on the pool thread (a
  // group: one span per element, recorded by RunGroup).
  SpanRecorder* const spans = grouped_ ? nullptr : span_recorder();
  Span span;
  if (spans != nullptr) [[unlikely]] {
    spans->Begin();
    span.start_ns = MonotonicNs();
  }
  if (grouped_) {
    RunGroup(p.slot);  // every element's error is its own result
  } else {
    try {
      st = processor_->ProcessPart(&p.slot->unit, p.index, p.slot->parts);
    } SLUICE_RETHROW_FORCED_UNWIND catch (...) {
      st = StatusFromException(node().op());
    }
  }
  if (spans != nullptr) [[unlikely]] {
    span.end_ns = MonotonicNs();
    span.node_id = node_id();
    span.prefix = work_prefix_;
    span.op = work_op_;
    span.index = p.slot->unit.first_position + p.index;
    span.produced = st.ok();
    span.error = !st.ok();
    span.work = true;
    spans->Record(span);
  }
  if (!st.ok()) {
    MutexLock g(&p.slot->unit.mu);
    if (p.slot->unit.status.ok()) p.slot->unit.status = st;
  }
  MutexLock l(&mu_);
  --running_parts_;
  const bool last = --p.slot->parts_left == 0;
  bool wake = false;
  std::vector<Part> start = TakePartsToStart();
  if (last) {
    l.Unlock();
    Result<std::optional<Element>> out{std::nullopt};
    Status unit_status;
    {
      MutexLock g(&p.slot->unit.mu);
      unit_status = p.slot->unit.status;
    }
    if (grouped_) {
      // The results are in the slot (RunGroup).
    } else if (unit_status.ok()) {
      out = FinishSafely([&] { return processor_->Finish(&p.slot->unit); });
    } else {
      out = std::move(unit_status);
    }
    timer.reset();
    l.Lock();
    wake = CompleteLocked(p.slot, std::move(out), /*defer_wake=*/true);
    PublishGaugesLocked();
  }
  timer.reset();
  l.Unlock();
  if (wake) consumer_cv_.SignalAll();  // after unlocking: the consumer takes mu_ at once
  Schedule(std::move(start));
  l.Lock();
  // Last touch of `this`: the destructor waits for running_tasks_ == 0 under mu_.
  --running_tasks_;
  idle_cv_.SignalAll();
}

namespace {
std::atomic<int64_t> group_target_override_ns{0};
}  // namespace

AsyncBufferIterator::GroupSignals AsyncBufferIterator::GroupSignalsForTesting() {
  return {test_groups.load(std::memory_order_relaxed),
          test_runner_signals.load(std::memory_order_relaxed),
          test_consumer_signals.load(std::memory_order_relaxed),
          test_runner_groups.load(std::memory_order_relaxed)};
}

void AsyncBufferIterator::SetGroupTargetNsForTesting(int64_t ns) {
  group_target_override_ns.store(ns, std::memory_order_relaxed);
}

int64_t AsyncBufferIterator::GroupTargetNs() {
  const int64_t o = group_target_override_ns.load(std::memory_order_relaxed);
  return o > 0 ? o : kGroupTargetNs;
}

void AsyncBufferIterator::RunGroup(Slot* s) {
  // Each element as a one-element unit of its own position, in order.
  test_groups.fetch_add(1, std::memory_order_relaxed);
  const int64_t start = MonotonicNs();
  const size_t n = s->unit.inputs.size();
  s->results.reserve(n + 1);
  WorkUnit u;
  u.exclusive = true;
  SpanRecorder* const spans = span_recorder();
  for (size_t i = 0; i < n; ++i) {
    const int64_t position = s->unit.first_position + static_cast<int64_t>(i);
    Span span;  // with a profiler attached, each element's work is a span of its own
    if (spans != nullptr) [[unlikely]] {
      spans->Begin();
      span.start_ns = MonotonicNs();
    }
    if (maps_in_place_) {
      // A map: the element in place, as GetNextInline's map path (no unit, no Finish: a
      // few moves and calls less per element, on the runner's critical path).
      Element& e = s->unit.inputs[i];
      Status st = MapInPlaceSafely(&e, position);
      if (st.ok()) [[likely]] {
        s->results.emplace_back(std::optional<Element>(std::move(e)));
      } else {
        s->results.emplace_back(std::move(st));
      }
    } else {
      u.inputs.push_back(std::move(s->unit.inputs[i]));
      u.first_position = position;
      s->results.push_back(ProcessInline(&u));
    }
    const Result<std::optional<Element>>& r = s->results.back();
    if (spans != nullptr) [[unlikely]] {
      span.end_ns = MonotonicNs();
      span.node_id = node_id();
      span.prefix = work_prefix_;
      span.op = work_op_;
      span.index = position;
      span.produced = r.ok();
      span.error = !r.ok();
      span.work = true;
      spans->Record(span);
    }
    if (r.ok() && r->has_value()) {
      const int64_t b = ResultBytes(r);
      s->group_bytes += b;
      s->largest = std::max(s->largest, b);
    }
  }
  if (!s->input_error.ok()) s->results.push_back(std::move(s->input_error));
  // The next group's size from the work per element (EWMA), at most doubling.
  const int64_t per =
      std::max<int64_t>(1, (MonotonicNs() - start) / static_cast<int64_t>(n));
  const int64_t old = work_ns_.load(std::memory_order_relaxed);
  const int64_t work = old < 0 ? per : (3 * old + per) / 4;
  work_ns_.store(work, std::memory_order_relaxed);
  const int64_t k = std::clamp<int64_t>(GroupTargetNs() / std::max<int64_t>(work, 1), 1,
                                        kMaxGroup);
  const int64_t g = std::min(k, 2 * group_size());
  group_size_.store(g, std::memory_order_relaxed);  // (the limit's gauge: CompleteLocked)
}

void AsyncBufferIterator::RecordLimitLocked() {
  if (!grouped_) {
    RecordBufferLimit(capacity());
    return;
  }
  // The limit counts elements (see "Groups"). When g shrinks, the groups admitted under
  // the larger g stay until they are taken: the bound in force is then what they hold.
  RecordBufferLimit(std::max(ElementLimit(), buffered_elements_));
}

int64_t AsyncBufferIterator::ResultBytes(const Result<std::optional<Element>>& r) const {
  if (!r.ok() || !r->has_value()) return 0;
  return static_bytes_ >= 0 ? static_bytes_ : ElementBytes(**r);
}

bool AsyncBufferIterator::HasRoomLocked() const {
  if (!grouped_) return static_cast<int64_t>(slots_.size()) < capacity();
  const int64_t limit = ElementLimit();
  if (runner_refill_ && group_size() > 1) return buffered_elements_ <= limit / 2;
  return buffered_elements_ < limit;
}

int64_t AsyncBufferIterator::ElementLimit() const {
  return capacity_follows_ ? capacity() * group_size() : capacity();
}

void AsyncBufferIterator::PullGroupRest(Slot* s, int64_t want, int64_t estimate,
                                        int64_t start_ns, Status* error, bool* end,
                                        int64_t* reserved) {
  MemoryBudget& budget = runtime_->memory();
  std::vector<Element>& inputs = s->unit.inputs;
  inputs.reserve(static_cast<size_t>(want));
  FetchScope scope(estimate > 0, &starving_);
  int64_t ahead = 0;  // elements reserved, not yet fetched (released when the group ends)
  while (static_cast<int64_t>(inputs.size()) < want) {
    if (cancel_requested_.load(std::memory_order_relaxed)) break;
    if (inputs.size() % 32 == 0 && MonotonicNs() - start_ns > GroupTargetNs()) break;
    if (estimate > 0 && ahead == 0) {
      // Reserve for the rest of the group at once, else element by element; the budget
      // full: the group ends here.
      const int64_t rest = want - static_cast<int64_t>(inputs.size());
      if (rest > 1 && budget.TryReserve(rest * estimate)) {
        ahead = rest;
      } else if (budget.TryReserve(estimate)) {
        ahead = 1;
      } else {
        break;
      }
      *reserved += ahead * estimate;
    }
    if (estimate > 0) --ahead;
    Result<std::optional<Element>> r = FinishSafely([&] { return input_->GetNext(); });
    if (!r.ok()) {
      *error = r.status();
      break;
    }
    if (!*r) {
      *end = true;
      break;
    }
    inputs.push_back(std::move(**r));
  }
  if (ahead > 0) {
    budget.Release(ahead * estimate);
    *reserved -= ahead * estimate;
  }
  *reserved += scope.TakeTransferred();
}

void AsyncBufferIterator::FlushGroupRelease() {
  if (group_unreleased_ > 0) {
    group_->reserved -= group_unreleased_;
    runtime_->memory().Release(group_unreleased_);
  }
  group_unreleased_ = 0;
  group_unreleased_count_ = 0;
}

std::optional<Result<std::optional<Element>>> AsyncBufferIterator::TakeFromGroup() {
  std::vector<Result<std::optional<Element>>>& results = group_->results;
  while (group_next_ < results.size()) {
    // The tensor list of the result a few takes ahead, fetched now: it was made on the
    // pool's core, so reading it is a cache miss that would otherwise stall this take.
    if (group_next_ + kGroupPrefetchAhead < results.size()) {
      const Result<std::optional<Element>>& ahead = results[group_next_ + kGroupPrefetchAhead];
      if (ahead.ok() && ahead->has_value() && !(*ahead)->empty()) {
        __builtin_prefetch((*ahead)->tensors().data());
      }
    }
    Result<std::optional<Element>>& r = results[group_next_++];
    const bool element = r.ok() && r->has_value();
    if (element) {
      // Its charge moves to a buffer's fetch, or leaves a limited budget (as in
      // TakeReadyLocked); under an unlimited one the group's charges leave together when
      // it is used up.
      if (tls_fetch != nullptr) {
        const int64_t bytes = ResultBytes(r);
        group_->reserved -= bytes;
        tls_fetch->AddTransferred(bytes);
      } else if (runtime_->memory().limit() > 0) {
        // Released in batches (see "Groups"): the bytes stay in group_->reserved until
        // then, and what is left leaves when the group is used up.
        group_unreleased_ += ResultBytes(r);
        if (++group_unreleased_count_ >= kReleaseBatch ||
            group_unreleased_ >= kReleaseBatchBytes) {
          FlushGroupRelease();
        }
      }
    } else if (r.ok()) {
      continue;  // dropped (filter)
    }
    return std::move(r);
  }
  return std::nullopt;
}

bool AsyncBufferIterator::CompleteLocked(Slot* s, Result<std::optional<Element>> result,
                                         bool defer_wake) {
  s->done = true;
  completed_.fetch_add(1, std::memory_order_relaxed);
  if (grouped_) RecordLimitLocked();  // g may have changed (RunGroup)
  starving_.store(false, std::memory_order_relaxed);  // something is ready now
  s->unit.inputs.clear();
  s->unit.output = Element();
  int64_t bytes = 0;
  int64_t largest = -1;  // the largest element's bytes; -1: no element
  if (grouped_) {
    // The group's results (RunGroup), or its input error alone; each charged its bytes.
    if (s->results.empty()) s->results.push_back(std::move(s->input_error));
    bytes = s->group_bytes;
    largest = s->largest;
  } else {
    s->result = std::move(result);
    bytes = s->result.ok() && s->result->has_value() ? ElementBytes(**s->result) : 0;
    largest = s->result.ok() && s->result->has_value() ? bytes : -1;
  }
  if (bytes > s->reserved) {
    runtime_->memory().ForceReserve(bytes - s->reserved);
  } else {
    runtime_->memory().Release(s->reserved - bytes);
  }
  s->reserved = bytes;
  if (largest > estimate_) {
    estimate_ = largest;
    runner_cv_.SignalAll();  // it may be waiting for the first size
  }
  idle_cv_.SignalAll();
  // Wake the consumer only when it waits and can take this slot (deterministic: the
  // oldest); every other state it waits for signals on its own.
  const bool wake = (waiting_unreserved_ > 0 || !reserved_waiters_.empty()) &&
                    (!deterministic_ || slots_.empty() || slots_.front().get() == s);
  if (wake && grouped_) test_consumer_signals.fetch_add(1, std::memory_order_relaxed);
  if (wake && !defer_wake) consumer_cv_.SignalAll();
  return wake;
}

std::unique_ptr<AsyncBufferIterator::Slot> AsyncBufferIterator::TakeReadyLocked() {
  auto it = slots_.begin();
  if (deterministic_) {
    if (it == slots_.end() || !(*it)->done) return nullptr;
  } else {
    it = std::find_if(slots_.begin(), slots_.end(), [](const auto& s) { return s->done; });
    if (it == slots_.end()) return nullptr;
  }
  std::unique_ptr<Slot> s = std::move(*it);
  slots_.erase(it);
  // A group's room comes back when it is used up (GetNextInternal); the slot count
  // matters to a runner waiting on the budget.
  if (!grouped_ || runner_budget_wait_) {
    if (grouped_) test_runner_signals.fetch_add(1, std::memory_order_relaxed);
    runner_cv_.SignalAll();
  }
  if (grouped_) return s;  // its results' charges move on one by one (TakeFromGroup)
  // Handing the element to a buffer's fetch moves its charge along; otherwise it leaves
  // the budget here.
  if (tls_fetch != nullptr) {
    tls_fetch->AddTransferred(s->reserved);
  } else {
    runtime_->memory().Release(s->reserved);
  }
  s->reserved = 0;
  return s;
}

void AsyncBufferIterator::PublishGaugesLocked() {
  int64_t bytes = 0, ready = 0;
  for (const auto& s : slots_) {
    bytes += s->reserved;
    ready += !s->done ? 0 : grouped_ ? static_cast<int64_t>(s->results.size()) : 1;
  }
  RecordBuffered(bytes, ready);
}

Result<std::optional<Element>> AsyncBufferIterator::GetNextInlineElement() {
  // The element itself (prefetch), or mapped in place at its position as ProcessInline
  // would (a map): no unit. An input error or the end takes no position (as PullUnit); an
  // exception in the map fails the element.
  Result<std::optional<Element>> r =
      input_end_ ? Result<std::optional<Element>>(std::optional<Element>())
                 : FinishSafely([&] { return input_->GetNext(); });
  if (r.ok()) [[likely]] {
    if (!r->has_value()) {
      input_end_ = true;
    } else if (!maps_in_place_) {
      ++next_position_;
    } else if (Status s = MapInPlaceSafely(&**r, next_position_++); !s.ok()) [[unlikely]] {
      r = std::move(s);
    }
  }
  return r;
}

Result<std::optional<Element>> AsyncBufferIterator::GetNextInline() {
  if (passthrough_ || maps_in_place_) return GetNextInlineElement();
  if (input_end_) return std::nullopt;
  WorkUnit& unit = inline_unit_;
  while (true) {
    unit.inputs.clear();
    unit.first_position = next_position_;
    Status error;
    bool end = false;
    int64_t dropped = 0;
    PullUnit(&unit, &error, &end, &dropped);
    const int64_t n = static_cast<int64_t>(unit.inputs.size());
    if (end) input_end_ = true;
    if (end && (n == 0 || processor_->drop_partial_unit())) return std::nullopt;
    next_position_ += n + dropped;
    if (!error.ok()) return error;
    Result<std::optional<Element>> out = ProcessInline(&unit);
    if (out.ok() && !out->has_value()) {  // dropped (filter)
      if (input_end_) return std::nullopt;
      if (cancel_requested_.load(std::memory_order_relaxed)) {
        return CancelledError(node().op() + ": iterator cancelled");
      }
      continue;
    }
    return out;
  }
}

Result<std::optional<Element>> AsyncBufferIterator::GetNextInternal() {
  // The consumer's group, without a lock (see "Groups").
  if (group_ != nullptr && !cancel_requested_.load(std::memory_order_relaxed)) {
    if (auto r = TakeFromGroup()) return std::move(*r);
  }
  // The lock-free inline path (see the header): this thread owns the input while no runner
  // runs and nothing is buffered, which only this thread can change.
  if (inline_owned_ && inline_mode() && !cancel_requested_.load(std::memory_order_relaxed)) {
    return GetNextInline();
  }
  if (ring_ != nullptr) return GetNextRing();
  // A used-up group's room wakes a waiting runner after mu_ is released (declared before
  // the lock, so destroyed after it), or before this thread waits.
  bool wake_runner = false;
  struct WakeAfterUnlock {
    CondVar* cv;
    const bool* on;
    ~WakeAfterUnlock() {
      if (*on) cv->SignalAll();
    }
  } wake_after{&runner_cv_, &wake_runner};
  MutexLock l(&mu_);
  runner_started_ = true;
  bool spun = false;  // polled for a group once already (below)
  while (true) {
    if (group_ != nullptr) {
      // Used up (or cancelled): its elements leave the count, what it still holds the
      // budget.
      buffered_elements_ -= group_->elements;
      RecordLimitLocked();
      runtime_->memory().Release(group_->reserved);  // with the unreleased bytes
      group_unreleased_ = 0;
      group_unreleased_count_ = 0;
      if (free_slots_.size() < kFreeSlots) {
        // Kept for the runner's next group: its vectors keep their room.
        group_->unit.inputs.clear();
        group_->results.clear();
        group_->input_error = Status::OK();
        group_->reserved = 0;
        group_->group_bytes = 0;
        group_->largest = -1;
        group_->elements = 1;
        group_->done = false;
        group_->parts = group_->parts_left = 0;
        free_slots_.push_back(std::move(group_));
      }
      group_.reset();
      if (HasRoomLocked() && !wake_runner) {
        test_runner_signals.fetch_add(1, std::memory_order_relaxed);
        wake_runner = true;
      }
    }
    if (cancelled_) return CancelledError(node().op() + ": iterator cancelled");
    std::unique_ptr<Slot> s = TakeReadyLocked();
    if (s != nullptr) {
      PublishGaugesLocked();
      if (grouped_) {
        group_ = std::move(s);
        group_next_ = 0;
        if (auto r = TakeFromGroup()) return std::move(*r);
        continue;  // every element dropped (filter)
      }
      if (s->result.ok() && !s->result->has_value()) continue;  // dropped (filter)
      return std::move(s->result);
    }
    if (input_end_ && slots_.empty()) return std::nullopt;
    if (inline_mode() && !runner_active_ && slots_.empty()) {
      // Inline: this thread pulls and processes the next unit (see the header). Until it
      // starts a runner, only this thread reads the input or moves next_position_: the
      // next calls take the lock-free path.
      inline_owned_ = true;
      l.Unlock();
      return GetNextInline();
    }
    if (!inline_mode() && !runner_active_ && !input_end_) {
      // (Re)start the runner; a previous one has left its loop and released mu_.
      if (runner_.joinable()) runner_.join();
      inline_owned_ = false;
      runner_active_ = true;
      runner_ = std::thread([this] { RunnerLoop(); });
    }
    // Wait, telling the runner who waits (see UrgentLocked).
    if (wake_runner) {
      runner_cv_.SignalAll();
      wake_runner = false;
    }
    // A group of cheap work (kMaxGroup elements that take less than kGroupSpinNs) is
    // done sooner than a sleep and a wake-up: poll for it first (see "Groups").
    if (grouped_ && !spun && runner_active_ && group_size() > 1 &&
        group_size() * std::max<int64_t>(1, work_ns_.load(std::memory_order_relaxed)) <=
            kGroupSpinNs) {
      spun = true;
      const int64_t seen = completed_.load(std::memory_order_relaxed);
      l.Unlock();
      const int64_t until = MonotonicNs() + 2 * kGroupSpinNs;
      while (completed_.load(std::memory_order_relaxed) == seen &&
             !cancel_requested_.load(std::memory_order_relaxed) && MonotonicNs() < until) {
        PaceUntil(MonotonicNs() + 500);
      }
      l.Lock();
      continue;
    }
    const std::atomic<bool>* waiter = BeginWaitLocked();
    consumer_cv_.Wait(&mu_);
    EndWaitLocked(waiter);
  }
}

bool AsyncBufferIterator::QuiescentLocked() const {
  if (fetching_ || running_tasks_ > 0 || !pending_.empty()) return false;
  return std::all_of(slots_.begin(), slots_.end(), [](const auto& s) { return s->done; });
}

Status AsyncBufferIterator::SaveInternal(CheckpointWriter* w) const {
  MutexLock l(&mu_);
  paused_ = true;
  if (ring_ != nullptr) {
    // The ring's runner stops between elements (RingRunnerMustStop).
    pause_requested_.store(true, std::memory_order_relaxed);
    ring_producer_ec_.Notify();
  }
  idle_cv_.Wait(&mu_, [this]() REQUIRES(mu_) { return cancelled_ || QuiescentLocked(); });
  Status st = SaveLocked(w);
  paused_ = false;
  if (ring_ != nullptr) {
    pause_requested_.store(false, std::memory_order_relaxed);
    ring_producer_ec_.Notify();
  }
  runner_cv_.SignalAll();
  return st;
}

Status AsyncBufferIterator::SaveLocked(CheckpointWriter* w) const {
  if (cancelled_) return CancelledError(node().op() + ": iterator cancelled");
  w->WriteInt(prefix(), "input_end", input_end_ ? 1 : 0);
  w->WriteInt(prefix(), "next_position", next_position_);
  // The ring (paused, and this is its consumer's thread) or the slots, oldest first;
  // groups: the rest of the consumer's group (this is its thread), then every buffered
  // group's results, one entry each.
  std::vector<const Result<std::optional<Element>>*> entries;
  if (ring_ != nullptr) {
    for (size_t i = 0; i < ring_->Size(); ++i) entries.push_back(&ring_->Peek(i).result);
  } else if (grouped_) {
    if (group_ != nullptr) {
      for (size_t i = group_next_; i < group_->results.size(); ++i) {
        entries.push_back(&group_->results[i]);
      }
    }
    for (const auto& s : slots_) {
      for (const auto& r : s->results) entries.push_back(&r);
    }
  } else {
    for (const auto& s : slots_) entries.push_back(&s->result);
  }
  const size_t n = entries.size();
  w->WriteInt(prefix(), "num_slots", static_cast<int64_t>(n));
  for (size_t i = 0; i < n; ++i) {
    const std::string key = "slot" + std::to_string(i);
    const Result<std::optional<Element>>& r = *entries[i];
    if (!r.ok()) {
      w->WriteInt(prefix(), key + ".code", static_cast<int64_t>(r.status().code()));
      w->WriteString(prefix(), key + ".message", r.status().message());
    } else if (!r->has_value()) {
      w->WriteInt(prefix(), key + ".code", -1);  // dropped
    } else {
      w->WriteInt(prefix(), key + ".code", 0);
      w->WriteElement(prefix(), key + ".element", **r);
    }
  }
  // The runner is paused and not inside the input: the input is quiescent.
  return input_->Save(w);
}

Status AsyncBufferIterator::RestoreInternal(const CheckpointReader& r) {
  MutexLock l(&mu_);
  if (runner_started_) {
    return FailedPreconditionError(node().op() + ": Restore after GetNext");
  }
  SLUICE_ASSIGN_OR_RETURN(int64_t end, r.ReadInt(prefix(), "input_end"));
  SLUICE_ASSIGN_OR_RETURN(int64_t next_position, r.ReadInt(prefix(), "next_position"));
  SLUICE_ASSIGN_OR_RETURN(int64_t n, r.ReadInt(prefix(), "num_slots"));
  if (n < 0 || n > kMaxCheckpointSlots || next_position < 0) {
    return DataLossError(node().op() + ": inconsistent checkpoint (num_slots " +
                         std::to_string(n) + ", next_position " +
                         std::to_string(next_position) + ")");
  }
  std::deque<std::unique_ptr<Slot>> slots;
  for (int64_t i = 0; i < n; ++i) {
    const std::string key = "slot" + std::to_string(i);
    SLUICE_ASSIGN_OR_RETURN(int64_t code, r.ReadInt(prefix(), key + ".code"));
    auto s = std::make_unique<Slot>();
    s->done = true;
    if (code == -1) {
      s->result = std::optional<Element>();
    } else if (code == 0) {
      SLUICE_ASSIGN_OR_RETURN(Element e, r.ReadElement(prefix(), key + ".element"));
      s->reserved = ElementBytes(e);
      s->result = std::optional<Element>(std::move(e));
    } else if (code > 0 && code <= static_cast<int64_t>(StatusCode::kUnauthenticated)) {
      SLUICE_ASSIGN_OR_RETURN(std::string msg, r.ReadString(prefix(), key + ".message"));
      s->result = Status(static_cast<StatusCode>(code), std::move(msg));
    } else {
      return DataLossError(node().op() + ": checkpoint slot " + std::to_string(i) +
                           " has an invalid status code " + std::to_string(code));
    }
    slots.push_back(std::move(s));
  }
  SLUICE_RETURN_IF_ERROR(input_->Restore(r));
  for (const auto& s : slots_) runtime_->memory().Release(s->reserved);
  if (ring_ != nullptr) {
    FlushRingPops();
    RingItem item;
    while (ring_->TryPop(&item)) runtime_->memory().Release(item.reserved);
    ring_bytes_in_.store(0, std::memory_order_relaxed);
    ring_bytes_out_.store(0, std::memory_order_relaxed);
    if (slots.size() > ring_->capacity()) {
      ring_.reset();  // more than a ring holds: this iterator uses the slots
    } else {
      for (auto& s : slots) {
        runtime_->memory().ForceReserve(s->reserved);
        if (s->reserved > 0) estimate_ = std::max(estimate_, s->reserved);
        ring_bytes_in_.store(ring_bytes_in_.load(std::memory_order_relaxed) + s->reserved,
                             std::memory_order_relaxed);
        ring_->TryPush(RingItem{std::move(s->result), s->reserved});
      }
      slots.clear();
      input_end_ = end != 0;
      next_position_ = next_position;
      PublishRingGauges();
      return Status::OK();
    }
  }
  slots_ = std::move(slots);
  for (const auto& s : slots_) {
    runtime_->memory().ForceReserve(s->reserved);
    if (s->reserved > 0) estimate_ = std::max(estimate_, s->reserved);
    if (grouped_) s->results.push_back(std::move(s->result));  // one-element groups
  }
  buffered_elements_ = grouped_ ? static_cast<int64_t>(slots_.size()) : 0;
  input_end_ = end != 0;
  next_position_ = next_position;
  PublishGaugesLocked();
  return Status::OK();
}

}  // namespace sluice
