// SpscRing and EventCount: the lock-free handoff between one producer thread and one
// consumer thread (Prefetch's runner and its consumer, async_buffer.h).
//
// SpscRing<T> is a bounded single-producer single-consumer queue: a power-of-two array of
// T and two monotonically growing indices, `tail` (written by the producer only) and
// `head` (written by the consumer only), each on its own cache line, each side caching
// the other's index so a push or pop touches the shared line only when its cached view
// says full or empty. A push publishes with a release store of tail; a pop reads tail
// with acquire, moves the value out and releases the slot with a release store of head.
// No locks, no allocation after construction.
//
// Slots are raw storage: a push constructs its value in the slot (TryReserve/Commit let
// the producer make it there, with no move at all) and a pop destroys it. An array of T
// was assigned into, which read the slot's old value first; and Prefetch's runner moved
// each element into the slot right after the input wrote it, a read back of fresh stores
// that waited for the stores before it (the last slot's, on a line the consumer holds).
// Made in place, Prefetch's handoff went from 130-145 to 100-110 ns per element.
//
//   SpscRing<Item> ring(64);
//   producer:  if (!ring.TryPush(std::move(item))) { /* full */ }
//   consumer:  Item it; if (ring.TryPop(&it)) { ... }
//
// EventCount lets one side sleep until the other changes something, with no cost to the
// other side while nobody sleeps (Vyukov's eventcount over C++20 std::atomic::wait, a
// futex, called directly on Linux). One thread waits on an EventCount at a time (any
// thread notifies):
//
//   waiter:   uint32_t key = ec.PrepareWait();
//             if (condition()) { ec.CancelWait(); } else { ec.Wait(key); }
//   notifier: make condition() true (any atomic store); ec.Notify();
//
// Notify is one fence and one load while nobody waits. A Notify between PrepareWait and
// Wait is never lost (Wait returns at once), and a waiter that checked the condition after
// PrepareWait cannot miss a change made before a Notify: PrepareWait and Notify each order
// their two accesses (flag, condition) with a fence. A Notify that comes late (it saw an
// earlier wait registered) at most wakes a later wait early, never leaves it asleep:
// PrepareWait reads the epoch before it raises the waiting flag.
//
// Asymmetric mode (SetAsymmetric, folly's asymmetricLightBarrier/HeavyBarrier, liburcu's
// sys_membarrier): Notify's fence becomes a compiler barrier and PrepareWait pays for
// both with membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED), a full barrier on every running
// thread of the process (an interrupt to each core running one). Worth it when Notify is
// called far more often than anyone sleeps: a fence per element cost half of Prefetch's
// runner time handing int64 scalars across (it waits for the ring slot's store, a cache
// miss: the consumer wrote the slot last); a membarrier per sleep cost 4-6% of the
// Fashion-MNIST pipeline, whose consumer sleeps once per batch. So the waiter chooses,
// between waits, from how fast its notifier goes (async_buffer.cc, kRingFastNs). Leaving
// the mode issues one membarrier, so that every notifier sees the change before the next
// wait relies on its fence: a Notify that read the old mode had made its condition store
// before that read, so the membarrier's barrier on its core, before or after the read,
// makes the store visible or the new mode seen. Where membarrier is missing (old
// kernels, other systems, seccomp; or SLUICE_NO_MEMBARRIER set) the mode stays off.
//
// Thread-safety: TryPush from one producer thread, TryPop/Peek from one consumer thread,
// Size/Empty from either; EventCount: PrepareWait/CancelWait/Wait from one thread at a
// time, Notify from any.
#ifndef SLUICE_RUNTIME_SPSC_RING_H_
#define SLUICE_RUNTIME_SPSC_RING_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <utility>

