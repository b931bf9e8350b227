// Mutex, MutexLock and CondVar: std::mutex and std::condition_variable with the
// capability annotations that clang's -Wthread-safety needs (libstdc++'s std::mutex has
// none, so the analysis can check nothing through it). Each is a thin inline wrapper of
// the std type, the same size and cost (LevelDB port/port_stdcxx.h, Abseil's Mutex API).
//
//   mutable Mutex mu_;
//   CondVar ready_cv_;
//   std::deque<Element> queue_ GUARDED_BY(mu_);
//
//   Element Pop() {
//     MutexLock l(&mu_);
//     ready_cv_.Wait(&mu_, [this]() REQUIRES(mu_) { return !queue_.empty(); });
//     ...
//   }
//
// A predicate given to a Wait runs with the mutex held: annotate the lambda
// REQUIRES(mu_), as above, so the analysis checks its body. A helper that expects the
// caller to hold the lock is REQUIRES(mu_) and may drop and retake it with
// mu_.Unlock()/mu_.Lock() (the caller's MutexLock stays valid).
//
// Lock spins briefly before it sleeps (an adaptive mutex, as glibc's
// PTHREAD_MUTEX_ADAPTIVE_NP and Abseil's Mutex): the runtime's critical sections last
// well under a microsecond, while a futex sleep and its wake-up cost several (tens on a
// virtual machine) on both sides. A parallel map of cheap work spent more time in the
// lock's sleeps and wakes than in the work (handoff_bench).
//
// Thread-safety: Mutex and CondVar are thread-safe; a MutexLock belongs to one thread.
#ifndef SLUICE_CORE_MUTEX_H_
#define SLUICE_CORE_MUTEX_H_

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "core/cpu.h"
#include "core/thread_annotations.h"

namespace sluice {

class CondVar;

// A non-recursive exclusive lock.
class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ACQUIRE() {
    if (!mu_.try_lock()) LockSlow();
  }
  void Unlock() RELEASE() { mu_.unlock(); }
  // Takes the lock if it is free; true when taken.
  bool TryLock() TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // Tells the analysis that the calling thread holds the lock (where it cannot see it,
  // e.g. in a callback run under the lock). Checks nothing at run time.
  void AssertHeld() const ASSERT_CAPABILITY(this) {}

 private:
  friend class CondVar;
  // Polls for up to kLockSpins pauses (about 1-4 us), then sleeps in mu_.lock().
  static constexpr int kLockSpins = 64;
  void LockSlow() ACQUIRE() {
    for (int i = 0; i < kLockSpins; ++i) {
      CpuRelax();
      if (mu_.try_lock()) return;
    }
    mu_.lock();
  }
  std::mutex mu_;
};

// Holds a Mutex for its scope. Unlock() and Lock() drop and retake it inside the scope
// (as std::unique_lock); the destructor unlocks only if held.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() RELEASE() {
    if (held_) mu_->Unlock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void Unlock() RELEASE() {
    mu_->Unlock();
    held_ = false;
  }
  void Lock() ACQUIRE() {
    mu_->Lock();
    held_ = true;
  }

 private:
  Mutex* const mu_;
  bool held_ = true;
};

// A condition variable over Mutex. Every wait needs the mutex held; it is released while
// waiting and held again on return. Waits without a predicate may wake spuriously.
class CondVar {
 public:
  CondVar() = default;
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;

  void Wait(Mutex* mu) REQUIRES(mu) {
    std::unique_lock<std::mutex> l(mu->mu_, std::adopt_lock);
    cv_.wait(l);
    l.release();  // the caller keeps holding mu
  }
  // Waits until pred() (called with mu held) is true.
  template <typename Predicate>
  void Wait(Mutex* mu, Predicate pred) REQUIRES(mu) {
    while (!Call(mu, pred)) Wait(mu);
  }

  // Waits at most `timeout`; std::cv_status::timeout when it ran out.
  template <typename Rep, typename Period>
  std::cv_status WaitFor(Mutex* mu, const std::chrono::duration<Rep, Period>& timeout)
      REQUIRES(mu) {
    std::unique_lock<std::mutex> l(mu->mu_, std::adopt_lock);
    const std::cv_status s = cv_.wait_for(l, timeout);
    l.release();
    return s;
  }
  // Waits until pred() or `timeout` ran out; returns pred() (false: timed out).
  template <typename Rep, typename Period, typename Predicate>
  bool WaitFor(Mutex* mu, const std::chrono::duration<Rep, Period>& timeout,
               Predicate pred) REQUIRES(mu) {
    return WaitUntil(mu, std::chrono::steady_clock::now() + timeout, std::move(pred));
  }

  // Waits until `deadline` at most; std::cv_status::timeout when it passed.
  template <typename Clock, typename Duration>
  std::cv_status WaitUntil(Mutex* mu,
                           const std::chrono::time_point<Clock, Duration>& deadline)
      REQUIRES(mu) {
    std::unique_lock<std::mutex> l(mu->mu_, std::adopt_lock);
    const std::cv_status s = cv_.wait_until(l, deadline);
    l.release();
    return s;
  }
  // Waits until pred() or `deadline`; returns pred() (false: timed out).
  template <typename Clock, typename Duration, typename Predicate>
  bool WaitUntil(Mutex* mu, const std::chrono::time_point<Clock, Duration>& deadline,
                 Predicate pred) REQUIRES(mu) {
    while (!Call(mu, pred)) {
      if (WaitUntil(mu, deadline) == std::cv_status::timeout) return Call(mu, pred);
    }
    return true;
  }

  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  // Calls a predicate that is annotated REQUIRES(the caller's mutex). The analysis cannot
  // tell that `mu` here is the mutex the lambda names, so this one call is unchecked; the
  // lambda's own body is checked against its annotation.
  template <typename Predicate>
  static bool Call([[maybe_unused]] Mutex* mu, Predicate& pred)
      REQUIRES(mu) NO_THREAD_SAFETY_ANALYSIS {
    return pred();
  }

  std::condition_variable cv_;
};

}  // namespace sluice

#endif  // SLUICE_CORE_MUTEX_H_
