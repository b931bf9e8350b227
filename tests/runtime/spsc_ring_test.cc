// SpscRing and EventCount (src/runtime/spsc_ring.h): order, wrap-around, full/empty,
// a waiter woken by Notify (and by a cancel flag while blocked), and a producer/consumer
// stress run bounded in time. Prefetch's ring path is covered end to end below.
#include "runtime/spsc_ring.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

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
  if (!timed_out) EXPECT_EQ(expected, kValues);
  EXPECT_GT(expected, 0);
}

// Prefetch's ring path end to end: order, a checkpoint mid-stream (the ring's elements
// are saved and restored), and cancellation of a consumer blocked on an empty ring.
TEST(PrefetchRing, OrderAndCheckpointMidStream) {
  Options o;
  o.optimization.apply_default_optimizations = false;
  const Dataset ds = Dataset::Range(5000).Prefetch(16);
  auto it = *ds.MakeIterator(o);
  for (int64_t i = 0; i < 1234; ++i) {
    auto e = it->GetNext();
    ASSERT_TRUE(e.ok() && e->has_value());
    ASSERT_EQ((**e)[0].scalar<int64_t>(), i);
  }
  auto ckpt = it->Save();
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().ToString();
  auto restored = *ds.MakeIterator(o);
  ASSERT_TRUE(restored->Restore(*ckpt).ok());
  for (int64_t i = 1234; i < 5000; ++i) {
    auto a = it->GetNext();
    auto b = restored->GetNext();
    ASSERT_TRUE(a.ok() && a->has_value() && b.ok() && b->has_value());
    ASSERT_EQ((**a)[0].scalar<int64_t>(), i);
    ASSERT_EQ((**b)[0].scalar<int64_t>(), i);
  }
  EXPECT_FALSE(*it->GetNext());
  EXPECT_FALSE(*restored->GetNext());
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