#include "core/cpu.h"

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace sluice {

template <typename T>
class SpscRing {
 public:
  // At least `min_capacity` (>= 1) slots, rounded up to a power of two.
  explicit SpscRing(size_t min_capacity) {
    size_t c = 1;
    while (c < min_capacity) c <<= 1;
    slots_ = std::make_unique<Slot[]>(c);
    mask_ = c - 1;
  }
  ~SpscRing() {
    const size_t t = tail_.load(std::memory_order_relaxed);
    for (size_t h = head_.load(std::memory_order_relaxed); h != t; ++h) At(h).~T();
  }
  SpscRing(const SpscRing&) = delete;
  SpscRing& operator=(const SpscRing&) = delete;

  size_t capacity() const { return mask_ + 1; }

  // Producer: appends `v` unless the ring is full (then false, `v` untouched).
  bool TryPush(T&& v) {
    void* slot = TryReserve();
    if (slot == nullptr) return false;
    new (slot) T(std::move(v));
    Commit();
    return true;
  }

  // Producer, in two steps, so that a value can be made in its slot (no move into it):
  // TryReserve returns the next slot's storage, or null when the ring is full; the caller
  // constructs a T there and then either publishes it with Commit or destroys it (and
  // does not commit). Nothing else may be pushed in between.
  void* TryReserve() {
    const size_t t = tail_.load(std::memory_order_relaxed);
    if (t - cached_head_ > mask_) {
      cached_head_ = head_.load(std::memory_order_acquire);
      if (t - cached_head_ > mask_) return nullptr;
    }
    return slots_[t & mask_].bytes;
  }
  // Producer: asks for the storage of the slot `ahead` pushes from now, for writing (the
  // consumer wrote it last, when it took the value out: a miss on the push's first
  // store, on the runner's critical path). Only a hint; it reads nothing.
  void PrefetchAhead(size_t ahead) const {
    PrefetchForWrite(slots_[(tail_.load(std::memory_order_relaxed) + ahead) & mask_].bytes);
  }
  void Commit() {
    const size_t t = tail_.load(std::memory_order_relaxed);
    tail_.store(t + 1, std::memory_order_release);
  }

  // Consumer: moves the oldest value into *out (the slot's value is destroyed); false
  // when empty.
  bool TryPop(T* out) {
    const size_t h = head_.load(std::memory_order_relaxed);
    if (h == cached_tail_) {
      cached_tail_ = tail_.load(std::memory_order_acquire);
      if (h == cached_tail_) return false;
    }
    T& slot = At(h);
    *out = std::move(slot);
    slot.~T();
    head_.store(h + 1, std::memory_order_release);
    return true;
  }

  // Consumer: the i-th oldest value if the consumer already knows it was pushed (its
  // cached view of the tail covers it: no read of the producer's line), else null. For
  // prefetching what a value points to, a few pops ahead.
  const T* PeekKnown(size_t i) const {
    const size_t h = head_.load(std::memory_order_relaxed);
    return cached_tail_ - h > i ? &At(h + i) : nullptr;
  }

  // Consumer: the i-th oldest value (i < Size()), left in place. While the producer is
  // paused (checkpoints) this reads every value the ring holds.
  const T& Peek(size_t i) const { return At(head_.load(std::memory_order_relaxed) + i); }

  // Values held: exact from a side that is not racing with the other, else a snapshot.
  size_t Size() const {
    const size_t h = head_.load(std::memory_order_acquire);
    const size_t t = tail_.load(std::memory_order_acquire);
    return t - h;
  }
  bool Empty() const { return Size() == 0; }
  // Values popped so far (the consumer's index): lets the producer see whether its
  // consumer is still taking values while it waits for room.
  size_t Popped() const { return head_.load(std::memory_order_relaxed); }

 private:
  // Each slot on cache lines of its own: a slot sharing a line with the next one had the
  // consumer reading one while the producer wrote the other, and the line went back and
  // forth between the two cores.
  static constexpr size_t kLine = 64;
  struct Slot {
    alignas(alignof(T) > kLine ? alignof(T) : kLine) unsigned char bytes[sizeof(T)];
  };
  T& At(size_t index) const {
    return *std::launder(reinterpret_cast<T*>(slots_[index & mask_].bytes));
  }

  std::unique_ptr<Slot[]> slots_;
  size_t mask_ = 0;
  alignas(64) std::atomic<size_t> head_{0};  // next to pop (consumer writes)
  size_t cached_tail_ = 0;                   // consumer's view of tail_
  alignas(64) std::atomic<size_t> tail_{0};  // next to push (producer writes)
  size_t cached_head_ = 0;                   // producer's view of head_
  alignas(64) char pad_[1] = {};             // keeps the tail line to itself
};

// The heavy side of an asymmetric fence (see EventCount): a full barrier on every running
// thread of the process. A compiler barrier on one thread and a HeavyBarrier on another
// order like two std::atomic_thread_fence(seq_cst).
namespace asymmetric_fence {
// Whether HeavyBarrier is a membarrier (registers the process on the first call); when
// false, HeavyBarrier is only a fence and the light side must fence too.
bool Available();
void HeavyBarrier();
}  // namespace asymmetric_fence

class EventCount {
 public:
  // Registers the caller as the waiter; returns the key for Wait.
  uint32_t PrepareWait() {
    // The key is read before the flag is raised: a Notify that takes down this flag (a
    // late one, meant for an earlier wait, included) then bumps the epoch past the key,
    // so Wait returns. Read after, the key could already include that bump while the
    // flag was down: Wait slept with no Notify left to wake it. Acquire: a Notify this
    // load sees made its condition visible too.
    const uint32_t key = epoch_.load(std::memory_order_acquire);
    waiting_.store(true, std::memory_order_relaxed);
    if (asymmetric_.load(std::memory_order_relaxed)) {
      asymmetric_fence::HeavyBarrier();
    } else {
      std::atomic_thread_fence(std::memory_order_seq_cst);
    }
    return key;
  }
  // Switches the asymmetric mode (see above). Waiter's thread, between waits.
  void SetAsymmetric(bool on) {
    if (on == asymmetric_.load(std::memory_order_relaxed)) return;
    if (on && !asymmetric_fence::Available()) return;
    asymmetric_.store(on, std::memory_order_relaxed);
    if (!on) asymmetric_fence::HeavyBarrier();
  }
  bool asymmetric() const { return asymmetric_.load(std::memory_order_relaxed); }
  // The condition held after PrepareWait: stop waiting.
  void CancelWait() { waiting_.store(false, std::memory_order_relaxed); }
  // Sleeps until a Notify after the PrepareWait that returned `key` (or returns at once
  // when one came already; callers re-check their condition either way).
  void Wait(uint32_t key) {
    while (epoch_.load(std::memory_order_acquire) == key) FutexWait(key);
    waiting_.store(false, std::memory_order_relaxed);
  }
  // Whether a waiter may be asleep: Notify's first half (the fence, then the load), for a
  // notifier whose own test of the condition costs more than this (the waiter then
  // re-checks after any Notify). False means a waiter that registers later sees the
  // notifier's change made before this call.
  bool Waiting() const {
    if (asymmetric_.load(std::memory_order_relaxed)) {
      std::atomic_signal_fence(std::memory_order_seq_cst);
    } else {
      std::atomic_thread_fence(std::memory_order_seq_cst);
    }
    return waiting_.load(std::memory_order_relaxed);
  }
  // Wakes the waiter: a fence (a compiler barrier in asymmetric mode) and one load, no
  // system call, when none waits; one wake-up per wait however many notifiers race.
  // Returns whether this call woke the waiter (a system call was made).
  bool Notify() {
    if (!Waiting()) return false;
    if (!waiting_.exchange(false, std::memory_order_relaxed)) return false;
    epoch_.fetch_add(1, std::memory_order_release);
    FutexWakeAll();
    return true;
  }

 private:
  // Straight to the futex on Linux: libstdc++'s atomic::wait spins with sched_yield
  // first, which on a loaded machine hands the core to other processes for whole time
  // slices.
#if defined(__linux__)
  void FutexWait(uint32_t key) {
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&epoch_), FUTEX_WAIT_PRIVATE, key,
            nullptr, nullptr, 0);
  }
  void FutexWakeAll() {
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&epoch_), FUTEX_WAKE_PRIVATE,
            INT32_MAX, nullptr, nullptr, 0);
  }
  static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));
#else
  void FutexWait(uint32_t key) { epoch_.wait(key); }
  void FutexWakeAll() { epoch_.notify_all(); }
#endif

  std::atomic<uint32_t> epoch_{0};
  std::atomic<bool> waiting_{false};
  std::atomic<bool> asymmetric_{false};
};

}  // namespace sluice

#endif  // SLUICE_RUNTIME_SPSC_RING_H_
