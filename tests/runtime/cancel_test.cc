// Cancellation reaches loops that run without producing: every op whose GetNext can spin
// over its input (filter, skip, shuffle fill, interleave over empty inner datasets, ...)
// returns Cancelled promptly after Iterator::Cancel, and destroying an iterator whose
// Prefetch runner spins in such a loop returns. Every wait here is bounded: a hang ends
// the process with a message instead of blocking the test run.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <memory>
#include <thread>

#include "api/dataset_internal.h"
#include "sluice/dataset.h"

namespace sluice {
namespace {

using namespace std::chrono_literals;

constexpr auto kBound = 20s;  // far above the milliseconds a cancel takes

// Exits the process (failing the test run) when `f` is not ready within kBound.
template <typename T>
T WaitOrDie(std::future<T>& f, const char* what) {
  if (f.wait_for(kBound) != std::future_status::ready) {
    std::fprintf(stderr, "FATAL: %s did not return within %lld s after Cancel\n", what,
                 static_cast<long long>(kBound.count()));
    std::fflush(stderr);
    std::_Exit(3);
  }
  return f.get();
}

Function Never() {
  return Function::Predicate(
      "never", [](const Element&, FunctionContext&) -> Result<bool> { return false; });
}
Function Always() {
  return Function::Predicate(
      "always", [](const Element&, FunctionContext&) -> Result<bool> { return true; });
}
// A map that takes a millisecond per element, so buffering ops fill slowly (and
// boundedly).
Function Slow() {
  return Function::Map("slow", [](Element e, FunctionContext&) -> Result<Element> {
    std::this_thread::sleep_for(1ms);
    return e;
  });
}
Function Empty() {
  return Function::DatasetFunction(
      "empty",
      [](Element, FunctionContext&) -> Result<Dataset> { return Dataset::Range(0); });
}
Dataset Endless() { return Dataset::Range(10).Repeat(); }
Dataset NeverProduces() { return Endless().Filter(Never()); }

// Runs GetNext on another thread, cancels the iterator while it runs, and expects
// Cancelled.
void ExpectCancelled(const Dataset& ds, bool optimized) {
  auto made = optimized ? ds.MakeIterator() : MakeIteratorAsBuilt(ds, {});
  ASSERT_TRUE(made.ok()) << made.status();
  std::shared_ptr<Iterator> it(std::move(made).value());
  auto task = std::make_shared<std::packaged_task<Status()>>([it]() -> Status {
    auto r = it->GetNext();
    if (!r.ok()) return r.status();
    return InternalError(r->has_value() ? "an element came out" : "end of data");
  });
  std::future<Status> done = task->get_future();
  std::thread t([task] { (*task)(); });
  std::this_thread::sleep_for(30ms);  // let it get into its loop (any delay would do)
  it->Cancel();
  Status s = WaitOrDie(done, "GetNext");
  t.join();
  EXPECT_EQ(s.code(), StatusCode::kCancelled) << s;
  // Later calls keep returning Cancelled.
  auto again = it->GetNext();
  EXPECT_FALSE(again.ok());
}

void ExpectCancelledBothWays(const Dataset& ds) {
  SCOPED_TRACE("unoptimized");
  ExpectCancelled(ds, false);
  SCOPED_TRACE("optimized");
  ExpectCancelled(ds, true);
}

TEST(CancelTest, Filter) { ExpectCancelledBothWays(NeverProduces()); }

TEST(CancelTest, ParallelFilter) {
  ExpectCancelledBothWays(Endless().Filter(Never(), 2));
}

TEST(CancelTest, Skip) {
  // Filter(always) hides the cardinality, so Repeat cannot skip whole epochs at once.
  ExpectCancelledBothWays(Endless().Filter(Always()).Skip(int64_t{1} << 62));
}

TEST(CancelTest, TakeOfSkip) { ExpectCancelledBothWays(NeverProduces().Skip(5).Take(3)); }

TEST(CancelTest, ShuffleFill) {
  // 1,024 elements of 1 ms each: still filling when cancelled.
  ExpectCancelledBothWays(Endless().Map(Slow()).Shuffle(1024, 1));
}

TEST(CancelTest, InterleaveOfEmptyDatasets) {
  ExpectCancelledBothWays(Endless().Interleave(Empty(), 4));
}

TEST(CancelTest, ParallelInterleaveOfEmptyDatasets) {
  ExpectCancelledBothWays(Endless().Interleave(Empty(), 4, 1, 2));
}

TEST(CancelTest, FlatMapOfEmptyDatasets) {
  ExpectCancelledBothWays(Endless().FlatMap(Empty()));
}

TEST(CancelTest, IgnoreErrors) {
  // Every element fails with its own message (not a loop that makes no progress).
  Function fail =
      Function::Map("fail", [](Element e, FunctionContext& ctx) -> Result<Element> {
        return DataLossError("bad element " + std::to_string(ctx.position()));
      });
  ExpectCancelledBothWays(Endless().Map(fail).IgnoreErrors());
}

TEST(CancelTest, RepeatOfNeverProducingInput) {
  ExpectCancelledBothWays(NeverProduces().Repeat());
}

TEST(CancelTest, GroupByWindowFilling) {
  Function key = Function::Map("zero", [](Element, FunctionContext&) -> Result<Element> {
    return Element{Tensor::Scalar<int64_t>(0)};
  });
  Function reduce = Function::DatasetFunction(
      "batch",
      [](Element e, FunctionContext&) -> Result<Dataset> { return Dataset::Range(1); });
  ExpectCancelledBothWays(
      Endless().Map(Slow()).GroupByWindow(key, reduce, int64_t{1} << 30));
}

TEST(CancelTest, WindowFilling) {
  // 1,024 elements of 1 ms each: still filling when cancelled (a larger window of an
  // endless input is refused up front as too large for memory).
  ExpectCancelledBothWays(Endless().Map(Slow()).Window(1024));
}

TEST(CancelTest, MapAndFilter) {
  Function id = Function::Map(
      "id", [](Element e, FunctionContext&) -> Result<Element> { return e; });
  // The optimizer fuses the two into ParallelMapAndFilter (map_parallelization on) or
  // MapAndFilter (off); check that each case ran.
  for (bool parallel : {true, false}) {
    Options o;
    o.optimization.Set("map_parallelization", parallel);
    Dataset ds = Endless().Map(id).Filter(Never()).WithOptions(o);
    ExpectCancelled(ds, /*optimized=*/true);
    auto it = ds.MakeIterator();
    ASSERT_TRUE(it.ok());
    const std::string want = parallel ? "ParallelMapAndFilter" : "MapAndFilter";
    bool fused = false;
    for (const IteratorStats& s : (*it)->Stats()) fused |= s.name == want;
    EXPECT_TRUE(fused) << want;
  }
}

TEST(CancelTest, Shard) { ExpectCancelledBothWays(NeverProduces().Shard(3, 1)); }

TEST(CancelTest, ParallelMapOverNeverProducingInput) {
  ExpectCancelledBothWays(NeverProduces().Map(Slow(), 2));
}

// Destroying an iterator whose Prefetch runner spins in a filter returns (the runner sees
// the cancellation and is joined).
TEST(CancelTest, DestroyWithPrefetchRoot) {
  for (bool optimized : {false, true}) {
    Dataset ds = NeverProduces().Prefetch(2);
    auto made = optimized ? ds.MakeIterator() : MakeIteratorAsBuilt(ds, {});
    ASSERT_TRUE(made.ok()) << made.status();
    std::shared_ptr<Iterator> it(std::move(made).value());
    auto task = std::make_shared<std::packaged_task<Status()>>([it]() -> Status {
      auto r = it->GetNext();
      return r.ok() ? InternalError("returned") : r.status();
    });
    std::future<Status> got = task->get_future();
    std::thread t([task] { (*task)(); });
    std::this_thread::sleep_for(30ms);
    it->Cancel();
    Status s = WaitOrDie(got, "GetNext on a Prefetch root");
    t.join();
    task.reset();  // the async destroyer below must hold the last reference
    EXPECT_EQ(s.code(), StatusCode::kCancelled) << s;
    // The destructor joins the runner, which must have left FilterIterator's loop.
    std::future<void> destroyed =
        std::async(std::launch::async, [it = std::move(it)]() mutable { it.reset(); });
    WaitOrDie(destroyed, "destroying the iterator");
  }
}

}  // namespace
}  // namespace sluice
