// The service across processes on loopback: `sluice dispatcher` and `sluice worker`
// processes, clients in this process. Each test is bounded in time by a watchdog (a few
// seconds each in the default build; under TSan up to a minute).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <set>
#include <thread>

#include "sluice/dataset.h"
#include "service/tsan_suppressions.h"
#include "sluice/service.h"
#include "testing/conformance.h"

namespace sluice::service {
namespace {

using testing::SluiceBinary;
using testing::TempDir;

// A child process killed (SIGKILL) at destruction.
class Proc {
 public:
  Proc(std::vector<std::string> args, const std::string& log) {
    pid_ = fork();
    if (pid_ == 0) {
      const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      dup2(fd, 1);
      dup2(fd, 2);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
  }
  ~Proc() { Kill(); }
  void Kill() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
  }

 private:
  pid_t pid_ = -1;
};

int WaitPort(const std::string& file) { return testing::WaitForPortFile(file, 20000); }

// Kills the test process if a test runs past its bound.
class Watchdog {
 public:
  explicit Watchdog(int seconds) {
    thread_ = std::thread([this, seconds] {
      for (int i = 0; i < seconds * 10 && !done_; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      if (!done_) {
        fprintf(stderr, "watchdog: the test ran past %d s\n", seconds);
        _exit(3);
      }
    });
  }
  ~Watchdog() {
    done_ = true;
    thread_.join();
  }

 private:
  std::atomic<bool> done_{false};
  std::thread thread_;
};

struct Cluster {
  TempDir dir;
  std::unique_ptr<Proc> dispatcher;
  std::vector<std::unique_ptr<Proc>> workers;
  int port = 0;

  // A worker silent for worker_timeout_ms is dead: long enough that a loaded machine (or
  // a sanitizer build) does not lose a live one, except where a test kills one.
  int64_t worker_timeout_ms = 10000;

