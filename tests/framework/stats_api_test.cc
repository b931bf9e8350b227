// The stats plane as an API (include/sluice/stats.h): node ids that match the serialized
// graph the iterator runs, static facts, the one JSON schema, the windowed reader, and the
// per-element span hook.
#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>

#include "api/dataset_internal.h"
#include "graph/proto/graph.pb.h"
#include "runtime/span.h"
#include "sluice/serialize.h"
#include "testing/op_cases.h"

namespace sluice {
namespace {

using namespace testing;  // NOLINT: the shared op cases and helpers

std::unique_ptr<Iterator> RunFor(const Dataset& ds, int n) {
  auto it = ds.MakeIterator();
  EXPECT_TRUE(it.ok()) << it.status();
  for (int i = 0; i < n; ++i) {
    auto e = (*it)->GetNext();
    EXPECT_TRUE(e.ok()) << e.status();
  }
  return std::move(*it);
}

graph::GraphDef GraphOf(const Iterator& it) {
  auto bytes = SerializeDataset(DatasetOf(IteratorGraph(it)), GraphFormat::kBinary);
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  graph::GraphDef def;
  EXPECT_TRUE(def.ParseFromString(*bytes));
  return def;
}

// Every live iterator names its node by the id the serialized GraphDef gives it, for the
// optimized graph the iterator runs, a shared node included; every graph node is live.
TEST(StatsTest, NodeIdsMatchTheSerializedGraph) {
  Dataset r = Dataset::Range(100).Map(K("cast", {{"dtype", DType::kInt32}}));
  Dataset ds = Dataset::Zip({r, r.Skip(1)})
                   .Shuffle(8, 3)
                   .Batch(4)
                   .Map(K("identity"), 2)
                   .Prefetch(2);
  auto it = RunFor(ds, 5);
  const graph::GraphDef def = GraphOf(*it);
  const PipelineStats stats = it->Snapshot();
  std::set<int64_t> seen;
  for (const IteratorStats& s : stats.nodes) {
    SCOPED_TRACE(s.prefix);
    ASSERT_GE(s.node_id, 0);
    ASSERT_LT(s.node_id, def.node_size());
    EXPECT_EQ(def.node(static_cast<int>(s.node_id)).op(), s.name);
    seen.insert(s.node_id);
  }
  EXPECT_EQ(static_cast<int>(seen.size()), def.node_size());
  // The two iterators over the shared Map node carry the same id.
  std::map<int64_t, int> per_id;
  for (const IteratorStats& s : stats.nodes) ++per_id[s.node_id];
  int shared = 0;
  for (const auto& [id, n] : per_id) shared += n > 1;
  EXPECT_GE(shared, 1);
  // The debug string (`sluice spec show`) prints the same ids.
  const std::string text = DatasetGraphDebugString(DatasetOf(IteratorGraph(*it)));
  for (int i = 0; i < def.node_size(); ++i) {
    EXPECT_NE(text.find("#" + std::to_string(i) + " " + def.node(i).op() + "("),
              std::string::npos)
        << text;
  }
}

TEST(StatsTest, IteratorsOverFunctionMadeDatasetsHaveNoNodeId) {
  Dataset ds = Dataset::FromTensorSlices(
                   Element{Tensor::FromVector<int64_t>({1, 2, 3, 4, 5, 6}, Shape{3, 2})})
                   .FlatMap(K("from_tensor_slices"));
  Options o;
  o.autotune.enabled = false;
  auto it = MakeIteratorAsBuilt(ds, o);
  ASSERT_TRUE(it.ok());
  ASSERT_TRUE((*it)->GetNext().ok());
  bool inner = false;
  for (const IteratorStats& s : (*it)->Stats()) {
    // FlatMap's inner iterators are labelled by their cycle slot: "Root/FromTensorSlices[slot0]".
    if (s.prefix.find("[slot") != std::string::npos) {
      EXPECT_EQ(s.node_id, -1) << s.prefix;
      inner = true;
    } else {
      EXPECT_GE(s.node_id, 0) << s.prefix;
    }
  }
  EXPECT_TRUE(inner);
}

TEST(StatsTest, StaticFacts) {
  Dataset ds = Dataset::Range(10).Map(K("cast", {{"dtype", DType::kFloat32}})).Batch(4, true);
  Options o;
  o.autotune.enabled = false;
  auto it = MakeIteratorAsBuilt(ds, o);
  ASSERT_TRUE(it.ok());
  ASSERT_TRUE((*it)->GetNext().ok());
  std::map<std::string, IteratorStats> by_op;
  for (const IteratorStats& s : (*it)->Stats()) by_op[s.name] = s;
  EXPECT_EQ(by_op["Range"].cardinality, 10);
  EXPECT_EQ(by_op["Range"].static_bytes_per_element, 8);
  EXPECT_EQ(by_op["Map"].static_bytes_per_element, 4);
  EXPECT_EQ(by_op["Batch"].cardinality, 2);
  EXPECT_EQ(by_op["Batch"].static_bytes_per_element, 16);
  Dataset text = Dataset::FromTensors(Element{Tensor::Scalar(std::string("x"))}).Repeat();
  auto t = MakeIteratorAsBuilt(text, o);
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE((*t)->GetNext().ok());
  for (const IteratorStats& s : (*t)->Stats()) {
    EXPECT_EQ(s.static_bytes_per_element, -1) << s.name;  // strings have no static size
    if (s.name == "Repeat") EXPECT_EQ(s.cardinality, kInfiniteCardinality);
  }
}

// The JSON has exactly the schema's fields with the snapshot's values.
TEST(StatsTest, JsonIsTheSchema) {
  auto it = RunFor(Dataset::Range(50).Map(K("identity")).Batch(5).Prefetch(1), 3);
  const PipelineStats s = it->Snapshot();
  const nlohmann::ordered_json j = nlohmann::ordered_json::parse(StatsToJson(s));
  std::vector<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.push_back(k);
  EXPECT_EQ(keys, StatsPipelineFieldNames());
  ASSERT_EQ(j["nodes"].size(), s.nodes.size());
  for (size_t i = 0; i < s.nodes.size(); ++i) {
    std::vector<std::string> nk;
    for (const auto& [k, v] : j["nodes"][i].items()) nk.push_back(k);
    EXPECT_EQ(nk, StatsNodeFieldNames());
    EXPECT_EQ(j["nodes"][i]["name"], s.nodes[i].name);
    EXPECT_EQ(j["nodes"][i]["prefix"], s.nodes[i].prefix);
    EXPECT_EQ(j["nodes"][i]["node_id"], s.nodes[i].node_id);
    EXPECT_EQ(j["nodes"][i]["elements_produced"], s.nodes[i].elements_produced);
    EXPECT_EQ(j["nodes"][i]["cardinality"], s.nodes[i].cardinality);
    EXPECT_TRUE(j["nodes"][i]["cpu_ns"].is_number());  // numbers, not proto3's strings
  }
  EXPECT_EQ(j["cpu_budget"], s.cpu_budget);
  // Every schema field is one the JSON writer knows how to print.
  for (const std::string& f : StatsNodeFieldNames()) EXPECT_TRUE(j["nodes"][0].contains(f)) << f;
}

TEST(StatsTest, WindowGivesDeltas) {
  Options o;
  o.autotune.enabled = false;
  auto it = MakeIteratorAsBuilt(Dataset::Range(1000).Map(K("identity")), o);
  ASSERT_TRUE(it.ok());
  for (int i = 0; i < 10; ++i) ASSERT_TRUE((*it)->GetNext().ok());
  StatsWindow w((*it)->Snapshot());
  for (int i = 0; i < 25; ++i) ASSERT_TRUE((*it)->GetNext().ok());
  const PipelineStats now = (*it)->Snapshot();
  StatsDelta d = w.Delta(now);
  EXPECT_FALSE(d.restarted);
  EXPECT_GE(d.duration_ns, 0);
  ASSERT_EQ(d.nodes.size(), now.nodes.size());
  EXPECT_EQ(d.nodes[0].elements_produced, 25);
  EXPECT_EQ(d.nodes[1].elements_produced, 25);  // Range
  w.Reset(now);
  EXPECT_EQ(w.Delta(now).nodes[0].elements_produced, 0);
  // A rebuilt tree (Restore) is reported, with the new tree's totals.
  auto saved = (*it)->Save();
  ASSERT_TRUE(saved.ok());
  auto fresh = MakeIteratorAsBuilt(Dataset::Range(1000).Map(K("identity")), o);
  ASSERT_TRUE(fresh.ok());
  ASSERT_TRUE((*fresh)->GetNext().ok());
  StatsDelta back = w.Delta((*fresh)->Snapshot());
  EXPECT_TRUE(back.restarted);
  EXPECT_EQ(back.nodes[0].elements_produced, 1);
}

// Counts spans per iterator (thread-safe).
class CountingRecorder : public SpanRecorder {
 public:
  void Record(const Span& s) override {
    std::lock_guard<std::mutex> l(mu_);
    if (s.work) {  // a parallel op's function call on the pool, not a GetNext
      work_[std::string(s.prefix)] += s.produced;
      return;
    }
    Counts& c = counts_[std::string(s.prefix)];
    ++c.calls;
    c.produced += s.produced;
    c.errors += s.error;
    c.node_id = s.node_id;
    if (s.end_ns < s.start_ns) ++bad_times_;
    if (s.produced && s.index != c.next_index) ++bad_index_;
    if (s.produced) ++c.next_index;
  }
  struct Counts {
    int64_t calls = 0, produced = 0, errors = 0, node_id = -2, next_index = 0;
  };
  std::map<std::string, Counts> counts() {
    std::lock_guard<std::mutex> l(mu_);
    return counts_;
  }
  std::map<std::string, int64_t> work() {
    std::lock_guard<std::mutex> l(mu_);
    return work_;
  }
  int64_t bad_times_ = 0, bad_index_ = 0;

