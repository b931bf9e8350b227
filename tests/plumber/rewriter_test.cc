// The rewriter: the plan applied yields the same elements (same seeds); the one-liner.
#include <gtest/gtest.h>

#include "graph/dataset_access.h"
#include "sluice/plumber.h"
#include "sluice/serialize.h"
#include "plumber/plumber_internal.h"
#include "testing/op_cases.h"
#include "testing/plumber_fixtures.h"

namespace sluice::plumber {
namespace {

using testing::BurnFunction;

Function NoisyFunction() {
  FunctionTraits t;
  t.is_random = true;
  return Function::Map(
      "noisy",
      [](Element e, FunctionContext& ctx) -> Result<Element> {
        int64_t v = e[0].scalar<int64_t>();
        return Element{Tensor::Scalar<int64_t>(v * 1000 + static_cast<int64_t>(ctx.rng().UniformInt(1000)))};
      },
      t);
}

// A deterministic pipeline with random parts (seeded): the rewrite must not change it.
Dataset Pipeline() {
  return Dataset::Range(300)
      .Map(BurnFunction("burn", 20000))
      .Filter(Function::Predicate("odd",
                                  [](const Element& e, FunctionContext&) -> Result<bool> {
                                    return e[0].scalar<int64_t>() % 3 != 0;
                                  }))
      .Shuffle(40, /*seed=*/11)
      .Map(NoisyFunction())
      .Batch(7);
}

void ExpectSameElements(const Dataset& a, const Dataset& b) {
  auto x = a.Collect();
  auto y = b.Collect();
  ASSERT_TRUE(x.ok()) << x.status().ToString();
  ASSERT_TRUE(y.ok()) << y.status().ToString();
  ASSERT_EQ(x->size(), y->size());
  for (size_t i = 0; i < x->size(); ++i) {
    ASSERT_TRUE((*x)[i].ContentEquals((*y)[i])) << i << ": " << (*x)[i].DebugString()
                                                << " vs " << (*y)[i].DebugString();
  }
}

TEST(RewriterTest, AppliedPlanYieldsTheSameElements) {
  Dataset ds = Pipeline();
  Plan plan;
  for (int64_t id = 0; id < 6; ++id) plan.nodes.push_back({id, 0, 3, 0});
  plan.cache_nodes = {1};  // after the burn map, below the shuffle
  plan.prefetch = 4;
  auto out = ApplyPlan(ds, plan);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const std::string shown = DatasetGraphDebugString(*out);
  EXPECT_NE(shown.find("ParallelMap"), std::string::npos) << shown;
  EXPECT_NE(shown.find("ParallelFilter"), std::string::npos) << shown;
  EXPECT_NE(shown.find("ParallelBatch"), std::string::npos) << shown;
  EXPECT_NE(shown.find("Cache"), std::string::npos) << shown;
  EXPECT_EQ(NodeOf(*out)->op(), "Prefetch");
  ExpectSameElements(ds, *out);
  ExpectSameElements(ds, *out);  // a second epoch (from the cache)
}

// The rewritten pipeline keeps the static rewrites that do not choose parallelism (here
// vectorize_map_batch: the Batch moves below normalize, right above the source; then
// map_fusion), but none adds parallelism the plan did not ask for (map_parallelization
// would make the sequential map parallel).
TEST(RewriterTest, AppliedPlanKeepsTheRewritesThatDoNotSetParallelism) {
  Tensor img(DType::kUInt8, Shape{40, 6, 5, 1});
  for (int i = 0; i < 40 * 30; ++i) img.mutable_data<uint8_t>()[i] = static_cast<uint8_t>(i);
  Dataset ds = Dataset::FromTensorSlices(Element{img})
                   .Map(testing::K("normalize", {{"mean", std::vector<double>{0.3}},
                                                 {"std", std::vector<double>{0.4}},
                                                 {"layout", std::string("HWC")}}))
                   .Batch(8)
                   .Map(BurnFunction("burn", 1000));
  Plan plan;
  plan.nodes.resize(4);  // every parallelism left as is: sequential
  auto out = ApplyPlan(ds, plan);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  auto runs = RewrittenGraph(*out);
  ASSERT_TRUE(runs.ok()) << runs.status().ToString();
  const std::string shown = DatasetGraphDebugString(*runs);
  EXPECT_NE(shown.find("#1 Batch"), std::string::npos) << shown;
  EXPECT_EQ(shown.find("Parallel"), std::string::npos) << shown;
  ExpectSameElements(ds, *out);
  ExpectSameElements(ds, *runs);
}

// The planner gives every map of a chain the chain's parallelism (planner_test.cc
// `MapsTheEngineFusesArePlannedAsOneParallelOp`) because the engine then fuses them:
// the rewritten graph runs one ParallelMap (and a MapAndBatch where a Batch follows),
// with the same elements (each function keeps its seed).
TEST(RewriterTest, AChainOfMapsGivenOneParallelismRunsFused) {
  Dataset ds = Dataset::Range(200)
                   .Map(BurnFunction("a", 1000))
                   .Map(NoisyFunction())
                   .Map(BurnFunction("c", 1000))
                   .Batch(8);
  Plan plan;
  plan.nodes.resize(5);
  for (int64_t id = 1; id <= 3; ++id) plan.nodes[id].parallelism = 2;
  auto out = ApplyPlan(ds, plan);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  auto runs = RewrittenGraph(*out);
  ASSERT_TRUE(runs.ok()) << runs.status().ToString();
  const std::string shown = DatasetGraphDebugString(*runs);
  EXPECT_NE(shown.find("MapAndBatch"), std::string::npos) << shown;
  EXPECT_EQ(shown.find("ParallelMap"), std::string::npos) << shown;
  EXPECT_EQ(shown.find("#2"), std::string::npos) << shown;  // Range, MapAndBatch: 2 nodes
  ExpectSameElements(ds, *out);
  ExpectSameElements(ds, *runs);
}

// A chain of registered kernels made parallel runs fused (one composed function, which
// does not serialize); the doctor still returns a pipeline that serializes (what `sluice
// plumber --apply` writes): the plan in the graph's own terms, which the engine rewrites
// into the fused graph the probe traced. Before, it returned the probe's rewritten graph
// and --apply failed on the ImageNet-style spec ("a local C++ callable").
TEST(RewriterTest, OptimizedChainOfKernelsStillSerializes) {
  Tensor img(DType::kUInt8, Shape{160, 160, 3});
  for (int i = 0; i < 160 * 160 * 3; ++i) {
    img.mutable_data<uint8_t>()[i] = static_cast<uint8_t>(i * 7);
  }
  // About 0.5 ms per element in all: a thread of its own pays for its handoffs.
  Dataset ds = Dataset::FromTensors(Element{img})
                   .Repeat(2000)
                   .Map(testing::K("resize", {{"size", int64_t{480}}}))
                   .Map(testing::K("flip_left_right"))
                   .Map(testing::K("resize", {{"size", int64_t{32}}}));
  ASSERT_TRUE(SerializeDataset(ds, GraphFormat::kJson).ok());
  OptimizeOptions o;
  o.trace.seconds = 0.25;
  o.trace.warmup_seconds = 0.05;
  o.trace.cpu_budget = 2;
  o.plan.cores = 2;
  o.probe_seconds = 0.25;
  auto opt = OptimizeDetailed(ds, o);
  ASSERT_TRUE(opt.ok()) << opt.status().ToString();
  // The three maps are one chain: made parallel together (the LP gives it both cores).
  const int64_t par = opt->plan.nodes[2].parallelism;
  EXPECT_GE(par, 2);
  EXPECT_EQ(opt->plan.nodes[3].parallelism, par);
  EXPECT_EQ(opt->plan.nodes[4].parallelism, par);
  ASSERT_TRUE(opt->probed);
  auto runs = RewrittenGraph(opt->dataset);
  ASSERT_TRUE(runs.ok()) << runs.status().ToString();
  const std::string shown = DatasetGraphDebugString(*runs);
  EXPECT_NE(shown.find("ParallelMap"), std::string::npos) << shown;
  EXPECT_NE(shown.find("'resize+flip_left_right+resize'"), std::string::npos) << shown;
  auto g = SerializeDataset(opt->dataset, GraphFormat::kJson);
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  ExpectSameElements(ds, opt->dataset);
}

TEST(RewriterTest, PlanForAnotherGraphIsRefused) {
  Plan plan;
  plan.nodes.resize(2);
  auto out = ApplyPlan(Pipeline(), plan);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().ToString().find("2 nodes"), std::string::npos);
}

TEST(RewriterTest, OptimizeOneLiner) {
  Dataset ds = Pipeline();
  OptimizeOptions o;
  o.trace.seconds = 0.3;
  o.trace.warmup_seconds = 0.02;
  auto fast = Optimize(ds, o);
  ASSERT_TRUE(fast.ok()) << fast.status().ToString();
  ExpectSameElements(ds, *fast);  // the trace ran a copy: this is ds's first pass
}

}  // namespace
}  // namespace sluice::plumber
