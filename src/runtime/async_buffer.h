// AsyncBufferIterator: the one mechanism behind the buffered parallel operators (prefetch,
// parallel map and filter, parallel batch, map_and_batch).
//
// Shape. A runner thread (one per iterator, started by the first GetNext) pulls *units*
// from the input: one element, or batch_size elements for batching ops. Each unit gets a
// slot in an ordered buffer and is split into parts that run on the pipeline's pool
// (Executor), at most `parallelism` parts at once for this operator. When a unit's parts
// are done its result (an element, an error, or nothing for a dropped unit) is ready.
// GetNext takes the oldest slot when deterministic, or any ready slot otherwise.
//
//   input --runner--> [slot slot slot ...] --GetNext--> consumer
//                        |    |    |
//                       pool tasks (UnitProcessor::ProcessPart)
//
// Bounds. The buffer holds at most `capacity` slots (in flight + ready), so memory is
// bounded however slow one element is: in non-deterministic mode a slow element occupies
// one slot while the others flow past it (the reorder window is the capacity). Before
// fetching a unit the runner reserves its estimated bytes in the pipeline's MemoryBudget
// and waits while the budget is full (see memory_budget.h for the exact guarantee).
//
// Tunables. parallelism and capacity are atomics; the runner and dispatcher read them on
// every decision, so a new value takes effect at once (a lower parallelism lets running
// parts finish and starts no new ones above it; a lower capacity stops fetching until the
// buffer drains below it). Their values are published in NodeStats (parallelism,
// buffer_limit). An AUTOTUNE parallelism starts at Runtime::initial_parallelism() (the CPU
// budget unless set) and, when the runtime tunes, is registered as the knob
// "parallelism" in [1, cpu_budget] (runtime/tunable.h). A capacity left at 0 follows the
// parallelism (processor->Capacity(parallelism), re-derived when the parallelism changes);
// an AUTOTUNE capacity starts there too and is registered as the knob "buffer_size" in
// [1, kMaxTunedCapacity]. Knobs unregister first thing in the destructor.
//
// Inline mode. Handing each element to another thread costs about kHandoffNs; when the
// work an op moves off the consumer's thread is smaller than that, running it on the
// consumer's thread is faster. So an op whose parallelism or buffer size is AUTOTUNE, in
// a runtime that tunes, registers a third knob, "inline" (KnobKind::kMode, 0 or 1), and
// starts inline: GetNext pulls one unit from the input, runs its parts in order and
// finishes it on the calling thread, with no runner, no slot and nothing buffered. The
// autotuner (autotune/autotuner.h) sets the knob to 0 when the measured work per element
// (the op's own CPU; for Prefetch, its whole input's) exceeds kHandoffNs, and back to 1
// when it falls well below. Leaving inline mode starts the runner at the next GetNext;
// entering it stops the runner after its current unit, and GetNext drains the buffered
// slots before running inline. Either way the input is read by one thread at a time and
// positions continue, so the order (deterministic or not), the elements, errors,
// checkpoints (an inline op saves an empty buffer), cancellation (Cancel reaches the
// input the consumer is blocked in) and the memory budget (an inline op holds nothing)
// keep their contracts. The stats plane sees inline work as the op's own GetNext time.
// Once GetNext has found the op inline with no runner and nothing buffered, it owns the
// input until it starts a runner itself, so later inline calls take no lock at all
// (GetNextInline; a Cancel is seen through an atomic flag), and the unit they process is
// `exclusive` (processors skip WorkUnit::mu). A map (UnitProcessor::maps_in_place) needs
// no unit at all there: its function runs on the element in place at its position, at a
// sequential Map's cost per element.
//
// Checkpoints. Save pauses the runner, waits for in-flight parts to finish, then writes
// every buffered result (elements, errors, dropped markers) and the input's state; the
// checkpoint grows with the buffer (capacity x element size). Restore (before the first
// GetNext) refills the buffer from it. So a restored iterator yields exactly what the saved
// one would have, in deterministic mode; in non-deterministic mode it yields the same
// multiset.
//
// Cancellation. Cancel (and the destructor) wakes every wait; GetNext then returns
// Cancelled; the destructor joins the runner and waits for running parts (a part is never
// interrupted). The pool never blocks on the pipeline: only the runner calls the input.
//
// Ring (passthrough processors: Prefetch). The async path needs no slot, no pool and no
// lock per element: the runner pushes each fetched element (or error) with its charge
// into an SpscRing and the consumer pops it, each side sleeping on an EventCount only
// when the ring is empty (consumer) or full (runner), and woken only then. The runner
// works in runs: it takes mu_ once per run of up to kRingRun elements (the room in the
// buffer), to honour pauses, the budget's admission rule and positions, then fetches the
// run without it. It waits for room until the ring is down to half the capacity, and
// wakes a sleeping consumer at the push that ends its wait (never later: a deferred wake
// deadlocks when the next fetch waits for memory the sleeping consumer holds). Each side
// polls before sleeping: the consumer kRingSpinNs, the runner for as long as the consumer
// keeps popping, and either side kRingWakeNs after it woke the other when the other
// pushes or pops every kRingFastNs or faster (a wake-up takes longer than a small buffer
// of fast elements lasts; without that the two took turns sleeping; slower elements are
// not worth a core's polling). Behind a runner that pushes every kRingSlipNs or faster,
// a consumer that found the ring empty waits for kRingSlip elements (or a few push
// intervals) before taking the first (temporal slipping), so the two never work on the
// same cache line of slots. The per-element path touches no shared counter: the runner reserves budget in batches of
// up to kReleaseBatchBytes (the rest given back at the end of its run), the consumer
// gives charges back and publishes the gauges every kReleaseBatch elements or
// kReleaseBatchBytes and before it may sleep (FlushRingPops), and Notify is a load behind
// a compiler barrier (spsc_ring.h, asymmetric fences).
// Everything else is as
// above: the memory budget (each element reserves its estimate before the fetch and is
// charged its bytes; an empty ring may fetch unreserved when the demand is urgent),
// FetchScope transfers, checkpoints (Save pauses the runner between runs' elements and
// writes the ring's elements in order), inline mode (the runner leaves, the consumer
// drains the ring first), cancellation and the stats gauges. A ring holds at most
// kMaxRingSlots; a larger buffer (or a checkpoint with more elements) uses the slots.
//
// Groups (groupable processors: ParallelMap, ParallelFilter, MapAndFilter). Handing one
// element to another thread through a slot costs a slot, a pool task, mutex round trips
// and a wake (kHandoffNs); for cheap functions that is most of the time. So the runner
// pulls a run of g input elements into one slot (a group), the group runs as one pool
// task (its elements processed in order, each exactly as a one-element unit: own
// FunctionContext position, own result), and the consumer takes the group's results one
// by one from the slot it took, with no lock per element (it owns the slot, keeping a
// cursor). The group size follows the measured work per element (wall time of a group's
// task over its elements): g = clamp(kGroupTargetNs / work, 1, kMaxGroup), starting at 1
// before the first measurement and at most doubling from one group to the next; slow
// functions (work >= kGroupTargetNs) keep g = 1, so parallelism and latency are those of
// one element per slot; and g holds at most kGroupMaxBytes of elements of the largest
// size seen. A group's pull also ends when it has taken kGroupTargetNs (a slow
// input never holds a group back long), at an input error (the error becomes the group's
// last result; the elements before it are processed) or at the end of input. Used groups'
// slots are kept for the runner's next groups (their vectors keep their room). Wakes
// (cheap work is mostly wake-ups): the consumer wakes the runner only when a used-up
// group gives room back (not when it takes a group, nor when it waits unless the runner
// waits on the budget), after releasing mu_; a runner that found the buffer full waits
// until it is half empty once groups hold more than one element (one wake per two groups;
// g = 1 keeps waiting for one slot); a finished group wakes the consumer only when it
// waits for that group (deterministic: the oldest), after releasing mu_; a consumer about
// to wait for a group of cheap work (kMaxGroup elements in under kGroupSpinNs) polls
// for it for up to 2 x kGroupSpinNs first (it comes sooner than a sleep and a wake-up).
// While the buffer is at least half full (the runner is ahead of its consumer) the runner runs a group of
// at least 16 elements (cheap work) itself, as the pool would (RunPart: counted against
// the parallelism and in running tasks, so Save and the destructor wait for it), sparing
// the pool's wake-up; when the consumer catches up the groups go to the pool again. Under
// a limited budget the consumer releases handed-out results' charges in batches of
// kReleaseBatch elements or kReleaseBatchBytes (the rest when the group is used up), so
// up to that much stays charged a little longer: the budget errs on the safe side. What
// stays: the order (deterministic: groups in input order, results in order inside each;
// otherwise groups as they finish), errors (a failing element yields its error at its
// position and the group goes on), the memory budget (each element reserves its estimate
// before its fetch, a group stops growing when a reservation fails, an unknown size under
// a limited budget keeps g = 1, an urgent unreserved fetch is a one-element group; each
// result is charged its bytes until the consumer hands it out, or, under an unlimited
// budget, until its group is used up), capacity (counted in elements: the slots hold at
// most capacity x g elements while the capacity follows the parallelism (2 x parallelism
// groups' worth: g elements per slot), at most `capacity` elements when it is set; the
// consumer's group counts until it is used up; NodeStats' buffer_limit is that element
// bound, or what the buffer holds when g shrank below what it admitted), checkpoints
// (Save writes the unconsumed results of the consumer's group, then
// every buffered group's results, one entry per element, in order; Restore refills
// one-element slots, so the restored iterator yields exactly the same sequence),
// cancellation, inline mode (untouched: it has no slots) and the stats plane (a group is
// one task, on the pool or the runner; its CPU is the op's, its elements are counted as
// they are returned; gauges count elements).
//
// Thread-safety: GetNext/Save/Restore from one thread at a time (IteratorBase contract);
// Cancel and stats from any thread. Internal state is GUARDED_BY(mu_), except the ring
// (SpscRing's own contract) and the atomics.
#ifndef SLUICE_RUNTIME_ASYNC_BUFFER_H_
#define SLUICE_RUNTIME_ASYNC_BUFFER_H_

