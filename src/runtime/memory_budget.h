// MemoryBudget: the pipeline-wide limit on bytes held in operator buffers.
//
// Every buffering operator (prefetch, parallel map/batch/filter, map_and_batch, parallel
// interleave) reserves the bytes of an element before it starts producing it, using its
// estimate of the element's size, and releases them when the consumer takes the element.
// When TryReserve fails the operator stops growing its buffer and waits; it never exceeds
// the limit to add a further element.
//
// Two rules keep this deadlock-free and honest:
//  * Urgent demand. A buffer that is empty while its consumer cannot progress without it
//    (a user thread waits on it, or a runner that holds no reservation, or a runner whose
//    own buffer has nothing ready for its waiting consumer) fetches even when the budget is
//    full, and is charged on arrival. In a chain of buffers this is a transfer (the
//    upstream buffer releases the element first) and usage does not grow; it passes the
//    limit only when the rest of the budget is held on other branches (zip, interleave
//    inputs) that drain only once this one delivers - by at most one element per such
//    buffer. Waiting instead would deadlock. A runner that reserved for the unit it fetches
//    is not urgent demand, so a transfer is never counted twice.
//  * An element larger than its estimate is charged in full on arrival (ForceReserve of the
//    difference). Estimates are exact for statically shaped outputs (ElementSpec) and
//    otherwise the largest element seen so far, so this only happens while sizes grow, and
//    in the warm-up of an operator whose output size is not declared: until its first
//    result it starts at most `parallelism` units (see async_buffer.h).
// overshoot() records the worst excess, so tests and reports can check that it stayed 0.
// peak() is the high-water mark of reserved bytes, which is what tests and reports check.
//
// Held buffers. Operators that keep elements in their own state and cannot make progress
// without keeping them - shuffle and shuffle_and_repeat (buffer_size elements), cache in
// memory (the epoch so far), group_by_window / bucket_by_sequence_length (open groups and
// the window being reduced), window (its span), scan (the state), unbatch (the current
// batch) - charge what they hold with TryHold/ReleaseHeld, through a BufferCharge
// (buffer_charge.h). Their rule differs from the async buffers' because waiting cannot
// help them: nothing frees room that they themselves hold, and async buffers drain only
// when their consumer pulls, which is the very thread that would wait. So:
//  * TryHold(bytes) succeeds when the bytes held by all such operators stay within
//    hold_limit(), whatever the async buffers have reserved; the bytes are then charged to
//    used() unconditionally. Async buffers see the room shrink, stop growing (TryReserve
//    fails) and drain to urgent demand, so used() returns under limit() once they drain
//    unless the held bytes alone exceed it (possible only with the default budget, below).
//  * When TryHold fails the operator fails the pipeline with ResourceExhausted naming
//    itself (its iterator prefix), the bytes it would hold and the budget; it never waits.
//    A shuffle whose buffer cannot fit fails on the element that does not fit, before the
//    process grows past the budget.
//  * hold_limit() is the budget itself when the user set ram_budget, and twice the default
//    budget - all of the memory available when the pipeline was made - when ram_budget is
//    left at 0 (its default: half of available memory). tf.data does not limit these
//    buffers at all (they grow until the kernel kills the process); under the default
//    budget sluice fails only where the process would run out of memory anyway, so every
//    pipeline that fits in memory still runs, with the same elements. Unlimited budget
//    (ram_budget -1): never fails.
// held() counts those bytes; they are also in used(), peak() and overshoot() (which can
// then be > 0 without any rule broken: held bytes plus async reservations made before them,
// until those drain). BufferCharge reserves in small quanta, so held() may pass the bytes
// actually held by two quanta per held buffer (at most 1/128 of hold_limit() each).
//
// Thread-safety: all methods are thread-safe (lock-free atomics).
#ifndef SLUICE_RUNTIME_MEMORY_BUDGET_H_
#define SLUICE_RUNTIME_MEMORY_BUDGET_H_

#include <atomic>
#include <cstdint>

namespace sluice {

class MemoryBudget {
 public:
  // limit <= 0: unlimited (usage and peak are still tracked). hold_limit: the bound of
  // held bytes (TryHold); <= 0: `limit`.
  explicit MemoryBudget(int64_t limit, int64_t hold_limit = 0)
      : limit_(limit), hold_limit_(limit <= 0 ? 0 : hold_limit > 0 ? hold_limit : limit) {}

  // Reserves `bytes` if that keeps usage within the limit.
  bool TryReserve(int64_t bytes);
  // Reserves `bytes` unconditionally (see the rules above).
  void ForceReserve(int64_t bytes);
  void Release(int64_t bytes);
  // Held buffers (see above): charges `bytes` if held() + bytes <= hold_limit() (always
  // when unlimited); false, charging nothing, otherwise.
  bool TryHold(int64_t bytes);
  void ReleaseHeld(int64_t bytes);

  int64_t limit() const { return limit_; }
  // The bound of held bytes; 0: unlimited.
  int64_t hold_limit() const { return hold_limit_; }
  int64_t used() const { return used_.load(std::memory_order_relaxed); }
  int64_t held() const { return held_.load(std::memory_order_relaxed); }
  int64_t peak() const { return peak_.load(std::memory_order_relaxed); }
  // Reserved bytes beyond the limit at the worst moment (0 when the limit always held).
  int64_t overshoot() const { return overshoot_.load(std::memory_order_relaxed); }

 private:
  void UpdatePeak(int64_t now);

  const int64_t limit_;
  const int64_t hold_limit_;
  std::atomic<int64_t> used_{0};
  std::atomic<int64_t> held_{0};
  std::atomic<int64_t> peak_{0};
  std::atomic<int64_t> overshoot_{0};
};

}  // namespace sluice

#endif  // SLUICE_RUNTIME_MEMORY_BUDGET_H_
