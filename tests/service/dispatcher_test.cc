#include "service/dispatcher.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "sluice/dataset.h"
#include "sluice/serialize.h"
#include "testing/conformance.h"

namespace sluice::service {
namespace {

using testing::TempDir;

// Leases each task received, as a worker counts them.
std::map<int64_t, int64_t> leases_received;

struct Fixture {
  explicit Fixture(std::string dir) : work_dir(std::move(dir)) {
    leases_received.clear();
  }
  std::string work_dir;
  int64_t now = 1000;
  std::unique_ptr<Dispatcher> Make() {
    DispatcherConfig c;
    c.work_dir = work_dir;
    c.worker_timeout_ms = 100;
    c.client_timeout_ms = 500;
    c.default_lease_splits = 10;
    c.clock = [this] { return now; };
    auto d = std::make_unique<Dispatcher>(c);
    Status s = d->Start();
    EXPECT_TRUE(s.ok()) << s;
    return d;
  }
};

GetOrRegisterDatasetRequest RegisterRequest(const Dataset& ds) {
  GetOrRegisterDatasetRequest req;
  req.set_graph(*SerializeDataset(ds, GraphFormat::kBinary));
  req.set_fingerprint(*DatasetFingerprint(ds));
  return req;
}

int64_t RegisterDataset(Dispatcher* d, const Dataset& ds) {
  GetOrRegisterDatasetResponse resp;
  Status s = d->GetOrRegisterDataset(RegisterRequest(ds), &resp);
  EXPECT_TRUE(s.ok()) << s;
  return resp.dataset_id();
}

GetOrCreateJobResponse Job(Dispatcher* d, int64_t dataset, const std::string& name,
                           ProcessingMode p = DYNAMIC) {
  GetOrCreateJobRequest req;
  req.set_dataset_id(dataset);
  req.set_job_name(name);
  req.set_sharding_policy(p);
  GetOrCreateJobResponse resp;
  Status s = d->GetOrCreateJob(req, &resp);
  EXPECT_TRUE(s.ok()) << s;
  return resp;
}

WorkerHeartbeatResponse Beat(Dispatcher* d, const std::string& addr,
                             std::vector<int64_t> current = {},
                             std::vector<int64_t> finished = {}) {
  WorkerHeartbeatRequest req;
  req.set_worker_address(addr);
  for (int64_t t : current) req.add_current_task(t);
  for (int64_t t : finished) req.add_finished_task(t);
  WorkerHeartbeatResponse resp;
  Status s = d->WorkerHeartbeat(req, &resp);
  EXPECT_TRUE(s.ok()) << s;
  return resp;
}

GetSplitsResponse Splits(Dispatcher* d, int64_t task, int64_t n = 0) {
  GetSplitsRequest req;
  req.set_task_id(task);
  req.set_max_splits(n);
  req.set_lease_index(leases_received[task]);
  GetSplitsResponse resp;
  Status s = d->GetSplits(req, &resp);
  EXPECT_TRUE(s.ok()) << s;
  if (s.ok() && !resp.end_of_splits()) ++leases_received[task];
  return resp;
}

ClientHeartbeatResponse ClientBeat(Dispatcher* d, const GetOrCreateJobResponse& job) {
  ClientHeartbeatRequest req;
  req.set_job_id(job.job_id());
  req.set_client_id(job.client_id());
  ClientHeartbeatResponse resp;
  Status s = d->ClientHeartbeat(req, &resp);
  EXPECT_TRUE(s.ok()) << s;
  return resp;
}

TEST(DispatcherTest, DatasetsAreDeduplicatedByFingerprint) {
  TempDir dir;
  Fixture f(dir.path());
  auto d = f.Make();
  const int64_t a = RegisterDataset(d.get(), Dataset::Range(100));
  EXPECT_EQ(RegisterDataset(d.get(), Dataset::Range(100)), a);
  EXPECT_NE(RegisterDataset(d.get(), Dataset::Range(101)), a);
  auto req = RegisterRequest(Dataset::Range(5));
  req.set_fingerprint("0000");
  GetOrRegisterDatasetResponse resp;
  Status s = d->GetOrRegisterDataset(req, &resp);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("fingerprint"), std::string::npos);
  req.set_graph("not a graph");
  EXPECT_FALSE(d->GetOrRegisterDataset(req, &resp).ok());
}

TEST(DispatcherTest, SecondClientWithTheJobNameJoinsTheJob) {
  TempDir dir;
  Fixture f(dir.path());
  auto d = f.Make();
  const int64_t ds = RegisterDataset(d.get(), Dataset::Range(100));
  auto a = Job(d.get(), ds, "train");
  auto b = Job(d.get(), ds, "train");
  auto c = Job(d.get(), ds, "");
  EXPECT_EQ(a.job_id(), b.job_id());
  EXPECT_NE(a.client_id(), b.client_id());
  EXPECT_NE(c.job_id(), a.job_id());
  GetOrCreateJobRequest other;
  other.set_dataset_id(ds);
  other.set_job_name("train");
  other.set_sharding_policy(OFF);
  GetOrCreateJobResponse resp;
  EXPECT_EQ(d->GetOrCreateJob(other, &resp).code(), StatusCode::kInvalidArgument);
}

TEST(DispatcherTest, DynamicLeasesCoverEverySplitOnceWithOneRpcPerLease) {
  TempDir dir;
  Fixture f(dir.path());
  auto d = f.Make();
  Beat(d.get(), "w0");
  Beat(d.get(), "w1");
  const int64_t ds = RegisterDataset(d.get(), Dataset::Range(95));
  auto job = Job(d.get(), ds, "j");
  auto t0 = Beat(d.get(), "w0");
  auto t1 = Beat(d.get(), "w1");
  ASSERT_EQ(t0.new_task_size(), 1);
  ASSERT_EQ(t1.new_task_size(), 1);
  EXPECT_EQ(t0.new_task(0).graph(), RegisterRequest(Dataset::Range(95)).graph());
  std::vector<int> seen(95, 0);
  int rpcs = 0;
  bool done0 = false, done1 = false;
  while (!done0 || !done1) {
    for (auto [task, done] : {std::pair{t0.new_task(0).task_id(), &done0},
                              std::pair{t1.new_task(0).task_id(), &done1}}) {
      if (*done) continue;
      auto r = Splits(d.get(), task);
      ++rpcs;
      if (r.end_of_splits()) {
        *done = true;
        continue;
      }
      EXPECT_LE(r.end() - r.begin(), 10);
      for (int64_t i = r.begin(); i < r.end(); ++i) ++seen[i];
    }
  }
  for (int i = 0; i < 95; ++i) EXPECT_EQ(seen[i], 1) << i;
  EXPECT_EQ(rpcs, 10 + 2);  // ceil(95 / 10) leases plus one end-of-splits per worker
  EXPECT_EQ(d->split_rpcs(), rpcs);
  EXPECT_FALSE(ClientBeat(d.get(), job).job_finished());
  Beat(d.get(), "w0", {}, {t0.new_task(0).task_id()});
  EXPECT_FALSE(ClientBeat(d.get(), job).job_finished());
  Beat(d.get(), "w1", {}, {t1.new_task(0).task_id()});
  EXPECT_TRUE(ClientBeat(d.get(), job).job_finished());
}

TEST(DispatcherTest, DeadWorkerLosesItsLeasesAndTheJobFinishesOnTheOthers) {
  TempDir dir;
  Fixture f(dir.path());
  auto d = f.Make();
  Beat(d.get(), "w0");
  Beat(d.get(), "w1");
  const int64_t ds = RegisterDataset(d.get(), Dataset::Range(30));
  auto job = Job(d.get(), ds, "j");
  const int64_t t0 = Beat(d.get(), "w0").new_task(0).task_id();
  const int64_t t1 = Beat(d.get(), "w1").new_task(0).task_id();
  auto lease = Splits(d.get(), t1);  // w1 holds 10 splits, then dies
  EXPECT_EQ(lease.end() - lease.begin(), 10);
  f.now += 80;
  Beat(d.get(), "w0", {t0});
  f.now += 80;
  ASSERT_TRUE(d->Tick().ok());
  auto beat = ClientBeat(d.get(), job);
  EXPECT_EQ(beat.lost_splits(), 10);
  ASSERT_EQ(beat.lost_task_size(), 1);
  EXPECT_EQ(beat.lost_task(0), t1);
  ASSERT_EQ(beat.task_size(), 1);
  EXPECT_EQ(beat.task(0).worker_address(), "w0");
  // The lost task gets no more splits; the survivor gets the rest.
  GetSplitsRequest req;
  req.set_task_id(t1);
  GetSplitsResponse resp;
  EXPECT_EQ(d->GetSplits(req, &resp).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(Splits(d.get(), t0).begin(), 10);
  EXPECT_EQ(Splits(d.get(), t0).begin(), 20);
  EXPECT_TRUE(Splits(d.get(), t0).end_of_splits());
  Beat(d.get(), "w0", {}, {t0});
  EXPECT_TRUE(ClientBeat(d.get(), job).job_finished());
  // A dead worker that comes back re-registers and is told to drop its lost task.
  auto back = Beat(d.get(), "w1", {t1});
  ASSERT_EQ(back.removed_task_size(), 1);
  EXPECT_EQ(back.removed_task(0), t1);
}

TEST(DispatcherTest, RestartReplaysTheJournalAndLeasesContinue) {
  TempDir dir;
  Fixture f(dir.path());
  int64_t task, job_id;
  {
    auto d = f.Make();
    Beat(d.get(), "w0");
    const int64_t ds = RegisterDataset(d.get(), Dataset::Range(50));
    job_id = Job(d.get(), ds, "j").job_id();
    task = Beat(d.get(), "w0").new_task(0).task_id();
    EXPECT_EQ(Splits(d.get(), task).end(), 10);
    EXPECT_EQ(Splits(d.get(), task).end(), 20);
  }
  auto d = f.Make();
  EXPECT_GT(d->updates_replayed(), 5);
  // The worker carries on with its task: not new, not removed.
  auto beat = Beat(d.get(), "w0", {task});
  EXPECT_EQ(beat.new_task_size(), 0);
  EXPECT_EQ(beat.removed_task_size(), 0);
  EXPECT_EQ(Splits(d.get(), task).begin(), 20);
  // A client joining the job by name after the restart finds it.
  const int64_t ds = RegisterDataset(d.get(), Dataset::Range(50));
  EXPECT_EQ(Job(d.get(), ds, "j").job_id(), job_id);
  EXPECT_EQ(d->StateForTest().FindJob(job_id)->next_split, 30);
}

TEST(DispatcherTest, ARetriedLeaseRequestGetsTheSameLease) {
  TempDir dir;
  Fixture f(dir.path());
  int64_t task;
  {
    auto d = f.Make();
    Beat(d.get(), "w0");
    Job(d.get(), RegisterDataset(d.get(), Dataset::Range(50)), "j");
    task = Beat(d.get(), "w0").new_task(0).task_id();
    EXPECT_EQ(Splits(d.get(), task).begin(), 0);
    // Granted and journaled, then the dispatcher dies before the worker hears of it.
    GetSplitsRequest req;
    req.set_task_id(task);
    req.set_lease_index(1);
    GetSplitsResponse lost;
    ASSERT_TRUE(d->GetSplits(req, &lost).ok());
    EXPECT_EQ(lost.begin(), 10);
  }
  auto d = f.Make();
  auto again = Splits(d.get(), task);  // the worker retries with lease_index 1
  EXPECT_EQ(again.begin(), 10);
  EXPECT_EQ(again.end(), 20);
  EXPECT_EQ(Splits(d.get(), task).begin(), 20);
  GetSplitsRequest stale;
  stale.set_task_id(task);
  stale.set_lease_index(0);
  GetSplitsResponse resp;
  EXPECT_EQ(d->GetSplits(stale, &resp).code(), StatusCode::kInvalidArgument);
}

TEST(DispatcherTest, TornJournalTailIsDroppedOnRestart) {
  TempDir dir;
  Fixture f(dir.path());
  int64_t task;
  {
    auto d = f.Make();
    Beat(d.get(), "w0");
    const int64_t ds = RegisterDataset(d.get(), Dataset::Range(50));
    Job(d.get(), ds, "j");
    task = Beat(d.get(), "w0").new_task(0).task_id();
    Splits(d.get(), task);
  }
  std::string data = testing::ReadFile(dir.File("journal"));
  testing::WriteFile(dir.File("journal"), data.substr(0, data.size() - 3));
  auto d = f.Make();
  EXPECT_GT(d->journal_dropped_bytes(), 0);
  leases_received[task] = 0;  // the torn lease never reached the worker
  // The torn lease was never acknowledged: it is handed out again.
  EXPECT_EQ(Splits(d.get(), task).begin(), 0);
}

TEST(DispatcherTest, ClientTimeoutReleasesTheJob) {
  TempDir dir;
  Fixture f(dir.path());
  auto d = f.Make();
  Beat(d.get(), "w0");
  const int64_t ds = RegisterDataset(d.get(), Dataset::Range(50));
  auto job = Job(d.get(), ds, "j");
  const int64_t task = Beat(d.get(), "w0").new_task(0).task_id();
  f.now += 400;
  ASSERT_TRUE(d->Tick().ok());
  ClientBeat(d.get(), job);  // still alive
  f.now += 600;
  Beat(d.get(), "w0", {task});
  ASSERT_TRUE(d->Tick().ok());
  ClientHeartbeatRequest req;
  req.set_job_id(job.job_id());
  req.set_client_id(job.client_id());
  ClientHeartbeatResponse resp;
  EXPECT_EQ(d->ClientHeartbeat(req, &resp).code(), StatusCode::kNotFound);
  EXPECT_TRUE(d->StateForTest().FindJob(job.job_id())->released);
  // The worker is told to drop the released job's task; the name is free again.
  auto beat = Beat(d.get(), "w0", {task});
  ASSERT_EQ(beat.removed_task_size(), 1);
  EXPECT_NE(Job(d.get(), ds, "j").job_id(), job.job_id());
}

TEST(DispatcherTest, StaticShardingNumbersTheWorkers) {
  TempDir dir;
  Fixture f(dir.path());
  auto d = f.Make();
  for (auto w : {"w0", "w1", "w2"}) Beat(d.get(), w);
  const int64_t ds = RegisterDataset(d.get(), Dataset::Range(50));
  Job(d.get(), ds, "j", DATA);
  std::set<int64_t> indices;
  for (auto w : {"w0", "w1", "w2"}) {
    auto beat = Beat(d.get(), w);
    ASSERT_EQ(beat.new_task_size(), 1);
    EXPECT_EQ(beat.new_task(0).sharding_policy(), DATA);
    EXPECT_EQ(beat.new_task(0).num_workers(), 3);
    indices.insert(beat.new_task(0).worker_index());
  }
  EXPECT_EQ(indices, (std::set<int64_t>{0, 1, 2}));
  // A Range source has no files: FILE_OR_DATA means DATA.
  Job(d.get(), ds, "k", FILE_OR_DATA);
  EXPECT_EQ(Beat(d.get(), "w0", {1}).new_task(0).sharding_policy(), DATA);
}

// A coordinated job's tasks are fixed at creation: with no live worker it is refused as
// Unavailable (the client retries), not made with no task to serve any round.
TEST(DispatcherTest, CoordinatedJobWaitsForALiveWorker) {
  TempDir dir;
  Fixture f(dir.path());
  auto d = f.Make();
  const int64_t ds = RegisterDataset(d.get(), Dataset::Range(50));
  GetOrCreateJobRequest req;
  req.set_dataset_id(ds);
  req.set_job_name("c");
  req.set_sharding_policy(OFF);
  req.set_num_consumers(2);
  GetOrCreateJobResponse resp;
  EXPECT_EQ(d->GetOrCreateJob(req, &resp).code(), StatusCode::kUnavailable);
  Beat(d.get(), "w0");
  // A worker that timed out is not live either.
  f.now += 1000;
  ASSERT_TRUE(d->Tick().ok());
  EXPECT_EQ(d->GetOrCreateJob(req, &resp).code(), StatusCode::kUnavailable);
  Beat(d.get(), "w1");
  ASSERT_TRUE(d->GetOrCreateJob(req, &resp).ok());
  auto beat = Beat(d.get(), "w1");
  ASSERT_EQ(beat.new_task_size(), 1);
  EXPECT_EQ(beat.new_task(0).num_consumers(), 2);
  EXPECT_EQ(ClientBeat(d.get(), resp).task_size(), 1);
}

TEST(DispatcherTest, DynamicNeedsASplittablePipeline) {
  TempDir dir;
  Fixture f(dir.path());
  auto d = f.Make();
  const int64_t ds = RegisterDataset(d.get(), Dataset::Range(5).Repeat(2));
  GetOrCreateJobRequest req;
  req.set_dataset_id(ds);
  req.set_sharding_policy(DYNAMIC);
  GetOrCreateJobResponse resp;
  EXPECT_EQ(d->GetOrCreateJob(req, &resp).code(), StatusCode::kFailedPrecondition);
}

// A LOCAL job's tasks run direct on their workers (pulled on the consumer's thread) and
// a cross-trainer-cache job's tasks serve from the cache; both survive a restart.
TEST(DispatcherTest, JobFlagsReachTheTasksAndTheJournal) {
  TempDir dir;
  Fixture f(dir.path());
  const Dataset range = Dataset::Range(50);
  for (int restart = 0; restart < 2; ++restart) {
    auto d = f.Make();
    const int64_t ds = RegisterDataset(d.get(), range);
    if (restart == 0) {
      Beat(d.get(), "w0");
      GetOrCreateJobRequest req;
      req.set_dataset_id(ds);
      req.set_job_name("local");
      req.set_sharding_policy(OFF);
      req.set_local_consumers(true);
      GetOrCreateJobResponse resp;
      ASSERT_TRUE(d->GetOrCreateJob(req, &resp).ok());
      req.set_job_name("shared");
      req.set_local_consumers(false);
      req.set_cross_trainer_cache(true);
      ASSERT_TRUE(d->GetOrCreateJob(req, &resp).ok());
      // Joining a shared job without the cache (or the reverse) is refused.
      req.set_cross_trainer_cache(false);
      EXPECT_EQ(d->GetOrCreateJob(req, &resp).code(), StatusCode::kInvalidArgument);
    }
    auto beat = Beat(d.get(), "w0");
    ASSERT_EQ(beat.new_task_size(), 2) << "restart " << restart;
    EXPECT_TRUE(beat.new_task(0).local_consumers());
    EXPECT_FALSE(beat.new_task(0).cross_trainer_cache());
    EXPECT_FALSE(beat.new_task(1).local_consumers());
    EXPECT_TRUE(beat.new_task(1).cross_trainer_cache());
  }
}

}  // namespace
}  // namespace sluice::service
