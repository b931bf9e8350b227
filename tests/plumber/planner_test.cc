// The planner: the LP's optimum on hand-made traces, sequential and GIL groups, the disk
// bound, cache placement (never at or above randomness; the MILP over branches).
#include <gtest/gtest.h>

#include "sluice/plumber.h"
#include "testing/plumber_fixtures.h"

namespace sluice::plumber {
namespace {

using testing::BurnFunction;

TraceNode Node(int64_t id, std::string op, std::vector<int64_t> inputs, double cpu_ms,
               bool parallelizable) {
  TraceNode n;
  n.id = id;
  n.op = op;
  n.name = op;
  n.inputs = std::move(inputs);
  n.parallelizable = parallelizable;
  n.elements = 1000;
  n.total_elements = 1000;
  n.cpu_ns = static_cast<int64_t>(cpu_ms * 1e6 * 1000);  // per element x 1000 elements
  n.cardinality = kInfiniteCardinality;
  return n;
}

// Range (0.1 ms/elem, sequential) -> ParallelMap (1 ms/elem) -> Prefetch, 4 cores.
Trace ChainTrace() {
  Trace t;
  t.duration_ns = 1000000000;
  t.machine.cores = 4;
  t.nodes.push_back(Node(0, "Range", {}, 0.1, false));
  t.nodes.push_back(Node(1, "ParallelMap", {0}, 1.0, true));
  t.nodes.push_back(Node(2, "Prefetch", {1}, 0, false));
  t.nodes[2].async = true;
  t.process_cpu_ns = t.nodes[0].cpu_ns + t.nodes[1].cpu_ns;  // no framework cost
  return t;
}

TEST(PlannerTest, LpSplitsCoresByCost) {
  auto a = Analyze(ChainTrace());
  ASSERT_TRUE(a.ok());
  auto p = MakePlan(*a);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  // X (0.1 + 1) ms <= 4 cores: X = 3636.36/s; the map gets 3.64 cores -> 4 calls.
  EXPECT_NEAR(p->predicted_rate, 4000 / 1.1, 1);
  EXPECT_NEAR(p->nodes[1].theta, 4000 / 1.1 / 1000, 0.01);
  EXPECT_EQ(p->nodes[1].parallelism, 4);
  EXPECT_EQ(p->nodes[0].parallelism, 0);
  ASSERT_FALSE(p->bottlenecks.empty());
  EXPECT_EQ(p->bottlenecks[0].kind, "cpu");
  EXPECT_EQ(p->bottlenecks[0].node, 1);
  // Two more cores: 6 / 1.1 ms.
  ASSERT_FALSE(p->what_ifs.empty());
  EXPECT_EQ(p->what_ifs[0].question, "two more cores");
  EXPECT_NEAR(p->what_ifs[0].rate, 6000 / 1.1, 1);
  EXPECT_EQ(p->what_ifs[0].bound, "CPU (6 cores)");
}

// What-ifs that agree say why: a sequential op holds them all at its one thread.
TEST(PlannerTest, WhatIfsNameTheBoundTheyHit) {
  Trace t = ChainTrace();
  t.nodes[0].op = "Shuffle";  // sequential, 0.5 ms per element: caps X at 2000/s
  t.nodes[0].name = "Shuffle";
  t.nodes[0].cpu_ns = 500000000;
  t.process_cpu_ns = t.nodes[0].cpu_ns + t.nodes[1].cpu_ns;
  t.machine.cores = 8;
  auto a = Analyze(t);
  ASSERT_TRUE(a.ok());
  auto p = MakePlan(*a);
  ASSERT_TRUE(p.ok());
  EXPECT_NEAR(p->predicted_rate, 2000, 1);
  ASSERT_FALSE(p->what_ifs.empty());
  for (const auto& w : p->what_ifs) {
    EXPECT_NEAR(w.rate, 2000, 1) << w.question;
    EXPECT_EQ(w.bound, "one thread: Shuffle (sequential)") << w.question;
  }
  EXPECT_NE(ReportText(*a, *p).find("(bound: one thread: Shuffle (sequential))"),
            std::string::npos);
}

// On a busy machine each runnable thread gets a share of a core (the measured
// availability): a sequential op is capped at that share, and a parallel op needs more
// threads than cores-worth of work to get its share of the cores.
TEST(PlannerTest, CpuShareIsPerThread) {
  Trace t = ChainTrace();
  t.machine.cpu_availability = 0.25;  // 4 cores x 0.25: the pipeline gets 1 core
  auto a = Analyze(t);
  ASSERT_TRUE(a.ok());
  auto p = MakePlan(*a);
  ASSERT_TRUE(p.ok());
  EXPECT_NEAR(p->predicted_rate, 1000 / 1.1, 1);
  // 0.91 cores of map work at 0.25 of a core per thread: 4 threads (1 before).
  EXPECT_EQ(p->nodes[1].parallelism, 4);
  // The same map made sequential (a Python function) gets one thread's share.
  t.nodes[1].op = "Map";
  t.nodes[1].parallelizable = false;
  t.nodes[1].stateful_function = true;
  auto a2 = Analyze(t);
  ASSERT_TRUE(a2.ok());
  auto p2 = MakePlan(*a2);
  ASSERT_TRUE(p2.ok());
  EXPECT_NEAR(p2->predicted_rate, 250 / 1.1, 1);
  EXPECT_EQ(p2->bottlenecks[0].kind, "gil");
}

TEST(PlannerTest, FrameworkCostTakesCores) {
  Trace t = ChainTrace();
  t.process_cpu_ns += 400000000;  // 0.4 ms per element outside the operators
  auto a = Analyze(t);
  ASSERT_TRUE(a.ok());
  EXPECT_NEAR(a->framework_ns_per_root, 400000, 1);
  auto p = MakePlan(*a);
  ASSERT_TRUE(p.ok());
  EXPECT_NEAR(p->predicted_rate, 4000 / 1.5, 1);
}

TEST(PlannerTest, GilBoundFunctionGetsOneCore) {
  Trace t = ChainTrace();
  t.nodes[1].op = "Map";
  t.nodes[1].name = "Map(py)";
  t.nodes[1].parallelizable = false;
  t.nodes[1].stateful_function = true;
  auto a = Analyze(t);
  ASSERT_TRUE(a.ok());
  auto p = MakePlan(*a);
  ASSERT_TRUE(p.ok());
  // The map and the range share one thread: X (1 + 0.1) ms <= 1 core.
  EXPECT_NEAR(p->predicted_rate, 1000 / 1.1, 1);
  EXPECT_EQ(p->bottlenecks[0].kind, "gil");
  EXPECT_EQ(p->bottlenecks[0].node, 1);
  EXPECT_NE(p->bottlenecks[0].text.find("GIL"), std::string::npos);
  ASSERT_FALSE(p->what_ifs.empty());
  EXPECT_EQ(p->what_ifs[0].bound.rfind("the GIL: Map(py)", 0), 0u) << p->what_ifs[0].bound;
}

TEST(PlannerTest, DiskBound) {
  Trace t = ChainTrace();
  t.nodes[0].file_bytes_read = 1000 * 1000000;  // 1 MB per element
  t.window_file_bytes = t.nodes[0].file_bytes_read;
  t.machine.sequential_read_bps = 100e6;
  t.machine.parallel_read_bps = 200e6;
  auto a = Analyze(t);
  ASSERT_TRUE(a.ok());
  auto p = MakePlan(*a);
  ASSERT_TRUE(p.ok());
  EXPECT_NEAR(p->predicted_rate, 100, 0.01);  // a sequential reader: 100 MB/s
  EXPECT_NEAR(p->cpu_bound, 4000 / 1.1, 1);
  EXPECT_EQ(p->bottlenecks[0].kind, "disk");
  bool found = false;
  for (const auto& w : p->what_ifs) {
    if (w.question == "twice the disk bandwidth") {
      found = true;
      EXPECT_NEAR(w.rate, 200, 0.01);
      EXPECT_EQ(w.bound, "disk bandwidth");
    }
  }
  EXPECT_TRUE(found);
}

// Two branches zipped: the MILP caches both when both fit, the bigger saver otherwise.
TEST(PlannerTest, CacheMilpOverBranches) {
  Trace t;
  t.duration_ns = 1000000000;
  t.machine.cores = 2;
  t.ram_budget = 1000;
  t.nodes.push_back(Node(0, "Range", {}, 0.01, false));
  t.nodes.push_back(Node(1, "ParallelMap", {0}, 1.0, true));
  t.nodes.push_back(Node(2, "Range", {}, 0.01, false));
  t.nodes.push_back(Node(3, "ParallelMap", {2}, 2.0, true));
  t.nodes.push_back(Node(4, "Zip", {1, 3}, 0.01, false));
  t.nodes.push_back(Node(5, "Repeat", {4}, 0, false));
  for (int i = 0; i < 5; ++i) {
    t.nodes[i].cardinality = 100;
    t.nodes[i].total_bytes_produced = 1000 * 3;  // 3 bytes per element: 300 B each
  }
  t.nodes[4].total_bytes_produced = 7500;  // 750 B
  for (const auto& n : t.nodes) t.process_cpu_ns += n.cpu_ns;
  auto a = Analyze(t);
  ASSERT_TRUE(a.ok());
  EXPECT_NEAR(a->nodes[1].materialized_bytes, 300, 1e-6);
  auto p = MakePlan(*a);  // budget 0.8 x 1000: the zip (750) fits, closest to the root
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->cache_nodes, std::vector<int64_t>{4});
  PlanOptions small;
  small.ram_budget = 500;  // 400 usable: one branch; the costlier one saves more
  auto q = MakePlan(*a, small);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->cache_nodes, std::vector<int64_t>{3});
  PlanOptions two;
  two.ram_budget = 800;  // 640: both branches (600 B), not the zip (750 B)
  auto r = MakePlan(*a, two);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->cache_nodes, (std::vector<int64_t>{1, 3}));
}

