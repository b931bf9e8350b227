// BufferCharge: the memory account of an operator that keeps elements in its own state
// (shuffle, cache in memory, group_by_window, window, scan, unbatch): the "held buffers"
// of memory_budget.h.
//
// The operator calls Add when an element (or state) starts being held and Remove when it
// leaves; the charge keeps the op's NodeStats gauges (buffered_bytes, buffered_elements)
// equal to what it holds and holds that much of the pipeline's MemoryBudget (TryHold). An
// Add that would take the pipeline's held bytes past the budget's hold limit adds nothing
// and returns ResourceExhausted naming the op (its iterator prefix), the bytes it would
// hold and the budget, plus the op's hint (e.g. "use a file cache"). Destruction and
// Clear() release everything, so a destroyed, cancelled or restored iterator leaves no
// reservation behind.
//
// Transfers. An element that an async buffer handed to a fetching buffer's thread carries
// its charge in the thread's FetchScope (async_buffer.h). When a held buffer keeps such
// elements, the charge moves out of the scope (released from the budget's async share) each
// time the reservation grows, up to the bytes added since the last move, so a shuffle
// filling its buffer on a prefetch's runner thread is not counted twice (by more than one
// quantum). Whatever stays in the scope is settled by the fetching buffer when its unit
// completes (AsyncBufferIterator charges a finished unit exactly its output's bytes).
//
// Cost. Add/Remove are a few integer operations and two relaxed stores (the gauges); the
// budget's atomics are touched only when the held bytes pass the reserved amount, which
// grows in quanta of min(64 KiB, hold limit / 256), and shrinks when more than two quanta
// are unused. So small elements cost no atomic read-modify-write at all, and each holder
// keeps at most two quanta (1/128 of the hold limit) reserved beyond what it holds. When a
// whole quantum does not fit, exactly the bytes needed are tried, so tiny budgets stay
// exact.
//
// Thread-safety: none; owned by one iterator (the IteratorBase contract).
#ifndef SLUICE_RUNTIME_BUFFER_CHARGE_H_
#define SLUICE_RUNTIME_BUFFER_CHARGE_H_

#include <cstdint>

#include "runtime/iterator_base.h"
#include "runtime/memory_budget.h"

namespace sluice {

class BufferCharge {
 public:
  BufferCharge() = default;
  ~BufferCharge() { Clear(); }
  BufferCharge(const BufferCharge&) = delete;
  BufferCharge& operator=(const BufferCharge&) = delete;

  // Charges the budget of ctx.runtime() and publishes in owner->stats(); errors name
  // owner (prefix and op) and end with `hint` (a static string, may be null). Call once,
  // before the first Add (usually from Initialize). Unbound, Add only counts.
  void Bind(const IteratorContext& ctx, IteratorBase* owner, const char* hint);

  // Starts holding `elements` elements of `bytes` bytes. ResourceExhausted, with nothing
  // added, when they do not fit (see above).
  Status Add(int64_t bytes, int64_t elements = 1) {
    bytes_ += bytes;
    elements_ += elements;
    unclaimed_ += bytes;
    if (bytes_ > reserved_) [[unlikely]] {
      if (Status s = Grow(); !s.ok()) {
        bytes_ -= bytes;
        elements_ -= elements;
        unclaimed_ -= bytes;
        return s;
      }
    }
    Publish();
    return Status::OK();
  }
  Status AddElement(const Element& e) { return Add(ElementBytes(e)); }
  // Stops holding them.
  void Remove(int64_t bytes, int64_t elements = 1) {
    bytes_ -= bytes;
    elements_ -= elements;
    if (reserved_ - bytes_ > 2 * quantum_) [[unlikely]] Shrink();
    Publish();
  }
  void RemoveElement(const Element& e) { Remove(ElementBytes(e)); }
  // Holds nothing (releases the reservation).
  void Clear();

  int64_t bytes() const { return bytes_; }
  int64_t elements() const { return elements_; }

  // Refuses early a buffer that can never fit: `elements` of about `bytes_per_element`
  // each past the budget's hold limit gives the same ResourceExhausted as a failing Add
  // (naming the op, the bytes and the budget). OK when unbound, unlimited, or under the
  // default budget (there CheckBufferMemory's memory-available check applies).
  Status CheckFits(int64_t elements, int64_t bytes_per_element) const;

 private:
  Status Grow();
  Status Exhausted(int64_t elements, int64_t bytes) const;
  void Shrink();
  // Moves up to unclaimed_ bytes of the current FetchScope's transferred charge into this
  // charge (from Grow).
  void ClaimTransferred();
  void Publish() {
    if (owner_stats_ == nullptr) return;
    owner_stats_->buffered_bytes.store(bytes_, std::memory_order_relaxed);
    owner_stats_->buffered_elements.store(elements_, std::memory_order_relaxed);
  }

  MemoryBudget* budget_ = nullptr;
  IteratorBase* owner_ = nullptr;
  NodeStats* owner_stats_ = nullptr;
  const char* hint_ = nullptr;
  int64_t quantum_ = int64_t{1} << 16;
  int64_t bytes_ = 0;     // held
  int64_t elements_ = 0;  // held
  int64_t reserved_ = 0;  // TryHold'd in the budget (>= bytes_ once bound)
  int64_t unclaimed_ = 0;  // bytes added since the last ClaimTransferred
};

}  // namespace sluice

#endif  // SLUICE_RUNTIME_BUFFER_CHARGE_H_
