// The doctor's trace: counters per graph node, machine facts, file sizes, the JSON file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "sluice/plumber.h"
#include "testing/plumber_fixtures.h"

namespace sluice::plumber {
namespace {

using testing::BurnFunction;

std::string TempDir(const std::string& name) {
  std::string d = std::filesystem::temp_directory_path() /
                  ("plumber_trace_" + name + "_" + std::to_string(getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

TEST(TraceTest, CountersBelongToGraphNodes) {
  // 200 us per element: far above the range's own cost even in an -O0 sanitizer build
  // (about 2.5 us there, against 20 us of burn the ratio was only 9).
  Dataset ds = Dataset::Range(1 << 30).Map(BurnFunction("burn", 200000)).Batch(4);
  TraceOptions o;
  o.seconds = 0.3;
  o.warmup_seconds = 0.05;
  auto t = TracePipeline(ds, o);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->nodes.size(), 3u);
  EXPECT_EQ(t->nodes[0].op, "Range");
  EXPECT_EQ(t->nodes[1].name, "Map(burn)");
  EXPECT_EQ(t->nodes[2].op, "Batch");
  EXPECT_EQ(t->nodes[1].inputs, std::vector<int64_t>{0});
  EXPECT_TRUE(t->nodes[1].parallelizable);
  EXPECT_GT(t->nodes[2].elements, 0);
  // The map burns 200 us per element; the range costs far less.
  EXPECT_GT(t->nodes[1].cpu_ns, 10 * t->nodes[0].cpu_ns);
  EXPECT_NEAR(static_cast<double>(t->nodes[1].elements) / t->nodes[2].elements, 4.0, 0.5);
  EXPECT_GT(t->duration_ns, 200000000);
  EXPECT_GT(t->process_cpu_ns, 0);
  EXPECT_GE(t->machine.cores, 1);
  EXPECT_FALSE(t->graph_error.empty());  // a local callable does not serialize
}

TEST(TraceTest, RecordsFileSizesAndBandwidth) {
  std::string dir = TempDir("files");
  auto files = testing::WriteRecordFiles(dir, {50, 60, 70, 80}, 1000);
  ASSERT_EQ(files.size(), 4u);
  Dataset ds = Dataset::TFRecord(files);
  TraceOptions o;
  o.seconds = 5;
  o.warmup_seconds = 0;
  o.max_elements = 40;  // part of the first file
  auto t = TracePipeline(ds, o);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->file_sizes.size(), 4u);  // every input file, read or not
  for (const std::string& f : files) {
    EXPECT_EQ(t->file_sizes.at(f), static_cast<int64_t>(std::filesystem::file_size(f)));
  }
  EXPECT_GT(t->file_bytes_read.at(files[0]), 0);
  EXPECT_EQ(t->file_bytes_read.count(files[3]), 0u);
  EXPECT_GT(t->machine.sequential_read_bps, 0);
  EXPECT_GT(t->machine.parallel_read_bps, 0);
  EXPECT_FALSE(t->graph_json.empty());
  std::filesystem::remove_all(dir);
}

TEST(TraceTest, JsonRoundTrip) {
  Dataset ds = Dataset::Range(1 << 30).Map(BurnFunction("burn", 5000)).Batch(2);
  TraceOptions o;
  o.seconds = 0.1;
  o.warmup_seconds = 0;
  auto t = TracePipeline(ds, o);
  ASSERT_TRUE(t.ok());
  std::string dir = TempDir("json");
  ASSERT_TRUE(SaveTrace(*t, dir + "/run.trace").ok());
  auto back = LoadTrace(dir + "/run.trace");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(TraceToJson(*back), TraceToJson(*t));
  EXPECT_EQ(back->nodes[1].cpu_ns, t->nodes[1].cpu_ns);
  // The clock read the tracer adds per root element is measured (a few to ~100 ns).
  EXPECT_GT(t->machine.clock_ns, 0);
  EXPECT_LT(t->machine.clock_ns, 5000);
  EXPECT_EQ(back->machine.clock_ns, t->machine.clock_ns);
  std::filesystem::remove_all(dir);
}

TEST(TraceTest, MalformedTracesAreClearErrors) {
  auto a = TraceFromJson("not json", "x.trace");
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().ToString().find("x.trace"), std::string::npos);
  auto b = TraceFromJson("{}", "y.trace");
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().ToString().find("version"), std::string::npos);
  Dataset ds = Dataset::Range(10).Batch(2);
  TraceOptions o;
  o.seconds = 0.05;
  o.warmup_seconds = 0;
  o.measure_bandwidth = false;
  auto t = TracePipeline(ds, o);
  ASSERT_TRUE(t.ok());
  t->nodes[1].inputs = {5};  // not an earlier node
  auto c = TraceFromJson(TraceToJson(*t), "z.trace");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().ToString().find("nodes[1]"), std::string::npos) << c.status().ToString();
  auto d = LoadTrace("/nonexistent/run.trace");
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().ToString().find("/nonexistent/run.trace"), std::string::npos);
}

}  // namespace
}  // namespace sluice::plumber
