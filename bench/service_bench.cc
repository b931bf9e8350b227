// The service's costs (docs/service.md#performance).
//
//   BM_Splits{InProcess,Grpc}/lease: DYNAMIC splits handed out per second by the
//     dispatcher (journal fsynced per lease), with one GetSplits RPC per lease of `lease`
//     splits: counters splits_per_second, rpcs_per_lease.
//   BM_ImagePipeline{Plain,LocalWorker}: the same image pipeline read directly and
//   through
//     Distribute with a worker in this process (target_workers="LOCAL"): ns_per_batch;
//     the overhead is the ratio of the two.
//   BM_LocalWorkerOverhead: the two alternated epoch by epoch, 60 pairs (the figure to
//     quote on a shared machine): median_pair_overhead_percent (wall) with
//     median_pair_ci95_{low,high}, pairs_local_slower and sign_test_p;
//     median_pair_cpu_overhead_percent (process CPU, getrusage) with its interval;
//     overhead_percent and cpu_overhead_percent from the sums; {plain,local}_{,cpu_}
//     ms_per_epoch.
//   BM_LocalWorkerPerElement: what a LOCAL read adds per element (int64 scalars):
//     local_extra_ns_per_element, local_extra_cpu_ns_per_element, 95% intervals.
//   BM_LocalWorkerEpochSetup: the fixed CPU cost of one LOCAL epoch (job set-up, task
//     start, release) on a one-element pipeline: cpu_us_per_epoch.
//   BM_RemoteClientCpu/{tiny,images}: a client reading from two `sluice worker`
//     processes on loopback: client_cpu_ns_per_element (this process's CPU time, which
//     holds only the client and an idle dispatcher, per element).
//
//   ./build/service_bench --benchmark_format=json
#include <benchmark/benchmark.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <thread>

#include "paired_stats.h"
#include "service/dispatcher.h"
#include "service/grpc_transport.h"
#include "sluice/dataset.h"
#include "sluice/serialize.h"
#include "sluice/service.h"

