// The static optimizer (src/optimizer/): each pass on the graph (ops before/after, change
// count, the disable toggle, negative cases), output equivalence of optimized and
// unoptimized pipelines (random functions, shuffle/repeat over epochs, decode and crop on
// generated JPEGs), the driver's report and verifier, and checkpoints of optimized
// pipelines.
#include "optimizer/optimizer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "api/dataset_internal.h"
#include "datagen/imagenet_like.h"
#include "formats/image_codec.h"
#include "graph/function_internal.h"
#include "graph/registry.h"
#include "optimizer/pass.h"
#include "runtime/iterator_base.h"
#include "testing/conformance.h"

namespace sluice {
namespace {

using testing::CheckDataset;
using testing::CollectOrDie;
using testing::ConformanceOptions;
using testing::Ints;
using testing::IntsOf;

// ---- Helpers --------------------------------------------------------------------------

class OptimizerTest : public ::testing::Test {
 protected:
  void TearDown() override { SetGlobalSeed(std::nullopt); }
};

// Options that run exactly `passes`.
Options Only(std::vector<std::string> passes) {
  Options o;
  o.optimization.apply_default_optimizations = false;
  for (auto& p : passes) o.optimization.Set(std::move(p), true);
  return o;
}

// The ops from the source up to the root, following input 0.
std::vector<std::string> Ops(const DatasetPtr& root) {
  std::vector<std::string> out;
  for (const DatasetNode* n = root.get(); n; n = n->inputs().empty() ? nullptr : n->input(0).get()) {
    out.insert(out.begin(), n->op());
  }
  return out;
}
std::vector<std::string> Ops(const Dataset& ds) { return Ops(NodeOf(ds)); }

struct Optimized {
  DatasetPtr root;
  OptimizeReport report;
  int64_t changes(std::string_view pass) const {
    for (const auto& p : report.passes) {
      if (p.name == pass) return p.changes;
    }
    return -1;
  }
};

Optimized Optimize(const Dataset& ds, const Options& o) {
  Optimized out;
  auto r = OptimizeGraph(NodeOf(ds), o, &out.report);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (r.ok()) out.root = *r;
  return out;
}

std::vector<Element> Drain(Iterator* it, int64_t limit = -1) {
  std::vector<Element> out;
  while (limit < 0 || static_cast<int64_t>(out.size()) < limit) {
    auto e = it->GetNext();
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    if (!e.ok() || !*e) break;
    out.push_back(std::move(**e));
  }
  return out;
}

// Every element of the graph as built (no rewrites).
std::vector<Element> Unoptimized(const Dataset& ds) {
  auto it = MakeIteratorAsBuilt(ds, {});
  EXPECT_TRUE(it.ok()) << it.status().ToString();
  return it.ok() ? Drain(it->get()) : std::vector<Element>{};
}
// Every element under `o`'s rewrites.
std::vector<Element> OptimizedElements(const Dataset& ds, const Options& o) {
  auto it = ds.WithOptions(o).MakeIterator();
  EXPECT_TRUE(it.ok()) << it.status().ToString();
  return it.ok() ? Drain(it->get()) : std::vector<Element>{};
}

void ExpectSameElements(const std::vector<Element>& a, const std::vector<Element>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_TRUE(a[i].ContentEquals(b[i])) << "element " << i << ": " << a[i].DebugString()
                                          << " vs " << b[i].DebugString();
  }
}

// `build()` twice (seeds drawn from the same global seed), once optimized under `o` and
// once not: the elements must be identical. Returns the count.
size_t ExpectEquivalent(const std::function<Dataset()>& build, const Options& o) {
  SetGlobalSeed(1234);
  Dataset plain = build();
  SetGlobalSeed(1234);
  Dataset opt = build();
  std::vector<Element> a = Unoptimized(plain);
  std::vector<Element> b = OptimizedElements(opt, o);
  ExpectSameElements(a, b);
  return a.size();
}

int64_t V(const Element& e) { return e[0].scalar<int64_t>(); }

// x -> x * 1000 + a random draw in [0, 1000).
Function Noise(std::string name = "noise") {
  return Function::Map(
      std::move(name),
      [](Element e, FunctionContext& ctx) -> Result<Element> {
        return Element{Tensor::Scalar<int64_t>(V(e) * 1000 +
                                               static_cast<int64_t>(ctx.rng().UniformInt(1000)))};
      },
      {.is_random = true, .skippable = true});
}
Function AddOne(FunctionTraits traits = {.skippable = true}) {
  return Function::Map(
      "add_one",
      [](Element e, FunctionContext&) -> Result<Element> {
        return Element{Tensor::Scalar<int64_t>(V(e) + 1)};
      },
      traits);
}
Function Times(int64_t k) {
  return Function::Map("times" + std::to_string(k),
                       [k](Element e, FunctionContext&) -> Result<Element> {
                         return Element{Tensor::Scalar<int64_t>(V(e) * k)};
                       });
}
Function Stateful() { return AddOne({.stateful = true}); }
Function Even() {
  return Function::Predicate(
      "even", [](const Element& e, FunctionContext&) -> Result<bool> { return V(e) % 2 == 0; });
}
Function NotMultipleOf(int64_t k) {
  return Function::Predicate("not_multiple_of" + std::to_string(k),
                             [k](const Element& e, FunctionContext&) -> Result<bool> {
                               return V(e) % k != 0;
                             });
}
// Keeps about half the elements, at random.
Function Coin() {
  return Function::Predicate(
      "coin",
      [](const Element&, FunctionContext& ctx) -> Result<bool> { return ctx.rng().Uniform() < 0.5; },
      {.is_random = true});
}
Function Kernel(std::string_view name, AttrMap attrs = {}) {
  auto f = Function::Kernel(name, std::move(attrs));
  EXPECT_TRUE(f.ok()) << f.status().ToString();
  return f.ok() ? *f : Function();
}

// ---- RewriteGraph and the verifier ----------------------------------------------------

TEST_F(OptimizerTest, RewriteKeepsSharedNodesShared) {
  Dataset a = Dataset::Range(10).Take(-1);
  Dataset z = Dataset::Zip({a.Map(AddOne()), a.Map(Times(2))});
  Optimized o = Optimize(z, Only({"noop_elimination"}));
  ASSERT_TRUE(o.root);
  EXPECT_EQ(o.changes("noop_elimination"), 1);  // the one Take, though reached twice
  ASSERT_EQ(o.root->op(), "Zip");
  const DatasetPtr& l = o.root->input(0)->input(0);
  const DatasetPtr& r = o.root->input(1)->input(0);
  EXPECT_EQ(l->op(), "Range");
  EXPECT_EQ(l.get(), r.get());
}

TEST_F(OptimizerTest, RewriteLeavesUnchangedGraphIdentical) {
  Dataset ds = Dataset::Range(10).Map(AddOne()).Batch(2);
  Optimized o = Optimize(ds, Only({"noop_elimination", "map_fusion", "filter_fusion"}));
  EXPECT_EQ(o.root.get(), NodeOf(ds).get());
}

TEST_F(OptimizerTest, RewriteHandlesLongPipelines) {
  Dataset ds = Dataset::Range(3);
  for (int i = 0; i < 3000; ++i) ds = ds.Take(-1);
  Optimized o = Optimize(ds, Only({"noop_elimination"}));
  EXPECT_EQ(o.changes("noop_elimination"), 3000);
  EXPECT_EQ(Ops(o.root), std::vector<std::string>{"Range"});
}

TEST_F(OptimizerTest, VerifierAcceptsCompatibleAndRejectsChangedSpecs) {
  Dataset ints = Dataset::Range(5);
  Dataset unknown = ints.Map(AddOne());  // a lambda without a spec: unknown
  EXPECT_TRUE(VerifyGraph(NodeOf(ints), NodeOf(ints.Map(Kernel("identity")))).ok());
  EXPECT_TRUE(VerifyGraph(NodeOf(unknown), NodeOf(ints)).ok());  // unknown -> known
  Status s = VerifyGraph(NodeOf(ints), NodeOf(unknown));         // known -> unknown
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("became unknown"), std::string::npos) << s.ToString();
  Dataset strings = Dataset::FromTensorSlices(Element{Tensor::FromStrings({"a", "b", "c", "d", "e"})});
  s = VerifyGraph(NodeOf(ints), NodeOf(strings));
  EXPECT_NE(s.message().find("dtype"), std::string::npos) << s.ToString();
  s = VerifyGraph(NodeOf(ints), NodeOf(ints.Take(3)));
  EXPECT_NE(s.message().find("cardinality changed from 5 to 3"), std::string::npos)
      << s.ToString();
  EXPECT_FALSE(VerifyGraph(NodeOf(ints), nullptr).ok());
}