#include <atomic>
#include <deque>
#include <memory>
#include <thread>
#include <vector>

#include "core/mutex.h"
#include "graph/op_def.h"
#include "runtime/iterator_base.h"
#include "runtime/runtime.h"
#include "runtime/spsc_ring.h"

namespace sluice {

// A unit of work: the input elements the runner pulled for one output.
struct WorkUnit {
  std::vector<Element> inputs;
  int64_t first_position = 0;  // input position of inputs[0] (for FunctionContext)
  // Output under construction (batching ops allocate it from the first finished row).
  // Allocated under `mu` by the first part that needs it; Finish reads it without `mu`,
  // after every part returned.
  Element output;
  // True when one thread runs every part and Finish (inline mode): processors may then
  // skip `mu` (nothing runs concurrently).
  bool exclusive = false;
  Mutex mu;  // guards output allocation and `status` among concurrent parts
  Status status GUARDED_BY(mu);  // the first error of any part
  // For processors that set `status` themselves under `mu` and return OK from ProcessPart
  // (batching ops: the lowest failed row wins, so the error does not depend on
  // scheduling): the input row `status` came from; -1 when none.
  int64_t status_row GUARDED_BY(mu) = -1;
};

// What an operator does to each unit. Implementations are immutable after construction
// (ProcessPart runs concurrently on the pool).
class UnitProcessor {
 public:
  virtual ~UnitProcessor() = default;
  // Input elements per unit (1, or batch_size for batching ops).
  virtual int64_t inputs_per_unit() const { return 1; }
  // Whether a last unit with fewer inputs is dropped (drop_remainder).
  virtual bool drop_partial_unit() const { return false; }
  // Buffer capacity (slots) for a parallelism.
  virtual int64_t Capacity(int64_t parallelism) const { return 2 * parallelism; }
  // Parts to split a unit into, run concurrently; 0 runs nothing on the pool (prefetch:
  // Finish is called on the runner).
  virtual int NumParts(const WorkUnit& u, int64_t parallelism) const { return 1; }
  // Part `part` of `num_parts`, on a pool thread. An error fails the unit.
  virtual Status ProcessPart(WorkUnit* u, int part, int num_parts) const = 0;
  // After all parts succeeded: the unit's output, or nullopt to drop it (filter).
  virtual Result<std::optional<Element>> Finish(WorkUnit* u) const = 0;
  // The exact bytes of every output when known statically (fully shaped numeric spec),
  // else -1.
  virtual int64_t StaticOutputBytes() const { return -1; }
  // True when every output is its unit's single input unchanged (prefetch: one input per
  // unit, no parts, Finish moves inputs[0] out). Such an op's async path hands elements
  // over through a lock-free ring (see "Ring" in AsyncBufferIterator).
  virtual bool passthrough() const { return false; }
  // True for element-wise processors (one input per unit, one part, Finish yields that
  // input's output or drops it: map, filter). Their async path groups units (see "Groups"
  // in AsyncBufferIterator). ProcessPart and Finish must not depend on other units.
  virtual bool groupable() const { return false; }
  // True for processors whose unit is one input changed in place into its one output (a
  // map): MapInPlace then does ProcessPart + Finish's work on a bare element at its input
  // position, which the inline path calls with no unit (a sequential map's cost).
  virtual bool maps_in_place() const { return false; }
  virtual Status MapInPlace(Element* e, int64_t position) const {
    return InternalError("MapInPlace not offered");
  }
};

struct AsyncBufferOptions {
  int64_t parallelism = 1;  // or kAutotune
  // Slots; 0: processor->Capacity(parallelism), following the parallelism; kAutotune: the
  // same start, then tuned.
  int64_t capacity = 0;
  int64_t deterministic = -1;  // -1: the runtime's default, 0, 1
};

class AsyncBufferIterator final : public IteratorBase {
 public:
  AsyncBufferIterator(DatasetPtr node, std::string prefix,
                      std::unique_ptr<const UnitProcessor> processor,
                      AsyncBufferOptions options);
  ~AsyncBufferIterator() override;

