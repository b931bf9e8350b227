// Prefetch and ParallelMap: the AsyncBufferIterator mechanism (src/runtime/async_buffer.h).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "api/dataset_internal.h"
#include "runtime/async_buffer.h"
#include "sluice/dataset.h"
#include "testing/conformance.h"

namespace sluice {
namespace {

using testing::CheckDataset;
using testing::CheckTransform;
using testing::ConformanceOptions;
using testing::Ints;
using testing::IntsOf;

std::vector<int64_t> Iota(int64_t n, int64_t mul = 1, int64_t add = 0) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(i * mul + add);
  return v;
}

Function Times(int64_t k) {
  return Function::Map("times", [k](Element e, FunctionContext&) -> Result<Element> {
    return Element{Tensor::Scalar<int64_t>(e[0].scalar<int64_t>() * k)};
  });
}

// Sleeps longer for some elements so results complete out of order.
Function JitteryTimes(int64_t k) {
  return Function::Map("jittery", [k](Element e, FunctionContext&) -> Result<Element> {
    const int64_t v = e[0].scalar<int64_t>();
    std::this_thread::sleep_for(std::chrono::microseconds((v * 7919) % 5 * 200));
    return Element{Tensor::Scalar<int64_t>(v * k)};
  });
}

// Pool, inline, and a one-thread pool: the three runtimes every parallel op is checked in.
std::vector<Options> Runtimes() {
  Options pool;
  pool.autotune.cpu_budget = 4;
  Options inl;
  inl.inline_execution = true;
  Options one;
  one.autotune.cpu_budget = 1;
  return {pool, inl, one};
}

TEST(Prefetch, Conformance) {
  for (int64_t buf : {int64_t{1}, int64_t{3}, kAutotune}) {
    for (const Options& rt : Runtimes()) {
      ConformanceOptions o;
      o.runtime = rt;
      CheckDataset(Dataset::Range(20).Prefetch(buf), Ints(Iota(20)), o);
    }
    CheckTransform([buf](Dataset d) { return d.Prefetch(buf); });
  }
}

TEST(Prefetch, BadBufferSize) {
  EXPECT_FALSE(Dataset::Range(3).Prefetch(0).ok());
  EXPECT_FALSE(Dataset::Range(3).Prefetch(-5).ok());
}

// Buffers size elements from their spec; a spec too large for any element (an IDX file
// of 0 rows can declare one) counts as unknown instead of overflowing.
TEST(AsyncBuffer, StaticElementBytesOfHugeSpecsIsUnknown) {
  auto spec = [](std::vector<TensorSpec> c) {
    ElementSpec s;
    s.components = std::move(c);
    return s;
  };
  EXPECT_EQ(StaticElementBytes(spec({{DType::kFloat32, PartialShape{2, 3}},
                                     {DType::kInt64, PartialShape{}}})),
            32);
  EXPECT_EQ(StaticElementBytes(spec({{DType::kFloat32, PartialShape{2, 0}}})), 0);
  EXPECT_EQ(StaticElementBytes(spec({{DType::kString, PartialShape{2}}})), -1);
  EXPECT_EQ(StaticElementBytes(spec({{DType::kFloat32, PartialShape{-1, 2}}})), -1);
  EXPECT_EQ(StaticElementBytes(
                spec({{DType::kFloat32, PartialShape{1900671690, 2147484416}}})),
            -1);
  EXPECT_EQ(StaticElementBytes(spec({{DType::kUInt8, PartialShape{int64_t{1} << 61}},
                                     {DType::kUInt8, PartialShape{int64_t{1} << 61}},
                                     {DType::kUInt8, PartialShape{1}}})),
            -1);
  EXPECT_EQ(StaticElementBytes(spec({{DType::kUInt8, PartialShape{int64_t{1} << 61}},
                                     {DType::kUInt8, PartialShape{int64_t{1} << 61}}})),
            int64_t{1} << 62);
}

TEST(ParallelMap, ConformanceDeterministic) {
  for (int64_t p : {int64_t{1}, int64_t{2}, int64_t{4}, kAutotune}) {
    for (const Options& rt : Runtimes()) {
      ConformanceOptions o;
      o.runtime = rt;
      CheckDataset(Dataset::Range(25).Map(JitteryTimes(3), p, true), Ints(Iota(25, 3)), o);
    }
    CheckTransform([p](Dataset d) { return d.Map(Times(2), p, true); });
  }
}

TEST(ParallelMap, ConformanceNonDeterministic) {
  for (int64_t p : {int64_t{1}, int64_t{3}, kAutotune}) {
    for (const Options& rt : Runtimes()) {
      ConformanceOptions o;
      o.runtime = rt;
      o.ordered = false;
      CheckDataset(Dataset::Range(25).Map(JitteryTimes(3), p, false), Ints(Iota(25, 3)), o);
    }
    CheckTransform([p](Dataset d) { return d.Map(Times(2), p, false); });
  }
}

TEST(ParallelMap, DeterministicDefaultComesFromRuntimeOptions) {
  // With deterministic unset and Options::deterministic = false, a slow first
  // element is overtaken.
  Function slow_first = Function::Map("slow_first", [](Element e, FunctionContext&) -> Result<Element> {
    if (e[0].scalar<int64_t>() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    return e;
  });
  Options rt;
  rt.autotune.cpu_budget = 2;
  rt.deterministic = false;
  auto it = MakeIteratorAsBuilt(Dataset::Range(6).Map(slow_first, 2), rt);
  ASSERT_TRUE(it.ok());
  auto first = (*it)->GetNext();
  ASSERT_TRUE(first.ok() && first->has_value());
  EXPECT_NE((**first)[0].scalar<int64_t>(), 0);
  rt.deterministic = true;
  auto det = Dataset::Range(6).Map(slow_first, 2).Collect();
  ASSERT_TRUE(det.ok());
  EXPECT_EQ(IntsOf(*det), Iota(6));
}

TEST(ParallelMap, SlowElementDoesNotHoldBackNonDeterministicStream) {
  std::atomic<bool> release{false};
  Function stuck = Function::Map("stuck", [&release](Element e, FunctionContext&) -> Result<Element> {
    if (e[0].scalar<int64_t>() == 0) {
      while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return e;
  });
  Options rt;
  rt.autotune.cpu_budget = 3;
  auto it = MakeIteratorAsBuilt(Dataset::Range(100).Map(stuck, 3, false), rt);
  ASSERT_TRUE(it.ok());
  // 50 elements flow past the stuck one...
  for (int i = 0; i < 50; ++i) {
    auto e = (*it)->GetNext();
    ASSERT_TRUE(e.ok() && e->has_value());
    EXPECT_NE((**e)[0].scalar<int64_t>(), 0);
  }
  // ...and the buffer stays within its capacity while they do.
  for (const IteratorStats& s : (*it)->Stats()) {
    if (s.name == "ParallelMap") {
      EXPECT_LE(s.buffered_elements, s.buffer_limit);
      EXPECT_EQ(s.parallelism, 3);
    }
  }
  release = true;
  int64_t rest = 0;
  bool saw_zero = false;
  while (true) {
    auto e = (*it)->GetNext();
    ASSERT_TRUE(e.ok());
    if (!*e) break;
    saw_zero |= (**e)[0].scalar<int64_t>() == 0;
    ++rest;
  }
  EXPECT_EQ(rest, 50);
  EXPECT_TRUE(saw_zero);
}

TEST(ParallelMap, RandomFunctionsAreReproducibleAtAnyParallelism) {
  Function noisy = Function::Map(
      "noisy",
      [](Element e, FunctionContext& ctx) -> Result<Element> {
        return Element{Tensor::Scalar<int64_t>(e[0].scalar<int64_t>() * 1000 +
                                               static_cast<int64_t>(ctx.rng().Uniform() * 1000))};
      },
      {.is_random = true});
  SetGlobalSeed(1234);
  auto seq = Dataset::Range(200).Map(noisy).Collect();
  ASSERT_TRUE(seq.ok());
  for (int64_t p : {1, 2, 7}) {
    SetGlobalSeed(1234);
    auto par = Dataset::Range(200).Map(noisy, p, true).Collect();
    ASSERT_TRUE(par.ok());
    EXPECT_EQ(IntsOf(*par), IntsOf(*seq)) << "parallelism " << p;
  }
}

TEST(ParallelMap, FunctionErrorNamesTheOperatorAndMovesOn) {
  Function fail3 = Function::Map("fail3", [](Element e, FunctionContext&) -> Result<Element> {
    if (e[0].scalar<int64_t>() == 3) return DataLossError("bad record 3");
    return e;
  });
  auto it = Dataset::Range(6).Map(fail3, 2).MakeIterator();
  ASSERT_TRUE(it.ok());
  std::vector<int64_t> got;
  int errors = 0;
  while (true) {
    auto e = (*it)->GetNext();
    if (!e.ok()) {
      ++errors;
      EXPECT_NE(e.status().message().find("ParallelMap"), std::string::npos) << e.status();
      EXPECT_NE(e.status().message().find("bad record 3"), std::string::npos) << e.status();
      continue;
    }
    if (!*e) break;
    got.push_back((**e)[0].scalar<int64_t>());
  }
  EXPECT_EQ(errors, 1);
  EXPECT_EQ(got, (std::vector<int64_t>{0, 1, 2, 4, 5}));
}

TEST(ParallelMap, BadArguments) {
  EXPECT_FALSE(Dataset::Range(3).Map(Times(2), 0).ok());
  EXPECT_FALSE(Dataset::Range(3).Map(Times(2), -7).ok());
}

TEST(AsyncBuffer, DestroyingMidStreamStopsPromptly) {
  Function slow = Function::Map("slow", [](Element e, FunctionContext&) -> Result<Element> {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return e;
  });
  for (int i = 0; i < 20; ++i) {
    auto it = Dataset::Range(1000000).Map(slow, 4).Prefetch(8).MakeIterator();
    ASSERT_TRUE(it.ok());
    for (int k = 0; k < i % 4; ++k) ASSERT_TRUE((*it)->GetNext().ok());
    const auto t0 = std::chrono::steady_clock::now();
    it->reset();
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - t0).count();
    EXPECT_LT(ms, 1000) << "destruction took " << ms << " ms";
  }
}

TEST(AsyncBuffer, CancelWakesAConsumerBlockedOnAnotherThread) {
  Function forever = Function::Map("slowish", [](Element e, FunctionContext&) -> Result<Element> {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return e;
  });
  auto it = Dataset::Range(1000).Map(forever, 1).Prefetch(1).MakeIterator();
  ASSERT_TRUE(it.ok());
  Iterator* raw = it->get();
  std::atomic<int> cancelled{0};
  std::thread consumer([&] {
    while (true) {
      auto e = raw->GetNext();
      if (!e.ok()) {
        if (e.status().code() == StatusCode::kCancelled) ++cancelled;
        break;
      }
      if (!*e) break;
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(120));
  raw->Cancel();
  consumer.join();
  EXPECT_EQ(cancelled.load(), 1);
}

TEST(AsyncBuffer, DestructorWaitsForAGetNextOnAnotherThread) {
  // The consumer makes exactly one GetNext call, which blocks on a slow first element;
  // the iterator is destroyed while that call is in progress.
  Function slow = Function::Map("slow", [](Element e, FunctionContext&) -> Result<Element> {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    return e;
  });
  for (int round = 0; round < 3; ++round) {
    auto it = Dataset::Range(1000).Map(slow, 2).MakeIterator();
    ASSERT_TRUE(it.ok());
    Iterator* raw = it->get();
    std::atomic<bool> started{false};
    Status result;
    std::thread consumer([&] {
      started = true;
      auto e = raw->GetNext();
      result = e.ok() ? Status::OK() : e.status();
    });
    while (!started) std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::milliseconds(20 + 10 * round));
    it->reset();  // cancels, waits for the consumer's call to return, then destroys
    consumer.join();
    EXPECT_EQ(result.code(), StatusCode::kCancelled) << result;
  }
}

TEST(Iterator, CancelHoldsForSequentialPipelinesAndAcrossRestore) {
  auto it = Dataset::Range(10).Batch(2).MakeIterator();
  ASSERT_TRUE(it.ok());
  auto first = (*it)->GetNext();
  ASSERT_TRUE(first.ok() && first->has_value());
  auto ckpt = (*it)->Save();
  ASSERT_TRUE(ckpt.ok());
  (*it)->Cancel();
  auto e = (*it)->GetNext();
  EXPECT_EQ(e.status().code(), StatusCode::kCancelled);
  ASSERT_TRUE((*it)->Restore(*ckpt).ok());
  e = (*it)->GetNext();
  EXPECT_EQ(e.status().code(), StatusCode::kCancelled);
}

TEST(Iterator, SnapshotWhileRestoring) {
  Function slowish = Function::Map("slowish", [](Element e, FunctionContext&) -> Result<Element> {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    return e;
  });
  Dataset ds = Dataset::Range(100).Map(slowish, 2).Prefetch(4);
  auto it = ds.MakeIterator();
  ASSERT_TRUE(it.ok());
  ASSERT_TRUE((*it)->GetNext().ok());
  auto ckpt = (*it)->Save();
  ASSERT_TRUE(ckpt.ok());
  std::atomic<bool> stop{false};
  std::atomic<int64_t> snapshots{0};
  std::thread watcher([&] {
    while (!stop) {
      PipelineStats p = (*it)->Snapshot();
      if (!p.nodes.empty() && p.nodes[0].name == "Prefetch") ++snapshots;
    }
  });
  // At least 20 restores, and on until the watcher has taken a few snapshots (a loaded
  // machine may not schedule it during the first 20); bounded so a broken Snapshot fails.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (int i = 0; i < 20 || (snapshots.load() < 3 && std::chrono::steady_clock::now() < deadline);
       ++i) {
    ASSERT_TRUE((*it)->Restore(*ckpt).ok());
    auto e = (*it)->GetNext();
    ASSERT_TRUE(e.ok() && e->has_value());
    EXPECT_EQ((**e)[0].scalar<int64_t>(), 1);
  }
  stop = true;
  watcher.join();
  EXPECT_GT(snapshots.load(), 0);
}

TEST(AsyncBuffer, MemoryBudgetBoundsBufferedBytes) {
  // 64 elements of 4 MiB behind a prefetch of 64 would buffer 256 MiB; the budget is 16 MiB.
  const int64_t kElem = 4 << 20;
  Function big = Function::Map(
      "big",
      [](Element e, FunctionContext&) -> Result<Element> {
        return Element{Tensor::Zeros(DType::kUInt8, Shape({4 << 20}))};
      },
      {}, [](const ElementSpec&) -> Result<ElementSpec> {
        return ElementSpec{{TensorSpec{DType::kUInt8, PartialShape({4 << 20})}}};
      });
  Options rt;
  rt.autotune.cpu_budget = 2;
  rt.autotune.ram_budget = 16 << 20;
  auto it = MakeIteratorAsBuilt(Dataset::Range(64).Map(big, 2).Prefetch(64), rt);
  ASSERT_TRUE(it.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // let buffers fill
  int64_t n = 0;
  while (true) {
    auto e = (*it)->GetNext();
    ASSERT_TRUE(e.ok()) << e.status();
    if (!*e) break;
    ++n;
    if (n % 8 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(n, 64);
  PipelineStats s = (*it)->Snapshot();
  EXPECT_LE(s.peak_buffered_bytes, rt.autotune.ram_budget);
  EXPECT_EQ(s.budget_overshoot_bytes, 0);
  EXPECT_GE(s.peak_buffered_bytes, 2 * kElem);  // the buffers did fill up to the budget
  EXPECT_EQ(s.ram_budget, rt.autotune.ram_budget);
}

TEST(AsyncBuffer, StatsOfAParallelPipeline) {
  Function burn = Function::Map("burn", [](Element e, FunctionContext&) -> Result<Element> {
    volatile double x = 0;
    for (int i = 0; i < 20000; ++i) x = x + i * 0.5;
    return e;
  });
  Options rt;
  rt.autotune.cpu_budget = 2;
  auto it =
      MakeIteratorAsBuilt(Dataset::Range(400).Map(burn, 2).Batch(10).Prefetch(2), rt);
  ASSERT_TRUE(it.ok());
  int64_t batches = 0;
  while (true) {
    auto e = (*it)->GetNext();
    ASSERT_TRUE(e.ok());
    if (!*e) break;
    ++batches;
  }
  PipelineStats s = (*it)->Snapshot();
  ASSERT_EQ(s.nodes.size(), 4u);
  EXPECT_EQ(s.nodes[0].name, "Prefetch");
  EXPECT_TRUE(s.nodes[0].async);
  EXPECT_EQ(s.nodes[0].elements_produced, 40);
  EXPECT_EQ(s.nodes[0].elements_consumed, 40);
  EXPECT_EQ(s.nodes[1].name, "Batch");
  EXPECT_EQ(s.nodes[1].parent, 0);
  EXPECT_EQ(s.nodes[1].elements_consumed, 400);
  EXPECT_EQ(s.nodes[1].bytes_produced, 40 * 10 * 8);
  EXPECT_EQ(s.nodes[2].name, "ParallelMap");
  EXPECT_EQ(s.nodes[2].parallelism, 2);
  EXPECT_GT(s.nodes[2].buffer_limit, 0);
  // The map's CPU (its function, on the pool) dominates everything else.
  EXPECT_GT(s.nodes[2].cpu_ns, s.nodes[1].cpu_ns);
  EXPECT_GT(s.nodes[2].cpu_ns, s.nodes[3].cpu_ns);
  EXPECT_EQ(s.nodes[3].name, "Range");
  EXPECT_EQ(s.nodes[3].bytes_produced, 400 * 8);
  EXPECT_EQ(s.cpu_budget, 2);
}

}  // namespace
}  // namespace sluice
