// The doctor's analysis: visit ratios, rates, materialized sizes, randomness, sequential
// nodes.
#include <gtest/gtest.h>

#include <filesystem>

#include "plumber/plumber_internal.h"
#include "sluice/plumber.h"
#include "testing/plumber_fixtures.h"

namespace sluice::plumber {
namespace {

using testing::BurnFunction;

TraceOptions Quick(double seconds = 0.3) {
  TraceOptions o;
  o.seconds = seconds;
  o.warmup_seconds = 0.05;
  o.measure_bandwidth = false;
  return o;
}

TEST(AnalysisTest, VisitRatiosAndRates) {
  Dataset ds = Dataset::Range(1 << 30).Map(BurnFunction("burn", 50000)).Batch(4);
  auto t = TracePipeline(ds, Quick());
  ASSERT_TRUE(t.ok());
  auto a = Analyze(*t);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->root, 2);
  EXPECT_NEAR(a->nodes[2].visit_ratio, 1.0, 1e-9);
  EXPECT_NEAR(a->nodes[1].visit_ratio, 4.0, 0.3);
  EXPECT_NEAR(a->nodes[0].visit_ratio, 4.0, 0.3);
  // 4 maps of 50 us per batch: about 200 us of CPU per root element, 5000 batches/s/core.
  EXPECT_NEAR(a->nodes[1].cpu_ns_per_root, 200000, 40000);
  EXPECT_NEAR(a->nodes[1].rate_per_core, 5000, 1000);
  EXPECT_GT(a->root_elements_per_second, 0);
  EXPECT_FALSE(a->nodes[1].sequential);
  EXPECT_TRUE(a->nodes[0].sequential);
  EXPECT_EQ(a->nodes[1].cardinality, 1 << 30);
}

TEST(AnalysisTest, PythonLikeFunctionIsSequential) {
  Dataset ds = Dataset::Range(1 << 30).Map(BurnFunction("py", 10000, /*stateful=*/true));
  auto t = TracePipeline(ds, Quick(0.1));
  ASSERT_TRUE(t.ok());
  auto a = Analyze(*t);
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->nodes[1].sequential);
  EXPECT_TRUE(a->nodes[1].gil);
}