  Status Initialize(const IteratorContext& ctx) override;
  void Cancel() override;
  // False while inline (its input then runs on the consumer's thread: the stats plane
  // subtracts the input's CPU from this op's, as for a synchronous op).
  bool async() const override { return !inline_mode(); }

  // The largest buffer the tuner may give an AUTOTUNE capacity (the RAM budget bounds it
  // further, in the tuner's model and at run time).
  static constexpr int64_t kMaxTunedCapacity = 256;
  // What handing one element to another thread costs, in ns: the line between inline
  // and async. The CPU an async no-op map or prefetch measures per element on a loaded
  // 2-core machine is 3-7 us (bench/handoff_bench, docs/performance.md); the stats plane's
  // sampled CPU of cheap inline work reads up to ~2.5 us, so the line sits above both.
  static constexpr int64_t kHandoffNs = 5000;
  // The largest buffer served by a ring (larger ones use the slots), and the most
  // elements the ring's runner fetches per lock.
  static constexpr int64_t kMaxRingSlots = 4096;
  static constexpr int64_t kRingRun = 64;
  // A time long past (the ring's "last woke the other side" before any wake).
  static constexpr int64_t kNeverNs = std::numeric_limits<int64_t>::min() / 2;
  // Groups (see "Groups"): the work a group aims to carry, and the most elements and
  // bytes in one group. A group costs a pool task, a few lock round trips and up to two
  // sleeps and wake-ups (tens of us of CPU on a virtual machine, over all threads): at
  // 4 x kHandoffNs (20 us) a tokenizer with num_parallel_calls=2 ran at 0.4x of the
  // same map sequential on 2 cores, at 100 us 0.7-0.8x.
  static constexpr int64_t kGroupTargetNs = 20 * kHandoffNs;
  static constexpr int64_t kMaxGroup = 256;
  static constexpr int64_t kGroupMaxBytes = int64_t{4} << 20;
  // The consumer prefetches the tensor list of the group result this many takes ahead.
  static constexpr size_t kGroupPrefetchAhead = 4;
  // The group size the runner uses next (1 before the first measurement); for tests.
  int64_t group_size() const { return group_size_.load(std::memory_order_relaxed); }
  // Tests: the work a group aims at, for every iterator of the process (0: back to
  // kGroupTargetNs). Sanitized builds make even an identity function cost more than the
  // default target, so tests of the groups' contracts raise it to get groups anyway.
  static void SetGroupTargetNsForTesting(int64_t ns);
  static int64_t GroupTargetNs();
  // Tests: counts since the process started, over every grouped iterator: groups run,
  // wakes the consumer sent the runner (a taken slot, a used-up group, a wait), and wakes
  // a finished group sent a waiting consumer (see "Groups": about one each per group).
  struct GroupSignals {
    int64_t groups = 0;
    int64_t runner_signals = 0;
    int64_t consumer_signals = 0;
    int64_t runner_groups = 0;  // groups the runner ran itself (a half-full buffer)
  };
  static GroupSignals GroupSignalsForTesting();
  // The consumer releases its group's charges from a limited budget in batches of this
  // many elements or bytes (see "Groups").
  static constexpr int64_t kReleaseBatch = 32;
  static constexpr int64_t kReleaseBatchBytes = 64 << 10;

