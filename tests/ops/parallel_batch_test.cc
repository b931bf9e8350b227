// ParallelFilter, ParallelBatch and MapAndBatch: AsyncBufferIterator ops whose output must
// equal their sequential counterparts' (Filter, Batch, Map().Batch()), elements and errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "api/dataset_internal.h"
#include "graph/function_internal.h"
#include "sluice/dataset.h"
#include "testing/conformance.h"

namespace sluice {
namespace {

using testing::CheckDataset;
using testing::CheckTransform;
using testing::CollectOrDie;
using testing::ConformanceOptions;

const std::vector<int64_t> kParallelisms = {1, 2, 4, kAutotune};

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

// i -> int32[3] {i, 2i, 3i}.
Function ToVec() {
  return Function::Map(
      "to_vec",
      [](Element e, FunctionContext&) -> Result<Element> {
        const int32_t v = static_cast<int32_t>(e[0].scalar<int64_t>());
        return Element{Tensor::FromVector<int32_t>({v, 2 * v, 3 * v})};
      },
      {}, [](const ElementSpec&) -> Result<ElementSpec> {
        return ElementSpec{{TensorSpec{DType::kInt32, PartialShape({3})}}};
      });
}

// i -> string "s<i>".
Function ToStr() {
  return Function::Map(
      "to_str",
      [](Element e, FunctionContext&) -> Result<Element> {
        return Element{Tensor::Scalar(std::string("s").append(std::to_string(e[0].scalar<int64_t>())))};
      },
      {}, [](const ElementSpec&) -> Result<ElementSpec> {
        return ElementSpec{{TensorSpec{DType::kString, PartialShape({})}}};
      });
}

// (i: int64, {i, 2i, 3i}: int32[3], "s<i>": string) for i < n.
Dataset Mixed(int64_t n) {
  return Dataset::Zip({Dataset::Range(n), Dataset::Range(n).Map(ToVec()),
                       Dataset::Range(n).Map(ToStr())});
}

// i -> (3i: int64, {i, i + 0.5}: float[2], "x<i>": string), sleeping a little for some
// elements (jitter) so parts finish out of order.
Function Triple(bool jitter = true) {
  return Function::Map(
      "triple",
      [jitter](Element e, FunctionContext&) -> Result<Element> {
        const int64_t v = e[0].scalar<int64_t>();
        if (jitter) std::this_thread::sleep_for(std::chrono::microseconds((v * 7919) % 3 * 100));
        const float f = static_cast<float>(v);
        return Element{Tensor::Scalar<int64_t>(3 * v), Tensor::FromVector<float>({f, f + 0.5f}),
                       Tensor::Scalar(std::string("x").append(std::to_string(v)))};
      },
      {}, [](const ElementSpec&) -> Result<ElementSpec> {
        return ElementSpec{{TensorSpec{DType::kInt64, PartialShape({})},
                            TensorSpec{DType::kFloat32, PartialShape({2})},
                            TensorSpec{DType::kString, PartialShape({})}}};
      });
}

Function Times(int64_t k) {
  return Function::Map("times", [k](Element e, FunctionContext&) -> Result<Element> {
    return Element{Tensor::Scalar<int64_t>(e[0].scalar<int64_t>() * k)};
  });
}

// Keeps elements whose first component is not 1 mod 3.
Function NotOneModThree() {
  return Function::Predicate("not_1_mod_3", [](const Element& e, FunctionContext&) -> Result<bool> {
    return e[0].scalar<int64_t>() % 3 != 1;
  });
}

// An error as the user sees it, without the "[op ...]: " prefix naming the iterator (which
// differs between the parallel op and its sequential counterpart).
std::string Normalize(const Status& s) {
  std::string m = s.message();
  if (m.rfind("[op ", 0) == 0) {
    const size_t p = m.find("]: ");
    if (p != std::string::npos) m = m.substr(p + 3);
  }
  return "error " + std::to_string(static_cast<int>(s.code())) + ": " + m;
}

// Everything an iterator yields, elements and (normalized) errors, until the end.
std::vector<std::string> Drain(const Dataset& ds, const Options& rt = {},
                               std::vector<std::string>* raw_errors = nullptr) {
  std::vector<std::string> out;
  auto it = MakeIteratorAsBuilt(ds, rt);
  EXPECT_TRUE(it.ok()) << it.status();
  if (!it.ok()) return out;
  for (int i = 0; i < 100000; ++i) {
    auto e = (*it)->GetNext();
    if (!e.ok()) {
      out.push_back(Normalize(e.status()));
      if (raw_errors != nullptr) raw_errors->push_back(e.status().message());
      continue;
    }
    if (!*e) break;
    out.push_back((**e).DebugString(1 << 20));
  }
  return out;
}

int CountErrors(const std::vector<std::string>& v) {
  int n = 0;
  for (const std::string& s : v) n += s.rfind("error ", 0) == 0 ? 1 : 0;
  return n;
}

// ---------------------------------------------------------------------------------------
// ParallelBatch

TEST(ParallelBatch, ConformanceDeterministic) {
  for (int64_t bs : {1, 3, 7}) {
    for (bool drop : {false, true}) {
      const std::vector<Element> expected = CollectOrDie(Mixed(20).Batch(bs, drop));
      ASSERT_EQ(expected.size(), static_cast<size_t>(drop ? 20 / bs : (20 + bs - 1) / bs));
      for (int64_t p : kParallelisms) {
        for (const Options& rt : Runtimes()) {
          SCOPED_TRACE("batch_size " + std::to_string(bs) + " drop " + std::to_string(drop) +
                       " parallelism " + std::to_string(p));
          ConformanceOptions o;
          o.runtime = rt;
          CheckDataset(Mixed(20).Batch(bs, drop, p, true), expected, o);
        }
        CheckTransform([bs, drop, p](Dataset d) { return d.Batch(bs, drop, p, true); });
      }
    }
  }
}

TEST(ParallelBatch, ConformanceNonDeterministic) {
  for (int64_t bs : {1, 3, 7}) {
    for (bool drop : {false, true}) {
      const std::vector<Element> expected = CollectOrDie(Mixed(20).Batch(bs, drop));
      for (int64_t p : {int64_t{1}, int64_t{3}, kAutotune}) {
        for (const Options& rt : Runtimes()) {
          SCOPED_TRACE("batch_size " + std::to_string(bs) + " drop " + std::to_string(drop) +
                       " parallelism " + std::to_string(p));
          ConformanceOptions o;
          o.runtime = rt;
          o.ordered = false;
          CheckDataset(Mixed(20).Batch(bs, drop, p, false), expected, o);
        }
        CheckTransform([bs, drop, p](Dataset d) { return d.Batch(bs, drop, p, false); });
      }
    }
  }
}

TEST(ParallelBatch, StaticallyShapedInput) {
  // Range's spec is fully shaped: with drop_remainder the batch size is static too.
  Dataset ds = Dataset::Range(22).Batch(4, true, 2, true);
  ASSERT_TRUE(ds.ok());
  EXPECT_EQ(ds.element_spec().ToString(), Dataset::Range(22).Batch(4, true).element_spec().ToString());
  EXPECT_EQ(ds.Cardinality(), 5);
  EXPECT_EQ(Dataset::Range(22).Batch(4, false, 2).Cardinality(), 6);
  for (const Options& rt : Runtimes()) {
    ConformanceOptions o;
    o.runtime = rt;
    CheckDataset(ds, CollectOrDie(Dataset::Range(22).Batch(4, true)), o);
  }
}

TEST(ParallelBatch, LargeBatchesSplitIntoPartsMatchBatch) {
  // Batches of 64 and 100 rows are split into up to `parallelism` parts of >= 8 rows.
  Options rt;
  rt.autotune.cpu_budget = 4;
  for (int64_t bs : {64, 100}) {
    for (int64_t p : {2, 4, 8}) {
      SCOPED_TRACE("batch_size " + std::to_string(bs) + " parallelism " + std::to_string(p));
      ConformanceOptions o;
      o.runtime = rt;
      o.save_restore_stride = 2;
      CheckDataset(Mixed(450).Batch(bs, false, p, true), CollectOrDie(Mixed(450).Batch(bs)), o);
    }
  }
}

// i -> int64 vector; element `bad` gets another shape (length 2), dtype (float) or
// component count (2) depending on `how`.
Function Irregular(int64_t bad, char how) {
  return Function::Map("irregular", [bad, how](Element e, FunctionContext&) -> Result<Element> {
    const int64_t v = e[0].scalar<int64_t>();
    if (v != bad) return Element{Tensor::FromVector<int64_t>({v, v, v})};
    switch (how) {
      case 's':
        return Element{Tensor::FromVector<int64_t>({v, v})};
      case 'd':
        return Element{Tensor::FromVector<float>({1.f, 2.f, 3.f})};
      default:
        return Element{Tensor::FromVector<int64_t>({v, v, v}), Tensor::Scalar<int64_t>(v)};
    }
  });
}

TEST(ParallelBatch, MismatchedRowsGiveBatchsErrorAndIterationGoesOn) {
  Options rt;
  rt.autotune.cpu_budget = 4;
  struct Case {
    int64_t n, bad, bs;
    char how;
    std::string want;  // a part of the error message
  };
  const std::vector<Case> cases = {
      {10, 4, 3, 's', "component 0: cannot stack tensors of different shapes or dtypes: "
                      "int64[3] and int64[2] (row 1)"},
      // Row 0 is the odd one and the batch spans 4 parts: Batch's error names row 1.
      {70, 0, 32, 's', "component 0: cannot stack tensors of different shapes or dtypes: "
                       "int64[2] and int64[3] (row 1)"},
      {70, 17, 32, 'd', "int64[3] and float32[3] (row 17)"},
      {70, 40, 32, 'c', "cannot batch elements with 1 and 2 components"},
  };
  for (const Case& c : cases) {
    Dataset input = Dataset::Range(c.n).Map(Irregular(c.bad, c.how));
    const std::vector<std::string> want = Drain(input.Batch(c.bs));
    ASSERT_EQ(CountErrors(want), 1);
    ASSERT_GE(want.size(), 3u);
    for (int64_t p : {1, 4}) {
      for (int round = 0; round < 5; ++round) {
        SCOPED_TRACE(std::string("case ") + c.how + " bad " + std::to_string(c.bad) +
                     " parallelism " + std::to_string(p));
        std::vector<std::string> raw;
        const std::vector<std::string> got = Drain(input.Batch(c.bs, false, p, true), rt, &raw);
        EXPECT_EQ(got, want);  // the same batches and the same error, at the same place
        ASSERT_EQ(raw.size(), 1u);
        EXPECT_NE(raw[0].find(c.want), std::string::npos) << raw[0];
        EXPECT_NE(raw[0].find("ParallelBatch"), std::string::npos) << raw[0];
      }
    }
  }
}

TEST(ParallelBatch, MemoryBudgetHoldsWithAStaticEstimate) {
  // Batches of 4 x 1 MiB; the budget holds one. A static estimate (drop_remainder, fully
  // shaped rows) is reserved before each batch starts, so the budget is never exceeded.
  Function mib = Function::Map(
      "mib",
      [](Element, FunctionContext&) -> Result<Element> {
        return Element{Tensor::Zeros(DType::kUInt8, Shape({1 << 20}))};
      },
      {}, [](const ElementSpec&) -> Result<ElementSpec> {
        return ElementSpec{{TensorSpec{DType::kUInt8, PartialShape({1 << 20})}}};
      });
  Options rt;
  rt.autotune.cpu_budget = 4;
  rt.autotune.ram_budget = 6 << 20;
  auto it = MakeIteratorAsBuilt(Dataset::Range(64).Map(mib).Batch(4, true, 4), rt);
  ASSERT_TRUE(it.ok());
  int64_t n = 0;
  while (true) {
    auto e = (*it)->GetNext();
    ASSERT_TRUE(e.ok()) << e.status();
    if (!*e) break;
    EXPECT_EQ((**e)[0].shape(), Shape({4, 1 << 20}));
    ++n;
  }
  EXPECT_EQ(n, 16);
  PipelineStats s = (*it)->Snapshot();
  EXPECT_EQ(s.budget_overshoot_bytes, 0);
  EXPECT_LE(s.peak_buffered_bytes, rt.autotune.ram_budget);
  EXPECT_GE(s.peak_buffered_bytes, 4 << 20);
}

TEST(ParallelBatch, BadArguments) {
  Dataset zero = Dataset::Range(3).Batch(0, false, 2);
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.status().message().find("ParallelBatch"), std::string::npos) << zero.status();
  EXPECT_NE(zero.status().message().find("batch_size"), std::string::npos) << zero.status();
  Dataset calls = Dataset::Range(3).Batch(2, false, 0);
  ASSERT_FALSE(calls.ok());
  EXPECT_NE(calls.status().message().find("ParallelBatch"), std::string::npos) << calls.status();
  EXPECT_FALSE(Dataset::Range(3).Batch(2, false, -3).ok());
}

// ---------------------------------------------------------------------------------------
// MapAndBatch

TEST(MapAndBatch, ConformanceDeterministic) {
  for (int64_t bs : {1, 3, 7}) {
    for (bool drop : {false, true}) {
      const std::vector<Element> expected =
          CollectOrDie(Dataset::Range(20).Map(Triple(false)).Batch(bs, drop));
      for (int64_t p : kParallelisms) {
        for (const Options& rt : Runtimes()) {
          SCOPED_TRACE("batch_size " + std::to_string(bs) + " drop " + std::to_string(drop) +
                       " parallelism " + std::to_string(p));
          ConformanceOptions o;
          o.runtime = rt;
          CheckDataset(Dataset::Range(20).MapAndBatch(Triple(), bs, p, drop, true), expected, o);
        }
        CheckTransform([bs, drop, p](Dataset d) { return d.MapAndBatch(Times(2), bs, p, drop, true); });
      }
    }
  }
}

TEST(MapAndBatch, ConformanceNonDeterministic) {
  for (int64_t bs : {1, 3, 7}) {
    for (bool drop : {false, true}) {
      const std::vector<Element> expected =
          CollectOrDie(Dataset::Range(20).Map(Triple(false)).Batch(bs, drop));
      for (int64_t p : {int64_t{1}, int64_t{3}, kAutotune}) {
        for (const Options& rt : Runtimes()) {
          SCOPED_TRACE("batch_size " + std::to_string(bs) + " drop " + std::to_string(drop) +
                       " parallelism " + std::to_string(p));
          ConformanceOptions o;
          o.runtime = rt;
          o.ordered = false;
          CheckDataset(Dataset::Range(20).MapAndBatch(Triple(), bs, p, drop, false), expected, o);
        }
        CheckTransform([bs, drop, p](Dataset d) { return d.MapAndBatch(Times(2), bs, p, drop, false); });
      }
    }
  }
}

TEST(MapAndBatch, SpecIsTheBatchedSpecOfTheFunctions) {
  Dataset dropped = Dataset::Range(10).MapAndBatch(Triple(), 4, 2, true);
  ASSERT_TRUE(dropped.ok());
  EXPECT_EQ(dropped.element_spec().ToString(),
            Dataset::Range(10).Map(Triple()).Batch(4, true).element_spec().ToString());
  EXPECT_EQ(dropped.Cardinality(), 2);
  Dataset kept = Dataset::Range(10).MapAndBatch(Triple(), 4, 2, false);
  EXPECT_EQ(kept.element_spec().ToString(),
            Dataset::Range(10).Map(Triple()).Batch(4).element_spec().ToString());
  EXPECT_EQ(kept.Cardinality(), 3);
  // A function without a declared spec: unknown.
  EXPECT_TRUE(Dataset::Range(10).MapAndBatch(Times(2), 4).element_spec().unknown);
}

// (v * 1000 + random in [0, 1000), position) from the element's rng and position.
Function Noisy() {
  return Function::Map(
      "noisy",
      [](Element e, FunctionContext& ctx) -> Result<Element> {
        const int64_t v = e[0].scalar<int64_t>();
        return Element{Tensor::Scalar<int64_t>(v * 1000 + static_cast<int64_t>(ctx.rng().UniformInt(1000))),
                       Tensor::Scalar<int64_t>(ctx.position())};
      },
      {.is_random = true});
}

TEST(MapAndBatch, RandomFunctionsMatchMapThenBatch) {
  SetGlobalSeed(1234);
  const std::vector<std::string> seq = Drain(Dataset::Range(200).Map(Noisy()).Batch(7));
  ASSERT_EQ(seq.size(), 29u);
  Options rt;
  rt.autotune.cpu_budget = 4;
  for (int64_t p : {1, 3, 8}) {
    SetGlobalSeed(1234);
    Dataset ds = Dataset::Range(200).MapAndBatch(Noisy(), 7, p);
    EXPECT_EQ(Drain(ds, rt), seq) << "parallelism " << p;
  }
  // The comparison is not vacuous: another seed gives other batches.
  SetGlobalSeed(4321);
  EXPECT_NE(Drain(Dataset::Range(200).MapAndBatch(Noisy(), 7, 3), rt), seq);
  SetGlobalSeed(std::nullopt);
}

TEST(MapAndBatch, InputErrorsKeepThePositionsOfTheDroppedRows) {
  // Element 5 fails in the input: map().batch() drops rows 4 (already mapped, at position
  // 4) and surfaces the error; the next batch starts with element 6 at position 5.
  SetGlobalSeed(99);
  const std::vector<std::string> seq =
      Drain(testing::FailingAt(20, 5).Map(Noisy()).Batch(4));
  ASSERT_EQ(CountErrors(seq), 1);
  Options rt;
  rt.autotune.cpu_budget = 4;
  for (int64_t p : {1, 4}) {
    SetGlobalSeed(99);
    EXPECT_EQ(Drain(testing::FailingAt(20, 5).MapAndBatch(Noisy(), 4, p), rt), seq)
        << "parallelism " << p;
  }
  SetGlobalSeed(std::nullopt);
}

TEST(MapAndBatch, MismatchedResultsGiveBatchsError) {
  Options rt;
  rt.autotune.cpu_budget = 4;
  for (char how : {'s', 'd', 'c'}) {
    const std::vector<std::string> want = Drain(Dataset::Range(20).Map(Irregular(9, how)).Batch(4));
    ASSERT_EQ(CountErrors(want), 1);
    for (int64_t p : {1, 2, 8}) {
      SCOPED_TRACE(std::string("case ") + how + " parallelism " + std::to_string(p));
      std::vector<std::string> raw;
      EXPECT_EQ(Drain(Dataset::Range(20).MapAndBatch(Irregular(9, how), 4, p), rt, &raw), want);
      ASSERT_EQ(raw.size(), 1u);
      EXPECT_NE(raw[0].find("MapAndBatch"), std::string::npos) << raw[0];
    }
  }
}

// A function declaring float32 [4] (or lying: `declared` differs from what it returns)
// that builds its result with NewOutput and records whether it got an offered slot.
Function SlotWriter(std::atomic<int>* in_slot, std::atomic<int>* offered, Shape produced,
                    Shape declared) {
  return Function::Map(
      "slot_writer",
      [in_slot, offered, produced](Element e, FunctionContext& ctx) -> Result<Element> {
        if (!OutputSlots(ctx).empty()) ++*offered;
        SLUICE_ASSIGN_OR_RETURN(Tensor t, NewOutput(ctx, 0, DType::kFloat32, produced));
        if (!OutputSlots(ctx).empty() && t.raw_data() == OutputSlots(ctx)[0].raw_data()) {
          ++*in_slot;
        }
        const int64_t v = e[0].scalar<int64_t>();
        for (int64_t i = 0; i < t.num_elements(); ++i) {
          t.mutable_data<float>()[i] = static_cast<float>(v * 10 + i);
        }
        return Element{t, Tensor::Scalar<int64_t>(v)};
      },
      {},
      [declared](const ElementSpec&) -> Result<ElementSpec> {
        ElementSpec s;
        s.components = {{DType::kFloat32, PartialShape(declared)},
                        {DType::kInt64, PartialShape(Shape{})}};
        return s;
      });
}

TEST(MapAndBatch, KernelsWriteTheirResultsIntoTheBatch) {
  std::atomic<int> in_slot{0}, offered{0};
  Function f = SlotWriter(&in_slot, &offered, Shape{4}, Shape{4});
  const std::vector<std::string> want = Drain(Dataset::Range(23).Map(f).Batch(5));
  ASSERT_EQ(want.size(), 5u);
  EXPECT_EQ(offered.load(), 0);  // a plain map offers no slots
  Options rt;
  rt.autotune.cpu_budget = 3;
  for (int64_t p : {1, 3}) {
    in_slot = 0;
    offered = 0;
    EXPECT_EQ(Drain(Dataset::Range(23).MapAndBatch(f, 5, p), rt), want) << "parallelism " << p;
    // Every row was offered its slot of the batch and wrote there (no copy).
    EXPECT_EQ(offered.load(), 23);
    EXPECT_EQ(in_slot.load(), 23);
  }
}

TEST(MapAndBatch, AResultThatBreaksItsDeclaredSpecIsStillBatchedAsMapThenBatch) {
  // The function declares [4] but returns [3]: the pre-allocated batch does not fit, the
  // slots are not handed out, and the rows are stacked as the sequential Batch does.
  std::atomic<int> in_slot{0}, offered{0};
  Function f = SlotWriter(&in_slot, &offered, Shape{3}, Shape{4});
  Options as_built;
  as_built.optimization.apply_default_optimizations = false;
  const std::vector<std::string> want =
      Drain(Dataset::Range(12).Map(f).Batch(4).WithOptions(as_built));
  ASSERT_EQ(want.size(), 3u);
  ASSERT_EQ(CountErrors(want), 0);
  Options rt;
  rt.autotune.cpu_budget = 2;
  EXPECT_EQ(Drain(Dataset::Range(12).MapAndBatch(f, 4, 2), rt), want);
  EXPECT_EQ(offered.load(), 12);
  EXPECT_EQ(in_slot.load(), 0);
}

TEST(MapAndBatch, OnlyTheLastStageOfAFusedFunctionGetsTheSlots) {
  std::atomic<int> first_offered{0};
  Function first =
      Function::Map("first", [&](Element e, FunctionContext& ctx) -> Result<Element> {
        if (!OutputSlots(ctx).empty()) ++first_offered;
        return e;
      });
  std::atomic<int> in_slot{0}, offered{0};
  Function fused =
      ComposeFunctions(first, 1, SlotWriter(&in_slot, &offered, Shape{4}, Shape{4}), 2);
  Options rt;
  rt.autotune.cpu_budget = 2;
  const std::vector<std::string> got = Drain(Dataset::Range(8).MapAndBatch(fused, 4, 2), rt);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(first_offered.load(), 0);
  EXPECT_EQ(offered.load(), 8);
  EXPECT_EQ(in_slot.load(), 8);
}

TEST(FunctionContext, NewOutputHandsOutAMatchingSlotOnce) {
  Tensor slot(DType::kFloat32, Shape{2, 3});
  std::vector<Tensor> slots = {slot};
  FunctionContext ctx(1, 0);
  auto fresh = NewOutput(ctx, 0, DType::kFloat32, Shape{2, 3});  // nothing offered yet
  ASSERT_TRUE(fresh.ok());
  EXPECT_NE(fresh->raw_data(), slot.raw_data());
  OfferOutputSlots(ctx, slots);
  auto wrong_shape = NewOutput(ctx, 0, DType::kFloat32, Shape{3, 2});
  auto wrong_dtype = NewOutput(ctx, 0, DType::kInt32, Shape{2, 3});
  auto other = NewOutput(ctx, 1, DType::kFloat32, Shape{2, 3});
  ASSERT_TRUE(wrong_shape.ok() && wrong_dtype.ok() && other.ok());
  EXPECT_NE(wrong_shape->raw_data(), slot.raw_data());
  EXPECT_NE(wrong_dtype->raw_data(), slot.raw_data());
  EXPECT_NE(other->raw_data(), slot.raw_data());
  auto first = NewOutput(ctx, 0, DType::kFloat32, Shape{2, 3});
  auto second = NewOutput(ctx, 0, DType::kFloat32, Shape{2, 3});
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->raw_data(), slot.raw_data());
  EXPECT_NE(second->raw_data(), slot.raw_data());
  // Absurd sizes fail cleanly instead of allocating.
  EXPECT_EQ(NewOutput(ctx, 2, DType::kFloat32, Shape{int64_t{1} << 40, int64_t{1} << 30})
                .status()
                .code(),
            StatusCode::kResourceExhausted);
}

