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
// Thread-safety: all methods are thread-safe (lock-free atomics).
#ifndef SLUICE_RUNTIME_MEMORY_BUDGET_H_
#define SLUICE_RUNTIME_MEMORY_BUDGET_H_

#include <atomic>
#include <cstdint>

namespace sluice {

class MemoryBudget {
 public:
  // limit <= 0: unlimited (usage and peak are still tracked).
  explicit MemoryBudget(int64_t limit) : limit_(limit) {}

  // Reserves `bytes` if that keeps usage within the limit.
  bool TryReserve(int64_t bytes);
  // Reserves `bytes` unconditionally (see the rules above).
  void ForceReserve(int64_t bytes);
  void Release(int64_t bytes);

  int64_t limit() const { return limit_; }
  int64_t used() const { return used_.load(std::memory_order_relaxed); }
  int64_t peak() const { return peak_.load(std::memory_order_relaxed); }
  // Reserved bytes beyond the limit at the worst moment (0 when the limit always held).
  int64_t overshoot() const { return overshoot_.load(std::memory_order_relaxed); }

 private:
  void UpdatePeak(int64_t now);

  const int64_t limit_;
  std::atomic<int64_t> used_{0};
  std::atomic<int64_t> peak_{0};
  std::atomic<int64_t> overshoot_{0};
};

}  // namespace sluice

#endif  // SLUICE_RUNTIME_MEMORY_BUDGET_H_
