// Distribute in one process: a dispatcher and workers started here (sluice/service.h),
// the sharding policies, the client's argument checks and the element coding.
#include <gtest/gtest.h>

#include <chrono>
#include <map>

#include "core/coding.h"
#include "service/element_codec.h"
#include "service/grpc_transport.h"
#include "service/tsan_suppressions.h"
#include "sluice/dataset.h"
#include "sluice/service.h"
#include "testing/conformance.h"

namespace sluice::service {
namespace {

using testing::TempDir;

struct InProcessCluster {
  explicit InProcessCluster(int workers) {
    DispatcherOptions d;
    auto started = DispatchServer::Start(d);
    EXPECT_TRUE(started.ok()) << started.status();
    dispatcher = std::move(*started);
    for (int i = 0; i < workers; ++i) {
      WorkerOptions w;
      w.dispatcher = dispatcher->target();
      w.heartbeat_interval_ms = 50;
      w.lease_splits = 7;
      w.cpu_budget = 1;
      auto ws = WorkServer::Start(w);
      EXPECT_TRUE(ws.ok()) << ws.status();
      this->workers.push_back(std::move(*ws));
    }
  }
  DistributeOptions Options(ShardingPolicy p) const {
    DistributeOptions o;
    o.processing_mode = p;
    o.service = dispatcher->target();
    return o;
  }
  std::unique_ptr<DispatchServer> dispatcher;
  std::vector<std::unique_ptr<WorkServer>> workers;
};

std::map<int64_t, int> Counts(const Dataset& ds) {
  auto all = ds.Collect();
  EXPECT_TRUE(all.ok()) << all.status();
  std::map<int64_t, int> counts;
  if (all.ok()) {
    for (const Element& e : *all) ++counts[testing::IntOf(e)];
  }
  return counts;
}

TEST(DistributeTest, DynamicDeliversEveryElementOnceWithOneRpcPerLease) {
  InProcessCluster c(2);
  auto counts =
      Counts(Distribute(Dataset::Range(100), c.Options(ShardingPolicy::kDynamic)));
  ASSERT_EQ(counts.size(), 100u);
  for (auto [v, n] : counts) EXPECT_EQ(n, 1) << v;
  // ceil(100 / 7) = 15 leases, plus one end-of-splits answer per worker.
  EXPECT_EQ(c.workers[0]->split_rpcs() + c.workers[1]->split_rpcs(), 15 + 2);
}

TEST(DistributeTest, OffGivesEveryWorkerTheWholeDataset) {
  InProcessCluster c(2);
  auto counts = Counts(Distribute(Dataset::Range(50), c.Options(ShardingPolicy::kOff)));
  ASSERT_EQ(counts.size(), 50u);
  for (auto [v, n] : counts) EXPECT_EQ(n, 2) << v;
}

TEST(DistributeTest, DataShardsElementsAcrossWorkers) {
  InProcessCluster c(3);
  auto counts = Counts(Distribute(Dataset::Range(50).Map(*Function::Kernel("identity")),
                                  c.Options(ShardingPolicy::kData)));
  ASSERT_EQ(counts.size(), 50u);
  for (auto [v, n] : counts) EXPECT_EQ(n, 1) << v;
}

TEST(DistributeTest, FileShardsFilesAcrossWorkers) {
  TempDir dir;
  std::vector<std::string> files;
  for (int f = 0; f < 5; ++f) {
    std::string text;
    for (int i = 0; i < 10; ++i) text += std::to_string(f * 10 + i) + "\n";
    files.push_back(dir.File("f" + std::to_string(f) + ".txt"));
    testing::WriteFile(files.back(), text);
  }
  InProcessCluster c(2);
  for (ShardingPolicy p :
       {ShardingPolicy::kFile, ShardingPolicy::kFileOrData, ShardingPolicy::kHint}) {
    auto all = Distribute(Dataset::TextLine(files), c.Options(p)).Collect();
    ASSERT_TRUE(all.ok()) << all.status();
    std::multiset<std::string> lines;
    for (const Element& e : *all) lines.insert(std::string(e[0].scalar<std::string>()));
    ASSERT_EQ(lines.size(), 50u) << ShardingPolicyName(p);
    for (int i = 0; i < 50; ++i) EXPECT_EQ(lines.count(std::to_string(i)), 1u) << i;
  }
}

TEST(DistributeTest, LocalTargetReadsThisProcesssWorker) {
  InProcessCluster c(1);
  DistributeOptions o = c.Options(ShardingPolicy::kDynamic);
  o.target_workers = "LOCAL";
  auto counts = Counts(Distribute(Dataset::Range(64), o));
  EXPECT_EQ(counts.size(), 64u);
}

// A LOCAL epoch beside its dispatcher: every dispatcher call (the job, the client's and
// the worker's heartbeat, the release) skips gRPC; once the dispatcher stops, the
// clients made for it go over gRPC (Unavailable).
TEST(DistributeTest, ADispatcherInThisProcessIsCalledWithoutTheNetwork) {
  InProcessCluster c(1);
  DistributeOptions o = c.Options(ShardingPolicy::kOff);
  o.target_workers = "LOCAL";
  const int64_t before = InProcessDispatcherCalls();
  auto counts = Counts(Distribute(Dataset::Range(64), o));
  EXPECT_EQ(counts.size(), 64u);
  // GetOrRegisterDataset, GetOrCreateJob, ClientHeartbeat, the worker's heartbeat on
  // the consumer's thread, ReleaseJobClient.
  EXPECT_GE(InProcessDispatcherCalls() - before, 5);
  auto client = MakeDispatcherClient(std::string(c.dispatcher->target()).substr(7), 2000,
                                     Security());
  ClientHeartbeatRequest req;
  ClientHeartbeatResponse resp;
  const int64_t mid = InProcessDispatcherCalls();
  EXPECT_EQ(client->ClientHeartbeat(req, &resp).code(), StatusCode::kNotFound);
  EXPECT_EQ(InProcessDispatcherCalls(), mid + 1);
  c.dispatcher->Stop();
  EXPECT_EQ(client->ClientHeartbeat(req, &resp).code(), StatusCode::kUnavailable);
  EXPECT_EQ(InProcessDispatcherCalls(), mid + 1);
}

TEST(DistributeTest, LocalCallableIsRefusedBeforeAnythingIsSent) {
  Function f = Function::Map(
      "add_one", [](const Element& e, FunctionContext&) -> Result<Element> { return e; });
  DistributeOptions o;
  o.service = "grpc://127.0.0.1:1";  // nothing listens: nothing may be contacted
  Dataset ds = Distribute(Dataset::Range(5).Map(f), o);
  EXPECT_EQ(ds.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(ds.status().message().find("add_one"), std::string::npos) << ds.status();
}

TEST(DistributeTest, BadOptionsAreClearErrors) {
  DistributeOptions o;
  o.service = "http://x";
  EXPECT_EQ(Distribute(Dataset::Range(5), o).status().code(),
            StatusCode::kInvalidArgument);
  o.service = "grpc://localhost:5000";
  o.compression = "SNAPPY";
  EXPECT_EQ(Distribute(Dataset::Range(5), o).status().code(),
            StatusCode::kInvalidArgument);
  o.compression = "AUTO";
  o.target_workers = "SOME";
  EXPECT_EQ(Distribute(Dataset::Range(5), o).status().code(),
            StatusCode::kInvalidArgument);
  o.target_workers = "AUTO";
  o.num_consumers = 2;  // without consumer_index
  EXPECT_EQ(Distribute(Dataset::Range(5), o).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ShardingPolicyFromName("file_or_data").value(), ShardingPolicy::kFileOrData);
  EXPECT_FALSE(ShardingPolicyFromName("SOMETIMES").ok());
}

TEST(DistributeTest, UnreachableDispatcherFailsWithinItsTimeout) {
  DistributeOptions o;
  o.service = "grpc://127.0.0.1:1";
  o.dispatcher_timeout_ms = 300;
  auto it = Distribute(Dataset::Range(5), o).MakeIterator();
  EXPECT_FALSE(it.ok());
}

// Every worker gone while splits remain: the read fails after worker_timeout_ms instead
// of waiting for a worker forever.
TEST(DistributeTest, NoLiveWorkerFailsTheReadAfterWorkerTimeout) {
  DispatcherOptions d;
  d.worker_timeout_ms = 300;  // the dispatcher declares a silent worker dead soon
  auto dispatcher = DispatchServer::Start(d);
  ASSERT_TRUE(dispatcher.ok()) << dispatcher.status();
  WorkerOptions w;
  w.dispatcher = (*dispatcher)->target();
  w.heartbeat_interval_ms = 50;
  w.cpu_budget = 1;
  auto worker = WorkServer::Start(w);
  ASSERT_TRUE(worker.ok()) << worker.status();
  DistributeOptions o;
  o.service = (*dispatcher)->target();
  o.worker_timeout_ms = 700;
  o.buffer_elements = 4;
  auto it = Distribute(Dataset::Range(1000000), o).MakeIterator();
  ASSERT_TRUE(it.ok()) << it.status();
  for (int i = 0; i < 10; ++i) {
    auto e = (*it)->GetNext();
    ASSERT_TRUE(e.ok() && e->has_value()) << e.status();
  }
  (*worker)->Stop();
  const auto start = std::chrono::steady_clock::now();
  Status error;
  for (int i = 0; i < 1000000 && error.ok(); ++i) {
    auto e = (*it)->GetNext();
    if (!e.ok()) error = e.status();
    if (e.ok() && !e->has_value()) break;
  }
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(error.code(), StatusCode::kUnavailable) << error;
  EXPECT_NE(error.message().find("worker_timeout_ms"), std::string::npos) << error;
  EXPECT_LT(waited, 30.0);  // generous: 0.3 s + 0.7 s and heartbeats
}

TEST(ElementCodecTest, CompressionRoundTripsAndBadBytesAreErrors) {
  Element e{Tensor::Scalar<std::string>(std::string(10000, 'x')),
            Tensor::Scalar<int64_t>(7)};
  std::string bytes;
  EncodeElement(e, &bytes);
  for (ElementCompression c : {COMPRESSION_NONE, COMPRESSION_ZSTD, COMPRESSION_LZ4}) {
    GetElementResponse resp;
    ASSERT_TRUE(CompressElement(bytes, c, &resp).ok());
    EXPECT_EQ(resp.compression(), c);
    if (c != COMPRESSION_NONE) EXPECT_LT(resp.element().size(), bytes.size() / 10);
    auto back = DecodeResponseElement(resp);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(testing::IntOf(Element{(*back)[1]}), 7);
    EXPECT_EQ((*back)[0].scalar<std::string>(), std::string(10000, 'x'));
    GetElementResponse bad = resp;
    bad.set_element(resp.element().substr(0, resp.element().size() / 2));
    EXPECT_FALSE(DecodeResponseElement(bad).ok());
    bad = resp;
    bad.set_uncompressed_size(kMaxElementBytes + 1);
    EXPECT_EQ(DecodeResponseElement(bad).status().code(), StatusCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace sluice::service