// The acceptance test: never a cache at or above a random operator, though the costliest
// work is there.
TEST(PlannerTest, NeverCachesAtOrAboveRandomness) {
  Dataset ds = Dataset::Range(2000)
                   .Map(BurnFunction("cheap", 2000))     // 1
                   .Shuffle(100, 3)                      // 2
                   .Map(BurnFunction("costly", 100000))  // 3
                   .Batch(4)                             // 4
                   .Repeat();                            // 5
  TraceOptions o;
  o.seconds = 0.4;
  o.warmup_seconds = 0.05;
  o.measure_bandwidth = false;
  auto t = TracePipeline(ds, o);
  ASSERT_TRUE(t.ok());
  auto a = Analyze(*t);
  ASSERT_TRUE(a.ok());
  auto p = MakePlan(*a);
  ASSERT_TRUE(p.ok());
  for (int64_t c : p->cache_nodes) {
    EXPECT_FALSE(a->nodes[c].random_at_or_below) << c;
    EXPECT_LT(c, 2);
  }
  // Even asked to cache everywhere it may, it keeps below the shuffle.
  for (int64_t id = 0; id < static_cast<int64_t>(a->nodes.size()); ++id) {
    if (a->nodes[id].cacheable) EXPECT_LT(id, 2);
  }
}

