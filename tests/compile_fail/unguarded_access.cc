// Must NOT compile under `make threadsafety` (clang, -Werror=thread-safety): it touches
// GUARDED_BY state without the mutex, calls a REQUIRES helper unlocked and reads after
// an Unlock. The target checks that clang rejects it, so annotations that silently
// became no-ops (a broken macro, a compiler that drops the attributes) fail CI.
#include "core/mutex.h"

namespace sluice {

class Counter {
 public:
  void Add() { ++count_; }              // error: writing count_ without mu_
  void AddViaHelper() { AddLocked(); }  // error: calling AddLocked without mu_
  int ReadAfterUnlock() {
    MutexLock l(&mu_);
    l.Unlock();
    return count_;  // error: reading count_ without mu_
  }

 private:
  void AddLocked() REQUIRES(mu_) { ++count_; }
  Mutex mu_;
  int count_ GUARDED_BY(mu_) = 0;
};

void Use() {
  Counter c;
  c.Add();
  c.AddViaHelper();
  (void)c.ReadAfterUnlock();
}

}  // namespace sluice