 private:
  std::map<std::string, int64_t> work_;
  std::mutex mu_;
  std::map<std::string, Counts> counts_;
};

TEST(StatsTest, SpanHookSeesEveryCallOfEveryIterator) {
  CountingRecorder rec;
  Options o;
  o.autotune.enabled = false;
  o.span_recorder = &rec;
  Dataset ds = Dataset::Range(20).Map(K("identity"), 2).Batch(3).Prefetch(2);
  auto it = MakeIteratorAsBuilt(ds, o);
  ASSERT_TRUE(it.ok());
  int batches = 0;
  while (true) {
    auto e = (*it)->GetNext();
    ASSERT_TRUE(e.ok()) << e.status();
    if (!*e) break;
    ++batches;
  }
  EXPECT_EQ(batches, 7);
  const std::vector<IteratorStats> stats = (*it)->Stats();
  auto counts = rec.counts();
  ASSERT_EQ(counts.size(), stats.size());
  for (const IteratorStats& s : stats) {
    SCOPED_TRACE(s.prefix);
    ASSERT_TRUE(counts.count(s.prefix));
    EXPECT_EQ(counts[s.prefix].produced, s.elements_produced);
    EXPECT_GE(counts[s.prefix].calls, s.elements_produced);
    EXPECT_EQ(counts[s.prefix].node_id, s.node_id);
    EXPECT_EQ(counts[s.prefix].errors, 0);
  }
  EXPECT_EQ(rec.bad_times_, 0);
  EXPECT_EQ(rec.bad_index_, 0);
  // The parallel map's 20 function calls, each a work span of its own.
  const std::map<std::string, int64_t> work = rec.work();
  ASSERT_EQ(work.size(), 1u);
  EXPECT_EQ(work.begin()->first, "Root/Batch[0]/ParallelMap[0]/fn");
  EXPECT_EQ(work.begin()->second, 20);
}

}  // namespace
}  // namespace sluice