TEST(MapAndBatch, FunctionErrorFailsTheWholeBatchWithTheLowestRowsError) {
  // Rows 9 and 10 fail; 9 fails last (it sleeps first), yet its error is the one reported.
  Function fail = Function::Map("fail", [](Element e, FunctionContext&) -> Result<Element> {
    const int64_t v = e[0].scalar<int64_t>();
    if (v == 9) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      return DataLossError("bad record 9");
    }
    if (v == 10) return DataLossError("bad record 10");
    return e;
  });
  Options rt;
  rt.autotune.cpu_budget = 4;
  for (int64_t p : {1, 2, 4, 8}) {
    for (bool det : {true, false}) {
      SCOPED_TRACE("parallelism " + std::to_string(p) + " deterministic " + std::to_string(det));
      std::vector<std::string> raw;
      std::vector<std::string> got =
          Drain(Dataset::Range(16).MapAndBatch(fail, 4, p, false, det), rt, &raw);
      ASSERT_EQ(raw.size(), 1u);
      EXPECT_NE(raw[0].find("bad record 9"), std::string::npos) << raw[0];
      EXPECT_NE(raw[0].find("MapAndBatch"), std::string::npos) << raw[0];
      // Batches [0..3], [4..7], [12..15]: the failed batch is lost whole, and the next one
      // starts at the next batch boundary.
      std::vector<std::string> elements;
      for (const std::string& s : got) {
        if (s.rfind("error ", 0) != 0) elements.push_back(s);
      }
      std::vector<std::string> want;
      for (int64_t b : {0, 4, 12}) {
        want.push_back(Dataset::Range(b, b + 4).Batch(4).Collect()->at(0).DebugString(1 << 20));
      }
      ASSERT_EQ(got.size(), 4u);
      if (det) {
        EXPECT_EQ(elements, want);
        EXPECT_EQ(CountErrors({got[2]}), 1);  // in order: the error is third
      } else {
        std::sort(elements.begin(), elements.end());
        std::sort(want.begin(), want.end());
        EXPECT_EQ(elements, want);
      }
    }
  }
}