// ---- The driver -----------------------------------------------------------------------

TEST_F(OptimizerTest, ReportListsEveryPassInOrder) {
  Dataset ds = Dataset::Range(100).Take(-1).Map(AddOne()).Map(Times(3)).Batch(4);
  Optimized o = Optimize(ds, Options{});
  std::vector<std::string> names;
  for (const auto& p : o.report.passes) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{
                       "noop_elimination", "global_shuffle", "vectorize_map_batch",
                       "shuffle_and_repeat_fusion",
                       "decode_and_crop_fusion", "map_fusion", "filter_fusion",
                       "map_parallelization", "map_and_filter_fusion",
                       "map_and_batch_fusion", "parallel_batch", "inject_prefetch"}));
  int64_t total_ns = 0;
  for (const auto& p : o.report.passes) {
    EXPECT_TRUE(p.enabled) << p.name;
    EXPECT_GE(p.time_ns, 0) << p.name;
    total_ns += p.time_ns;
  }
  EXPECT_GT(total_ns, 0);
  EXPECT_EQ(o.changes("noop_elimination"), 1);
  EXPECT_EQ(o.changes("map_fusion"), 1);
  EXPECT_EQ(o.changes("map_parallelization"), 1);
  EXPECT_EQ(o.changes("map_and_batch_fusion"), 1);
  EXPECT_EQ(o.changes("parallel_batch"), 0);  // map_and_batch took the batch
  EXPECT_EQ(o.changes("inject_prefetch"), 0);  // MapAndBatch is asynchronous
  EXPECT_EQ(Ops(o.root), (std::vector<std::string>{"Range", "MapAndBatch"}));
  std::vector<std::string> lines = o.report.Lines();
  ASSERT_EQ(lines.size(), 12u);
  EXPECT_EQ(lines[5].rfind("map_fusion: 1 change in ", 0), 0u) << lines[5];
  EXPECT_NE(lines[5].find(" ms"), std::string::npos) << lines[5];
}

TEST_F(OptimizerTest, DisabledPassesAreReportedAndSkipped) {
  Options o;
  o.optimization.Set("map_fusion", false).Set("inject_prefetch", false);
  Dataset ds = Dataset::Range(10).Map(AddOne()).Map(Times(3));
  Optimized r = Optimize(ds, o);
  for (const auto& p : r.report.passes) {
    const bool off = p.name == "map_fusion" || p.name == "inject_prefetch";
    EXPECT_EQ(p.enabled, !off) << p.name;
    if (off) EXPECT_EQ(p.changes, 0) << p.name;
  }
  EXPECT_EQ(Ops(r.root), (std::vector<std::string>{"Range", "ParallelMap", "ParallelMap"}));
  EXPECT_NE(r.report.Lines()[5].find("map_fusion: disabled"), std::string::npos);

  Options none;
  none.optimization.apply_default_optimizations = false;
  EXPECT_EQ(Optimize(ds, none).root.get(), NodeOf(ds).get());
}

// A pass that replaces the root with whatever `make` builds.
class BadPass final : public OptimizerPass {
 public:
  explicit BadPass(std::function<Result<PassResult>(const DatasetPtr&)> make)
      : make_(std::move(make)) {}
  std::string_view name() const override { return "bad_pass"; }
  bool on_by_default() const override { return true; }
  Result<PassResult> Apply(const DatasetPtr& root) const override { return make_(root); }

 private:
  std::function<Result<PassResult>(const DatasetPtr&)> make_;
};

Status RunBad(const Dataset& ds, std::function<Result<PassResult>(const DatasetPtr&)> make) {
  PassList passes;
  passes.push_back(MakeNoopEliminationPass());
  passes.push_back(std::make_unique<BadPass>(std::move(make)));
  OptimizeReport report;
  return RunPasses(NodeOf(ds), Options{}, passes, &report).status();
}

