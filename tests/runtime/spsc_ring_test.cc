// SpscRing and EventCount (src/runtime/spsc_ring.h): order, wrap-around, full/empty,
// a waiter woken by Notify (and by a cancel flag while blocked), and a producer/consumer
// stress run bounded in time. Prefetch's ring path is covered end to end below.
#include "runtime/spsc_ring.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "sluice/dataset.h"

namespace sluice {
namespace {

TEST(SpscRing, KeepsOrderAndReportsFullAndEmpty) {
  SpscRing<int> ring(3);
  EXPECT_EQ(ring.capacity(), 4u);  // rounded up to a power of two
  int v = -1;
  EXPECT_FALSE(ring.TryPop(&v));
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(ring.TryPush(int{i}));
  EXPECT_FALSE(ring.TryPush(99)) << "a full ring accepted a value";
  EXPECT_EQ(ring.Size(), 4u);
  EXPECT_EQ(ring.Peek(0), 0);
  EXPECT_EQ(ring.Peek(3), 3);
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(ring.TryPop(&v));
    EXPECT_EQ(v, i);
  }
  EXPECT_TRUE(ring.Empty());
}

TEST(SpscRing, WrapsAroundManyTimes) {
  SpscRing<std::unique_ptr<int>> ring(8);
  int next_in = 0, next_out = 0;
  for (int round = 0; round < 1000; ++round) {
    const int n = 1 + round % 8;  // pushes and pops in varying amounts: every offset
    for (int i = 0; i < n; ++i) {
      if (!ring.TryPush(std::make_unique<int>(next_in))) break;
      ++next_in;
    }
    for (int i = 0; i < (round % 3 == 0 ? 8 : n - 1); ++i) {
      std::unique_ptr<int> p;
      if (!ring.TryPop(&p)) break;
      ASSERT_NE(p, nullptr);
      EXPECT_EQ(*p, next_out++);
    }
  }
  std::unique_ptr<int> p;
  while (ring.TryPop(&p)) EXPECT_EQ(*p, next_out++);
  EXPECT_EQ(next_in, next_out);
  EXPECT_GT(next_in, 8 * 100) << "the indices did not wrap";
}

TEST(SpscRing, PopReleasesTheSlot) {
  SpscRing<std::shared_ptr<int>> ring(2);
  auto value = std::make_shared<int>(7);
  ASSERT_TRUE(ring.TryPush(std::shared_ptr<int>(value)));
  std::shared_ptr<int> out;
  ASSERT_TRUE(ring.TryPop(&out));
  out.reset();
  EXPECT_EQ(value.use_count(), 1) << "the ring kept a reference after the pop";
}

// Slots are raw storage: a value still in the ring when it is destroyed is destroyed with
// it, once, and a popped one is destroyed by the pop, not again by the ring.
TEST(SpscRing, DestroysWhatItHoldsOnce) {
  auto a = std::make_shared<int>(1);
  auto b = std::make_shared<int>(2);
  {
    SpscRing<std::shared_ptr<int>> ring(4);
    for (int round = 0; round < 3; ++round) {  // wraps the indices around the slots
      ASSERT_TRUE(ring.TryPush(std::shared_ptr<int>(a)));
      std::shared_ptr<int> out;
      ASSERT_TRUE(ring.TryPop(&out));
    }
    ASSERT_TRUE(ring.TryPush(std::shared_ptr<int>(a)));
    ASSERT_TRUE(ring.TryPush(std::shared_ptr<int>(b)));
    EXPECT_EQ(a.use_count(), 2);
    EXPECT_EQ(*ring.Peek(1), 2);
  }
  EXPECT_EQ(a.use_count(), 1) << "the ring's destructor leaked a value it held";
  EXPECT_EQ(b.use_count(), 1);
}

TEST(EventCount, NotifyWakesAWaiterAndANotifyBeforeWaitIsNotLost) {
  EventCount ec;
  // Notify between PrepareWait and Wait: Wait returns at once.
  const uint32_t key = ec.PrepareWait();
  ec.Notify();
  ec.Wait(key);  // would block forever if the notify were lost
  // A waiter on another thread, woken by a flag set before Notify (cancellation while
  // blocked).
  std::atomic<bool> cancelled{false};
  std::atomic<bool> woke{false};
  std::thread waiter([&] {
    while (!cancelled.load()) {
      const uint32_t k = ec.PrepareWait();
      if (cancelled.load()) {
        ec.CancelWait();
        break;
      }
      ec.Wait(k);
    }
    woke = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(woke.load());
  cancelled = true;
  ec.Notify();
  waiter.join();
  EXPECT_TRUE(woke.load());
}

// Waiting (Notify's first half): true from PrepareWait until the wait ends (a Notify or
// CancelWait), false otherwise; a notifier that sees false needs no Notify.
TEST(EventCount, WaitingIsTrueOnlyWhileAWaitIsRegistered) {
  EventCount ec;
  EXPECT_FALSE(ec.Waiting());
  uint32_t key = ec.PrepareWait();
  EXPECT_TRUE(ec.Waiting());
  ec.CancelWait();
  EXPECT_FALSE(ec.Waiting());
  key = ec.PrepareWait();
  EXPECT_TRUE(ec.Notify()) << "a registered wait was not woken";
  EXPECT_FALSE(ec.Waiting());
  EXPECT_FALSE(ec.Notify()) << "a second Notify woke nobody and said it did";
  ec.Wait(key);  // returns at once: the Notify came after PrepareWait
  EXPECT_FALSE(ec.Waiting());
}

// PeekKnown shows only values the consumer's cached view of the tail covers: none before
// its first pop has read the tail, the rest of the values that pop saw after it, and no
// value pushed since.
TEST(SpscRing, PeekKnownSeesOnlyValuesTheConsumerAlreadyKnows) {
  SpscRing<int> ring(8);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(ring.TryPush(int{i}));
  EXPECT_EQ(ring.PeekKnown(0), nullptr) << "known before any pop read the tail";
  int v = -1;
  ASSERT_TRUE(ring.TryPop(&v));  // reads the tail: values 1 and 2 are known now
  EXPECT_EQ(v, 0);
  ASSERT_NE(ring.PeekKnown(0), nullptr);
  EXPECT_EQ(*ring.PeekKnown(0), 1);
  ASSERT_NE(ring.PeekKnown(1), nullptr);
  EXPECT_EQ(*ring.PeekKnown(1), 2);
  EXPECT_EQ(ring.PeekKnown(2), nullptr);
  ASSERT_TRUE(ring.TryPush(3));
  EXPECT_EQ(ring.PeekKnown(2), nullptr) << "a push the consumer has not seen is known";
  ASSERT_TRUE(ring.TryPop(&v));
  ASSERT_TRUE(ring.TryPop(&v));
  ASSERT_TRUE(ring.TryPop(&v));  // reads the tail again
  EXPECT_EQ(v, 3);
  EXPECT_EQ(ring.PeekKnown(0), nullptr);
  ring.PrefetchAhead(5);  // a hint only: reads and changes nothing
  EXPECT_TRUE(ring.Empty());
}

// One producer, one consumer, each sleeping on an EventCount when the ring is full or
// empty: every value arrives once, in order. Bounded: 500,000 values or 10 s.
TEST(SpscRing, ProducerConsumerStress) {
  SpscRing<int64_t> ring(16);
  EventCount not_empty, not_full;
  constexpr int64_t kValues = 500'000;
  std::atomic<bool> done{false};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  std::atomic<bool> timed_out{false};
  std::thread producer([&] {
    bool stop = false;
    for (int64_t i = 0; i < kValues && !stop; ++i) {
      int64_t v = i;
      while (!ring.TryPush(std::move(v))) {
        if (timed_out.load()) {
          stop = true;
          break;
        }
        const uint32_t key = not_full.PrepareWait();
        if (ring.Size() < ring.capacity() || timed_out.load()) {
          not_full.CancelWait();
          continue;
        }
        not_full.Wait(key);
      }
      not_empty.Notify();
    }
    done = true;
    not_empty.Notify();
  });
  int64_t expected = 0;
  while (true) {
    int64_t v;
    if (ring.TryPop(&v)) {
      ASSERT_EQ(v, expected) << "out of order or duplicated";
      ++expected;
      not_full.Notify();
      if ((expected & 0xffff) == 0 && std::chrono::steady_clock::now() > deadline) {
        timed_out = true;
        not_full.Notify();
        break;
      }
      continue;
    }
    const uint32_t key = not_empty.PrepareWait();
    if (!ring.Empty() || done.load()) {
      not_empty.CancelWait();
      if (done.load() && ring.Empty()) break;
      continue;
    }
    not_empty.Wait(key);
  }
  producer.join();
  if (!timed_out) {
    EXPECT_EQ(expected, kValues);
  }
  EXPECT_GT(expected, 0);
}

// Strict ping-pong between two threads, each sleeping on an EventCount until the other
// hands it the turn: every step is a PrepareWait racing a Notify, in both modes (plain
// fences; asymmetric: the heavy side a membarrier where the kernel has it, Notify only a
// compiler barrier). A lost wake-up leaves a thread asleep with its turn given; a
// watchdog then wakes it and the test fails, instead of hanging. Bounded: 20,000 turns
// or 10 s per mode.
void PingPong(bool asymmetric) {
  EventCount ec[2];
  std::atomic<int64_t> turn{0};  // even: thread 0 plays, odd: thread 1
  constexpr int64_t kTurns = 20'000;
  std::atomic<bool> stop{false};
  std::atomic<int64_t> rescues{0};
  std::atomic<int> in_mode{0};
  const auto play = [&](int me) {
    ec[me].SetAsymmetric(asymmetric);  // the waiter's own choice, before its waits
    in_mode += ec[me].asymmetric() == asymmetric ? 1 : 0;
    while (!stop.load()) {
      const int64_t t = turn.load();
      if (t >= kTurns) break;
      if (t % 2 == me) {
        turn.store(t + 1);
        ec[1 - me].Notify();
        continue;
      }
      const uint32_t key = ec[me].PrepareWait();
      if (turn.load() != t || stop.load()) {
        ec[me].CancelWait();
        continue;
      }
      ec[me].Wait(key);
    }
    ec[1 - me].Notify();  // the other side may be waiting for the last turn
  };
  std::thread a(play, 0), b(play, 1);
  // Watchdog: the turn must move within a second; if it does not, a wake-up was lost.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  int64_t last = -1;
  auto last_move = std::chrono::steady_clock::now();
  while (turn.load() < kTurns && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    const int64_t t = turn.load();
    if (t != last) {
      last = t;
      last_move = std::chrono::steady_clock::now();
    } else if (std::chrono::steady_clock::now() - last_move > std::chrono::seconds(1)) {
      rescues.fetch_add(1);
      ec[0].Notify();
      ec[1].Notify();
      last_move = std::chrono::steady_clock::now();
    }
  }
  stop = true;
  ec[0].Notify();
  ec[1].Notify();
  a.join();
  b.join();
  EXPECT_EQ(rescues.load(), 0) << "a thread slept through the Notify that gave it its turn";
  EXPECT_GT(turn.load(), 1000) << "the ping-pong made almost no progress in 10 s";
  // Asymmetric mode is what ran where the kernel offers membarrier.
  if (!asymmetric || asymmetric_fence::Available()) {
    EXPECT_EQ(in_mode.load(), 2);
  }
}

TEST(EventCount, PingPongLosesNoWakeUpWithPlainFences) { PingPong(false); }

TEST(EventCount, PingPongLosesNoWakeUpWithAsymmetricFences) {
#if defined(__linux__)
  // Where the kernel offers expedited membarriers, the asymmetric mode must be usable.
  const long cmds = syscall(__NR_membarrier, 0 /* MEMBARRIER_CMD_QUERY */, 0, 0);
  if (cmds > 0 && (cmds & (1 << 3)) != 0 /* MEMBARRIER_CMD_PRIVATE_EXPEDITED */ &&
      std::getenv("SLUICE_NO_MEMBARRIER") == nullptr) {
    EXPECT_TRUE(asymmetric_fence::Available());
  }
#endif
  PingPong(true);
}

// Switching out of the asymmetric mode between waits loses no wake-up either: the waiter
// flips its mode every few waits while the notifier keeps notifying.
TEST(EventCount, SwitchingModesBetweenWaitsLosesNoWakeUp) {
  SpscRing<int64_t> ring(4);
  EventCount not_empty;
  constexpr int64_t kValues = 50'000;
  std::atomic<bool> done{false};
  std::thread producer([&] {
    for (int64_t i = 0; i < kValues; ++i) {
      int64_t v = i;
      while (!ring.TryPush(std::move(v))) std::this_thread::yield();
      not_empty.Notify();
    }
    done = true;
    not_empty.Notify();
  });
  int64_t expected = 0;
  int64_t waits = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (expected < kValues && std::chrono::steady_clock::now() < deadline) {
    int64_t v;
    if (ring.TryPop(&v)) {
      ASSERT_EQ(v, expected);
      ++expected;
      continue;
    }
    not_empty.SetAsymmetric((++waits / 3) % 2 == 0);
    const uint32_t key = not_empty.PrepareWait();
    if (!ring.Empty() || done.load()) {
      not_empty.CancelWait();
      continue;
    }
    not_empty.Wait(key);  // a lost wake-up hangs here (the ctest timeout reports it)
  }
  producer.join();
  EXPECT_EQ(expected, kValues);
  EXPECT_GT(waits, 10);
}

// The ring's charges are taken in batches by the runner and given back in batches by the
// consumer (async_buffer.cc, FlushRingPops): under a limited budget the buffered bytes
// stay within it all along, and once the stream ends nothing is charged.
TEST(PrefetchRing, BatchedChargesStayWithinTheBudgetAndLeaveNothingCharged) {
  Options o;
  o.optimization.apply_default_optimizations = false;
  o.autotune.ram_budget = 256 << 10;  // 256 one-KiB elements would fit; the ring holds 64
  const Function make = Function::Map(
      "make", [](Element, FunctionContext&) -> Result<Element> {
        return Element{Tensor::Zeros(DType::kUInt8, Shape({1024}))};
      });
  const Dataset ds = Dataset::Range(20000).Map(make).Prefetch(64);
  auto it = *ds.MakeIterator(o);
  int64_t n = 0;
  while (true) {
    auto e = it->GetNext();
    ASSERT_TRUE(e.ok()) << e.status();
    if (!*e) break;
    ASSERT_EQ((**e)[0].nbytes(), 1024u);
    if (++n % 997 == 0) {
      const PipelineStats s = it->Snapshot();
      ASSERT_LE(s.buffered_bytes, o.autotune.ram_budget) << "after " << n << " elements";
    }
  }
  EXPECT_EQ(n, 20000);
  const PipelineStats s = it->Snapshot();
  EXPECT_EQ(s.buffered_bytes, 0);
  EXPECT_LE(s.peak_buffered_bytes, o.autotune.ram_budget);
  EXPECT_EQ(s.budget_overshoot_bytes, 0);
}

TEST(PrefetchRing, CancelWakesAConsumerBlockedOnAnEmptyRing) {
  Options o;
  o.optimization.apply_default_optimizations = false;
  // An input that blocks: every element after the first sleeps 2 s, so only Cancel's
  // own wake-up can end the consumer's wait within the bound below.
  const Dataset ds =
      Dataset::Range(1000)
          .Map(Function::Map("slow",
                             [](Element e, FunctionContext&) -> Result<Element> {
                               if (e[0].scalar<int64_t>() > 0) {
                                 std::this_thread::sleep_for(std::chrono::seconds(2));
                               }
                               return e;
                             }))
          .Prefetch(4);
  auto it = *ds.MakeIterator(o);
  ASSERT_TRUE(it->GetNext().ok());
  std::atomic<bool> returned{false};
  Status status;
  std::thread consumer([&] {
    for (int i = 0; i < 1000; ++i) {
      auto e = it->GetNext();
      if (!e.ok()) {
        status = e.status();
        break;
      }
    }
    returned = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto t0 = std::chrono::steady_clock::now();
  it->Cancel();
  consumer.join();
  EXPECT_TRUE(returned.load());
  EXPECT_EQ(status.code(), StatusCode::kCancelled) << status.ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1))
      << "the blocked consumer waited for the input instead of the cancel";
}

}  // namespace
}  // namespace sluice
