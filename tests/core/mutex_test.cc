// Mutex, MutexLock and CondVar (src/core/mutex.h): the wrappers lock, unlock and wait as
// the std types they wrap. (That clang rejects an unguarded access is checked by
// `make threadsafety`, which compiles tests/compile_fail/unguarded_access.cc.)
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "core/mutex.h"

namespace sluice {
namespace {

using std::chrono::milliseconds;

// Whether another thread can take `mu` now (TryLock from the same thread is undefined).
bool FreeElsewhere(Mutex* mu) {
  bool taken = false;
  std::thread t([&] {
    if (mu->TryLock()) {
      taken = true;
      mu->Unlock();
    }
  });
  t.join();
  return taken;
}

// Lock polls before it sleeps (an adaptive mutex): under contention from more threads
// than cores, every increment is still made by one thread at a time and none is lost.
TEST(MutexTest, ContendedLockStaysExclusive) {
  Mutex mu;
  int64_t counter = 0;  // guarded by mu (plain: a lost update shows in the total)
  std::atomic<int> inside{0};
  std::atomic<int> most_inside{0};
  constexpr int kThreads = 4;
  constexpr int kIncrements = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kIncrements; ++i) {
        MutexLock l(&mu);
        const int now = inside.fetch_add(1) + 1;
        int seen = most_inside.load();
        while (now > seen && !most_inside.compare_exchange_weak(seen, now)) {
        }
        ++counter;
        inside.fetch_sub(1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(counter, int64_t{kThreads} * kIncrements);
  EXPECT_EQ(most_inside.load(), 1) << "two threads held the lock at once";
}

TEST(MutexTest, LockUnlockTryLock) {
  Mutex mu;
  EXPECT_TRUE(FreeElsewhere(&mu));
  mu.Lock();
  mu.AssertHeld();
  EXPECT_FALSE(FreeElsewhere(&mu));
  mu.Unlock();
  EXPECT_TRUE(FreeElsewhere(&mu));
}

TEST(MutexTest, MutexLockHoldsForItsScope) {
  Mutex mu;
  {
    MutexLock l(&mu);
    EXPECT_FALSE(FreeElsewhere(&mu));
  }
  EXPECT_TRUE(FreeElsewhere(&mu));
}

TEST(MutexTest, MutexLockUnlockAndRelock) {
  Mutex mu;
  {
    MutexLock l(&mu);
    l.Unlock();
    EXPECT_TRUE(FreeElsewhere(&mu));
    l.Lock();
    EXPECT_FALSE(FreeElsewhere(&mu));
  }
  EXPECT_TRUE(FreeElsewhere(&mu));
  {
    // Left unlocked at the end of the scope: the destructor does not unlock again.
    MutexLock l(&mu);
    l.Unlock();
  }
  EXPECT_TRUE(FreeElsewhere(&mu));
  mu.Lock();  // still a working mutex
  mu.Unlock();
}

struct Box {
  Mutex mu;
  CondVar cv;
  int value GUARDED_BY(mu) = 0;
};

TEST(CondVarTest, WaitWithPredicateSeesTheSignalledState) {
  Box b;
  std::thread producer([&] {
    for (int i = 1; i <= 3; ++i) {
      std::this_thread::sleep_for(milliseconds(1));
      MutexLock l(&b.mu);
      b.value = i;
      b.cv.SignalAll();
    }
  });
  {
    MutexLock l(&b.mu);
    b.cv.Wait(&b.mu, [&]() REQUIRES(b.mu) { return b.value == 3; });
    EXPECT_EQ(b.value, 3);
  }
  producer.join();
  // The mutex is held again after the wait and released by the MutexLock.
  EXPECT_TRUE(FreeElsewhere(&b.mu));
}

TEST(CondVarTest, WaitWithoutPredicateReturnsAfterSignal) {
  Box b;
  std::atomic<bool> waiting{false};
  std::thread producer([&] {
    while (!waiting.load()) std::this_thread::yield();
    MutexLock l(&b.mu);  // the waiter released mu inside Wait, or this would block
    b.value = 1;
    b.cv.Signal();
  });
  {
    MutexLock l(&b.mu);
    waiting.store(true);
    while (b.value == 0) b.cv.Wait(&b.mu);
    EXPECT_EQ(b.value, 1);
  }
  producer.join();
}

TEST(CondVarTest, WaitForTimesOut) {
  Box b;
  MutexLock l(&b.mu);
  b.cv.WaitFor(&b.mu, milliseconds(1));  // times out (or wakes spuriously)
  EXPECT_FALSE(FreeElsewhere(&b.mu));    // held again on return
  EXPECT_FALSE(b.cv.WaitFor(&b.mu, milliseconds(2),
                            [&]() REQUIRES(b.mu) { return b.value != 0; }));
  b.value = 7;
  // A predicate that already holds returns true at once.
  EXPECT_TRUE(b.cv.WaitFor(&b.mu, milliseconds(0),
                           [&]() REQUIRES(b.mu) { return b.value == 7; }));
}

TEST(CondVarTest, WaitUntilAPassedDeadline) {
  Box b;
  MutexLock l(&b.mu);
  const auto past = std::chrono::steady_clock::now() - milliseconds(10);
  EXPECT_EQ(b.cv.WaitUntil(&b.mu, past), std::cv_status::timeout);
  EXPECT_FALSE(b.cv.WaitUntil(&b.mu, past, [&]() REQUIRES(b.mu) { return b.value > 0; }));
}

TEST(CondVarTest, WaitForWithPredicateWakesBeforeTheTimeout) {
  Box b;
  std::thread producer([&] {
    std::this_thread::sleep_for(milliseconds(1));
    MutexLock l(&b.mu);
    b.value = 1;
    b.cv.SignalAll();
  });
  {
    MutexLock l(&b.mu);
    // A generous timeout: the predicate, not the clock, ends the wait.
    EXPECT_TRUE(b.cv.WaitFor(&b.mu, std::chrono::minutes(5),
                             [&]() REQUIRES(b.mu) { return b.value == 1; }));
  }
  producer.join();
}

}  // namespace
}  // namespace sluice
