// Options (include/sluice/options.h): merging, propagation through transformations, and
// what MakeIterator() makes of them (budgets, autotuning, pool size).
#include <gtest/gtest.h>

#include "sluice/dataset.h"

namespace sluice {
namespace {

Function Identity() {
  return Function::Map("identity", [](Element e, FunctionContext&) -> Result<Element> {
    return e;
  });
}

TEST(Options, MergeOverridesOnlySetFields) {
  Options a;
  a.deterministic = false;
  a.autotune.cpu_budget = 4;
  a.optimization.Set("map_fusion", false);
  Options b;
  b.autotune.cpu_budget = 2;
  b.autotune.ram_budget = 1 << 20;
  b.optimization.Set("inject_prefetch", true);
  const Options m = a.Merge(b);
  EXPECT_EQ(m.deterministic, false);             // kept from a
  EXPECT_EQ(m.autotune.cpu_budget, 2);            // b wins
  EXPECT_EQ(m.autotune.ram_budget, 1 << 20);      // from b
  EXPECT_FALSE(m.autotune.enabled.has_value());   // set in neither
  EXPECT_FALSE(m.optimization.Enabled("map_fusion", true));
  EXPECT_TRUE(m.optimization.Enabled("inject_prefetch", false));
  EXPECT_TRUE(m.optimization.Enabled("other", true));
}

TEST(Options, WithOptionsMergesAndTransformationsCarryThem) {
  Options a;
  a.autotune.cpu_budget = 3;
  a.deterministic = false;
  Options b;
  b.autotune.ram_budget = 64 << 20;
  Dataset ds = Dataset::Range(10).WithOptions(a).Map(Identity()).Batch(2).WithOptions(b);
  EXPECT_EQ(ds.options().autotune.cpu_budget, 3);
  EXPECT_EQ(ds.options().autotune.ram_budget, 64 << 20);
  EXPECT_EQ(ds.options().deterministic, false);
  // Zip and concatenate merge their inputs' options left to right.
  Options c;
  c.autotune.cpu_budget = 5;
  Dataset z = Dataset::Zip({ds, Dataset::Range(3).WithOptions(c)});
  EXPECT_EQ(z.options().autotune.cpu_budget, 5);
  EXPECT_EQ(z.options().autotune.ram_budget, 64 << 20);
}

TEST(Options, MakeIteratorAppliesTheBudgets) {
  Options o;
  o.autotune.cpu_budget = 3;
  o.autotune.ram_budget = 32 << 20;
  auto it = Dataset::Range(10).Map(Identity(), kAutotune).WithOptions(o).MakeIterator();
  ASSERT_TRUE(it.ok()) << it.status();
  const PipelineStats s = (*it)->Snapshot();
  EXPECT_EQ(s.cpu_budget, 3);
  EXPECT_EQ(s.ram_budget, 32 << 20);
}

TEST(Options, PrivateThreadpoolSizeBoundsTheBudget) {
  Options o;
  o.autotune.cpu_budget = 6;
  o.threading.private_threadpool_size = 2;
  EXPECT_EQ(RuntimeOptions::FromOptions(o).cpu_budget, 2);
  Options p;
  p.threading.private_threadpool_size = 3;
  EXPECT_EQ(RuntimeOptions::FromOptions(p).cpu_budget, 3);
  auto it = Dataset::Range(4).WithOptions(o).MakeIterator();
  ASSERT_TRUE(it.ok());
  EXPECT_EQ((*it)->Snapshot().cpu_budget, 2);
}

TEST(Options, AutotuneSwitchAndInitialParallelism) {
  Options on;
  on.autotune.cpu_budget = 4;
  on.autotune.initial_parallelism = 2;
  on.optimization.apply_default_optimizations = false;  // keep the graph as built
  Dataset ds = Dataset::Range(100).Map(Identity(), kAutotune);
  auto a = ds.WithOptions(on).MakeIterator();
  ASSERT_TRUE(a.ok());
  const auto ps = (*a)->TunedParameters();
  ASSERT_EQ(ps.size(), 1u);
  EXPECT_EQ(ps[0].name, "parallelism");
  EXPECT_EQ(ps[0].value, 2);
  EXPECT_EQ(ps[0].max, 4);

  Options off = on;
  off.autotune.enabled = false;
  off.autotune.initial_parallelism.reset();
  auto b = ds.WithOptions(off).MakeIterator();
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE((*b)->TunedParameters().empty());
  ASSERT_TRUE((*b)->GetNext().ok());
  EXPECT_EQ((*b)->Snapshot().nodes[0].parallelism, 4);  // AUTOTUNE = the CPU budget

  const RuntimeOptions r = RuntimeOptions::FromOptions(off);
  EXPECT_FALSE(r.autotune);
  EXPECT_EQ(r.initial_parallelism, 0);
  EXPECT_TRUE(RuntimeOptions::FromOptions(Options{}).autotune);
}

}  // namespace
}  // namespace sluice