// Sizes of every node from the source files' sizes, after reading 10% of the files.
TEST(AnalysisTest, MaterializedSizeWithin5PercentAfter10PercentOfFiles) {
  std::string dir = std::filesystem::temp_directory_path() /
                    ("plumber_sizes_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::vector<int> counts;
  int first_two = 0;
  for (int f = 0; f < 20; ++f) {
    counts.push_back(40 + (f * 37) % 90);  // 40..129 records: files of different sizes
    if (f < 2) first_two += counts.back();
  }
  auto files = testing::WriteRecordFiles(dir, counts, 700);
  ASSERT_EQ(files.size(), 20u);
  Dataset ds = Dataset::TFRecord(files).Map(BurnFunction("m", 1000)).Batch(3);

  // The truth: one full pass.
  TraceOptions full = Quick(30);
  full.warmup_seconds = 0;
  auto whole = TracePipeline(ds, full);
  ASSERT_TRUE(whole.ok());
  auto truth = Analyze(*whole);
  ASSERT_TRUE(truth.ok());
  EXPECT_NEAR(truth->seen_fraction, 1.0, 1e-9);

  // 10% of the files (the first 2 of 20).
  TraceOptions part = full;
  part.max_elements = first_two / 3;
  auto partial = TracePipeline(ds, part);
  ASSERT_TRUE(partial.ok());
  auto est = Analyze(*partial);
  ASSERT_TRUE(est.ok());
  EXPECT_LT(est->seen_fraction, 0.2);
  for (int id : {0, 1, 2}) {
    const double want = truth->nodes[id].materialized_bytes;
    const double got = est->nodes[id].materialized_bytes;
    ASSERT_GT(want, 0) << id;
    EXPECT_NEAR(got / want, 1.0, 0.05) << "node " << id << " " << est->nodes[id].name
                                       << ": estimated " << got << " true " << want;
  }
  std::filesystem::remove_all(dir);
}

TEST(AnalysisTest, RandomnessPropagatesUpward) {
  FunctionTraits random_traits;
  random_traits.is_random = true;
  Function noisy = Function::Map(
      "noisy", [](Element e, FunctionContext&) -> Result<Element> { return e; }, random_traits);
  Dataset ds = Dataset::Range(1000)
                   .Map(BurnFunction("a", 1000))   // 1
                   .Shuffle(10, 7)                 // 2: random
                   .Map(BurnFunction("b", 1000))   // 3
                   .Map(noisy)                     // 4: random function
                   .Batch(5)                       // 5
                   .Repeat();                      // 6
  auto t = TracePipeline(ds, Quick(0.2));
  ASSERT_TRUE(t.ok());
  auto a = Analyze(*t);
  ASSERT_TRUE(a.ok());
  EXPECT_FALSE(a->nodes[0].random_at_or_below);
  EXPECT_FALSE(a->nodes[1].random_at_or_below);
  EXPECT_TRUE(a->nodes[1].cacheable);
  for (int id = 2; id <= 6; ++id) {
    EXPECT_TRUE(a->nodes[id].random_at_or_below) << id;
    EXPECT_FALSE(a->nodes[id].cacheable) << id;
  }
  EXPECT_EQ(a->nodes[6].cardinality, kInfiniteCardinality);
  EXPECT_LT(a->nodes[6].materialized_bytes, 0);
}

// A cache under a Repeat is rebuilt every epoch (here every 16 elements, thousands of
// times a second): the stats plane keeps each node's totals across its iterators, so the
// trace sees every element the cache served (visit ratio 1, not the last iterator's
// share) and its CPU per element is that of one read from memory.
TEST(AnalysisTest, CacheRebuiltByRepeatHasVisitRatioOne) {
  Dataset ds = Dataset::Range(16).Map(BurnFunction("burn", 20000)).Cache().Repeat(-1);
  auto t = TracePipeline(ds, Quick(0.3));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  auto a = Analyze(*t);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_EQ(a->root, 3);
  ASSERT_EQ(t->nodes[2].op, "Cache");
  EXPECT_NEAR(a->nodes[3].visit_ratio, 1.0, 1e-9);
  EXPECT_NEAR(a->nodes[2].visit_ratio, 1.0, 1e-6);
  EXPECT_GT(t->nodes[3].elements, 10 * 16);  // many epochs in the window
  // The filled cache does not call the map again.
  EXPECT_LT(a->nodes[1].visit_ratio, 0.01);
  // A memory cache read: well under the map's 20 us.
  EXPECT_LT(a->nodes[2].cpu_ns_per_root, 2000);
}

// The stats plane's estimate of a timed call carries one clock read. Where a synchronous
// node's timed input calls are subtracted one per element (a map) it cancels; a source,
// a node whose input was not called (a full cache) and an async node keep it, and the
// analysis takes it off: source 1000 elements x (300 ns + 400 ns read) -> 300 ns each.
TEST(AnalysisTest, ClockReadIsTakenOffWhereNoInputCallCancelsIt) {
  Trace t;
  t.duration_ns = 1000000000;
  t.machine.cores = 2;
  t.machine.timer_ns = 400;
  auto node = [](int64_t id, std::string op, std::vector<int64_t> in, int64_t elements,
                 int64_t cpu_ns) {
    TraceNode n;
    n.id = id;
    n.op = n.name = op;
    n.inputs = std::move(in);
    n.elements = n.total_elements = elements;
    n.cpu_ns = cpu_ns;
    n.cardinality = kInfiniteCardinality;
    return n;
  };
  t.nodes.push_back(node(0, "Range", {}, 1000, 700000));       // 300 + 400 ns
  t.nodes.push_back(node(1, "Map", {0}, 1000, 2000000));       // cancelled: as measured
  t.nodes.push_back(node(2, "Batch", {1}, 10, 50000));         // 100 calls below: as is
  t.nodes.push_back(node(3, "Prefetch", {2}, 10, 6000));       // async: 600 - 400 ns
  t.nodes[3].async = true;
  t.process_cpu_ns = 10000000;
  auto a = Analyze(t);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  const double roots = 10;
  EXPECT_NEAR(a->nodes[0].cpu_ns_per_root, 300000 / roots, 1);
  EXPECT_NEAR(a->nodes[1].cpu_ns_per_root, 2000000 / roots, 1);
  EXPECT_NEAR(a->nodes[2].cpu_ns_per_root, 50000 / roots, 1);
  EXPECT_NEAR(a->nodes[3].cpu_ns_per_root, 2000 / roots, 1);
  // What was taken off is CPU outside the operators: the framework's.
  EXPECT_NEAR(a->framework_ns_per_root, (10000000 - 2352000) / roots, 1);
}

// The tracer times each root GetNext with one more clock read than an untraced consumer
// makes; that read (machine.clock_ns) is the tracer's, not the pipeline's framework cost.
TEST(AnalysisTest, TracersClockReadIsNotFrameworkCost) {
  Trace t;
  t.duration_ns = 1000000000;
  t.machine.cores = 2;
  TraceNode n;
  n.id = 0;
  n.op = n.name = "Range";
  n.elements = n.total_elements = 1000;
  n.cpu_ns = 20000;
  n.cardinality = kInfiniteCardinality;
  t.nodes.push_back(n);
  t.process_cpu_ns = 100000;  // 100 ns per element, 20 of them the Range's
  auto before = Analyze(t);
  ASSERT_TRUE(before.ok());
  EXPECT_NEAR(before->framework_ns_per_root, 80, 1e-9);
  t.machine.clock_ns = 25;
  auto after = Analyze(t);
  ASSERT_TRUE(after.ok());
  EXPECT_NEAR(after->framework_ns_per_root, 55, 1e-9);
  // Never below zero.
  t.machine.clock_ns = 500;
  auto floor = Analyze(t);
  ASSERT_TRUE(floor.ok());
  EXPECT_EQ(floor->framework_ns_per_root, 0);
  // Where the operators' sampled CPU adds up to all the process's, they are scaled down
  // to the pipeline's share: the read is taken off them, not left in.
  t.machine.clock_ns = 25;
  t.nodes[0].cpu_ns = 100000;
  auto scaled = Analyze(t);
  ASSERT_TRUE(scaled.ok());
  EXPECT_NEAR(scaled->nodes[0].cpu_ns_per_root, 75, 1e-9);
  EXPECT_NEAR(scaled->framework_ns_per_root, 0, 1e-9);
}

// The CPU share is that of the threads that did the work: a bottleneck thread that ran
// 0.9 of the time it was runnable, beside five workers woken per element (each wake-up
// waits in the run queue: run 1/5 of their runnable time), reads 0.9, not 0.65.
TEST(AnalysisTest, AvailabilityIsTheBusyThreadsShare) {
  SchedTimes before, after;
  before[1] = {0, 0};
  after[1] = {900, 100};
  for (int64_t tid = 2; tid <= 6; ++tid) {
    before[tid] = {1000, 1000};
    after[tid] = {1100, 1400};
  }
  EXPECT_NEAR(Availability(before, after), 0.9, 1e-9);
  // Threads that ran alike all count.
  after[1] = {100, 100};
  EXPECT_NEAR(Availability(before, after), (100 * 0.5 + 5 * 100 * 0.2) / 600, 1e-9);
}

TEST(AnalysisTest, EmptyWindowIsAnError) {
  Trace t;
  t.nodes.resize(1);
  auto a = Analyze(t);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().ToString().find("no elements"), std::string::npos);
}

}  // namespace
}  // namespace sluice::plumber