TEST(MapAndBatch, RowsOfOneBatchRunInParallel) {
  Function slow = Function::Map("slow", [](Element e, FunctionContext&) -> Result<Element> {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return e;
  });
  using Clock = std::chrono::steady_clock;
  auto ms_since = [](Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  };
  Options rt;
  rt.autotune.cpu_budget = 4;
  // Sequential: 16 calls of 10 ms, one after the other.
  Clock::time_point t0 = Clock::now();
  Options as_built;  // the default rewrites would fuse and parallelize the baseline
  as_built.optimization.apply_default_optimizations = false;
  auto seq = Dataset::Range(16).Map(slow).Batch(8).WithOptions(as_built).Collect();
  const double seq_ms = ms_since(t0);
  ASSERT_TRUE(seq.ok());
  ASSERT_EQ(seq->size(), 2u);

  auto it = MakeIteratorAsBuilt(Dataset::Range(16).MapAndBatch(slow, 8, 4), rt);
  ASSERT_TRUE(it.ok());
  t0 = Clock::now();
  auto first = (*it)->GetNext();
  const double first_ms = ms_since(t0);
  auto second = (*it)->GetNext();
  const double both_ms = ms_since(t0);
  ASSERT_TRUE(first.ok() && first->has_value());
  ASSERT_TRUE(second.ok() && second->has_value());
  EXPECT_TRUE((**first).ContentEquals((*seq)[0]));
  EXPECT_TRUE((**second).ContentEquals((*seq)[1]));
  // Two batches in parallel would already take half the time; the first batch alone
  // taking well under its sequential 8 x 10 ms shows its rows ran in parallel.
  EXPECT_LT(both_ms, 0.6 * seq_ms) << "parallel " << both_ms << " ms, sequential " << seq_ms;
  EXPECT_LT(first_ms, 0.6 * seq_ms / 2) << "first batch " << first_ms << " ms, sequential "
                                        << seq_ms << " ms for two";
}