  // Tunables (thread-safe; take effect at once).
  void set_parallelism(int64_t p);
  void set_capacity(int64_t c);
  int64_t parallelism() const { return parallelism_.load(std::memory_order_relaxed); }
  int64_t capacity() const { return capacity_.load(std::memory_order_relaxed); }
  // Inline mode (see above): true runs each unit on the consumer's thread.
  void set_inline(bool on);
  bool inline_mode() const { return inline_.load(std::memory_order_relaxed); }

 protected:
  Result<std::optional<Element>> GetNextInternal() override;
  Status SaveInternal(CheckpointWriter* w) const override;
  Status RestoreInternal(const CheckpointReader& r) override;

 private:
  // Once in slots_, a slot's fields other than `unit` (and `parts`, fixed before its
  // parts are scheduled) are guarded by mu_ (which the analysis cannot name from here).
  struct Slot {
    WorkUnit unit;
    int parts = 0;       // parts the unit was split into
    int parts_left = 0;  // not yet finished
    bool done = false;
    Result<std::optional<Element>> result{std::nullopt};
    int64_t reserved = 0;  // bytes reserved in the budget for this slot
    // Groups: one result per input element (unit.inputs), then the input error that ended
    // the pull, if any; `elements` counts against the capacity.
    std::vector<Result<std::optional<Element>>> results;
    Status input_error;
    int64_t elements = 1;
    int64_t group_bytes = 0;  // the results' bytes, and the largest result's (-1: none)
    int64_t largest = -1;
  };
  struct Part {
    Slot* slot;
    int index;
  };
  // What the ring carries: a result (an element or an input error) and the bytes it is
  // charged in the budget.
  struct RingItem {
    Result<std::optional<Element>> result{std::nullopt};
    int64_t reserved = 0;
  };