  void StartDispatcher(int fixed_port = 0) {
    const std::string pf = dir.File("dispatcher.port");
    unlink(pf.c_str());
    dispatcher = std::make_unique<Proc>(
        std::vector<std::string>{SluiceBinary(), "dispatcher", "--port",
                                 std::to_string(fixed_port), "--work-dir", dir.path(),
                                 "--worker-timeout-ms", std::to_string(worker_timeout_ms),
                                 "--port-file", pf},
        dir.File("dispatcher.log"));
    port = WaitPort(pf);
    ASSERT_GT(port, 0) << testing::ReadFile(dir.File("dispatcher.log"));
  }
  void StartWorker() {
    const std::string pf = dir.File("worker" + std::to_string(workers.size()) + ".port");
    workers.push_back(std::make_unique<Proc>(
        std::vector<std::string>{SluiceBinary(), "worker", "--dispatcher",
                                 "127.0.0.1:" + std::to_string(port), "--heartbeat-ms",
                                 "100", "--lease-splits", "50", "--cpu-budget", "1",
                                 "--port-file", pf},
        dir.File("worker.log")));
    ASSERT_GT(WaitPort(pf), 0) << testing::ReadFile(dir.File("worker.log"));
  }
  Dataset Distributed(int64_t n, const std::string& job) const {
    DistributeOptions o;
    o.processing_mode = ShardingPolicy::kDynamic;
    o.service = "grpc://127.0.0.1:" + std::to_string(port);
    o.job_name = job;
    o.compression = "NONE";
    return Distribute(Dataset::Range(n), o);
  }
};

// Reads `it` to the end into `out`; `after(count)` runs after each element.
Status ReadAll(Iterator* it, std::vector<int64_t>* out,
               const std::function<void(int64_t)>& after = nullptr) {
  for (;;) {
    auto e = it->GetNext();
    if (!e.ok()) return e.status();
    if (!e->has_value()) return Status::OK();
    out->push_back(testing::IntOf(**e));
    if (after) after(static_cast<int64_t>(out->size()));
  }
}

void ExpectAtMostOnce(const std::vector<int64_t>& all, int64_t n, int64_t* missing) {
  std::vector<int> seen(n, 0);
  for (int64_t v : all) {
    ASSERT_GE(v, 0);
    ASSERT_LT(v, n);
    ASSERT_EQ(++seen[v], 1) << "element " << v << " delivered twice";
  }
  *missing = n - static_cast<int64_t>(all.size());
}

TEST(MultiProcessTest, ThreeWorkersTwoClientsDynamicExactlyOnce) {
  Watchdog watchdog(300);
  Cluster c;
  ASSERT_NO_FATAL_FAILURE(c.StartDispatcher());
  for (int i = 0; i < 3; ++i) ASSERT_NO_FATAL_FAILURE(c.StartWorker());
  const int64_t n = 4000;
  Dataset ds = c.Distributed(n, "shared");
  auto a = ds.MakeIterator();  // both clients join before either reads
  auto b = ds.MakeIterator();
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  std::vector<int64_t> ra, rb;
  Status sa, sb;
  std::thread ta([&] { sa = ReadAll(a->get(), &ra); });
  std::thread tb([&] { sb = ReadAll(b->get(), &rb); });
  ta.join();
  tb.join();
  ASSERT_TRUE(sa.ok()) << sa;
  ASSERT_TRUE(sb.ok()) << sb;
  EXPECT_GT(ra.size(), 0u);
  EXPECT_GT(rb.size(), 0u);
  std::vector<int64_t> all = ra;
  all.insert(all.end(), rb.begin(), rb.end());
  int64_t missing = -1;
  ExpectAtMostOnce(all, n, &missing);
  EXPECT_EQ(missing, 0);
}

TEST(MultiProcessTest, KilledWorkerLosesAtMostWhatItHeld) {
  Watchdog watchdog(300);
  Cluster c;
  c.worker_timeout_ms = 3000;
  ASSERT_NO_FATAL_FAILURE(c.StartDispatcher());
  for (int i = 0; i < 3; ++i) ASSERT_NO_FATAL_FAILURE(c.StartWorker());
  const int64_t n = 4000;
  auto it = c.Distributed(n, "killworker").MakeIterator();
  ASSERT_TRUE(it.ok()) << it.status();
  std::vector<int64_t> got;
  Status s = ReadAll(it->get(), &got, [&](int64_t count) {
    if (count == n / 4) c.workers[1]->Kill();
  });
  ASSERT_TRUE(s.ok()) << s;
  int64_t missing = -1;
  ExpectAtMostOnce(got, n, &missing);
  it->reset();  // records the job's report
  const JobReport report = JobReports().back();
  EXPECT_TRUE(report.finished);
  EXPECT_EQ(report.lost_tasks, 1);
  EXPECT_LE(missing, report.lost_splits) << "lost more than the dead worker held";
  EXPECT_GT(static_cast<int64_t>(got.size()), n / 4);
}

TEST(MultiProcessTest, KilledDispatcherRestartsFromItsJournal) {
  Watchdog watchdog(300);
  Cluster c;
  ASSERT_NO_FATAL_FAILURE(c.StartDispatcher());
  for (int i = 0; i < 3; ++i) ASSERT_NO_FATAL_FAILURE(c.StartWorker());
  const int64_t n = 4000;
  auto it = c.Distributed(n, "killdispatcher").MakeIterator();
  ASSERT_TRUE(it.ok()) << it.status();
  std::vector<int64_t> got;
  const int port = c.port;
  Status s = ReadAll(it->get(), &got, [&](int64_t count) {
    if (count != n / 4) return;
    c.dispatcher->Kill();
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    c.StartDispatcher(port);
  });
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(c.port, port);
  int64_t missing = -1;
  ExpectAtMostOnce(got, n, &missing);
  EXPECT_EQ(missing, 0);
  const std::string log = testing::ReadFile(c.dir.File("dispatcher.log"));
  EXPECT_NE(log.find("updates replayed"), std::string::npos);
}

}  // namespace
}  // namespace sluice::service