TEST(MapAndBatch, BadArguments) {
  Dataset zero = Dataset::Range(3).MapAndBatch(Times(2), 0);
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.status().message().find("MapAndBatch"), std::string::npos) << zero.status();
  EXPECT_NE(zero.status().message().find("batch_size"), std::string::npos) << zero.status();
  Dataset calls = Dataset::Range(3).MapAndBatch(Times(2), 2, 0);
  ASSERT_FALSE(calls.ok());
  EXPECT_NE(calls.status().message().find("MapAndBatch"), std::string::npos) << calls.status();
  // A predicate is not an element function.
  Dataset pred = Dataset::Range(3).MapAndBatch(NotOneModThree(), 2);
  ASSERT_FALSE(pred.ok());
  EXPECT_NE(pred.status().message().find("MapAndBatch"), std::string::npos) << pred.status();
}

// ---------------------------------------------------------------------------------------
// ParallelFilter

TEST(ParallelFilter, Conformance) {
  const std::vector<Element> expected = CollectOrDie(Mixed(30).Filter(NotOneModThree()));
  ASSERT_EQ(expected.size(), 20u);
  for (bool det : {true, false}) {
    for (int64_t p : kParallelisms) {
      for (const Options& rt : Runtimes()) {
        SCOPED_TRACE("parallelism " + std::to_string(p) + " deterministic " + std::to_string(det));
        ConformanceOptions o;
        o.runtime = rt;
        o.ordered = det;
        CheckDataset(Mixed(30).Filter(NotOneModThree(), p, det), expected, o);
      }
      CheckTransform([p, det](Dataset d) { return d.Filter(NotOneModThree(), p, det); });
    }
  }
}