  void RunnerLoop() EXCLUDES(mu_);
  // processor_->MapInPlace, an exception turned into the element's error.
  Status MapInPlaceSafely(Element* e, int64_t position) const;
  // Consumer: fetches the lines of the elements a few pops ahead (async_buffer.cc).
  void PrefetchRingAhead() const;
  // Publishes the buffer's limit (NodeStats' buffer_limit): the capacity, or for groups
  // capacity x g, at least the elements admitted under a larger g.
  void RecordLimitLocked() REQUIRES(mu_);
  // The ring's runner and consumer (see "Ring").
  void RingRunnerLoop() EXCLUDES(mu_);
  // Waits until the ring has room for a run (at most half full), or the runner must stop
  // or pause. Lock-free.
  void WaitForRingRoom(int64_t woke_consumer_ns);
  Result<std::optional<Element>> GetNextRing() EXCLUDES(mu_);
  // The ring's gauges (buffered bytes and elements) into the stats.
  void PublishRingGauges();
  // Gives the budget the charges of the elements popped since the last flush and
  // publishes the gauges (consumer thread; every kReleaseBatch pops or kReleaseBatchBytes,
  // and before the consumer may sleep).
  void FlushRingPops();
  // The ring's current limit: the capacity, at most the ring's size.
  int64_t RingLimit() const;
  // Whether the ring's runner must stop fetching: cancelled, inline or pausing.
  bool RingRunnerMustStop() const;
  // Pulls one unit from the input (the runner's fetch, also used inline): its inputs,
  // the input error (rows pulled before it dropped and counted in *dropped), end of input.
  void PullUnit(WorkUnit* unit, Status* error, bool* end, int64_t* dropped) EXCLUDES(mu_);
  // Runs a pulled unit's parts in order and finishes it on the calling thread. The unit
  // is exclusive to this thread, so its status is read without its lock (beyond the
  // analysis).
  Result<std::optional<Element>> ProcessInline(WorkUnit* unit) NO_THREAD_SAFETY_ANALYSIS;
  // Inline GetNext without mu_: pulls and processes units on the calling thread until one
  // yields an output (filter drops go on), an error, or the end. Only while
  // inline_owned_: no runner runs and nothing is buffered, so no other thread reads the
  // fields it moves (next_position_, input_end_), though they are GUARDED_BY(mu_) for the
  // async paths; the analysis cannot see that ownership.
  Result<std::optional<Element>> GetNextInline() NO_THREAD_SAFETY_ANALYSIS;
  // GetNextInline's element path (a prefetch; a map in place), with one named return
  // object: a second return path would cost a Result move per element (the sequential
  // Map has one).
  Result<std::optional<Element>> GetNextInlineElement() NO_THREAD_SAFETY_ANALYSIS;
  // Takes parts to start while under the parallelism limit; the caller schedules them
  // after unlocking.
  std::vector<Part> TakePartsToStart() REQUIRES(mu_);
  void Schedule(std::vector<Part> parts) EXCLUDES(mu_);
  void RunPart(Part p) EXCLUDES(mu_);
  // A group's task body (pool thread): fills p.slot->results and measures the work.
  void RunGroup(Slot* s);
  // Whether the slots have room for another unit (groups: elements).
  bool HasRoomLocked() const REQUIRES(mu_);
  // A result's charge: its element's bytes (the processor's static size when known).
  int64_t ResultBytes(const Result<std::optional<Element>>& r) const;
  // The most elements the slots may hold (groups).
  int64_t ElementLimit() const;
  // Pulls a group's further elements (after the first) without mu_: each reserves
  // `estimate` (>= 0) first; stops at `want`, an error, the end, a failed reservation or
  // kGroupTargetNs. Adds what it reserved to *reserved.
  void PullGroupRest(Slot* s, int64_t want, int64_t estimate, int64_t start_ns,
                     Status* error, bool* end, int64_t* reserved) EXCLUDES(mu_);
  // The next result of the consumer's group (group_), handing its charge on; nullopt
  // when the group is used up. GetNext's thread only, no lock.
  std::optional<Result<std::optional<Element>>> TakeFromGroup();
  // Releases the charges of the results TakeFromGroup handed out since the last flush.
  void FlushGroupRelease();
  // Marks a slot done with its result and settles its reservation. Wakes the consumer
  // when it waits for this slot, unless `defer_wake` (the caller signals consumer_cv_
  // after unlocking mu_); returns whether it should be woken.
  bool CompleteLocked(Slot* s, Result<std::optional<Element>> result,
                      bool defer_wake = false) REQUIRES(mu_);
  // Takes a ready slot (deterministic: only the oldest), or null.
  std::unique_ptr<Slot> TakeReadyLocked() REQUIRES(mu_);
  bool QuiescentLocked() const REQUIRES(mu_);
  // Whether the buffer must fetch even with the budget full: it is empty and its consumer
  // cannot progress otherwise (a user or unreserved runner waits, or a waiting runner's own
  // buffer is starving). Deadlock-freedom rests on this (memory_budget.h).
  bool UrgentLocked() const REQUIRES(mu_);
  // A consumer about to wait: registers it where UrgentLocked looks (its fetch's starving
  // flag when the fetch reserved budget, else a count), marks this buffer starving and
  // wakes the runner. EndWaitLocked undoes it with what BeginWaitLocked returned.
  const std::atomic<bool>* BeginWaitLocked() REQUIRES(mu_);
  void EndWaitLocked(const std::atomic<bool>* waiter) REQUIRES(mu_);
  void PublishGaugesLocked() REQUIRES(mu_);
  // SaveInternal's work once the runner is paused and the parts are idle.
  Status SaveLocked(CheckpointWriter* w) const REQUIRES(mu_);