TEST_F(OptimizerTest, VerifierCatchesBrokenPasses) {
  Dataset ds = Dataset::Range(10).Map(Kernel("identity")).Take(8);
  // Changes the cardinality.
  Status s = RunBad(ds, [](const DatasetPtr& root) -> Result<PassResult> {
    SLUICE_ASSIGN_OR_RETURN(DatasetPtr t, RewriteContext::Make("Take", {{"count", int64_t{3}}}, {root}));
    return PassResult{t, 1};
  });
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_NE(s.message().find("optimizer pass 'bad_pass'"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("cardinality"), std::string::npos) << s.ToString();
  // Changes the element spec.
  s = RunBad(ds, [](const DatasetPtr&) -> Result<PassResult> {
    Dataset strings = Dataset::FromTensorSlices(
        Element{Tensor::FromStrings({"a", "b", "c", "d", "e", "f", "g", "h"})});
    return PassResult{NodeOf(strings), 1};
  });
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_NE(s.message().find("element spec"), std::string::npos) << s.ToString();
  // A dangling graph.
  s = RunBad(ds, [](const DatasetPtr&) -> Result<PassResult> { return PassResult{nullptr, 1}; });
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_NE(s.message().find("bad_pass"), std::string::npos) << s.ToString();
  // A pass that fails.
  s = RunBad(ds, [](const DatasetPtr&) -> Result<PassResult> {
    return InvalidArgumentError("boom");
  });
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_NE(s.message().find("'bad_pass' failed"), std::string::npos) << s.ToString();
  // A correct pass goes through.
  s = RunBad(ds, [](const DatasetPtr& root) -> Result<PassResult> { return PassResult{root, 0}; });
  EXPECT_TRUE(s.ok()) << s.ToString();
}

TEST_F(OptimizerTest, MakeIteratorRunsRewritesAndRuntimeOptionsDoNot) {
  Dataset ds = Dataset::Range(10).Map(AddOne());
  auto opt = ds.MakeIterator();
  ASSERT_TRUE(opt.ok());
  EXPECT_EQ(Ops(IteratorGraph(**opt)),
            (std::vector<std::string>{"Range", "ParallelMap"}));
  auto plain = MakeIteratorAsBuilt(ds, {});
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(Ops(IteratorGraph(**plain)), (std::vector<std::string>{"Range", "Map"}));
  EXPECT_EQ(IntsOf(Drain(opt->get())), IntsOf(Drain(plain->get())));
}

// ---- noop_elimination -----------------------------------------------------------------

TEST_F(OptimizerTest, NoopEliminationRemovesNoops) {
  Dataset ds = Dataset::Range(10).Take(-1).Skip(0).Shard(1, 0).Map(Kernel("identity"))
                   .Repeat(1).Take(5);
  Optimized o = Optimize(ds, Only({"noop_elimination"}));
  EXPECT_EQ(Ops(o.root), (std::vector<std::string>{"Range", "Take"}));
  EXPECT_EQ(o.changes("noop_elimination"), 5);
  ExpectEquivalent([&] { return ds; }, Only({"noop_elimination"}));
  // Disabled: nothing changes.
  Options off;
  off.optimization.Set("noop_elimination", false);
  off.optimization.apply_default_optimizations = false;
  EXPECT_EQ(Optimize(ds, off).root.get(), NodeOf(ds).get());
}

TEST_F(OptimizerTest, NoopEliminationKeepsOpsThatDoSomething) {
  Dataset ds = Dataset::Range(10).Take(3).Skip(1).Shard(2, 1).Repeat(2).Map(AddOne());
  Optimized o = Optimize(ds, Only({"noop_elimination"}));
  EXPECT_EQ(o.root.get(), NodeOf(ds).get());
  EXPECT_EQ(o.changes("noop_elimination"), 0);
  // Repeat(1) over a reshuffling Shuffle runs it in epoch 0's context: kept.
  Dataset sh = Dataset::Range(10).Shuffle(4, 1).Repeat(1);
  EXPECT_EQ(Ops(Optimize(sh, Only({"noop_elimination"})).root),
            (std::vector<std::string>{"Range", "Shuffle", "Repeat"}));
  // ... but not over one that does not reshuffle.
  Dataset fixed = Dataset::Range(10).Shuffle(4, 1, /*reshuffle_each_iteration=*/false).Repeat(1);
  EXPECT_EQ(Ops(Optimize(fixed, Only({"noop_elimination"})).root),
            (std::vector<std::string>{"Range", "Shuffle"}));
  ExpectEquivalent([] { return Dataset::Range(30).Shuffle(8).Repeat(1).Take(-1); },
                   Only({"noop_elimination"}));
}

// ---- shuffle_and_repeat_fusion --------------------------------------------------------

TEST_F(OptimizerTest, ShuffleAndRepeatFusionGraph) {
  Dataset ds = Dataset::Range(20).Shuffle(8, 3).Repeat(3);
  Optimized o = Optimize(ds, Only({"shuffle_and_repeat_fusion"}));
  EXPECT_EQ(Ops(o.root), (std::vector<std::string>{"Range", "ShuffleAndRepeat"}));
  EXPECT_EQ(o.changes("shuffle_and_repeat_fusion"), 1);
  EXPECT_EQ(o.root->Cardinality(), 60);
  // A shuffle feeding two consumers is left alone.
  Dataset sh = Dataset::Range(20).Shuffle(8, 3);
  Dataset z = Dataset::Zip({sh.Repeat(2), sh.Repeat(2)});
  EXPECT_EQ(Optimize(z, Only({"shuffle_and_repeat_fusion"})).root.get(), NodeOf(z).get());
  // Repeat over something else is not touched.
  Dataset r = Dataset::Range(5).Repeat(2);
  EXPECT_EQ(Optimize(r, Only({"shuffle_and_repeat_fusion"})).root.get(), NodeOf(r).get());
}

TEST_F(OptimizerTest, ShuffleAndRepeatFusionYieldsTheSameElements) {
  const Options o = Only({"shuffle_and_repeat_fusion"});
  EXPECT_EQ(ExpectEquivalent([] { return Dataset::Range(20).Shuffle(8).Repeat(4); }, o), 80u);
  EXPECT_EQ(ExpectEquivalent([] { return Dataset::Range(20).Shuffle(8, 5, false).Repeat(3); }, o),
            60u);
  EXPECT_EQ(ExpectEquivalent([] { return Dataset::Range(7).Shuffle(100).Repeat().Take(50); }, o),
            50u);
  // Nested: each level reshuffles per epoch of the level above.
  EXPECT_EQ(ExpectEquivalent(
                [] { return Dataset::Range(6).Shuffle(3).Repeat(2).Shuffle(5).Repeat(3); }, o),
            36u);
  // An empty input ends the repeat.
  EXPECT_EQ(ExpectEquivalent([] { return Dataset::Range(0).Shuffle(3).Repeat(); }, o), 0u);
  EXPECT_EQ(ExpectEquivalent([] { return Dataset::Range(5).Shuffle(3).Repeat(0); }, o), 0u);
  // Several iterators of the same dataset reshuffle alike (instances 0, 1, 2).
  SetGlobalSeed(9);
  Dataset plain = Dataset::Range(10).Shuffle(4).Repeat(2);
  SetGlobalSeed(9);
  Dataset fused = Dataset::Range(10).Shuffle(4).Repeat(2).WithOptions(o);
  for (int i = 0; i < 3; ++i) {
    auto a = MakeIteratorAsBuilt(plain, {});
    auto b = fused.MakeIterator();
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(IntsOf(Drain(a->get())), IntsOf(Drain(b->get()))) << "iteration " << i;
  }
}

TEST_F(OptimizerTest, ShuffleAndRepeatSkipsWholeEpochsLikeRepeat) {
  const Options o = Only({"shuffle_and_repeat_fusion"});
  EXPECT_EQ(ExpectEquivalent([] { return Dataset::Range(10).Shuffle(4).Repeat(5).Skip(23); }, o),
            27u);
  EXPECT_EQ(ExpectEquivalent([] { return Dataset::Range(10).Shuffle(4).Repeat(3).Skip(40); }, o),
            0u);
}

// The fused op through the conformance fixture (save/restore at every position, both
// checkpoint paths).
TEST_F(OptimizerTest, ShuffleAndRepeatConformance) {
  auto fused = [](Dataset in, bool reshuffle, int64_t count) {
    return Dataset::FromOp("ShuffleAndRepeat",
                           {{"buffer_size", int64_t{5}},
                            {"seed", int64_t{77}},
                            {"reshuffle_each_iteration", reshuffle},
                            {"count", count}},
                           {in});
  };
  // Not reshuffling: every iterator yields the same, so the order is checked exactly.
  std::vector<Element> expected =
      Unoptimized(Dataset::FromOp("Repeat", {{"count", int64_t{3}}},
                                   {Dataset::FromOp("Shuffle",
                                                    {{"buffer_size", int64_t{5}},
                                                     {"seed", int64_t{77}},
                                                     {"reshuffle_each_iteration", false}},
                                                    {Dataset::Range(12)})}));
  ASSERT_EQ(expected.size(), 36u);
  CheckDataset(fused(Dataset::Range(12), false, 3), expected);
  // Reshuffling: a multiset per iterator, save/restore within each.
  ConformanceOptions unordered;
  unordered.ordered = false;
  unordered.same_each_iteration = false;
  std::vector<int64_t> all;
  for (int r = 0; r < 3; ++r) {
    for (int i = 0; i < 12; ++i) all.push_back(i);
  }
  CheckDataset(fused(Dataset::Range(12), true, 3), Ints(all), unordered);
  // Not replayable (a filter with a failing element disables positions): buffer contents
  // are stored. IgnoreErrors drops the failures.
  CheckDataset(fused(testing::FailingAt(12, 4), false, 2).IgnoreErrors(),
               Unoptimized(Dataset::FromOp("Repeat", {{"count", int64_t{2}}},
                                            {Dataset::FromOp("Shuffle",
                                                             {{"buffer_size", int64_t{5}},
                                                              {"seed", int64_t{77}},
                                                              {"reshuffle_each_iteration", false}},
                                                             {testing::FailingAt(12, 4)})})
                                .IgnoreErrors()));
  // Bad attributes are errors naming the op.
  Dataset bad = Dataset::FromOp("ShuffleAndRepeat", {{"buffer_size", int64_t{0}}, {"seed", int64_t{1}}},
                                {Dataset::Range(3)});
  EXPECT_NE(bad.status().message().find("ShuffleAndRepeat: buffer_size"), std::string::npos)
      << bad.status().ToString();
}

// ---- map_fusion -----------------------------------------------------------------------

TEST_F(OptimizerTest, MapFusionGraph) {
  Dataset ds = Dataset::Range(10).Map(AddOne()).Map(Times(2)).Map(Times(3));
  Optimized o = Optimize(ds, Only({"map_fusion"}));
  EXPECT_EQ(Ops(o.root), (std::vector<std::string>{"Range", "Map"}));
  EXPECT_EQ(o.changes("map_fusion"), 2);
  EXPECT_EQ(o.root->functions()[0].name(), "add_one+times2+times3");
  EXPECT_FALSE(o.root->functions()[0].serializable());
  EXPECT_FALSE(o.root->functions()[0].traits().skippable);  // times* are not
  ExpectEquivalent([&] { return ds; }, Only({"map_fusion"}));

  // Parallel maps with equal determinism fuse with the larger parallelism.
  Dataset p = Dataset::Range(10).Map(AddOne(), 2, true).Map(Times(2), 4, true);
  Optimized op = Optimize(p, Only({"map_fusion"}));
  EXPECT_EQ(Ops(op.root), (std::vector<std::string>{"Range", "ParallelMap"}));
  EXPECT_EQ(IntAttr(*op.root, "num_parallel_calls", 0), 4);
  EXPECT_EQ(IntAttr(*op.root, "deterministic", 0), 1);
  Dataset pa = Dataset::Range(10).Map(AddOne(), kAutotune, true).Map(Times(2), 4, true);
  EXPECT_EQ(IntAttr(*Optimize(pa, Only({"map_fusion"})).root, "num_parallel_calls", 0), kAutotune);
}

TEST_F(OptimizerTest, MapFusionNegativeCases) {
  const Options o = Only({"map_fusion"});
  // A stateful function is never fused.
  Dataset s1 = Dataset::Range(10).Map(Stateful()).Map(AddOne());
  Dataset s2 = Dataset::Range(10).Map(AddOne()).Map(Stateful());
  EXPECT_EQ(Optimize(s1, o).root.get(), NodeOf(s1).get());
  EXPECT_EQ(Optimize(s2, o).root.get(), NodeOf(s2).get());
  // Sequential and parallel maps, or parallel maps with different determinism.
  Dataset mixed = Dataset::Range(10).Map(AddOne()).Map(Times(2), 2);
  Dataset det = Dataset::Range(10).Map(AddOne(), 2, true).Map(Times(2), 2, false);
  EXPECT_EQ(Optimize(mixed, o).root.get(), NodeOf(mixed).get());
  EXPECT_EQ(Optimize(det, o).root.get(), NodeOf(det).get());
  // A map feeding two consumers would run twice.
  Dataset m = Dataset::Range(10).Map(AddOne());
  Dataset z = Dataset::Zip({m.Map(Times(2)), m.Map(Times(3))});
  EXPECT_EQ(Optimize(z, o).root.get(), NodeOf(z).get());
  // Disabled.
  Dataset ds = Dataset::Range(10).Map(AddOne()).Map(Times(2));
  Options off;
  off.optimization.Set("map_fusion", false);
  EXPECT_EQ(Ops(Optimize(ds, off).root),
            (std::vector<std::string>{"Range", "ParallelMap", "ParallelMap"}));
}

TEST_F(OptimizerTest, MapFusionKeepsEachSeed) {
  const Options o = Only({"map_fusion"});
  auto build = [] { return Dataset::Range(50).Map(Noise("a")).Map(Noise("b")).Map(AddOne()); };
  ExpectEquivalent(build, o);
  ExpectEquivalent([] { return Dataset::Range(50).Map(Noise("a"), 3).Map(Noise("b"), 2); }, o);
  // Skip over a fused skippable function keeps positions.
  ExpectEquivalent([] { return Dataset::Range(50).Map(Noise("a")).Map(Noise("b")).Skip(17); }, o);
}

TEST_F(OptimizerTest, MapFusionIntoMapAndBatch) {
  const Options o = Only({"map_fusion"});
  auto build = [] {
    return Dataset::Range(50)
        .Map(Noise("a"), 3, true)
        .Map(Noise("b"), 2, true)
        .MapAndBatch(Noise("c"), 8, 2, /*drop_remainder=*/true, true);
  };
  Optimized r = Optimize(build(), o);
  EXPECT_EQ(Ops(r.root), (std::vector<std::string>{"Range", "MapAndBatch"}));
  EXPECT_EQ(r.changes("map_fusion"), 2);
  EXPECT_EQ(r.root->functions()[0].name(), "a+b+c");
  EXPECT_EQ(IntAttr(*r.root, "num_parallel_calls", 0), 3);
  EXPECT_EQ(IntAttr(*r.root, "batch_size", 0), 8);
  EXPECT_TRUE(BoolAttr(*r.root, "drop_remainder", false));
  EXPECT_EQ(IntAttr(*r.root, "deterministic", 0), 1);
  EXPECT_EQ(r.root->Cardinality(), 6);
  EXPECT_EQ(r.root->element_spec(), build().element_spec());
  // Each function keeps its seed: the batches are the unfused ones.
  EXPECT_EQ(ExpectEquivalent(build, o), 6u);
  ExpectEquivalent(
      [] { return Dataset::Range(50).Map(Noise("a"), kAutotune).MapAndBatch(AddOne(), 7); }, o);
  // Not fused: a sequential map (it would run in parallel), other determinism, a stateful
  // function, a map with another consumer.
  Dataset seq = Dataset::Range(50).Map(AddOne()).MapAndBatch(Times(2), 8);
  EXPECT_EQ(Optimize(seq, o).root.get(), NodeOf(seq).get());
  Dataset det = Dataset::Range(50).Map(AddOne(), 2, false).MapAndBatch(Times(2), 8, 2, false, true);
  EXPECT_EQ(Optimize(det, o).root.get(), NodeOf(det).get());
  Dataset st = Dataset::Range(50).Map(AddOne(), 2, true).MapAndBatch(Stateful(), 8, 2, false, true);
  EXPECT_EQ(Optimize(st, o).root.get(), NodeOf(st).get());
  Dataset m = Dataset::Range(50).Map(AddOne(), 2, true);
  Dataset z = Dataset::Zip({m.MapAndBatch(Times(2), 2, 2, false, true), m.Batch(2)});
  EXPECT_EQ(Optimize(z, o).root.get(), NodeOf(z).get());
}

TEST_F(OptimizerTest, MapFusionComposesSpecs) {
  // cast to float, then select: the fused spec is the two kernels' composed spec.
  Dataset ds = Dataset::Range(10)
                   .Map(Kernel("cast", {{"dtype", DType::kFloat32}}))
                   .Map(Kernel("identity"));
  Optimized o = Optimize(ds, Only({"map_fusion"}));
  ASSERT_EQ(o.changes("map_fusion"), 1);
  EXPECT_EQ(o.root->element_spec(), ds.element_spec());
  EXPECT_FALSE(o.root->element_spec().unknown);
  // A stage without a spec makes the fused spec unknown, as the unfused one was.
  Dataset u = Dataset::Range(10).Map(AddOne()).Map(Kernel("identity"));
  EXPECT_TRUE(Optimize(u, Only({"map_fusion"})).root->element_spec().unknown);
}

// ---- filter_fusion --------------------------------------------------------------------

TEST_F(OptimizerTest, FilterFusionGraphAndShortCircuit) {
  auto calls = std::make_shared<std::atomic<int64_t>>(0);
  Function counted = Function::Predicate(
      "counted", [calls](const Element& e, FunctionContext&) -> Result<bool> {
        calls->fetch_add(1);
        return V(e) % 3 != 0;
      });
  Dataset ds = Dataset::Range(20).Filter(Even()).Filter(counted).Filter(NotMultipleOf(5));
  Optimized o = Optimize(ds, Only({"filter_fusion"}));
  EXPECT_EQ(Ops(o.root), (std::vector<std::string>{"Range", "Filter"}));
  EXPECT_EQ(o.changes("filter_fusion"), 2);
  auto out = OptimizedElements(ds, Only({"filter_fusion"}));
  EXPECT_EQ(IntsOf(out), (std::vector<int64_t>{2, 4, 8, 14, 16}));
  EXPECT_EQ(calls->load(), 10);  // only the even ones reached the second predicate
  ExpectEquivalent([&] { return ds; }, Only({"filter_fusion"}));
  // Parallel filters.
  Dataset p = Dataset::Range(20).Filter(Even(), 2, true).Filter(NotMultipleOf(3), 3, true);
  Optimized op = Optimize(p, Only({"filter_fusion"}));
  EXPECT_EQ(Ops(op.root), (std::vector<std::string>{"Range", "ParallelFilter"}));
  EXPECT_EQ(IntAttr(*op.root, "num_parallel_calls", 0), 3);
  ExpectEquivalent([&] { return p; }, Only({"filter_fusion"}));
}

TEST_F(OptimizerTest, FilterFusionNegativeCases) {
  const Options o = Only({"filter_fusion"});
  // A random second predicate would see other positions.
  Dataset r = Dataset::Range(20).Filter(Even()).Filter(Coin());
  EXPECT_EQ(Optimize(r, o).root.get(), NodeOf(r).get());
  // A random first predicate is fine.
  Dataset r1 = Dataset::Range(40).Filter(Coin()).Filter(Even());
  EXPECT_EQ(Ops(Optimize(r1, o).root), (std::vector<std::string>{"Range", "Filter"}));
  ExpectEquivalent([] { return Dataset::Range(40).Filter(Coin()).Filter(Even()); }, o);
  Function st = Function::Predicate(
      "st", [](const Element&, FunctionContext&) -> Result<bool> { return true; },
      {.stateful = true});
  Dataset s = Dataset::Range(20).Filter(Even()).Filter(st);
  EXPECT_EQ(Optimize(s, o).root.get(), NodeOf(s).get());
  Dataset mixed = Dataset::Range(20).Filter(Even()).Filter(NotMultipleOf(3), 2);
  EXPECT_EQ(Optimize(mixed, o).root.get(), NodeOf(mixed).get());
}

// ---- map_and_filter_fusion ------------------------------------------------------------

TEST_F(OptimizerTest, MapAndFilterFusionGraph) {
  const Options o = Only({"map_and_filter_fusion"});
  Dataset ds = Dataset::Range(20).Map(AddOne()).Filter(Even());
  Optimized r = Optimize(ds, o);
  EXPECT_EQ(Ops(r.root), (std::vector<std::string>{"Range", "MapAndFilter"}));
  EXPECT_EQ(r.changes("map_and_filter_fusion"), 1);
  EXPECT_EQ(IntsOf(OptimizedElements(ds, o)), (std::vector<int64_t>{2, 4, 6, 8, 10, 12, 14, 16, 18, 20}));
  Dataset p = Dataset::Range(20).Map(AddOne(), 3, false).Filter(Even());
  Optimized rp = Optimize(p, o);
  EXPECT_EQ(Ops(rp.root), (std::vector<std::string>{"Range", "ParallelMapAndFilter"}));
  EXPECT_EQ(IntAttr(*rp.root, "num_parallel_calls", 0), 3);
  EXPECT_EQ(IntAttr(*rp.root, "deterministic", 1), 0);
  // Filter before map is not fused; nor a parallel filter after a sequential map, nor
  // stateful functions, nor a shared map.
  Dataset fm = Dataset::Range(20).Filter(Even()).Map(AddOne());
  EXPECT_EQ(Optimize(fm, o).root.get(), NodeOf(fm).get());
  Dataset mp = Dataset::Range(20).Map(AddOne()).Filter(Even(), 2);
  EXPECT_EQ(Optimize(mp, o).root.get(), NodeOf(mp).get());
  Dataset st = Dataset::Range(20).Map(Stateful()).Filter(Even());
  EXPECT_EQ(Optimize(st, o).root.get(), NodeOf(st).get());
  Dataset m = Dataset::Range(20).Map(AddOne());
  Dataset z = Dataset::Zip({m.Filter(Even()), m});
  EXPECT_EQ(Optimize(z, o).root.get(), NodeOf(z).get());
}

TEST_F(OptimizerTest, MapAndFilterFusionYieldsTheSameElements) {
  const Options o = Only({"map_and_filter_fusion"});
  ExpectEquivalent([] { return Dataset::Range(200).Map(Noise()).Filter(Coin()); }, o);
  ExpectEquivalent([] { return Dataset::Range(200).Map(Noise(), 4).Filter(Coin()); }, o);
  ExpectEquivalent([] { return Dataset::Range(200).Map(Noise(), 4, true).Filter(Coin(), 2); }, o);
  // Sequential: identical also after errors (each function keeps its op's positions).
  Function failing = Function::Map(
      "failing",
      [](Element e, FunctionContext& ctx) -> Result<Element> {
        if (V(e) % 7 == 3) return InvalidArgumentError("bad " + std::to_string(V(e)));
        return Element{Tensor::Scalar<int64_t>(V(e) * 1000 +
                                               static_cast<int64_t>(ctx.rng().UniformInt(1000)))};
      },
      {.is_random = true});
  EXPECT_GT(ExpectEquivalent([&] { return Dataset::Range(100).Map(failing).Filter(Coin()).IgnoreErrors(); },
                             o),
            20u);
}

TEST_F(OptimizerTest, MapAndFilterConformance) {
  auto fused = [](bool parallel) {
    AttrMap attrs{{"map_seed", int64_t{3}}, {"filter_seed", int64_t{4}}};
    if (parallel) {
      attrs["num_parallel_calls"] = int64_t{3};
      attrs["deterministic"] = int64_t{1};
    }
    return Dataset::FromOp(parallel ? "ParallelMapAndFilter" : "MapAndFilter", attrs,
                           {Dataset::Range(30)}, {Noise(), Coin()});
  };
  std::vector<Element> expected = Unoptimized(
      Dataset::FromOp("Filter", {{"seed", int64_t{4}}},
                      {Dataset::FromOp("Map", {{"seed", int64_t{3}}}, {Dataset::Range(30)},
                                       {Noise()})},
                      {Coin()}));
  ASSERT_GT(expected.size(), 5u);
  CheckDataset(fused(false), expected);
  CheckDataset(fused(true), expected);
  Dataset bad = Dataset::FromOp("MapAndFilter", {}, {Dataset::Range(3)}, {Noise()});
  EXPECT_FALSE(bad.ok());
}

// ---- map_parallelization --------------------------------------------------------------

TEST_F(OptimizerTest, MapParallelization) {
  const Options o = Only({"map_parallelization"});
  Dataset ds = Dataset::Range(50).Map(Noise()).Map(Stateful());
  Optimized r = Optimize(ds, o);
  EXPECT_EQ(Ops(r.root), (std::vector<std::string>{"Range", "ParallelMap", "Map"}));
  EXPECT_EQ(r.changes("map_parallelization"), 1);
  const DatasetPtr& pm = r.root->input(0);
  EXPECT_EQ(IntAttr(*pm, "num_parallel_calls", 0), kAutotune);
  EXPECT_EQ(IntAttr(*pm, "deterministic", 0), 1);
  EXPECT_EQ(IntAttr(*pm, "seed", 0), IntAttr(*NodeOf(ds)->input(0), "seed", 1));
  ExpectEquivalent([] { return Dataset::Range(300).Map(Noise()).Map(AddOne()); }, o);
  // Non-determinism allowed by options is not taken: the order is kept.
  Options nd = o;
  nd.deterministic = false;
  ExpectEquivalent([] { return Dataset::Range(300).Map(Noise()); }, nd);
  Options off;
  off.optimization.Set("map_parallelization", false).Set("map_and_batch_fusion", false)
      .Set("inject_prefetch", false);
  EXPECT_EQ(Optimize(Dataset::Range(3).Map(AddOne()), off).root->op(), "Map");
  // Cheap functions (views, metadata) stay sequential; a cheap map composed with an
  // expensive one is not cheap.
  Dataset views = Dataset::Range(5)
                      .Map(Kernel("expand_dims", {{"axis", int64_t{0}}}))
                      .Map(Kernel("reshape", {{"shape", std::vector<int64_t>{1}}}));
  Optimized v = Optimize(views, o);
  EXPECT_EQ(Ops(v.root), (std::vector<std::string>{"Range", "Map", "Map"}));
  EXPECT_EQ(v.changes("map_parallelization"), 0);
  EXPECT_FALSE(
      ComposeFunctions(Kernel("expand_dims", {{"axis", int64_t{0}}}), 0, AddOne(), 0)
          .traits()
          .cheap);
}

// ---- map_and_batch_fusion -------------------------------------------------------------

TEST_F(OptimizerTest, MapAndBatchFusion) {
  const Options o = Only({"map_and_batch_fusion"});
  Dataset ds = Dataset::Range(50).Map(Noise()).Batch(8);
  Optimized r = Optimize(ds, o);
  EXPECT_EQ(Ops(r.root), (std::vector<std::string>{"Range", "MapAndBatch"}));
  EXPECT_EQ(IntAttr(*r.root, "num_parallel_calls", 0), kAutotune);
  EXPECT_EQ(IntAttr(*r.root, "deterministic", 0), 1);
  EXPECT_EQ(IntAttr(*r.root, "batch_size", 0), 8);
  EXPECT_EQ(r.root->Cardinality(), 7);
  ExpectEquivalent([] { return Dataset::Range(50).Map(Noise()).Batch(8); }, o);
  ExpectEquivalent([] { return Dataset::Range(50).Map(Noise()).Batch(8, true); }, o);
  ExpectEquivalent([] { return Dataset::Range(50).Map(Noise(), 3, true).Batch(6); }, o);
  Dataset p = Dataset::Range(50).Map(Noise(), 3, false).Batch(8, true);
  Optimized rp = Optimize(p, o);
  EXPECT_EQ(IntAttr(*rp.root, "num_parallel_calls", 0), 3);
  EXPECT_EQ(IntAttr(*rp.root, "deterministic", 1), 0);
  EXPECT_TRUE(BoolAttr(*rp.root, "drop_remainder", false));
  // Negative: stateful map, shared map, batch after something else.
  Dataset st = Dataset::Range(50).Map(Stateful()).Batch(8);
  EXPECT_EQ(Optimize(st, o).root.get(), NodeOf(st).get());
  Dataset m = Dataset::Range(50).Map(AddOne());
  Dataset z = Dataset::Zip({m.Batch(2), m.Batch(2)});
  EXPECT_EQ(Optimize(z, o).root.get(), NodeOf(z).get());
  Dataset fb = Dataset::Range(50).Filter(Even()).Batch(8);
  EXPECT_EQ(Optimize(fb, o).root.get(), NodeOf(fb).get());
}

// ---- parallel_batch -------------------------------------------------------------------

TEST_F(OptimizerTest, ParallelBatch) {
  const Options o = Only({"parallel_batch"});
  // Rows of unknown size (a lambda declares no spec): the cost model lets it through.
  Dataset ds = Dataset::Range(50).Map(AddOne()).Batch(8, true);
  Optimized r = Optimize(ds, o);
  EXPECT_EQ(Ops(r.root), (std::vector<std::string>{"Range", "Map", "ParallelBatch"}));
  EXPECT_EQ(r.changes("parallel_batch"), 1);
  EXPECT_EQ(IntAttr(*r.root, "num_parallel_calls", 0), kAutotune);
  EXPECT_EQ(IntAttr(*r.root, "deterministic", 0), 1);
  EXPECT_EQ(r.root->element_spec(), ds.element_spec());
  ExpectEquivalent([] { return Dataset::Range(50).Map(AddOne()).Batch(8); }, o);
  ExpectEquivalent(
      [] { return Dataset::Range(50).Map(AddOne()).Batch(7, true).Batch(2, true); }, o);
  Options off = o;
  off.optimization.Set("parallel_batch", false);
  EXPECT_EQ(Optimize(ds, off).root.get(), NodeOf(ds).get());
}

// ---- the cost model (cost_model.h) ---------------------------------------------------

std::string ReportOf(const Optimized& r, std::string_view pass) {
  for (const auto& p : r.report.passes) {
    if (p.name == pass) {
      std::string all;
      for (const std::string& n : p.notes) all += n;
      return all;
    }
  }
  return "";
}

TEST_F(OptimizerTest, CostModelKeepsCheapWorkSequential) {
  // Batch(1) and batches of tiny fully shaped rows stay sequential, and say so.
  const Options pb = Only({"parallel_batch"});
  for (Dataset ds : {Dataset::Range(50).Batch(1), Dataset::Range(50).Batch(256)}) {
    Optimized r = Optimize(ds, pb);
    EXPECT_EQ(r.root.get(), NodeOf(ds).get());
    EXPECT_EQ(r.changes("parallel_batch"), 0);
    EXPECT_NE(ReportOf(r, "parallel_batch").find("kept 1 Batch sequential"),
              std::string::npos);
  }
  // Rows of 8 KiB made by a map: a batch of 64 copies 512 KiB, well above ParallelBatch's
  // overhead. (Straight over the slices the Batch would gather them: see
  // GatherTest.ParallelBatchPassLeavesAGatheringBatchSequential.)
  Dataset big =
      Dataset::FromTensorSlices(Element{Tensor::Zeros(DType::kFloat64, Shape({128, 1024}))})
          .Map(Kernel("identity"))
          .Batch(64);
  ASSERT_EQ(StaticElementBytes(NodeOf(big)->input(0)->element_spec()), 8192);
  EXPECT_EQ(Optimize(big, pb).changes("parallel_batch"), 1);
  // An element-wise kernel with a cost hint on an 8-byte scalar: below a handoff.
  const Options mp = Only({"map_parallelization"});
  Dataset cast = Dataset::Range(50).Map(Kernel("cast", {{"dtype", DType::kFloat64}}));
  Optimized c = Optimize(cast, mp);
  EXPECT_EQ(Ops(c.root), (std::vector<std::string>{"Range", "Map"}));
  EXPECT_NE(ReportOf(c, "map_parallelization").find("kept 1 Map sequential"),
            std::string::npos);
  // A function of unknown cost is still parallelized.
  EXPECT_EQ(Optimize(Dataset::Range(50).Map(AddOne()), mp).changes("map_parallelization"), 1);
  // A graph of cheap ops gets no root prefetch; one with unknown work does.
  const Options ip = Only({"inject_prefetch"});
  Dataset cheap = Dataset::Range(50).Map(Kernel("identity")).Batch(1).Unbatch();
  Optimized ic = Optimize(cheap, ip);
  EXPECT_EQ(ic.root.get(), NodeOf(cheap).get());
  EXPECT_NE(ReportOf(ic, "inject_prefetch").find("kept the root synchronous"),
            std::string::npos);
  EXPECT_EQ(Optimize(cheap.Map(AddOne()), ip).changes("inject_prefetch"), 1);
  // Element plumbing over an async op (its work overlaps the consumer already): none.
  for (Dataset plumbed : {Dataset::Range(50).Map(AddOne(), kAutotune).Unbatch(),
                          Dataset::Range(50).Map(AddOne(), 2).Take(10).Skip(1)}) {
    Optimized pr = Optimize(plumbed, ip);
    EXPECT_EQ(pr.root.get(), NodeOf(plumbed).get());
    EXPECT_NE(ReportOf(pr, "inject_prefetch")
                  .find("only element plumbing above the "
                        "asynchronous ParallelMap"),
              std::string::npos)
        << ReportOf(pr, "inject_prefetch");
  }
  // Plumbing over sequential work of unknown cost still gets one.
  EXPECT_EQ(
      Optimize(Dataset::Range(50).Map(AddOne()).Unbatch(), ip).changes("inject_prefetch"),
      1);
  // In-memory slices of small rows under a shuffle and a batch: no prefetch; rows whose
  // copy alone exceeds a handoff (256 KiB) get one.
  Dataset small =
      Dataset::FromTensorSlices(Element{Tensor::Zeros(DType::kFloat32, Shape({512, 16}))})
          .Shuffle(100, 1)
          .Batch(256);
  EXPECT_EQ(Optimize(small, ip).changes("inject_prefetch"), 0);
  Dataset wide =
      Dataset::FromTensorSlices(Element{Tensor::Zeros(DType::kFloat64, Shape({4, 32768}))})
          .Batch(2);
  EXPECT_EQ(Optimize(wide, ip).changes("inject_prefetch"), 1);
  // The decisions show in the report lines.
  bool shown = false;
  for (const std::string& line : ic.report.Lines()) {
    shown |= line.find("inject_prefetch: 0 changes") == 0 &&
             line.find("kept the root synchronous") != std::string::npos;
  }
  EXPECT_TRUE(shown);
  // The elements are unchanged either way.
  ExpectEquivalent([] { return Dataset::Range(50).Batch(1).Unbatch(); },
                   Only({"parallel_batch", "inject_prefetch"}));
}

TEST_F(OptimizerTest, CostModelToggleOffMakesEveryRewrite) {
  // optimization.Set("cost_model", false): the gated rewrites are made unconditionally.
  Options o = Only({"map_parallelization", "parallel_batch", "inject_prefetch"});
  o.optimization.Set("cost_model", false);
  Dataset ds = Dataset::Range(50).Map(Kernel("cast", {{"dtype", DType::kFloat64}})).Batch(4);
  Optimized r = Optimize(ds, o);
  EXPECT_EQ(Ops(r.root),
            (std::vector<std::string>{"Range", "ParallelMap", "ParallelBatch"}));
  Dataset cheap = Dataset::Range(50).Map(Kernel("identity")).Batch(1).Unbatch();
  EXPECT_EQ(Ops(Optimize(cheap, o).root),
            (std::vector<std::string>{"Range", "ParallelMap", "ParallelBatch", "Unbatch",
                                      "Prefetch"}));
  // Scoped to the run: the next run with the model on keeps the cheap work sequential.
  EXPECT_EQ(Optimize(ds, Only({"map_parallelization"})).changes("map_parallelization"), 0);
  ExpectEquivalent([&] { return ds; }, o);
}

// ---- inject_prefetch ------------------------------------------------------------------

TEST_F(OptimizerTest, InjectPrefetch) {
  const Options o = Only({"inject_prefetch"});
  Dataset ds = Dataset::Range(10).Map(AddOne());
  Optimized r = Optimize(ds, o);
  EXPECT_EQ(Ops(r.root), (std::vector<std::string>{"Range", "Map", "Prefetch"}));
  EXPECT_EQ(IntAttr(*r.root, "buffer_size", 0), kAutotune);
  EXPECT_EQ(r.changes("inject_prefetch"), 1);
  ExpectEquivalent([&] { return ds; }, o);
  for (Dataset async : {ds.Prefetch(2), Dataset::Range(10).Map(AddOne(), 2),
                        Dataset::Range(10).Batch(2, false, 2)}) {
    Optimized a = Optimize(async, o);
    EXPECT_EQ(a.root.get(), NodeOf(async).get()) << NodeOf(async)->op();
    EXPECT_EQ(a.changes("inject_prefetch"), 0);
  }
}

// ---- decode_and_crop_fusion -----------------------------------------------------------

// Encoded images: generated ImageNet-like JPEGs plus a grayscale JPEG, a 4:4:4 one and a
// PNG.
std::vector<std::string> TestImages(bool with_png) {
  static const std::vector<std::string>* const kJpegs = [] {
    auto* out = new std::vector<std::string>();
    testing::TempDir dir;
    ImagenetLikeOptions opts;
    opts.num_images = 5;
    opts.num_classes = 2;
    opts.seed = 11;
    opts.threads = 1;
    Status s = GenerateImagenetLike(dir.path(), opts);
    EXPECT_TRUE(s.ok()) << s.ToString();
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir.path() + "/train")) {
      if (e.is_regular_file()) out->push_back(testing::ReadFile(e.path().string()));
    }
    std::sort(out->begin(), out->end());
    // Synthetic ones: a gradient, gray 4:2:0 and color 4:4:4.
    for (int ch : {1, 3}) {
      Tensor px(DType::kUInt8, Shape{97, 131, ch});
      uint8_t* p = px.mutable_data<uint8_t>();
      for (int64_t i = 0; i < px.num_elements(); ++i) p[i] = static_cast<uint8_t>((i * 7) ^ (i >> 5));
      auto jpeg = EncodeJpeg(px, 88, ch == 1 ? "420" : "444");
      EXPECT_TRUE(jpeg.ok()) << jpeg.status().ToString();
      if (jpeg.ok()) out->push_back(*jpeg);
    }
    return out;
  }();
  std::vector<std::string> out = *kJpegs;
  if (with_png) {
    Tensor px(DType::kUInt8, Shape{60, 80, 3});
    uint8_t* p = px.mutable_data<uint8_t>();
    for (int64_t i = 0; i < px.num_elements(); ++i) p[i] = static_cast<uint8_t>(i * 13);
    auto png = EncodePng(px);
    EXPECT_TRUE(png.ok());
    if (png.ok()) out.push_back(*png);
  }
  return out;
}

