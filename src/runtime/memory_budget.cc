#include "runtime/memory_budget.h"

namespace sluice {

bool MemoryBudget::TryReserve(int64_t bytes) {
  int64_t cur = used_.load(std::memory_order_relaxed);
  do {
    if (limit_ > 0 && cur + bytes > limit_ && bytes > 0) return false;
  } while (!used_.compare_exchange_weak(cur, cur + bytes, std::memory_order_relaxed));
  UpdatePeak(cur + bytes);
  return true;
}

void MemoryBudget::ForceReserve(int64_t bytes) {
  UpdatePeak(used_.fetch_add(bytes, std::memory_order_relaxed) + bytes);
}

void MemoryBudget::Release(int64_t bytes) { used_.fetch_sub(bytes, std::memory_order_relaxed); }

bool MemoryBudget::TryHold(int64_t bytes) {
  int64_t cur = held_.load(std::memory_order_relaxed);
  do {
    if (hold_limit_ > 0 && cur + bytes > hold_limit_ && bytes > 0) return false;
  } while (!held_.compare_exchange_weak(cur, cur + bytes, std::memory_order_relaxed));
  ForceReserve(bytes);
  return true;
}

void MemoryBudget::ReleaseHeld(int64_t bytes) {
  held_.fetch_sub(bytes, std::memory_order_relaxed);
  Release(bytes);
}

void MemoryBudget::UpdatePeak(int64_t now) {
  int64_t p = peak_.load(std::memory_order_relaxed);
  while (now > p && !peak_.compare_exchange_weak(p, now, std::memory_order_relaxed)) {
  }
  if (limit_ > 0 && now > limit_) {
    int64_t o = overshoot_.load(std::memory_order_relaxed);
    while (now - limit_ > o &&
           !overshoot_.compare_exchange_weak(o, now - limit_, std::memory_order_relaxed)) {
    }
  }
}

}  // namespace sluice
