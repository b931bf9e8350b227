// The stats plane (src/runtime/node_stats.h): counts, sampled CPU and wall times with
// children excluded, bytes, file bytes, dead children, snapshot structure.
#include <gtest/gtest.h>
#include <atomic>
#include <thread>
#include <sys/stat.h>

#include "api/dataset_internal.h"
#include "formats/tfrecord.h"
#include "runtime/node_stats.h"
#include "sluice/dataset.h"
#include "testing/burn.h"
#include "testing/conformance.h"

namespace sluice {
namespace {

using testing::Burn;
using testing::Burner;

const IteratorStats* Find(const PipelineStats& p, const std::string& name) {
  for (const IteratorStats& s : p.nodes) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

TEST(Stats, ExclusiveCpuOfSynchronousOps) {
  // Map burns 200 us per element; Batch and Range do next to nothing.
  auto it = MakeIteratorAsBuilt(Dataset::Range(300).Map(Burner(200)).Batch(10), {});
  ASSERT_TRUE(it.ok());
  const int64_t cpu0 = ThreadCpuNs();
  while (true) {
    auto e = (*it)->GetNext();
    ASSERT_TRUE(e.ok());
    if (!*e) break;
  }
  const int64_t total = ThreadCpuNs() - cpu0;
  PipelineStats p = (*it)->Snapshot();
  const IteratorStats* map = Find(p, "Map");
  const IteratorStats* batch = Find(p, "Batch");
  const IteratorStats* range = Find(p, "Range");
  ASSERT_TRUE(map && batch && range);
  EXPECT_GT(map->cpu_ns, total * 7 / 10) << "map " << map->cpu_ns << " of " << total;
  EXPECT_LT(map->cpu_ns, total * 13 / 10);
  EXPECT_LT(batch->cpu_ns, total / 10) << "batch " << batch->cpu_ns;
  EXPECT_LT(range->cpu_ns, total / 10) << "range " << range->cpu_ns;
  // Batch's wall time includes the map's work (inclusive), the map's includes its own.
  EXPECT_GT(batch->wall_ns, total * 7 / 10);
  EXPECT_EQ(batch->elements_consumed, 300);
  EXPECT_EQ(batch->elements_produced, 30);
  EXPECT_EQ(map->bytes_produced, 300 * 8);
  EXPECT_EQ(batch->bytes_consumed, 300 * 8);
  EXPECT_EQ(batch->bytes_produced, 30 * 10 * 8);
  EXPECT_EQ(batch->parent, -1);  // the root
  EXPECT_EQ(map->parent, 0);
  EXPECT_EQ(range->parent, 1);
  EXPECT_FALSE(map->async);
}

TEST(Stats, ParallelMapCpuIsCountedOnThePool) {
  Options rt;
  rt.autotune.cpu_budget = 2;
  auto it = MakeIteratorAsBuilt(Dataset::Range(200).Map(Burner(200), 2), rt);
  ASSERT_TRUE(it.ok());
  int64_t n = 0;
  while (true) {
    auto e = (*it)->GetNext();
    ASSERT_TRUE(e.ok());
    if (!*e) break;
    ++n;
  }
  EXPECT_EQ(n, 200);
  PipelineStats p = (*it)->Snapshot();
  const IteratorStats* map = Find(p, "ParallelMap");
  ASSERT_TRUE(map);
  EXPECT_TRUE(map->async);
  // 200 x 200 us = 40 ms of function CPU, estimated from sampled tasks.
  EXPECT_GT(map->cpu_ns, 28'000'000) << map->cpu_ns;
  EXPECT_LT(map->cpu_ns, 60'000'000) << map->cpu_ns;
  EXPECT_EQ(map->parallelism, 2);
}

TEST(Stats, FinishedInnerIteratorsLeaveTheirCounts) {
  // flat_map makes and destroys one inner iterator per input element.
  Function inner = Function::DatasetFunction(
      "inner", [](Element e, FunctionContext&) -> Result<Dataset> {
        return Dataset::Range(e[0].scalar<int64_t>());
      });
  auto it = MakeIteratorAsBuilt(Dataset::Range(10).FlatMap(inner), {});
  ASSERT_TRUE(it.ok());
  int64_t n = 0;
  while (true) {
    auto e = (*it)->GetNext();
    ASSERT_TRUE(e.ok());
    if (!*e) break;
    ++n;
  }
  EXPECT_EQ(n, 45);
  std::vector<IteratorStats> s = (*it)->Stats();
  ASSERT_FALSE(s.empty());
  EXPECT_EQ(s[0].name, "FlatMap");
  // 10 input elements plus 45 inner elements, though every inner iterator is gone.
  EXPECT_EQ(s[0].elements_consumed, 55);
  EXPECT_EQ(s[0].elements_produced, 45);
}

TEST(Stats, FileBytesRead) {
  testing::TempDir dir;
  const std::string path = dir.File("a.tfrecord");
  {
    auto w = TFRecordWriter::Open(path, Compression::kNone);
    ASSERT_TRUE(w.ok()) << w.status();
    for (int i = 0; i < 100; ++i) ASSERT_TRUE((*w)->Write(std::string(1000, 'x')).ok());
    ASSERT_TRUE((*w)->Close().ok());
  }
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  auto it = MakeIteratorAsBuilt(Dataset::TFRecord({path, path}), {});
  ASSERT_TRUE(it.ok());
  int64_t n = 0;
  while (true) {
    auto e = (*it)->GetNext();
    ASSERT_TRUE(e.ok());
    if (!*e) break;
    ++n;
  }
  EXPECT_EQ(n, 200);
  std::vector<IteratorStats> s = (*it)->Stats();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].file_bytes_read, 2 * static_cast<int64_t>(st.st_size));
  EXPECT_EQ(s[0].bytes_produced, 200 * 1000);  // string tensors count their strings' bytes
}

TEST(Stats, CheapOpsGetPlausibleEstimates) {
  // A cheap op is timed rarely (one call in thousands); its estimate is still plausible.
  // (This does not check the period itself, only the estimate it yields.)
  auto it = MakeIteratorAsBuilt(Dataset::Range(100000).Map(Burner(0)), {});
  ASSERT_TRUE(it.ok());
  for (int i = 0; i < 100000; ++i) ASSERT_TRUE((*it)->GetNext().ok());
  PipelineStats p = (*it)->Snapshot();
  const IteratorStats* range = Find(p, "Range");
  ASSERT_TRUE(range);
  EXPECT_EQ(range->elements_produced, 100000);
  // Estimated wall time is positive and plausible (< 10 us per element).
  EXPECT_GT(range->wall_ns, 0);
  EXPECT_LT(range->wall_ns, 100000LL * 10000);
}

TEST(Stats, AnExpensiveFirstCallIsChargedOnce) {
  // Shuffle's first call fills its buffer: 2,500 calls of a 100 us map (100 us keeps
  // Shuffle's own per-element cost, ~3 us in -O0 sanitizer builds, far below a tenth). The first calls
  // are always timed; weighted by their period they count once, so Shuffle's own CPU stays
  // a small share of the map's (unweighted, the fill was charged once per later sample:
  // several times the map's whole CPU).
  auto it = MakeIteratorAsBuilt(
      Dataset::Range(3000).Map(Burner(100)).Shuffle(2500, /*seed=*/1), {});
  ASSERT_TRUE(it.ok());
  for (int i = 0; i < 3000; ++i) ASSERT_TRUE((*it)->GetNext().ok());
  PipelineStats p = (*it)->Snapshot();
  const IteratorStats* shuffle = Find(p, "Shuffle");
  const IteratorStats* map = Find(p, "Map");
  ASSERT_TRUE(shuffle && map);
  EXPECT_GT(map->cpu_ns, 3000LL * 100000 * 7 / 10);
  EXPECT_LT(shuffle->cpu_ns, map->cpu_ns / 10)
      << "shuffle " << shuffle->cpu_ns << " map " << map->cpu_ns;
  // Its inclusive wall time is about the map's, not a multiple of it.
  EXPECT_LT(shuffle->wall_ns, 2 * map->wall_ns + 3000LL * 100000)
      << "shuffle " << shuffle->wall_ns << " map " << map->wall_ns;
}

// A call stalled in progress (here: blocked on a gate; on a busy machine: preempted) counts
// in the root's wall time as it runs, not only once it returns. The autotuner reads the
// consumer's own time as a window's duration less the root's wall time; without this, a
// stall across a window's edge read as consumer time and moved an idle consumer's root
// Prefetch async (Autotune.RootPrefetchGoesAsyncOnlyForABusyConsumer, 1 in 12 under load).
TEST(Stats, AStalledCallCountsInWallTimeWhileItRuns) {
  std::atomic<bool> open{false};
  std::atomic<bool> entered{false};
  Function gate = Function::Map("gate", [&](Element e, FunctionContext&) -> Result<Element> {
    Burn(200);  // slow enough that every call is timed (the stats plane's period is 1)
    if (e[0].scalar<int64_t>() == 50) {
      entered = true;
      while (!open) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return e;
  });
  Options o;
  o.optimization.apply_default_optimizations = false;
  o.autotune.enabled = false;
  auto it = Dataset::Range(100).Map(gate).MakeIterator(o);
  ASSERT_TRUE(it.ok()) << it.status();
  for (int i = 0; i < 50; ++i) ASSERT_TRUE((*it)->GetNext().ok());
  // The next call stalls; its wall time shows while it runs.
  std::thread consumer([&] { ASSERT_TRUE((*it)->GetNext().ok()); });
  while (!entered) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const int64_t before = Find((*it)->Snapshot(), "Map")->wall_ns;
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const int64_t during = Find((*it)->Snapshot(), "Map")->wall_ns;
  open = true;
  consumer.join();
  const int64_t after = Find((*it)->Snapshot(), "Map")->wall_ns;
  EXPECT_GE(during - before, 90000000) << before << " " << during;
  EXPECT_GE(after, during) << "wall time went back when the stalled call returned";
}

}  // namespace
}  // namespace sluice