TEST(ParallelFilter, SpecAndCardinalityAsFilter) {
  Dataset ds = Mixed(30).Filter(NotOneModThree(), 2);
  ASSERT_TRUE(ds.ok());
  EXPECT_EQ(ds.element_spec().ToString(), Mixed(30).element_spec().ToString());
  EXPECT_EQ(ds.Cardinality(), kUnknownCardinality);
  EXPECT_EQ(Dataset::Range(0).Filter(NotOneModThree(), 2).Cardinality(), 0);
}

TEST(ParallelFilter, RandomPredicatesMatchFilter) {
  Function coin = Function::Predicate(
      "coin", [](const Element&, FunctionContext& ctx) -> Result<bool> { return ctx.rng().Uniform() < 0.5; },
      {.is_random = true});
  SetGlobalSeed(7);
  const std::vector<std::string> seq = Drain(Dataset::Range(300).Filter(coin));
  ASSERT_GT(seq.size(), 100u);
  ASSERT_LT(seq.size(), 200u);
  Options rt;
  rt.autotune.cpu_budget = 4;
  for (int64_t p : {1, 3, 8}) {
    SetGlobalSeed(7);
    EXPECT_EQ(Drain(Dataset::Range(300).Filter(coin, p, true), rt), seq) << "parallelism " << p;
  }
  SetGlobalSeed(8);
  EXPECT_NE(Drain(Dataset::Range(300).Filter(coin, 3, true), rt), seq);
  SetGlobalSeed(std::nullopt);
}

