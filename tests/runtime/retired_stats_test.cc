// Per-node totals that survive rebuilt iterators (NodeTotals, src/runtime/node_stats.h):
// a node whose iterator is made again every epoch reports all its epochs, its own CPU
// once, and its parent's exclusive CPU stays the parent's.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <thread>

#include "api/dataset_internal.h"
#include "runtime/node_stats.h"
#include "sluice/dataset.h"
#include "testing/burn.h"

namespace sluice {
namespace {

using testing::Burn;
using testing::Burner;

// Drains `n` elements (or to the end); returns this thread's CPU spent.
int64_t Drain(Iterator* it, int64_t n) {
  const int64_t cpu0 = ThreadCpuNs();
  for (int64_t i = 0; i < n; ++i) {
    auto e = it->GetNext();
    EXPECT_TRUE(e.ok());
    if (!e.ok() || !*e) break;
  }
  return ThreadCpuNs() - cpu0;
}

// The rows of each op, summed (a node's totals are the sum of its rows).
std::map<std::string, IteratorStats> ByOp(const PipelineStats& p) {
  std::map<std::string, IteratorStats> m;
  for (const IteratorStats& s : p.nodes) {
    IteratorStats& t = m[s.name];
    t.name = s.name;
    t.elements_produced += s.elements_produced;
    t.elements_consumed += s.elements_consumed;
    t.cpu_ns += s.cpu_ns;
    t.bytes_produced += s.bytes_produced;
  }
  return m;
}

TEST(RetiredStats, NodeUnderRepeatReportsEveryEpochAndItsOwnCpu) {
  // 10 full epochs of a 50-element map that burns 100 us each, then 5 elements of an 11th:
  // the Map's iterator is made 11 times.
  constexpr int64_t kEpoch = 50, kBurnUs = 100;
  auto it = MakeIteratorAsBuilt(Dataset::Range(kEpoch).Map(Burner(kBurnUs)).Repeat(-1), {});
  ASSERT_TRUE(it.ok());
  const int64_t total = Drain(it->get(), 10 * kEpoch + 5);
  PipelineStats p = (*it)->Snapshot();
  auto ops = ByOp(p);
  ASSERT_TRUE(ops.count("Map") && ops.count("Repeat") && ops.count("Range"));
  EXPECT_EQ(ops["Map"].elements_produced, 10 * kEpoch + 5);
  EXPECT_EQ(ops["Map"].elements_consumed, 10 * kEpoch + 5);
  EXPECT_EQ(ops["Range"].elements_produced, 10 * kEpoch + 5);
  EXPECT_EQ(ops["Repeat"].elements_consumed, 10 * kEpoch + 5);
  EXPECT_EQ(ops["Repeat"].elements_produced, 10 * kEpoch + 5);
  // The map's own CPU is nearly all of it; the repeat's exclusive CPU excludes it.
  EXPECT_GT(ops["Map"].cpu_ns, total * 7 / 10) << "map " << ops["Map"].cpu_ns << " of " << total;
  EXPECT_LT(ops["Map"].cpu_ns, total * 13 / 10);
  EXPECT_LT(ops["Repeat"].cpu_ns, total / 10) << "repeat " << ops["Repeat"].cpu_ns;
  EXPECT_LT(ops["Range"].cpu_ns, total / 10) << "range " << ops["Range"].cpu_ns;
  // No double counting: the rows' exclusive CPU adds up to the CPU spent.
  int64_t sum = 0;
  for (const IteratorStats& s : p.nodes) sum += s.cpu_ns;
  EXPECT_GT(sum, total * 7 / 10) << sum << " of " << total;
  EXPECT_LT(sum, total * 13 / 10) << sum << " of " << total;
  // One row per node: the retired iterators have no rows of their own.
  EXPECT_EQ(p.nodes.size(), 3u);
}

TEST(RetiredStats, CountersOnlyGrowAcrossRebuilds) {
  // Snapshots between epochs: a node's counters never go back (StatsWindow's deltas stay
  // the window's, not the new iterator's).
  auto it = MakeIteratorAsBuilt(Dataset::Range(7).Map(Burner(1)).Repeat(-1), {});
  ASSERT_TRUE(it.ok());
  StatsWindow window((*it)->Snapshot());
  int64_t last = 0;
  for (int round = 0; round < 20; ++round) {
    Drain(it->get(), 3);
    PipelineStats now = (*it)->Snapshot();
    const int64_t map = ByOp(now)["Map"].elements_produced;
    EXPECT_GE(map, last);
    last = map;
    StatsDelta d = window.Delta(now);
    EXPECT_FALSE(d.restarted) << "round " << round;
    window.Reset(now);
  }
  EXPECT_EQ(last, 60);
}

TEST(RetiredStats, ConcurrentSnapshotsNeverSeeACounterGoBack) {
  // A sampler snapshots while the consumer rebuilds the map's and range's iterators every
  // 3 elements (and a prefetch's thread drives them): an iterator is counted live or
  // retired, never both nor neither, so every node's count only grows.
  auto it = MakeIteratorAsBuilt(Dataset::Range(3).Map(Burner(0)).Repeat(-1).Prefetch(2), {});
  ASSERT_TRUE(it.ok());
  std::atomic<bool> stop{false};
  std::atomic<int64_t> backwards{0}, snapshots{0};
  std::thread sampler([&] {
    std::map<std::string, int64_t> last;
    while (!stop.load()) {
      for (const auto& [op, s] : ByOp((*it)->Snapshot())) {
        if (s.elements_produced < last[op]) backwards.fetch_add(1);
        last[op] = std::max(last[op], s.elements_produced);
      }
      snapshots.fetch_add(1);
    }
  });
  Drain(it->get(), 30000);
  stop.store(true);
  sampler.join();
  EXPECT_GT(snapshots.load(), 10);
  EXPECT_EQ(backwards.load(), 0);
  auto ops = ByOp((*it)->Snapshot());
  EXPECT_GE(ops["Map"].elements_produced, 30000);
  // The prefetch's thread may be between the range's element and the map's.
  EXPECT_GE(ops["Range"].elements_produced, ops["Map"].elements_produced);
  EXPECT_LE(ops["Range"].elements_produced, ops["Map"].elements_produced + 1);
}

TEST(RetiredStats, SharedNodeRowsSumToTheNodesTotals) {
  // One Map node used twice by a zip: two live iterators of one node, both rebuilt each
  // epoch. The retired totals ride on the first row only.
  Dataset a = Dataset::Range(10).Map(Burner(1));
  auto it = MakeIteratorAsBuilt(Dataset::Zip({a, a}).Repeat(-1), {});
  ASSERT_TRUE(it.ok());
  Drain(it->get(), 25);
  PipelineStats p = (*it)->Snapshot();
  std::vector<const IteratorStats*> maps;
  for (const IteratorStats& s : p.nodes) {
    if (s.name == "Map") maps.push_back(&s);
  }
  ASSERT_EQ(maps.size(), 2u);
  EXPECT_EQ(maps[0]->node_id, maps[1]->node_id);
  // Two epochs of 10 from each iterator, then 5 each: 50 in all.
  EXPECT_EQ(maps[0]->elements_produced + maps[1]->elements_produced, 50);
  EXPECT_EQ(maps[1]->elements_produced, 5);
  EXPECT_EQ(ByOp(p)["Zip"].elements_consumed, 50);
}

TEST(RetiredStats, InterleaveUnderRepeatKeepsItsCountsAndInnerRowsStayLive) {
  // Interleave over Range(4) with inner pipelines Range(e + 1): per epoch it consumes 4
  // inputs and 1+2+3+4 inner elements and produces 10. Its inner iterators are over
  // datasets made by a function (node_id -1): they have no node to retire to, and only
  // the live ones have rows.
  Function inner = Function::DatasetFunction(
      "inner", [](Element e, FunctionContext&) -> Result<Dataset> {
        return Dataset::Range(e[0].scalar<int64_t>() + 1);
      });
  auto it = MakeIteratorAsBuilt(
      Dataset::Range(4).Interleave(inner, /*cycle_length=*/2, /*block_length=*/1).Repeat(-1),
      {});
  ASSERT_TRUE(it.ok());
  Drain(it->get(), 3 * 10);  // three epochs
  PipelineStats p = (*it)->Snapshot();
  const IteratorStats* interleave = nullptr;
  int64_t inner_live = 0;
  for (const IteratorStats& s : p.nodes) {
    if (s.name == "Interleave") interleave = &s;
    if (s.node_id < 0) inner_live += s.elements_produced;
  }
  ASSERT_NE(interleave, nullptr);
  EXPECT_EQ(interleave->elements_produced, 30);
  // 3 epochs x (4 inputs + 10 inner elements), from all its iterators.
  EXPECT_EQ(interleave->elements_consumed, 3 * 14);
  int64_t inner_rows = 0, source = -1;
  for (const IteratorStats& s : p.nodes) {
    if (s.name != "Range") continue;
    if (s.node_id < 0) {
      ++inner_rows;
    } else {
      source = s.elements_produced;
    }
  }
  EXPECT_EQ(source, 3 * 4);
  EXPECT_LE(inner_rows, 2);  // the cycle's live inner iterators at most
  EXPECT_LE(inner_live, 10);
}

TEST(RetiredStats, RestoreStartsFromZero) {
  auto it = MakeIteratorAsBuilt(Dataset::Range(5).Repeat(-1), {});
  ASSERT_TRUE(it.ok());
  Drain(it->get(), 12);
  auto ckpt = (*it)->Save();
  ASSERT_TRUE(ckpt.ok());
  Drain(it->get(), 20);
  ASSERT_TRUE((*it)->Restore(*ckpt).ok());
  Drain(it->get(), 3);
  PipelineStats p = (*it)->Snapshot();
  EXPECT_EQ(ByOp(p)["Repeat"].elements_produced, 3);
  EXPECT_LE(ByOp(p)["Range"].elements_produced, 3);
}

}  // namespace
}  // namespace sluice