Dataset Images(bool with_png) {
  return Dataset::FromTensorSlices(Element{Tensor::FromStrings(TestImages(with_png))});
}

TEST_F(OptimizerTest, DecodeAndCropFusionGraph) {
  const Options o = Only({"decode_and_crop_fusion"});
  Dataset ds = Images(false)
                   .Map(Kernel("decode_jpeg", {{"channels", int64_t{3}}}))
                   .Map(Kernel("random_resized_crop", {{"size", int64_t{64}}}));
  Optimized r = Optimize(ds, o);
  EXPECT_EQ(Ops(r.root), (std::vector<std::string>{"FromTensorSlices", "Map"}));
  EXPECT_EQ(r.changes("decode_and_crop_fusion"), 1);
  const Function& f = r.root->functions()[0];
  EXPECT_EQ(f.name(), "decode_and_random_crop");
  EXPECT_TRUE(f.serializable());
  EXPECT_EQ(std::get<bool>(f.attrs().at("dct_scaling")), false);
  EXPECT_EQ(IntAttr(*r.root, "seed", 0), IntAttr(*NodeOf(ds), "seed", 1));
  EXPECT_EQ(r.root->element_spec(), ds.element_spec());
  // Negative cases: decode_png, different components, a scale the fused kernel rejects,
  // a sequential and a parallel map, the crop before the decode.
  for (Dataset neg :
       {Images(false).Map(Kernel("decode_png")).Map(Kernel("random_resized_crop", {{"size", int64_t{8}}})),
        Dataset::FromTensorSlices(Element{Tensor::FromStrings(TestImages(false)),
                                          Tensor::FromStrings(TestImages(false))})
            .Map(Kernel("decode_jpeg", {{"component", int64_t{1}}}))
            .Map(Kernel("decode_jpeg", {{"component", int64_t{0}}}))
            .Map(Kernel("random_resized_crop", {{"size", int64_t{8}}, {"component", int64_t{1}}})),
        Images(false).Map(Kernel("decode_jpeg")).Map(Kernel(
            "random_resized_crop", {{"size", int64_t{8}}, {"scale", std::vector<double>{0.0, 1.0}}})),
        Images(false).Map(Kernel("decode_jpeg")).Map(Kernel("random_resized_crop", {{"size", int64_t{8}}}), 2),
        Images(false).Map(Kernel("decode_jpeg")).Map(Kernel("resize", {{"size", int64_t{8}}}))}) {
    ASSERT_TRUE(neg.ok()) << neg.status().ToString();
    EXPECT_EQ(Optimize(neg, o).root.get(), NodeOf(neg).get());
  }
}