  std::unique_ptr<const UnitProcessor> processor_;
  const AsyncBufferOptions options_;
  // The span of a part's work when a profiler is attached: "<prefix>/fn", "<op>:fn".
  const std::string work_prefix_;
  const std::string work_op_;
  bool deterministic_ = true;
  IteratorPtr input_;
  Runtime* runtime_ = nullptr;
  std::atomic<int64_t> parallelism_{1};
  std::atomic<int64_t> capacity_{2};
  bool capacity_follows_ = false;  // set by Initialize, then read-only
  bool passthrough_ = false;       // processor_->passthrough(), set by Initialize
  bool maps_in_place_ = false;     // processor_->maps_in_place(), set by Initialize
  TunableRegistry::Registration parallelism_knob_, capacity_knob_, inline_knob_;
  std::atomic<bool> inline_{false};

  mutable Mutex mu_;
  mutable CondVar runner_cv_;  // room in the buffer, unpaused, cancelled
  CondVar consumer_cv_;        // a slot became ready, end, cancelled
  mutable CondVar idle_cv_;    // fetch finished, a part finished
  std::deque<std::unique_ptr<Slot>> slots_ GUARDED_BY(mu_);
  std::deque<Part> pending_ GUARDED_BY(mu_);
  int64_t running_tasks_ GUARDED_BY(mu_) = 0;  // scheduled, not yet returned
  int64_t running_parts_ GUARDED_BY(mu_) = 0;  // counted against parallelism
  // Consumers blocked in GetNext: those holding no budget (users, runners fetching an
  // unreserved unit), and runners that reserved, by their buffers' starving flags.
  int waiting_unreserved_ GUARDED_BY(mu_) = 0;
  std::vector<const std::atomic<bool>*> reserved_waiters_ GUARDED_BY(mu_);
  // True while a consumer waits here with nothing ready (read by upstream buffers).
  std::atomic<bool> starving_{false};
  bool fetching_ GUARDED_BY(mu_) = false;        // runner inside input GetNext
  // The slots' runner waits on the budget (a waiting consumer or a taken slot wakes it).
  bool runner_budget_wait_ GUARDED_BY(mu_) = false;
  // Groups: the runner found the buffer full and waits until it is half empty.
  bool runner_refill_ GUARDED_BY(mu_) = false;
  mutable bool paused_ GUARDED_BY(mu_) = false;  // Save in progress
  bool cancelled_ GUARDED_BY(mu_) = false;
  bool input_end_ GUARDED_BY(mu_) = false;
  bool runner_started_ GUARDED_BY(mu_) = false;  // GetNext was called
  bool runner_active_ GUARDED_BY(mu_) = false;   // the runner thread is in its loop
  int64_t next_position_ GUARDED_BY(mu_) = 0;  // input elements fetched
  int64_t estimate_ GUARDED_BY(mu_) = -1;      // bytes per output; -1 unknown
  std::thread runner_;
  // The ring of a passthrough processor (null otherwise, or when the buffer is larger
  // than kMaxRingSlots); set by Initialize or Restore, before the first GetNext.
  std::unique_ptr<SpscRing<RingItem>> ring_;
  EventCount ring_consumer_ec_;  // an element, the end, the runner left, cancelled
  mutable EventCount ring_producer_ec_;  // room, pause, inline, cancelled
  // Time per push over the runner's last run, and per pop between the consumer's last two
  // flushes (FlushRingPops): whether the other side is fast enough to poll for after a
  // wake-up (kRingFastNs).
  std::atomic<int64_t> ring_push_interval_ns_{0};
  std::atomic<int64_t> ring_pop_interval_ns_{0};
  // When the consumer last woke a sleeping runner (consumer thread only; see kRingWakeNs).
  // The consumer's per-element fields start a cache line of their own (alignas), and
  // ring_bytes_in_ starts the next, so that no field the runner writes (or reads) per
  // element shares their line, wherever the heap places the object.
  alignas(64) int64_t woke_runner_ns_ = kNeverNs;
  // Popped since the last FlushRingPops (consumer thread only): elements, their bytes, and
  // the bytes whose charge is still to leave the budget.
  int64_t ring_flushed_ns_ = 0;  // when FlushRingPops last ran
  int64_t ring_popped_ = 0;
  int64_t ring_popped_bytes_ = 0;
  int64_t ring_unreleased_ = 0;
  // Charged bytes pushed (runner, or Restore) and popped (consumer): each has one writer.
  alignas(64) std::atomic<int64_t> ring_bytes_in_{0};  // runner, once per run
  std::atomic<int64_t> ring_bytes_out_{0};
  // Save wants the runner to stop fetching.
  mutable std::atomic<bool> pause_requested_{false};
  // The unit an inline GetNext pulls into, reused (GetNext's thread only).
  WorkUnit inline_unit_;
  // GetNext's thread only: set when it found, under mu_, the op inline with no runner
  // active and nothing buffered, cleared when it starts the runner. While set, only that
  // thread can change those facts, so GetNext skips mu_ (GetNextInline).
  bool inline_owned_ = false;
  // Set first thing by Cancel: the lock-free inline path checks it.
  std::atomic<bool> cancel_requested_{false};
  // Groups (see "Groups"). grouped_ is set by Initialize.
  bool grouped_ = false;
  int64_t static_bytes_ = -1;  // processor_->StaticOutputBytes()
  // Elements in slots_ and in group_ (counted against ElementLimit).
  int64_t buffered_elements_ GUARDED_BY(mu_) = 0;
  // The group GetNext's thread is handing out and its cursor (that thread only).
  // The consumer's per-element group fields: a cache line of their own (see above).
  alignas(64) std::unique_ptr<Slot> group_;
  size_t group_next_ = 0;
  // Charges of results handed out from group_, not yet released (still in
  // group_->reserved), and how many results they are (that thread only).
  int64_t group_unreleased_ = 0;
  int64_t group_unreleased_count_ = 0;
  // Used groups' slots, kept for the runner's next groups (at most kFreeSlots).
  static constexpr size_t kFreeSlots = 8;
  alignas(64) std::vector<std::unique_ptr<Slot>> free_slots_ GUARDED_BY(mu_);
  // Measured wall ns per element (EWMA over groups; -1 before the first) and the next
  // group's size.
  std::atomic<int64_t> work_ns_{-1};
  std::atomic<int64_t> group_size_{1};
  // Slots completed so far (a consumer polling for a group watches it).
  std::atomic<int64_t> completed_{0};
};

// FetchScope: marks the current thread as fetching one unit for a buffer, for the memory
// budget's protocol (memory_budget.h). Every thread that pulls from an input on behalf of a
// buffer (AsyncBufferIterator's runner, parallel interleave's workers) holds one around
// the pull:
//  * `reserved`: whether budget was reserved for the unit. Upstream buffers treat a waiting
//    unreserved fetch, or a reserved one whose `starving` flag is set (its buffer's
//    consumer waits with nothing ready), as urgent demand.
//  * An upstream buffer handing an element to the fetch moves the element's charge into
//    the scope instead of releasing it (AddTransferred); the fetching buffer adds
//    TakeTransferred() to its unit's reservation, so a transfer is counted exactly once.
// Scopes nest (a runner's input may itself run a fetch on the same thread only through
// synchronous ops, which share the scope).
class FetchScope {
 public:
  FetchScope(bool reserved, const std::atomic<bool>* starving);
  ~FetchScope();
  FetchScope(const FetchScope&) = delete;
  FetchScope& operator=(const FetchScope&) = delete;