// A root Prefetch costs two handoffs per element: the plan adds one only when the
// pipeline's work per element is above a handoff (as the engine's inline mode decides for
// a prefetch), and predicts without those handoffs when it adds none.
TEST(PlannerTest, RootPrefetchOnlyWhenTheWorkItMovesExceedsAHandoff) {
  auto trace = [](double source_ms) {
    Trace t;
    t.duration_ns = 1000000000;
    t.machine.cores = 2;
    t.machine.handoff_ns = 5000;
    t.nodes.push_back(Node(0, "Range", {}, source_ms, false));
    t.nodes.push_back(Node(1, "Repeat", {0}, 0, false));
    t.process_cpu_ns = t.nodes[0].cpu_ns;
    return t;
  };
  auto cheap = Analyze(trace(0.0005));  // 0.5 us per element, below a 5 us handoff
  ASSERT_TRUE(cheap.ok());
  auto p = MakePlan(*cheap);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->prefetch, 0);
  // One thread at 0.5 us per element, no handoff: 2 M elements/s.
  EXPECT_NEAR(p->predicted_rate, 2e6, 2e4);

  auto costly = Analyze(trace(0.05));  // 50 us per element
  ASSERT_TRUE(costly.ok());
  p = MakePlan(*costly);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_GE(p->prefetch, 2);
  // One thread at 50 us: 20,000/s (the 10 us of handoffs fit in the second core).
  EXPECT_NEAR(p->predicted_rate, 2e4, 200);
}