namespace sluice::service {
namespace {

std::string TempWorkDir() {
  char tmpl[] = "/tmp/sluice_service_bench_XXXXXX";
  return mkdtemp(tmpl);
}

// A dispatcher with one DYNAMIC job over `splits` splits and its task on worker "w".
template <typename Client>
int64_t SetUpJob(Client* d, int64_t splits) {
  Dataset ds = Dataset::Range(splits);
  GetOrRegisterDatasetRequest rreq;
  rreq.set_graph(*SerializeDataset(ds, GraphFormat::kBinary));
  rreq.set_fingerprint(*DatasetFingerprint(ds));
  GetOrRegisterDatasetResponse rresp;
  WorkerHeartbeatRequest hreq;
  hreq.set_worker_address("w");
  WorkerHeartbeatResponse hresp;
  if (!d->WorkerHeartbeat(hreq, &hresp).ok()) return -1;
  if (!d->GetOrRegisterDataset(rreq, &rresp).ok()) return -1;
  GetOrCreateJobRequest jreq;
  jreq.set_dataset_id(rresp.dataset_id());
  jreq.set_sharding_policy(DYNAMIC);
  GetOrCreateJobResponse jresp;
  if (!d->GetOrCreateJob(jreq, &jresp).ok()) return -1;
  hresp.Clear();
  if (!d->WorkerHeartbeat(hreq, &hresp).ok() || hresp.new_task_size() != 1) return -1;
  return hresp.new_task(0).task_id();
}

template <typename Client>
void LeaseLoop(benchmark::State& state, Client* d, int64_t task) {
  const int64_t lease = state.range(0);
  int64_t splits = 0, rpcs = 0, index = 0;
  for (auto _ : state) {
    GetSplitsRequest req;
    req.set_task_id(task);
    req.set_max_splits(lease);
    req.set_lease_index(index++);
    GetSplitsResponse resp;
    Status s = d->GetSplits(req, &resp);
    if (!s.ok() || resp.end_of_splits()) {
      state.SkipWithError(s.ok() ? "ran out of splits" : s.ToString().c_str());
      return;
    }
    splits += resp.end() - resp.begin();
    ++rpcs;
  }
  state.counters["splits_per_second"] =
      benchmark::Counter(static_cast<double>(splits), benchmark::Counter::kIsRate);
  state.counters["rpcs_per_lease"] =
      static_cast<double>(rpcs) / static_cast<double>(rpcs);
  state.counters["rpcs"] = static_cast<double>(rpcs);
}

void BM_SplitsInProcess(benchmark::State& state) {
  const std::string dir = TempWorkDir();
  DispatcherConfig c;
  c.work_dir = dir;
  Dispatcher d(c);
  if (!d.Start().ok()) return state.SkipWithError("start");
  const int64_t task = SetUpJob(&d, int64_t{1} << 40);
  if (task < 0) return state.SkipWithError("set up");
  LeaseLoop(state, &d, task);
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_SplitsInProcess)->Arg(1)->Arg(64)->Arg(1024)->UseRealTime();

void BM_SplitsGrpc(benchmark::State& state) {
  const std::string dir = TempWorkDir();
  DispatcherOptions o;
  o.work_dir = dir;
  auto server = DispatchServer::Start(o);
  if (!server.ok()) return state.SkipWithError(server.status().ToString().c_str());
  GrpcDispatcherClient client("127.0.0.1:" + std::to_string((*server)->port()));
  const int64_t task = SetUpJob(&client, int64_t{1} << 40);
  if (task < 0) return state.SkipWithError("set up");
  LeaseLoop(state, &client, task);
  (*server)->Stop();
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_SplitsGrpc)->Arg(1)->Arg(64)->Arg(1024)->UseRealTime();

// 8192 images of 64x64x3 uint8 -> float, flipped, batches of 32 (256 batches). The
// image is repeated, not sliced from a big tensor, so the graph that travels stays small.
Dataset ImagePipeline() {
  Tensor image = Tensor::Zeros(DType::kUInt8, Shape({64, 64, 3}));
  return Dataset::FromTensors(Element{image})
      .Repeat(8192)
      .Map(*Function::Kernel("to_float"))
      .Map(*Function::Kernel("flip_left_right"))
      .Batch(32);
}

double first_ns = 0, end_ns = 0, drain_calls = 0;

void Drain(benchmark::State& state, const Dataset& ds, int64_t* elements) {
  const auto start = std::chrono::steady_clock::now();
  auto it = ds.MakeIterator();
  if (!it.ok()) return state.SkipWithError(it.status().ToString().c_str());
  for (int64_t i = 0;; ++i) {
    auto e = (*it)->GetNext();
    if (i == 0) first_ns += (std::chrono::steady_clock::now() - start).count();
    if (!e.ok()) return state.SkipWithError(e.status().ToString().c_str());
    if (!e->has_value()) break;
    ++*elements;
  }
  end_ns += (std::chrono::steady_clock::now() - start).count();
  ++drain_calls;
}

void BM_ImagePipelinePlain(benchmark::State& state) {
  Dataset ds = ImagePipeline();
  int64_t batches = 0;
  first_ns = end_ns = drain_calls = 0;
  for (auto _ : state) Drain(state, ds, &batches);
  state.counters["ms_to_first_batch"] = first_ns / drain_calls / 1e6;
  state.counters["ms_per_epoch"] = end_ns / drain_calls / 1e6;
  first_ns = end_ns = drain_calls = 0;
  state.counters["ns_per_batch"] =
      benchmark::Counter(static_cast<double>(batches),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_ImagePipelinePlain)->UseRealTime()->Unit(benchmark::kMillisecond);

// A dispatcher and one worker in this process, and the options that read a dataset
// through that worker (LOCAL; unsharded: the one worker reads it all). Empty, with the
// benchmark skipped and the error named, when either fails to start.
struct LocalService {
  std::unique_ptr<DispatchServer> dispatcher;
  std::unique_ptr<WorkServer> worker;
  DistributeOptions options;
};
std::optional<LocalService> StartLocalService(benchmark::State& state) {
  auto dispatcher = DispatchServer::Start({});
  if (!dispatcher.ok()) {
    state.SkipWithError(dispatcher.status().ToString().c_str());
    return std::nullopt;
  }
  WorkerOptions w;
  w.dispatcher = (*dispatcher)->target();
  auto worker = WorkServer::Start(w);
  if (!worker.ok()) {
    state.SkipWithError(worker.status().ToString().c_str());
    return std::nullopt;
  }
  LocalService svc{std::move(*dispatcher), std::move(*worker), {}};
  svc.options.service = svc.dispatcher->target();
  svc.options.target_workers = "LOCAL";
  svc.options.processing_mode = ShardingPolicy::kOff;
  return svc;
}

void BM_ImagePipelineLocalWorker(benchmark::State& state) {
  std::optional<LocalService> svc = StartLocalService(state);
  if (!svc) return;
  const DistributeOptions& o = svc->options;
  Dataset ds = Distribute(ImagePipeline(), o);
  int64_t batches = 0;
  first_ns = end_ns = drain_calls = 0;
  for (auto _ : state) Drain(state, ds, &batches);
  state.counters["ms_to_first_batch"] = first_ns / drain_calls / 1e6;
  state.counters["ms_per_epoch"] = end_ns / drain_calls / 1e6;
  first_ns = end_ns = drain_calls = 0;
  state.counters["ns_per_batch"] =
      benchmark::Counter(static_cast<double>(batches),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_ImagePipelineLocalWorker)->UseRealTime()->Unit(benchmark::kMillisecond);

double ProcessCpuNs() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e9 +
         (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e3;
}

// Plain and LOCAL-worker epochs alternated (A B, then B A, so neither always runs
// second), so both see the same machine load: the overhead in percent from the sums, and
// per pair (bench/paired_stats.h) as the median of the ratios with its 95% bootstrap
// interval and a sign test, for wall time and for process CPU time.
void BM_LocalWorkerOverhead(benchmark::State& state) {
  std::optional<LocalService> svc = StartLocalService(state);
  if (!svc) return;
  const DistributeOptions& o = svc->options;
  Dataset plain = ImagePipeline();
  Dataset local = Distribute(plain, o);
  std::vector<double> plain_wall, local_wall, plain_cpu, local_cpu;
  int64_t batches = 0;
  for (auto _ : state) {
    bench::RoundClock p, l;
    const bool plain_first = plain_wall.size() % 2 == 0;
    for (int k = 0; k < 2; ++k) {
      bench::RoundClock& c = (k == 0) == plain_first ? p : l;
      c.Start();
      Drain(state, &c == &p ? plain : local, &batches);
      c.Stop();
    }
    plain_wall.push_back(p.wall_s());
    local_wall.push_back(l.wall_s());
    plain_cpu.push_back(p.cpu_s());
    local_cpu.push_back(l.cpu_s());
  }
  const auto sum = [](const std::vector<double>& v) {
    double t = 0;
    for (double x : v) t += x;
    return t;
  };
  const double n = static_cast<double>(plain_wall.size());
  const bench::PairedSummary wall = bench::SummarizePairs(plain_wall, local_wall);
  const bench::PairedSummary cpu = bench::SummarizePairs(plain_cpu, local_cpu);
  state.counters["overhead_percent"] = (sum(local_wall) / sum(plain_wall) - 1) * 100;
  state.counters["cpu_overhead_percent"] = (sum(local_cpu) / sum(plain_cpu) - 1) * 100;
  state.counters["median_pair_overhead_percent"] = (wall.median_ratio - 1) * 100;
  state.counters["median_pair_ci95_low"] = (wall.ci_low - 1) * 100;
  state.counters["median_pair_ci95_high"] = (wall.ci_high - 1) * 100;
  state.counters["pairs_local_slower"] = wall.b_greater;
  state.counters["sign_test_p"] = wall.sign_p;
  state.counters["median_pair_cpu_overhead_percent"] = (cpu.median_ratio - 1) * 100;
  state.counters["median_pair_cpu_ci95_low"] = (cpu.ci_low - 1) * 100;
  state.counters["median_pair_cpu_ci95_high"] = (cpu.ci_high - 1) * 100;
  state.counters["plain_ms_per_epoch"] = sum(plain_wall) / n * 1e3;
  state.counters["local_ms_per_epoch"] = sum(local_wall) / n * 1e3;
  state.counters["plain_cpu_ms_per_epoch"] = sum(plain_cpu) / n * 1e3;
  state.counters["local_cpu_ms_per_epoch"] = sum(local_cpu) / n * 1e3;
}
BENCHMARK(BM_LocalWorkerOverhead)
    ->Iterations(60)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// What a LOCAL read adds per element: 20000 int64 scalars read plain and through a LOCAL
// worker, alternated (A B / B A) over 30 pairs: local_extra_ns_per_element (median of
// the pairs' wall difference per element, with its 95% interval as ci95_{low,high}) and
// local_extra_cpu_ns_per_element (process CPU); the per-epoch set-up is in it too
// (BM_LocalWorkerEpochSetup: about 0.2 ms, 10 ns an element here).
void BM_LocalWorkerPerElement(benchmark::State& state) {
  std::optional<LocalService> svc = StartLocalService(state);
  if (!svc) return;
  const DistributeOptions& o = svc->options;
  constexpr int64_t kElements = 20000;
  Dataset plain = Dataset::Range(kElements);
  Dataset local = Distribute(plain, o);
  std::vector<double> wall_diff, cpu_diff, zero, plain_wall;
  int64_t elements = 0;
  for (auto _ : state) {
    bench::RoundClock p, l;
    const bool plain_first = wall_diff.size() % 2 == 0;
    for (int k = 0; k < 2; ++k) {
      bench::RoundClock& c = (k == 0) == plain_first ? p : l;
      c.Start();
      Drain(state, &c == &p ? plain : local, &elements);
      c.Stop();
    }
    // Differences, shifted by 1 s so that SummarizePairs' ratios against 1 s are them.
    wall_diff.push_back(1 + (l.wall_s() - p.wall_s()));
    cpu_diff.push_back(1 + (l.cpu_s() - p.cpu_s()));
    zero.push_back(1);
    plain_wall.push_back(p.wall_s());
  }
  const bench::PairedSummary wall = bench::SummarizePairs(zero, wall_diff);
  const bench::PairedSummary cpu = bench::SummarizePairs(zero, cpu_diff);
  const double ns = 1e9 / kElements;
  state.counters["plain_ns_per_element"] = bench::MedianOf(plain_wall) * ns;
  state.counters["local_extra_ns_per_element"] = (wall.median_ratio - 1) * ns;
  state.counters["ci95_low"] = (wall.ci_low - 1) * ns;
  state.counters["ci95_high"] = (wall.ci_high - 1) * ns;
  state.counters["local_extra_cpu_ns_per_element"] = (cpu.median_ratio - 1) * ns;
  state.counters["cpu_ci95_low"] = (cpu.ci_low - 1) * ns;
  state.counters["cpu_ci95_high"] = (cpu.ci_high - 1) * ns;
}
BENCHMARK(BM_LocalWorkerPerElement)
    ->Iterations(30)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// The fixed cost of one LOCAL-worker epoch: a one-element pipeline read through
// Distribute (job set-up, task start, release): cpu_us_per_epoch (process CPU).
void BM_LocalWorkerEpochSetup(benchmark::State& state) {
  std::optional<LocalService> svc = StartLocalService(state);
  if (!svc) return;
  const DistributeOptions& o = svc->options;
  Dataset ds = Distribute(Dataset::Range(1), o);
  int64_t elements = 0;
  double cpu = 0;
  for (auto _ : state) {
    const double before = ProcessCpuNs();
    Drain(state, ds, &elements);
    cpu += ProcessCpuNs() - before;
  }
  state.counters["cpu_us_per_epoch"] = cpu / static_cast<double>(state.iterations()) / 1e3;
}
BENCHMARK(BM_LocalWorkerEpochSetup)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_RemoteClientCpu(benchmark::State& state) {
  const bool images = state.range(0) == 1;
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  std::string bin(self, n > 0 ? n : 0);
  bin = bin.substr(0, bin.rfind('/')) + "/sluice";
  auto dispatcher = DispatchServer::Start({});
  if (!dispatcher.ok())
    return state.SkipWithError(dispatcher.status().ToString().c_str());
  const std::string addr = "127.0.0.1:" + std::to_string((*dispatcher)->port());
  std::vector<pid_t> workers;
  for (int i = 0; i < 2; ++i) {
    const pid_t pid = fork();
    if (pid == 0) {
      execl(bin.c_str(), bin.c_str(), "worker", "--dispatcher", addr.c_str(), nullptr);
      _exit(127);
    }
    workers.push_back(pid);
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));  // the workers register
  DistributeOptions o;
  o.service = (*dispatcher)->target();
  o.compression = "NONE";
  o.processing_mode = images ? ShardingPolicy::kOff : ShardingPolicy::kDynamic;
  Dataset ds = Distribute(images ? ImagePipeline() : Dataset::Range(20000), o);
  int64_t elements = 0;
  double cpu = 0;
  for (auto _ : state) {
    const double before = ProcessCpuNs();
    Drain(state, ds, &elements);
    cpu += ProcessCpuNs() - before;
  }
  for (pid_t pid : workers) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
  state.counters["client_cpu_ns_per_element"] = cpu / static_cast<double>(elements);
  state.counters["elements_per_second"] =
      benchmark::Counter(static_cast<double>(elements), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_RemoteClientCpu)
    ->Arg(0)
    ->Arg(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace sluice::service

BENCHMARK_MAIN();
