// Held buffers (runtime/memory_budget.h, runtime/buffer_charge.h): the ops that keep
// elements in their own state (shuffle, shuffle_and_repeat, cache in memory,
// group_by_window, window, unbatch, scan, and so interleave's open inputs) charge the
// pipeline's RAM budget and publish buffered_bytes / buffered_elements; a buffer that
// cannot fit fails with ResourceExhausted naming the op, the bytes and the budget; no
// reservation survives the iterator, a failure or a restore.
//
// Elements are 1 MiB, the budget 64 MiB. Margin: a held buffer reserves in quanta of
// min(64 KiB, hold limit / 256) and keeps at most two quanta beyond what it holds, so the
// charged peak may pass the held bytes by 128 KiB per held buffer; a failing Add charges
// nothing, so the peak stays <= budget + that slack.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "api/dataset_internal.h"
#include "graph/dataset_node.h"
#include "runtime/buffer_charge.h"
#include "runtime/iterator_base.h"
#include "runtime/runtime.h"
#include "sluice/dataset.h"

namespace sluice {
namespace {

constexpr int64_t kElem = int64_t{1} << 20;
constexpr int64_t kBudget = int64_t{64} << 20;
constexpr int64_t kSlack = 2 * (int64_t{64} << 10);  // two quanta per held buffer

// x -> {int64 x, uint8[1 MiB]}: 1 MiB + 8 bytes per element.
Function Big() {
  return Function::Map("big", [](Element e, FunctionContext&) -> Result<Element> {
    return Element{e[0], Tensor::Zeros(DType::kUInt8, Shape({kElem}))};
  });
}
constexpr int64_t kBigBytes = kElem + 8;

Options Budget(int64_t bytes) {
  Options o;
  o.autotune.cpu_budget = 2;
  o.autotune.ram_budget = bytes;
  return o;
}

// An iterator over `ds` on `rt` (so the budget outlives the iterator).
IteratorPtr Make(const Dataset& ds, Runtime* rt) {
  EXPECT_TRUE(ds.ok()) << ds.status();
  IteratorContext ctx;
  ctx.runtime_ptr = rt;
  auto it = NodeOf(ds)->MakeIterator(ctx, "Root");
  EXPECT_TRUE(it.ok()) << it.status();
  return std::move(it).value();
}

// The first values (component 0) until the end or an error.
Status Drain(IteratorBase* it, std::vector<int64_t>* out, int64_t max = 1 << 30) {
  while (static_cast<int64_t>(out->size()) < max) {
    auto e = it->GetNext();
    if (!e.ok()) return e.status();
    if (!*e) break;
    out->push_back((**e)[0].scalar<int64_t>());
  }
  return Status::OK();
}

void ExpectExhausted(const Status& s, const std::string& prefix, const std::string& hint) {
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s;
  EXPECT_NE(s.message().find(prefix), std::string::npos) << s;
  EXPECT_NE(s.message().find(std::to_string(kBudget)), std::string::npos) << s;  // budget
  EXPECT_NE(s.message().find(" bytes"), std::string::npos) << s;
  EXPECT_NE(s.message().find(hint), std::string::npos) << s;
}

TEST(MemoryBudget, HoldLimitRules) {
  MemoryBudget b(100);
  EXPECT_EQ(b.hold_limit(), 100);
  EXPECT_TRUE(b.TryReserve(90));  // async buffers
  EXPECT_TRUE(b.TryHold(60));     // held buffers do not wait for them...
  EXPECT_EQ(b.used(), 150);
  EXPECT_EQ(b.held(), 60);
  EXPECT_FALSE(b.TryReserve(1));  // ...but the async buffers stop growing
  EXPECT_FALSE(b.TryHold(41));    // held bytes alone stay within the hold limit
  EXPECT_TRUE(b.TryHold(40));
  b.ReleaseHeld(100);
  b.Release(90);
  EXPECT_EQ(b.used(), 0);
  EXPECT_EQ(b.held(), 0);
  EXPECT_TRUE(MemoryBudget(0).TryHold(int64_t{1} << 50));  // unlimited

  // The default budget (half of available memory) lets held buffers use all of it; an
  // explicit budget is the hold limit; -1 is unlimited.
  Runtime def(Options{});
  if (def.memory().limit() > 0) {
    EXPECT_EQ(def.memory().hold_limit(), 2 * def.memory().limit());
  }
  Runtime set(Budget(kBudget));
  EXPECT_EQ(set.memory().hold_limit(), kBudget);
  Runtime unlimited(Budget(-1));
  EXPECT_EQ(unlimited.memory().hold_limit(), 0);
}

TEST(HeldBuffers, ShuffleThatCannotFitFailsNamingOpBytesAndBudget) {
  Runtime rt(Budget(kBudget));
  {
    IteratorPtr it = Make(Dataset::Range(1000).Map(Big()).Shuffle(100, 1), &rt);
    std::vector<int64_t> got;
    Status s = Drain(it.get(), &got);
    EXPECT_TRUE(got.empty());
    ExpectExhausted(s, "Root(Shuffle)", "buffer_size");
    // The bytes it would hold: 64 elements of 1 MiB + 8 do not fit, 63 do.
    EXPECT_NE(s.message().find("64 elements of " + std::to_string(64 * kBigBytes)),
              std::string::npos)
        << s;
    EXPECT_LE(rt.memory().peak(), kBudget + kSlack);
    EXPECT_GE(rt.memory().peak(), 63 * kBigBytes);
    // The failure sticks: the buffer never shrinks.
    auto again = it->GetNext();
    EXPECT_EQ(again.status().code(), StatusCode::kResourceExhausted);
  }
  EXPECT_EQ(rt.memory().used(), 0);
  EXPECT_EQ(rt.memory().held(), 0);
}

// shuffle(100000) over a practically endless input of 1 MiB elements: the buffer's full size is
// known at the first element, so it is refused there, naming the budget (not the
// machine's available memory), with nothing held afterwards.
TEST(HeldBuffers, HugeShuffleIsRefusedAtItsFirstElementNamingTheBudget) {
  Runtime rt(Budget(kBudget));
  {
    IteratorPtr it = Make(Dataset::Range(0, INT64_MAX).Map(Big()).Shuffle(100000, 1), &rt);
    std::vector<int64_t> got;
    Status s = Drain(it.get(), &got);
    EXPECT_TRUE(got.empty());
    ExpectExhausted(s, "Root(Shuffle)", "buffer_size");
    EXPECT_NE(s.message().find("100000 elements of " + std::to_string(100000 * kBigBytes)),
              std::string::npos)
        << s;
    EXPECT_LE(rt.memory().peak(), 2 * kBigBytes + kSlack);  // one element, not 63
  }
  EXPECT_EQ(rt.memory().used(), 0);
  EXPECT_EQ(rt.memory().held(), 0);
}

TEST(HeldBuffers, ShuffleThatFitsRunsAndPublishesGauges) {
  Runtime rt(Budget(kBudget));
  Runtime unlimited(Budget(-1));
  const Dataset ds = Dataset::Range(200).Map(Big()).Shuffle(32, 5, false);
  std::vector<int64_t> want;
  ASSERT_TRUE(Drain(Make(ds, &unlimited).get(), &want).ok());
  {
    IteratorPtr it = Make(ds, &rt);
    std::vector<int64_t> got;
    ASSERT_TRUE(Drain(it.get(), &got, 10).ok());
    // 32 buffered minus the one handed out (its slot is refilled on the next call).
    EXPECT_EQ(it->stats().buffered_elements.load(), 31);
    EXPECT_EQ(it->stats().buffered_bytes.load(), 31 * kBigBytes);
    EXPECT_GE(rt.memory().used(), 31 * kBigBytes);
    EXPECT_LE(rt.memory().used(), 31 * kBigBytes + kSlack);
    ASSERT_TRUE(Drain(it.get(), &got).ok());
    EXPECT_EQ(got, want);  // the same elements in the same order
    EXPECT_EQ(it->stats().buffered_elements.load(), 0);
    EXPECT_LE(rt.memory().peak(), 32 * kBigBytes + kSlack);
  }
  EXPECT_EQ(rt.memory().used(), 0);
}

TEST(HeldBuffers, PrefetchBeforeAShuffleThatFitsWaitsInsteadOfFailing) {
  // The prefetch alone would fill 40 MiB and the shuffle needs 48: together they pass the
  // 64 MiB budget, but the shuffle fits, so the prefetch must give way, not the shuffle.
  Runtime rt(Budget(kBudget));
  Runtime unlimited(Budget(-1));
  const Dataset ds = Dataset::Range(150).Map(Big(), 2).Prefetch(40).Shuffle(48, 9, false);
  std::vector<int64_t> want, got;
  ASSERT_TRUE(Drain(Make(ds, &unlimited).get(), &want).ok());
  {
    IteratorPtr it = Make(ds, &rt);
    Status s = Drain(it.get(), &got);
    EXPECT_TRUE(s.ok()) << s;
  }
  EXPECT_EQ(got, want);
  EXPECT_EQ(rt.memory().used(), 0);
}

TEST(HeldBuffers, HeldBufferDoesNotFailForBudgetHeldByAsyncBuffers) {
  // A prefetch on the same budget has filled 30+ MiB; a shuffle of 48 MiB still fits the
  // hold limit (only held buffers count against it), so it runs; the prefetch then cannot
  // grow until it drains.
  Runtime rt(Budget(kBudget));
  IteratorPtr prefetch = Make(Dataset::Range(1000).Map(Big()).Prefetch(40), &rt);
  ASSERT_TRUE(prefetch->GetNext().ok());
  for (int i = 0; i < 5000 && rt.memory().used() < 30 * kBigBytes; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_GE(rt.memory().used(), 30 * kBigBytes);
  const Dataset ds = Dataset::Range(100).Map(Big()).Shuffle(48, 4, false);
  Runtime unlimited(Budget(-1));
  std::vector<int64_t> want, got;
  ASSERT_TRUE(Drain(Make(ds, &unlimited).get(), &want).ok());
  {
    IteratorPtr it = Make(ds, &rt);
    Status s = Drain(it.get(), &got);
    EXPECT_TRUE(s.ok()) << s;
  }
  EXPECT_EQ(got, want);
  prefetch.reset();
  EXPECT_EQ(rt.memory().used(), 0);
}

TEST(HeldBuffers, ShuffleOnAPrefetchThreadTakesOverTheTransferredCharge) {
  // The prefetch's runner fills the shuffle: each element the parallel map hands over
  // carries its charge into the runner's FetchScope; the shuffle takes it over instead of
  // charging it a second time (40 MiB held would otherwise count as 80 for a while).
  Runtime rt(Budget(kBudget));
  {
    IteratorPtr it =
        Make(Dataset::Range(100).Map(Big(), 2).Shuffle(40, 2).Prefetch(2), &rt);
    std::vector<int64_t> got;
    Status s = Drain(it.get(), &got);
    EXPECT_TRUE(s.ok()) << s;
    EXPECT_EQ(got.size(), 100u);
    EXPECT_LE(rt.memory().peak(), kBudget);
    EXPECT_EQ(rt.memory().overshoot(), 0);
  }
  EXPECT_EQ(rt.memory().used(), 0);
}

TEST(HeldBuffers, RestoreLeavesNoExtraReservation) {
  Runtime rt(Budget(kBudget));
  const Dataset ds = Dataset::Range(100).Map(Big()).Shuffle(20, 3, false);
  std::string ckpt;
  std::vector<int64_t> rest_a, rest_b;
  {
    IteratorPtr a = Make(ds, &rt);
    std::vector<int64_t> head;
    ASSERT_TRUE(Drain(a.get(), &head, 7).ok());
    const int64_t held = a->stats().buffered_bytes.load();
    EXPECT_EQ(held, 19 * kBigBytes);
    CheckpointWriter w;
    ASSERT_TRUE(a->Save(&w).ok());
    ckpt = w.Serialize();
    {
      IteratorPtr b = Make(ds, &rt);
      auto r = CheckpointReader::Parse(ckpt);
      ASSERT_TRUE(r.ok()) << r.status();
      ASSERT_TRUE(b->Restore(*r).ok());
      // Both hold the same buffer now: twice the bytes (each within its slack).
      EXPECT_EQ(b->stats().buffered_elements.load(), 19);
      EXPECT_EQ(b->stats().buffered_bytes.load(), held);
      EXPECT_GE(rt.memory().held(), 2 * held);
      EXPECT_LE(rt.memory().held(), 2 * (held + kSlack));
      ASSERT_TRUE(Drain(b.get(), &rest_b).ok());
    }
    EXPECT_GE(rt.memory().held(), held);
    EXPECT_LE(rt.memory().held(), held + kSlack);
    ASSERT_TRUE(Drain(a.get(), &rest_a).ok());
  }
  EXPECT_EQ(rest_a, rest_b);
  EXPECT_EQ(rt.memory().used(), 0);
}

TEST(HeldBuffers, ShuffleAndRepeatFailsAndReleases) {
  Runtime rt(Budget(kBudget));
  {
    IteratorPtr it = Make(
        Dataset::FromOp("ShuffleAndRepeat", {{"buffer_size", int64_t{80}}, {"seed", int64_t{1}},
                                             {"count", int64_t{2}}},
                        {Dataset::Range(100).Map(Big())}),
        &rt);
    std::vector<int64_t> got;
    ExpectExhausted(Drain(it.get(), &got), "Root(ShuffleAndRepeat)", "buffer_size");
    EXPECT_LE(rt.memory().peak(), kBudget + kSlack);
  }
  EXPECT_EQ(rt.memory().used(), 0);
}

TEST(HeldBuffers, InMemoryCacheThatCannotFitFailsAndSaysUseAFile) {
  Runtime rt(Budget(kBudget));
  {
    IteratorPtr it = Make(Dataset::Range(100).Map(Big()).Cache(), &rt);
    std::vector<int64_t> got;
    ExpectExhausted(Drain(it.get(), &got), "Root(Cache)", "cache(filename)");
    EXPECT_EQ(got.size(), 63u);  // the elements before the one that did not fit
    EXPECT_LE(rt.memory().peak(), kBudget + kSlack);
    EXPECT_EQ(rt.memory().used(), 0);  // the partial cache was dropped
  }
  EXPECT_EQ(rt.memory().used(), 0);
}

TEST(HeldBuffers, InMemoryCacheThatFitsIsChargedWhileRead) {
  Runtime rt(Budget(kBudget));
  const Dataset ds = Dataset::Range(20).Map(Big()).Cache();
  for (int epoch = 0; epoch < 2; ++epoch) {
    IteratorPtr it = Make(ds, &rt);
    std::vector<int64_t> got;
    ASSERT_TRUE(Drain(it.get(), &got, epoch == 0 ? 1 << 30 : 5).ok());
    // Written (epoch 0) or read (epoch 1): the whole cache is held.
    EXPECT_EQ(it->stats().buffered_bytes.load(), 20 * kBigBytes);
    EXPECT_EQ(it->stats().buffered_elements.load(), 20);
  }
  EXPECT_EQ(rt.memory().used(), 0);
}

TEST(HeldBuffers, CacheOfMoreThanHalfTheBudgetRepeats) {
  // Each epoch's iterator holds the 40 MiB cache; Repeat drops the finished epoch before
  // it starts the next, so they are not charged together.
  Runtime rt(Budget(kBudget));
  {
    IteratorPtr it = Make(Dataset::Range(40).Map(Big()).Cache().Repeat(3), &rt);
    std::vector<int64_t> got;
    Status s = Drain(it.get(), &got);
    EXPECT_TRUE(s.ok()) << s;
    EXPECT_EQ(got.size(), 120u);
    EXPECT_LE(rt.memory().peak(), 40 * kBigBytes + kSlack);
  }
  EXPECT_EQ(rt.memory().used(), 0);
}

Function KeyZero() {
  return Function::Map("zero", [](Element, FunctionContext&) -> Result<Element> {
    return Element{Tensor::Scalar<int64_t>(0)};
  });
}
Function WindowAsIs() {
  return Function::DatasetFunction(
      "as_is", [](Element, FunctionContext& ctx) -> Result<Dataset> { return *ctx.window(); });
}

TEST(HeldBuffers, GroupByWindowThatCannotFitFails) {
  Runtime rt(Budget(kBudget));
  {
    IteratorPtr it =
        Make(Dataset::Range(200).Map(Big()).GroupByWindow(KeyZero(), WindowAsIs(), 100), &rt);
    std::vector<int64_t> got;
    ExpectExhausted(Drain(it.get(), &got), "Root(GroupByWindow)", "smaller windows");
    EXPECT_LE(rt.memory().peak(), kBudget + kSlack);
  }
  EXPECT_EQ(rt.memory().used(), 0);
}

TEST(HeldBuffers, GroupByWindowThatFitsReleasesEachWindow) {
  Runtime rt(Budget(kBudget));
  {
    IteratorPtr it =
        Make(Dataset::Range(200).Map(Big()).GroupByWindow(KeyZero(), WindowAsIs(), 40), &rt);
    std::vector<int64_t> got;
    ASSERT_TRUE(Drain(it.get(), &got).ok());
    EXPECT_EQ(got.size(), 200u);
    EXPECT_LE(rt.memory().peak(), 40 * kBigBytes + kSlack);
    EXPECT_EQ(it->stats().buffered_bytes.load(), 0);
  }
  EXPECT_EQ(rt.memory().used(), 0);
}

TEST(HeldBuffers, WindowUnbatchAndScanAreCharged) {
  Runtime rt(Budget(kBudget));
  {
    IteratorPtr it = Make(Dataset::Range(200).Map(Big()).Window(100), &rt);
    auto e = it->GetNext();
    ExpectExhausted(e.status(), "Root(Window)", "window size");
  }
  EXPECT_EQ(rt.memory().used(), 0);
  {
    // Batches of 8 elements: the batch is held while its rows are handed out.
    IteratorPtr it = Make(Dataset::Range(16).Map(Big()).Batch(8).Unbatch(), &rt);
    ASSERT_TRUE(it->GetNext().ok());
    EXPECT_EQ(it->stats().buffered_bytes.load(), 8 * kBigBytes);
  }
  EXPECT_EQ(rt.memory().used(), 0);
  {
    Function keep = Function::Map("keep", [](Element e, FunctionContext&) -> Result<Element> {
      return Element{e[0], e[1]};
    });
    IteratorPtr it = Make(
        Dataset::Range(4).Scan(Element{Tensor::Zeros(DType::kUInt8, Shape({kElem}))}, keep),
        &rt);
    EXPECT_EQ(it->stats().buffered_bytes.load(), kElem);
    ASSERT_TRUE(it->GetNext().ok());
    EXPECT_EQ(it->stats().buffered_bytes.load(), kElem);
  }
  EXPECT_EQ(rt.memory().used(), 0);
}

TEST(HeldBuffers, InterleaveInputsChargeTheSameBudget) {
  // Three open inputs, each shuffling 30 elements of 1 MiB: 90 MiB do not fit in 64.
  Function inner = Function::DatasetFunction(
      "inner", [](Element e, FunctionContext&) -> Result<Dataset> {
        const int64_t x = e[0].scalar<int64_t>();
        return Dataset::Range(x * 100, x * 100 + 50).Map(Big()).Shuffle(30, 1);
      });
  Runtime rt(Budget(kBudget));
  {
    IteratorPtr it = Make(Dataset::Range(3).Interleave(inner, 3), &rt);
    std::vector<int64_t> got;
    ExpectExhausted(Drain(it.get(), &got), "Root/Shuffle[slot", "buffer_size");
    EXPECT_LE(rt.memory().peak(), kBudget + 3 * kSlack);
  }
  EXPECT_EQ(rt.memory().used(), 0);
}

}  // namespace
}  // namespace sluice