// Range -> Map(a) -> Map(b) -> Map(c) -> Repeat: the engine's map_fusion merges parallel
// maps read only by one another into one op, so the plan makes the chain parallel as a
// whole, with the parallelism its summed theta needs. Before, the cheap maps a and c
// (each under one core) stayed sequential: a ran on the thread that feeds b, c on b's
// consumer, and the fusions the engine's defaults get (ImageNet-style: parse, decode,
// flip into the MapAndBatch) did not happen.
Trace MapChainTrace(double a_ms, double b_ms, double c_ms, int64_t cores,
                    double handoff_ns, double range_ms = 0.001) {
  Trace t;
  t.duration_ns = 1000000000;
  t.machine.cores = cores;
  t.machine.handoff_ns = handoff_ns;
  t.nodes.push_back(Node(0, "Range", {}, range_ms, false));
  t.nodes.push_back(Node(1, "Map", {0}, a_ms, true));
  t.nodes.push_back(Node(2, "Map", {1}, b_ms, true));
  t.nodes.push_back(Node(3, "Map", {2}, c_ms, true));
  t.nodes.push_back(Node(4, "Repeat", {3}, 0, false));
  for (const TraceNode& n : t.nodes) t.process_cpu_ns += n.cpu_ns;
  return t;
}

TEST(PlannerTest, MapsTheEngineFusesArePlannedAsOneParallelOp) {
  auto a = Analyze(MapChainTrace(0.02, 1.0, 0.01, 2, 0));
  ASSERT_TRUE(a.ok());
  auto p = MakePlan(*a);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  // X = 2 cores / 1.031 ms; the chain needs 2 cores: every map gets 2 calls, so that
  // map_fusion (the larger parallelism) runs the fused map on both.
  EXPECT_NEAR(p->predicted_rate, 2000 / 1.031, 2);
  EXPECT_EQ(p->nodes[1].parallelism, 2);
  EXPECT_EQ(p->nodes[2].parallelism, 2);
  EXPECT_EQ(p->nodes[3].parallelism, 2);
  EXPECT_EQ(p->nodes[0].parallelism, 0);

  // A chain that needs less than one core in all (the sequential Range holds X at
  // 100,000/s: 0.4 of a core) stays sequential as a whole.
  auto small = Analyze(MapChainTrace(0.001, 0.002, 0.001, 2, 0, /*range_ms=*/0.01));
  ASSERT_TRUE(small.ok());
  p = MakePlan(*small);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  for (int id = 1; id <= 3; ++id) EXPECT_EQ(p->nodes[id].parallelism, 0) << id;
}

// The fused chain hands each element over once, at its top (map c to the Repeat): the
// LP charges one handoff pair per element, not one per map made parallel.
TEST(PlannerTest, AFusedChainCostsOneHandoffPerElement) {
  auto a = Analyze(MapChainTrace(1.0, 1.0, 1.0, 4, 100000));  // 0.1 ms handoffs
  ASSERT_TRUE(a.ok());
  auto p = MakePlan(*a);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_GE(p->prefetch, 2);
  // 4 cores / (3 ms of maps + 0.2 ms: the chain's handoff pair + 0.2 ms: the root
  // prefetch's). Charging each map its own pair (3.8 ms in all) gave 1052.6.
  EXPECT_NEAR(p->predicted_rate, 4000 / 3.401, 2);
  EXPECT_EQ(p->nodes[1].parallelism, 4);
  EXPECT_EQ(p->nodes[2].parallelism, 4);
  EXPECT_EQ(p->nodes[3].parallelism, 4);
}

}  // namespace
}  // namespace sluice::plumber