TEST_F(OptimizerTest, DecodeAndCropFusionIsPixelExact) {
  const Options o = Only({"decode_and_crop_fusion"});
  struct Case {
    std::string decode;
    AttrMap decode_attrs;
    AttrMap crop_attrs;
    bool parallel;
  };
  const std::vector<Case> cases = {
      {"decode_jpeg", {}, {{"size", int64_t{64}}}, false},
      {"decode_jpeg", {{"channels", int64_t{1}}}, {{"size", std::vector<int64_t>{48, 80}}}, false},
      {"decode_jpeg",
       {{"dct_method", std::string("INTEGER_FAST")}},
       {{"size", int64_t{160}}, {"antialias", false}, {"scale", std::vector<double>{0.3, 1.0}}},
       true},
      {"decode_image", {}, {{"size", int64_t{32}}, {"ratio", std::vector<int64_t>{1, 2}}}, false},
  };
  for (const Case& c : cases) {
    const bool png = c.decode == "decode_image";
    size_t n = ExpectEquivalent(
        [&] {
          Dataset in = Images(png).Repeat(3);  // each image at several positions
          Function d = Kernel(c.decode, c.decode_attrs);
          Function k = Kernel("random_resized_crop", c.crop_attrs);
          return c.parallel ? in.Map(d, 2, true).Map(k, 3, true) : in.Map(d).Map(k);
        },
        o);
    EXPECT_EQ(n, 3 * TestImages(png).size()) << c.decode;
    SetGlobalSeed(1234);
    Dataset ds = Images(png).Map(Kernel(c.decode, c.decode_attrs)).Map(
        Kernel("random_resized_crop", c.crop_attrs));
    EXPECT_EQ(Optimize(ds, o).changes("decode_and_crop_fusion"), 1) << c.decode;
  }
}