TEST(ParallelFilter, PredicateErrorSurfacesAndIterationGoesOn) {
  Function fail3 = Function::Predicate("fail3", [](const Element& e, FunctionContext&) -> Result<bool> {
    const int64_t v = e[0].scalar<int64_t>();
    if (v == 3) return DataLossError("bad predicate input 3");
    return v % 2 == 0;
  });
  const std::vector<std::string> want = Drain(Dataset::Range(10).Filter(fail3));
  ASSERT_EQ(CountErrors(want), 1);
  Options rt;
  rt.autotune.cpu_budget = 4;
  for (int64_t p : {1, 4}) {
    std::vector<std::string> raw;
    EXPECT_EQ(Drain(Dataset::Range(10).Filter(fail3, p, true), rt, &raw), want);
    ASSERT_EQ(raw.size(), 1u);
    EXPECT_NE(raw[0].find("ParallelFilter"), std::string::npos) << raw[0];
    EXPECT_NE(raw[0].find("bad predicate input 3"), std::string::npos) << raw[0];
  }
}

TEST(ParallelFilter, BadArguments) {
  Dataset calls = Dataset::Range(3).Filter(NotOneModThree(), 0);
  ASSERT_FALSE(calls.ok());
  EXPECT_NE(calls.status().message().find("ParallelFilter"), std::string::npos) << calls.status();
  Function not_bool = Function::DatasetFunction(
      "ds", [](Element, FunctionContext&) -> Result<Dataset> { return Dataset::Range(1); });
  Dataset kind = Dataset::Range(3).Filter(not_bool, 2);
  ASSERT_FALSE(kind.ok());
  EXPECT_NE(kind.status().message().find("ParallelFilter"), std::string::npos) << kind.status();
}

