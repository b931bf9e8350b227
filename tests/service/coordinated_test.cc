// Coordinated reads: m consumers of one job read it in rounds, every round's batches
// from one bucket of bucket_by_sequence_length; in-process workers (m = 2, 3) and worker
// processes with one killed mid-run (loopback, bounded in time).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <barrier>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <thread>

#include "service/tsan_suppressions.h"
#include "sluice/dataset.h"
#include "sluice/service.h"
#include "testing/conformance.h"

namespace sluice::service {
namespace {

using testing::SluiceBinary;
using testing::TempDir;

// 300 sentences of 1..23 tokens ("t1 t2 ..."), tokenized and bucketed by length into
// batches of 4 padded to their bucket's boundary: a batch's width names its bucket.
Dataset Sentences(const TempDir& dir) {
  const std::string text = dir.path() + "/sentences.txt", vocab = dir.path() + "/vocab.txt";
  {
    std::ofstream f(text);
    for (int i = 0; i < 300; ++i) {
      const int n = (i * 7) % 23 + 1;
      for (int t = 1; t <= n; ++t) f << "t" << t << (t < n ? " " : "\n");
    }
    std::ofstream v(vocab);
    for (int t = 0; t <= 30; ++t) v << "t" << t << "\n";
  }
  return Dataset::TextLine({text})
      .Map(*Function::Kernel("tokenize", {{"vocab_file", vocab}}))
      .BucketBySequenceLength(*Function::Kernel("sequence_length"), {6, 12, 18, 24},
                              {4, 4, 4, 4, 4}, {}, {}, /*pad_to_bucket_boundary=*/true);
}

struct Consumer {
  std::vector<int64_t> widths;  // per batch received
  JobReport report;
  Status status;
};

// m consumers read the job at once, in lockstep as the trainers of a synchronous step
// (a barrier after every batch); returns each one's batches and report.
std::vector<Consumer> ReadCoordinated(const Dataset& ds, const std::string& target,
                                      int64_t m, const std::string& job,
                                      const std::function<void(int64_t)>& on_batch = {},
                                      int64_t round_wait_ms = 1000) {
  std::vector<Consumer> out(static_cast<size_t>(m));
  std::vector<std::thread> threads;
  std::barrier step(static_cast<std::ptrdiff_t>(m));
  const size_t before = JobReports().size();
  for (int64_t c = 0; c < m; ++c) {
    threads.emplace_back([&, c] {
      DistributeOptions o;
      o.processing_mode = ShardingPolicy::kOff;
      o.service = target;
      o.job_name = job;
      o.num_consumers = m;
      o.consumer_index = c;
      o.round_wait_ms = round_wait_ms;
      auto it = Distribute(ds, o).MakeIterator();
      if (!it.ok()) {
        out[c].status = it.status();
        step.arrive_and_drop();
        return;
      }
      for (;;) {
        auto e = (*it)->GetNext();
        if (!e.ok()) {
          out[c].status = e.status();
          step.arrive_and_drop();
          return;
        }
        if (!e->has_value()) {
          it->reset();  // its report is recorded now
          step.arrive_and_drop();
          return;
        }
        step.arrive_and_wait();
        out[c].widths.push_back((**e)[0].shape().dims()[1]);
        if (on_batch && c == 0) on_batch(static_cast<int64_t>(out[c].widths.size()));
      }
    });
  }
  for (auto& t : threads) t.join();
  auto reports = JobReports();
  for (size_t i = before; i < reports.size(); ++i) {
    const int64_t c = reports[i].consumer_index;
    if (c >= 0 && c < m) out[c].report = reports[i];
  }
  for (int64_t c = 0; c < m; ++c) {
    EXPECT_EQ(out[c].report.elements, static_cast<int64_t>(out[c].widths.size()));
  }
  return out;
}

// Every round that two consumers both received has one width; returns the rounds.
int64_t ExpectRoundsAgree(const std::vector<Consumer>& consumers) {
  std::map<int64_t, std::set<int64_t>> widths_by_round;
  std::map<int64_t, int> consumers_by_round;
  for (const Consumer& c : consumers) {
    EXPECT_TRUE(c.status.ok()) << c.status;
    EXPECT_TRUE(c.report.finished);
    std::set<int64_t> skipped(c.report.skipped_rounds.begin(),
                              c.report.skipped_rounds.end());
    int64_t round = 0;
    for (int64_t w : c.widths) {
      while (skipped.count(round)) ++round;
      widths_by_round[round].insert(w);
      ++consumers_by_round[round];
      ++round;
    }
  }
  for (const auto& [round, widths] : widths_by_round) {
    EXPECT_EQ(widths.size(), 1u) << "round " << round << " mixes buckets";
  }
  return static_cast<int64_t>(widths_by_round.size());
}

TEST(CoordinatedReadsTest, EveryRoundIsOneBucketWithTwoAndThreeConsumers) {
  TempDir dir;
  Dataset ds = Sentences(dir);
  ASSERT_TRUE(ds.ok()) << ds.status();
  auto d = DispatchServer::Start({});
  ASSERT_TRUE(d.ok());
  std::vector<std::unique_ptr<WorkServer>> workers;
  for (int i = 0; i < 2; ++i) {
    WorkerOptions w;
    w.dispatcher = (*d)->target();
    w.heartbeat_interval_ms = 50;
    w.cpu_budget = 1;
    workers.push_back(std::move(*WorkServer::Start(w)));
  }
  for (int64_t m : {2, 3}) {
    auto consumers = ReadCoordinated(ds, (*d)->target(), m, "m" + std::to_string(m));
    const int64_t rounds = ExpectRoundsAgree(consumers);
    // 300 sentences in batches of 4 per worker: about 75 batches a worker, two workers.
    EXPECT_GE(rounds, 150 / m - 10) << "m " << m;
    for (const Consumer& c : consumers) {
      EXPECT_EQ(c.widths.size(), consumers[0].widths.size()) << "m " << m;
      // Batches of several widths came, not one bucket throughout.
      EXPECT_GT(std::set<int64_t>(c.widths.begin(), c.widths.end()).size(), 2u);
    }
  }
}

TEST(CoordinatedReadsTest, ArgumentsAreChecked) {
  DistributeOptions o;
  o.service = "grpc://127.0.0.1:1";
  o.job_name = "j";
  o.num_consumers = 2;
  EXPECT_EQ(Distribute(Dataset::Range(3), o).status().code(),
            StatusCode::kInvalidArgument);  // no consumer_index
  o.consumer_index = 2;
  EXPECT_EQ(Distribute(Dataset::Range(3), o).status().code(),
            StatusCode::kInvalidArgument);
  o.consumer_index = 1;
  o.job_name = "";
  EXPECT_EQ(Distribute(Dataset::Range(3), o).status().code(),
            StatusCode::kInvalidArgument);
}

// A `sluice worker` process; its port file is written once it has registered.
pid_t StartWorker(const std::string& dispatcher, const std::string& log,
                  const std::string& port_file) {
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    const std::string bin = SluiceBinary();
    execl(bin.c_str(), bin.c_str(), "worker", "--dispatcher", dispatcher.c_str(),
          "--cpu-budget", "1", "--heartbeat-ms", "100", "--port-file", port_file.c_str(),
          nullptr);
    _exit(127);
  }
  return pid;
}

TEST(CoordinatedReadsTest, AKilledWorkersRoundsAreSkippedByEveryConsumer) {
  // A watchdog bounds the test in time; the worker processes die with the test,
  // however it returns.
  struct Guard {
    std::vector<pid_t> workers;
    std::atomic<bool> done{false};
    std::thread watchdog{[this] {
      for (int i = 0; i < 1200 && !done; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (!done) {
        std::fprintf(stderr, "coordinated reads test: over 120 s\n");
        std::abort();
      }
    }};
    ~Guard() {
      for (pid_t p : workers) {
        kill(p, SIGKILL);
        waitpid(p, nullptr, 0);
      }
      done = true;
      watchdog.join();
    }
  } guard;
  std::vector<pid_t>& workers = guard.workers;
  TempDir dir;
  Dataset ds = Sentences(dir);
  DispatcherOptions dopts;
  // Long enough that a live worker of a sanitizer build on a loaded machine is not lost
  // before the job is made (its tasks are fixed then); the killed one is lost after it.
  dopts.worker_timeout_ms = 3000;
  auto d = DispatchServer::Start(dopts);
  ASSERT_TRUE(d.ok());
  const std::string addr = "127.0.0.1:" + std::to_string((*d)->port());
  for (int i = 0; i < 3; ++i) {
    const std::string pf = dir.path() + "/w" + std::to_string(i) + ".port";
    workers.push_back(StartWorker(addr, dir.path() + "/w.log", pf));
    // Up to 60 s: a sanitizer build on a loaded machine starts slowly.
    ASSERT_GT(testing::WaitForPortFile(pf, 60000), 0)
        << testing::ReadFile(dir.path() + "/w.log");
  }
  bool killed = false;
  auto consumers =
      ReadCoordinated(ds, (*d)->target(), 2, "killed", [&](int64_t batches) {
        if (batches == 20 && !killed) {
          kill(workers[1], SIGKILL);
          killed = true;
        }
      }, 3000);
  EXPECT_TRUE(killed);
  const int64_t rounds = ExpectRoundsAgree(consumers);
  EXPECT_GE(rounds, 40);
  // The dead worker's rounds after the kill were skipped by both consumers, and said so;
  // only the round it died in may have reached one consumer and not the other, and a
  // round a consumer gave up on (3 s) that the other still got, on a loaded machine.
  const auto& a = consumers[0].report.skipped_rounds;
  const auto& b = consumers[1].report.skipped_rounds;
  EXPECT_GT(a.size(), 5u);
  std::vector<int64_t> differ;
  std::set_symmetric_difference(a.begin(), a.end(), b.begin(), b.end(),
                                std::back_inserter(differ));
  EXPECT_LE(differ.size(), 3u) << ::testing::PrintToString(a) << " vs "
                               << ::testing::PrintToString(b);
}

}  // namespace
}  // namespace sluice::service
