// ParallelInterleave (src/ops/transforms/parallel_interleave_dataset.cc): the sequential
// interleave's order in deterministic mode, overlap of slow opens and slow elements, a
// slow input not holding back the others in non-deterministic mode, cancellation, the
// memory budget, checkpoints and stats.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "api/dataset_internal.h"
#include "sluice/dataset.h"
#include "testing/conformance.h"

namespace sluice {
namespace {

using testing::CheckDataset;
using testing::CheckTransform;
using testing::CollectOrDie;
using testing::ConformanceOptions;
using testing::IntsOf;

using Clock = std::chrono::steady_clock;

int64_t MsSince(Clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
}

// A flag that user functions spin on. Open() opens it; so does a watchdog after
// `timeout`, so that a broken implementation fails the test instead of hanging it.
// Declare it before the iterator whose functions use it.
class Gate {
 public:
  explicit Gate(std::chrono::milliseconds timeout = std::chrono::seconds(5))
      : watchdog_([this, timeout] {
          std::unique_lock<std::mutex> l(mu_);
          cv_.wait_for(l, timeout, [this] { return open_.load(); });
          open_ = true;
        }) {}
  ~Gate() {
    Open();
    watchdog_.join();
  }
  void Open() {
    {
      std::lock_guard<std::mutex> l(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }
  // Called by user functions: counts the caller in, then spins until open.
  void Pass() {
    ++entered;
    while (!open_.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::atomic<int> entered{0};

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<bool> open_{false};
  std::thread watchdog_;  // last: starts after the members it uses
};

// Waits (up to 5 s) for `cond`; returns whether it became true.
template <typename F>
bool WaitFor(F cond) {
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (!cond()) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// Input element v becomes Range(100 v, 100 v + Len(v)): inner datasets of different
// lengths, some empty.
int64_t Len(int64_t v) {
  static constexpr int64_t kLens[] = {3, 0, 5, 1, 4, 0, 2, 6, 1, 3};
  return kLens[v % 10];
}
Function Inner(bool prefetch = false) {
  return Function::DatasetFunction(
      "inner", [prefetch](Element e, FunctionContext&) -> Result<Dataset> {
        const int64_t v = e[0].scalar<int64_t>();
        Dataset d = Dataset::Range(100 * v, 100 * v + Len(v));
        return prefetch ? d.Prefetch(2) : d;
      });
}

// Input element v becomes Range(v, v + 2).
Function Pair() {
  return Function::DatasetFunction("pair",
                                   [](Element e, FunctionContext&) -> Result<Dataset> {
                                     const int64_t v = e[0].scalar<int64_t>();
                                     return Dataset::Range(v, v + 2);
                                   });
}

Function SleepMap(int ms) {
  return Function::Map("sleep", [ms](Element e, FunctionContext&) -> Result<Element> {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    return e;
  });
}

// Pool, inline, and a one-thread pool: the runtimes every parallel op is checked in.
std::vector<Options> Runtimes() {
  Options pool;
  pool.autotune.cpu_budget = 4;
  Options inl;
  inl.inline_execution = true;
  Options one;
  one.autotune.cpu_budget = 1;
  return {pool, inl, one};
}

struct Combo {
  int64_t cycle, block, calls;
};
const std::vector<Combo>& Combos() {
  static const std::vector<Combo> kCombos = {{1, 1, 1}, {2, 1, 2}, {3, 2, kAutotune},
                                             {4, 3, 2}, {2, 5, 4}, {5, 1, 1},
                                             {12, 1, 3}};
  return kCombos;
}

// Everything an iterator yields, errors included (as "error: <message>").
struct Trace {
  std::vector<int64_t> values;
  std::vector<std::string> errors;
  std::vector<size_t> error_at;  // values.size() when each error came
};
Trace TraceOf(const Dataset& ds, const Options& rt = {}) {
  Trace t;
  auto it = MakeIteratorAsBuilt(ds, rt);
  EXPECT_TRUE(it.ok()) << it.status();
  if (!it.ok()) return t;
  for (int i = 0; i < 10000; ++i) {
    auto e = (*it)->GetNext();
    if (!e.ok()) {
      t.errors.push_back(e.status().message());
      t.error_at.push_back(t.values.size());
      continue;
    }
    if (!*e) break;
    t.values.push_back((**e)[0].scalar<int64_t>());
  }
  return t;
}

TEST(ParallelInterleave, ConformanceDeterministicMatchesSequential) {
  const Dataset in = Dataset::Range(10);
  for (const Combo& c : Combos()) {
    SCOPED_TRACE("cycle " + std::to_string(c.cycle) + " block " +
                 std::to_string(c.block) + " calls " + std::to_string(c.calls));
    const std::vector<Element> expected =
        CollectOrDie(in.Interleave(Inner(), c.cycle, c.block));
    ASSERT_EQ(expected.size(), 25u);
    for (const Options& rt : Runtimes()) {
      ConformanceOptions o;
      o.runtime = rt;
      CheckDataset(in.Interleave(Inner(), c.cycle, c.block, c.calls, true), expected, o);
    }
  }
}

TEST(ParallelInterleave, ConformanceNonDeterministic) {
  const Dataset in = Dataset::Range(10);
  for (const Combo& c : Combos()) {
    SCOPED_TRACE("cycle " + std::to_string(c.cycle) + " block " +
                 std::to_string(c.block) + " calls " + std::to_string(c.calls));
    const std::vector<Element> expected =
        CollectOrDie(in.Interleave(Inner(), c.cycle, c.block));
    for (const Options& rt : Runtimes()) {
      ConformanceOptions o;
      o.runtime = rt;
      o.ordered = false;
      CheckDataset(in.Interleave(Inner(), c.cycle, c.block, c.calls, false), expected, o);
    }
  }
}

TEST(ParallelInterleave, AsynchronousInnerDatasets) {
  // Inner datasets with their own prefetch thread: elements (and their budget charges)
  // are handed over across buffers.
  const Dataset in = Dataset::Range(10);
  const std::vector<Element> expected = CollectOrDie(in.Interleave(Inner(), 3, 2));
  Options rt;
  rt.autotune.cpu_budget = 4;
  rt.autotune.ram_budget = 1 << 20;
  for (bool det : {true, false}) {
    ConformanceOptions o;
    o.runtime = rt;
    o.ordered = det;
    CheckDataset(in.Interleave(Inner(/*prefetch=*/true), 3, 2, 3, det), expected, o);
  }
  // Nested: a parallel interleave of parallel interleaves.
  Function nested = Function::DatasetFunction(
      "nested", [](Element e, FunctionContext&) -> Result<Dataset> {
        const int64_t v = e[0].scalar<int64_t>();
        return Dataset::Range(v * 3, v * 3 + 3).Interleave(Inner(), 2, 1, 2, true);
      });
  Function nested_seq = Function::DatasetFunction(
      "nested_seq", [](Element e, FunctionContext&) -> Result<Dataset> {
        const int64_t v = e[0].scalar<int64_t>();
        return Dataset::Range(v * 3, v * 3 + 3).Interleave(Inner(), 2, 1);
      });
  ConformanceOptions o;
  o.runtime = rt;
  CheckDataset(Dataset::Range(3).Interleave(nested, 2, 2, 2, true),
               CollectOrDie(Dataset::Range(3).Interleave(nested_seq, 2, 2)), o);
}

TEST(ParallelInterleave, AutotuneCycleLengthIsTheCpuBudget) {
  const Dataset in = Dataset::Range(10);
  for (const Options& rt : Runtimes()) {
    const Dataset ds = in.Interleave(Inner(), kAutotune, 1, kAutotune, true);
    auto probe = MakeIteratorAsBuilt(ds, rt);
    ASSERT_TRUE(probe.ok()) << probe.status();
    const int64_t cpus = (*probe)->Snapshot().cpu_budget;
    ASSERT_GT(cpus, 0);
    ConformanceOptions o;
    o.runtime = rt;
    o.save_restore_stride = 3;
    CheckDataset(ds, CollectOrDie(in.Interleave(Inner(), cpus, 1)), o);
  }
}

TEST(ParallelInterleave, ErrorPropagation) {
  for (bool det : {true, false}) {
    for (int64_t calls : {int64_t{1}, int64_t{3}, kAutotune}) {
      CheckTransform(
          [det, calls](Dataset d) { return d.Interleave(Pair(), 2, 1, calls, det); });
      CheckTransform(
          [det, calls](Dataset d) { return d.Interleave(Pair(), 3, 2, calls, det); });
    }
  }
  // The input error comes exactly where the sequential op reports it.
  const Dataset failing = testing::FailingAt(10, 3);
  const Trace seq = TraceOf(failing.Interleave(Pair(), 3, 2));
  const Trace par = TraceOf(failing.Interleave(Pair(), 3, 2, 3, true));
  EXPECT_EQ(par.values, seq.values);
  EXPECT_EQ(par.error_at, seq.error_at);
  ASSERT_EQ(par.errors.size(), 1u);
  EXPECT_NE(par.errors[0].find("injected failure at 3"), std::string::npos)
      << par.errors[0];
}

TEST(ParallelInterleave, DatasetFunctionErrorSurfacesOnceAndTheRestComesOut) {
  Function fails_on_3 = Function::DatasetFunction(
      "fails_on_3", [](Element e, FunctionContext&) -> Result<Dataset> {
        const int64_t v = e[0].scalar<int64_t>();
        if (v == 3) return DataLossError("cannot open input 3");
        return Dataset::Range(100 * v, 100 * v + 1 + v % 4);
      });
  // Input 3 fails while the other slots are still live, so where the next input goes (the
  // failed slot, without advancing the cycle) shows in the order.
  const Dataset in = Dataset::Range(9);
  const Trace seq = TraceOf(in.Interleave(fails_on_3, 3, 2));
  ASSERT_EQ(seq.values.size(), 17u);
  Options rt;
  rt.autotune.cpu_budget = 4;
  for (bool det : {true, false}) {
    SCOPED_TRACE(det ? "deterministic" : "non-deterministic");
    const Trace par = TraceOf(in.Interleave(fails_on_3, 3, 2, 4, det), rt);
    ASSERT_EQ(par.errors.size(), 1u);
    EXPECT_NE(par.errors[0].find("ParallelInterleave"), std::string::npos)
        << par.errors[0];
    EXPECT_NE(par.errors[0].find("cannot open input 3"), std::string::npos)
        << par.errors[0];
    if (det) {
      EXPECT_EQ(par.values, seq.values);
      EXPECT_EQ(par.error_at, seq.error_at);
    } else {
      std::vector<int64_t> a = par.values, b = seq.values;
      std::sort(a.begin(), a.end());
      std::sort(b.begin(), b.end());
      EXPECT_EQ(a, b);
    }
  }
}

TEST(ParallelInterleave, InnerErrorsKeepTheirPlace) {
  // Inner element 101 fails; the error takes its place in the stream and the block goes
  // on.
  Function inner = Function::DatasetFunction(
      "inner_fail", [](Element e, FunctionContext&) -> Result<Dataset> {
        const int64_t v = e[0].scalar<int64_t>();
        return Dataset::Range(100 * v, 100 * v + 4)
            .Map(Function::Map("fail_101",
                               [](Element x, FunctionContext&) -> Result<Element> {
                                 if (x[0].scalar<int64_t>() == 101)
                                   return DataLossError("bad element 101");
                                 return x;
                               }));
      });
  const Dataset in = Dataset::Range(4);
  const Trace seq = TraceOf(in.Interleave(inner, 2, 3));
  const Trace par = TraceOf(in.Interleave(inner, 2, 3, 2, true));
  EXPECT_EQ(par.values, seq.values);
  EXPECT_EQ(par.error_at, seq.error_at);
  ASSERT_EQ(par.errors.size(), 1u);
  EXPECT_NE(par.errors[0].find("bad element 101"), std::string::npos);
}

TEST(ParallelInterleave, SlowOpensAndSlowElementsOverlap) {
  // 8 inputs, each opening in 20 ms and yielding 5 elements of 5 ms each.
  Function slow = Function::DatasetFunction(
      "slow_open", [](Element e, FunctionContext&) -> Result<Dataset> {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        const int64_t v = e[0].scalar<int64_t>();
        return Dataset::Range(10 * v, 10 * v + 5).Map(SleepMap(5));
      });
  const Dataset in = Dataset::Range(8);
  Options rt;
  rt.autotune.cpu_budget = 4;
  auto t0 = Clock::now();
  const std::vector<Element> seq = CollectOrDie(in.Interleave(slow, 4, 1));
  const int64_t seq_ms = MsSince(t0);
  t0 = Clock::now();
  const Trace par = TraceOf(in.Interleave(slow, 4, 1, 4, true), rt);
  const int64_t par_ms = MsSince(t0);
  EXPECT_EQ(par.values, IntsOf(seq));
  EXPECT_TRUE(par.errors.empty());
  EXPECT_GE(seq_ms, 8 * 20 + 40 * 5);
  EXPECT_LT(par_ms, 0.6 * seq_ms)
      << "parallel " << par_ms << " ms, sequential " << seq_ms << " ms";
}

TEST(ParallelInterleave, SlowInputDoesNotHoldBackNonDeterministicStream) {
  Gate gate;
  Function fn = Function::DatasetFunction(
      "one_stuck", [&gate](Element e, FunctionContext&) -> Result<Dataset> {
        const int64_t v = e[0].scalar<int64_t>();
        Dataset d = Dataset::Range(100 * v, 100 * v + 10);
        if (v != 0) return d;
        return d.Map(Function::Map(
            "stuck", [&gate](Element x, FunctionContext&) -> Result<Element> {
              gate.Pass();
              return x;
            }));
      });
  Options rt;
  rt.autotune.cpu_budget = 4;
  auto it = MakeIteratorAsBuilt(Dataset::Range(4).Interleave(fn, 4, 1, 4, false), rt);
  ASSERT_TRUE(it.ok()) << it.status();
  // All 30 elements of the three fast inputs come out while input 0 is stuck.
  for (int i = 0; i < 30; ++i) {
    auto e = (*it)->GetNext();
    ASSERT_TRUE(e.ok() && e->has_value()) << i;
    EXPECT_GE((**e)[0].scalar<int64_t>(), 100) << "element " << i;
  }
  gate.Open();
  std::vector<int64_t> rest;
  while (true) {
    auto e = (*it)->GetNext();
    ASSERT_TRUE(e.ok()) << e.status();
    if (!*e) break;
    rest.push_back((**e)[0].scalar<int64_t>());
  }
  std::sort(rest.begin(), rest.end());
  EXPECT_EQ(rest, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
}

TEST(ParallelInterleave, DeterministicWaitsForTheSlowInput) {
  // The same stuck input in deterministic mode: the others buffer ahead, but the first
  // element is input 0's.
  Gate gate;
  Function fn = Function::DatasetFunction(
      "one_stuck", [&gate](Element e, FunctionContext&) -> Result<Dataset> {
        const int64_t v = e[0].scalar<int64_t>();
        Dataset d = Dataset::Range(100 * v, 100 * v + 3);
        if (v != 0) return d;
        return d.Map(Function::Map(
            "stuck", [&gate](Element x, FunctionContext&) -> Result<Element> {
              gate.Pass();
              return x;
            }));
      });
  Options rt;
  rt.autotune.cpu_budget = 4;
  auto it = MakeIteratorAsBuilt(Dataset::Range(4).Interleave(fn, 4, 1, 4, true), rt);
  ASSERT_TRUE(it.ok());
  Iterator* raw = it->get();
  std::atomic<bool> others_buffered{false};
  std::thread releaser([&] {
    others_buffered = WaitFor([&] {
      return gate.entered.load() > 0 && raw->Snapshot().nodes[0].buffered_elements >= 3;
    });
    gate.Open();
  });
  auto first = raw->GetNext();
  releaser.join();
  EXPECT_TRUE(others_buffered.load());
  ASSERT_TRUE(first.ok() && first->has_value());
  EXPECT_EQ((**first)[0].scalar<int64_t>(), 0);
}

TEST(ParallelInterleave, DestroyingMidStreamIsFast) {
  Function slow = Function::DatasetFunction(
      "slowish", [](Element e, FunctionContext&) -> Result<Dataset> {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        const int64_t v = e[0].scalar<int64_t>();
        Dataset d = Dataset::Range(1000 * v, 1000 * v + 1000).Map(SleepMap(2));
        return v % 2 == 0 ? d : d.Prefetch(4);  // some inner iterators are asynchronous
      });
  Options rt;
  rt.autotune.cpu_budget = 4;
  for (int consumed : {0, 1, 3, 10, 25}) {
    for (bool det : {true, false}) {
      auto it =
          MakeIteratorAsBuilt(Dataset::Range(1000).Interleave(slow, 4, 2, 4, det), rt);
      ASSERT_TRUE(it.ok());
      for (int k = 0; k < consumed; ++k) {
        auto e = (*it)->GetNext();
        ASSERT_TRUE(e.ok() && e->has_value());
      }
      const auto t0 = Clock::now();
      it->reset();
      const int64_t ms = MsSince(t0);
      EXPECT_LT(ms, 1000) << "destruction after " << consumed << " took " << ms << " ms";
    }
  }
}

TEST(ParallelInterleave, CancelWakesAConsumerBlockedOnAnotherThread) {
  Gate gate;
  Function gated = Function::DatasetFunction(
      "gated", [&gate](Element e, FunctionContext&) -> Result<Dataset> {
        gate.Pass();
        return Dataset::Range(3);
      });
  Options rt;
  rt.autotune.cpu_budget = 2;
  auto it = MakeIteratorAsBuilt(Dataset::Range(100).Interleave(gated, 2, 1, 2, true), rt);
  ASSERT_TRUE(it.ok());
  Iterator* raw = it->get();
  std::atomic<int> cancelled{0};
  std::thread consumer([&] {
    auto e = raw->GetNext();
    if (!e.ok() && e.status().code() == StatusCode::kCancelled) ++cancelled;
  });
  // The consumer's GetNext has started the workers and waits on an open that cannot
  // finish.
  EXPECT_TRUE(WaitFor([&] { return gate.entered.load() > 0; }));
  const auto t0 = Clock::now();
  raw->Cancel();
  consumer.join();
  EXPECT_LT(MsSince(t0), 1000) << "Cancel did not wake the blocked GetNext";
  EXPECT_EQ(cancelled.load(), 1);
  auto after = raw->GetNext();
  EXPECT_EQ(after.status().code(), StatusCode::kCancelled);
  gate.Open();  // lets the open return, so the destructor can join the worker
}

TEST(ParallelInterleave, MemoryBudgetBoundsBufferedBytes) {
  constexpr int64_t kElem = 1 << 20;
  const auto spec = [](const ElementSpec&) -> Result<ElementSpec> {
    return ElementSpec{{TensorSpec{DType::kUInt8, PartialShape({kElem})}}};
  };
  Function big = Function::Map(
      "big",
      [](Element, FunctionContext&) -> Result<Element> {
        return Element{Tensor::Zeros(DType::kUInt8, Shape({kElem}))};
      },
      {}, spec);
  Function fn = Function::DatasetFunction(
      "big_inputs",
      [big](Element, FunctionContext&) -> Result<Dataset> {
        return Dataset::Range(6).Map(big);
      },
      {}, spec);
  Options rt;
  rt.autotune.cpu_budget = 4;
  rt.autotune.ram_budget = 8 * kElem;
  for (bool det : {true, false}) {
    SCOPED_TRACE(det ? "deterministic" : "non-deterministic");
    // 4 cycle inputs and 4 futures of 2 buffered elements each would hold 16 MiB.
    auto it = MakeIteratorAsBuilt(Dataset::Range(8).Interleave(fn, 4, 2, 4, det), rt);
    ASSERT_TRUE(it.ok()) << it.status();
    auto first = (*it)->GetNext();
    ASSERT_TRUE(first.ok() && first->has_value());
    // The buffers fill up to the budget (7 of 8 MiB: fetches ahead of the consumer's next
    // need leave one element free) and stop there.
    EXPECT_TRUE(WaitFor([&] { return (*it)->Snapshot().buffered_bytes >= 7 * kElem; }));
    int64_t n = 1;
    while (true) {
      auto e = (*it)->GetNext();
      ASSERT_TRUE(e.ok()) << e.status();
      if (!*e) break;
      ++n;
    }
    EXPECT_EQ(n, 48);
    const PipelineStats s = (*it)->Snapshot();
    EXPECT_LE(s.peak_buffered_bytes, rt.autotune.ram_budget);
    EXPECT_EQ(s.budget_overshoot_bytes, 0);
    EXPECT_GE(s.peak_buffered_bytes, 7 * kElem);  // the buffers did fill up to the budget
    EXPECT_EQ(s.buffered_bytes, 0);               // everything taken was released
  }
}

TEST(ParallelInterleave, Stats) {
  Function fn = Function::DatasetFunction(
      "four",
      [](Element, FunctionContext&) -> Result<Dataset> { return Dataset::Range(4); });
  Options rt;
  rt.autotune.cpu_budget = 4;
  auto it = MakeIteratorAsBuilt(Dataset::Range(5).Interleave(fn, 2, 1, 2, true), rt);
  ASSERT_TRUE(it.ok());
  auto e = (*it)->GetNext();
  ASSERT_TRUE(e.ok() && e->has_value());
  {
    const PipelineStats s = (*it)->Snapshot();
    ASSERT_FALSE(s.nodes.empty());
    EXPECT_EQ(s.nodes[0].name, "ParallelInterleave");
    EXPECT_LE(s.nodes[0].buffered_elements, s.nodes[0].buffer_limit);
  }
  int64_t n = 1;
  while (true) {
    auto x = (*it)->GetNext();
    ASSERT_TRUE(x.ok());
    if (!*x) break;
    ++n;
  }
  EXPECT_EQ(n, 20);
  const PipelineStats s = (*it)->Snapshot();
  // Every inner iterator is gone: the interleave and its input remain.
  ASSERT_EQ(s.nodes.size(), 2u);
  const IteratorStats& pi = s.nodes[0];
  EXPECT_EQ(pi.name, "ParallelInterleave");
  EXPECT_TRUE(pi.async);
  EXPECT_EQ(pi.parallelism, 2);
  EXPECT_EQ(pi.buffer_limit, (2 + 2) * 2);  // (cycle + futures) x max(block_length, 2)
  EXPECT_EQ(pi.elements_produced, 20);
  // 5 input elements plus 20 inner elements (as the sequential interleave counts them).
  EXPECT_EQ(pi.elements_consumed, 25);
  EXPECT_EQ(pi.buffered_elements, 0);
  EXPECT_EQ(s.nodes[1].name, "Range");
  EXPECT_EQ(s.nodes[1].parent, 0);
}

TEST(ParallelInterleave, CheckpointFromAnotherCycleLengthIsRejected) {
  auto a = Dataset::Range(10).Interleave(Inner(), 2, 1, 2, true).MakeIterator();
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE((*a)->GetNext().ok());
  auto ckpt = (*a)->Save();
  ASSERT_TRUE(ckpt.ok()) << ckpt.status();
  auto b = Dataset::Range(10).Interleave(Inner(), 3, 1, 2, true).MakeIterator();
  ASSERT_TRUE(b.ok());
  Status s = (*b)->Restore(*ckpt);
  EXPECT_FALSE(s.ok());
  // The checkpoint's pipeline fingerprint differs (the op's own cycle_length check
  // guards checkpoints of format version 1, which carry none).
  EXPECT_NE(s.message().find("different pipeline"), std::string::npos) << s;
}

TEST(ParallelInterleave, BadArguments) {
  const Dataset in = Dataset::Range(3);
  for (const Dataset& ds :
       {in.Interleave(Pair(), 0, 1, 2), in.Interleave(Pair(), -3, 1, 2),
        in.Interleave(Pair(), 2, 0, 2), in.Interleave(Pair(), 2, 1, 0),
        in.Interleave(Pair(), 2, 1, -7)}) {
    EXPECT_FALSE(ds.ok());
    EXPECT_NE(ds.status().message().find("ParallelInterleave"), std::string::npos)
        << ds.status();
  }
  Function not_a_dataset_fn = Function::Map(
      "identity", [](Element e, FunctionContext&) -> Result<Element> { return e; });
  EXPECT_FALSE(in.Interleave(not_a_dataset_fn, 2, 1, 2).ok());
}

}  // namespace
}  // namespace sluice