// ---------------------------------------------------------------------------------------
// Stats

TEST(ParallelBatchOps, NodesAppearInTheSnapshotWithParallelismAndBufferLimit) {
  Function even = Function::Predicate("even", [](const Element& e, FunctionContext&) -> Result<bool> {
    return e[0].scalar<int64_t>() % 2 == 0;
  });
  Options rt;
  rt.autotune.cpu_budget = 4;
  auto it = MakeIteratorAsBuilt(
      Dataset::Range(128).Filter(even, 2).MapAndBatch(Times(3), 8, 4).Batch(2, false, 3),
      rt);
  ASSERT_TRUE(it.ok());
  int64_t n = 0;
  while (true) {
    auto e = (*it)->GetNext();
    ASSERT_TRUE(e.ok()) << e.status();
    if (!*e) break;
    EXPECT_EQ((**e)[0].shape(), Shape({2, 8}));
    ++n;
  }
  EXPECT_EQ(n, 4);
  PipelineStats s = (*it)->Snapshot();
  ASSERT_EQ(s.nodes.size(), 4u);
  const IteratorStats& batch = s.nodes[0];
  const IteratorStats& mab = s.nodes[1];
  const IteratorStats& filter = s.nodes[2];
  EXPECT_EQ(batch.name, "ParallelBatch");
  EXPECT_TRUE(batch.async);
  EXPECT_EQ(batch.parallelism, 3);
  EXPECT_EQ(batch.buffer_limit, 2 + 3);  // batches of 2 rows are one part each
  EXPECT_EQ(batch.elements_produced, 4);
  EXPECT_EQ(batch.elements_consumed, 8);
  EXPECT_EQ(mab.name, "MapAndBatch");
  EXPECT_EQ(mab.parent, 0);
  EXPECT_TRUE(mab.async);
  EXPECT_EQ(mab.parallelism, 4);
  EXPECT_EQ(mab.buffer_limit, 2 + 1);  // one batch of 8 rows keeps 4 parts busy
  EXPECT_EQ(mab.elements_produced, 8);
  EXPECT_EQ(mab.elements_consumed, 64);
  EXPECT_EQ(filter.name, "ParallelFilter");
  EXPECT_EQ(filter.parallelism, 2);
  // 2 x parallelism groups; the limit counts elements (async_buffer.h, "Groups").
  EXPECT_GE(filter.buffer_limit, 4);
  EXPECT_EQ(filter.buffer_limit % 4, 0);
  EXPECT_EQ(filter.elements_produced, 64);
  EXPECT_EQ(filter.elements_consumed, 128);
}

}  // namespace
}  // namespace sluice