  // The scope of the calling thread, or null.
  static FetchScope* Current();
  bool reserved() const { return reserved_; }
  const std::atomic<bool>* starving() const { return starving_; }
  void AddTransferred(int64_t bytes) { transferred_ += bytes; }
  int64_t TakeTransferred() {
    const int64_t t = transferred_;
    transferred_ = 0;
    return t;
  }

 private:
  const bool reserved_;
  const std::atomic<bool>* const starving_;
  FetchScope* const outer_;
  int64_t transferred_ = 0;
};

// The values of the attributes every parallel op shares.
struct ParallelAttrs {
  int64_t num_parallel_calls = kAutotune;
  int64_t deterministic = -1;  // -1 unset, 0, 1
};
// Reads "num_parallel_calls" (> 0 or kAutotune) and "deterministic" (-1, 0, 1) for `op`.
Result<ParallelAttrs> GetParallelAttrs(const std::string& op, const AttrMap& attrs);
// `def` with the attributes GetParallelAttrs reads declared.
OpDef WithParallelAttrs(OpDef def);
// Resolves a parallelism attribute for a runtime: kAutotune starts at
// rt.initial_parallelism() (the CPU budget unless set).
int64_t ResolveParallelism(int64_t value, const Runtime& rt);

}  // namespace sluice

#endif  // SLUICE_RUNTIME_ASYNC_BUFFER_H_