// ---- Whole pipelines under the default rewrites ---------------------------------------

TEST_F(OptimizerTest, DefaultRewritesKeepElements) {
  const Options defaults;
  EXPECT_GT(ExpectEquivalent(
                [] {
                  return Dataset::Range(100)
                      .Take(-1)
                      .Shuffle(16)
                      .Repeat(3)
                      .Map(Noise("a"))
                      .Map(Noise("b"))
                      .Filter(Coin())
                      .Filter(Even())
                      .Map(AddOne())
                      .Batch(5);
                },
                defaults),
            10u);  // 300 elements, about a quarter pass both filters: 15 batches of 5
  EXPECT_EQ(ExpectEquivalent(
                [] { return Dataset::Range(64).Map(Noise()).Batch(4).Unbatch().Batch(3); },
                defaults),
            22u);
}

TEST_F(OptimizerTest, CheckpointsOfOptimizedPipelines) {
  auto build = [] {
    return Dataset::Range(40)
        .Shuffle(8, 5)
        .Repeat(2)
        .Map(Noise("a"))
        .Map(Noise("b"))
        .Filter(NotMultipleOf(3))
        .Batch(4);
  };
  SetGlobalSeed(77);
  Dataset ds = build();
  auto full = ds.MakeIterator();
  ASSERT_TRUE(full.ok());
  std::vector<std::string> ops = Ops(IteratorGraph(**full));
  EXPECT_EQ(ops, (std::vector<std::string>{"Range", "ShuffleAndRepeat", "ParallelMapAndFilter",
                                           "ParallelBatch"}));
  std::vector<Element> expected = Drain(full->get());
  ASSERT_GT(expected.size(), 10u);
  // The same elements as unoptimized (instance 0 of an identically built dataset).
  SetGlobalSeed(77);
  ExpectSameElements(Unoptimized(build()), expected);
  for (size_t k : {size_t{0}, size_t{1}, size_t{7}, expected.size()}) {
    auto it = ds.MakeIterator();
    ASSERT_TRUE(it.ok());
    // A second iterator is another instance (other shuffles): restore overrides it.
    std::vector<Element> head = Drain(it->get(), static_cast<int64_t>(k));
    auto saved = (*it)->Save();
    ASSERT_TRUE(saved.ok()) << saved.status().ToString();
    std::vector<Element> rest_orig = Drain(it->get());
    auto fresh = ds.MakeIterator();
    ASSERT_TRUE(fresh.ok());
    Status s = (*fresh)->Restore(*saved);
    ASSERT_TRUE(s.ok()) << s.ToString();
    ExpectSameElements(Drain(fresh->get()), rest_orig);
  }
}

}  // namespace
}  // namespace sluice
