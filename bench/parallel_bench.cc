// Scaling and budget figures of the parallel runtime.
//
//  a) CPU scaling. Range -> Map(fn burning ~200 us of CPU per element, a calibrated busy
//     loop), sequential (the baseline) and parallel with num_parallel_calls = cpu_budget = p,
//     p = 1..4. Counters: items_per_second, efficiency = throughput(p) /
//     (p_eff * throughput(sequential)) with p_eff = min(p, cores in the affinity mask),
//     cores, baseline_items_per_s (the sequential throughput, measured next to each
//     parallel run so both see the same machine load).
//  b) Waiting-bound. Map(fn sleeping 5 ms), num_parallel_calls = cpu_budget = p for p = 1,
//     4, 16, 32; and a parallel Interleave of 32 inputs, each Range(20).Map(sleep 5 ms)
//     (sequential inside), cycle_length = num_parallel_calls = cpu_budget = p, p = 1, 4, 16.
//     Counter: ideal_fraction = throughput / (p / 5 ms).
//  c) Memory budget. Range(96).Map(fn making a 64 MiB zeroed uint8 tensor, output spec
//     declared, num_parallel_calls 4).Prefetch(64) would buffer up to 4 GiB; it runs with
//     ram_budget = 256 MiB. Counters from Iterator::Snapshot(): peak_buffered_bytes, budget,
//     overshoot_bytes; max_rss_mib (getrusage, the process's high-water mark). The
//     benchmark fails (SkipWithError) if the peak exceeds the budget.
//
// Every benchmark also reports loadavg_1m: the machine's load when it ran (figures taken
// while other processes compete for the cores are not comparable).
//
// Every benchmark runs a fixed number of iterations in real time (the work happens on the
// pipeline's threads), so one pass of the binary takes about 15 s, and
// scripts/run_benchmarks.sh (5 repetitions) about 1 minute. An op that is not registered (a build without the
// parallel interleave) makes its benchmark report an error instead of a figure.
//
//   ./build/parallel_bench --benchmark_format=json
#include <benchmark/benchmark.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#include "api/dataset_internal.h"
#include "sluice/dataset.h"

namespace sluice {
namespace {

using Clock = std::chrono::steady_clock;

int CoresAvailable() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  return std::max(1, CPU_COUNT(&set));
}

int64_t ThreadCpuNow() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

// A dependent chain of multiply-adds the compiler cannot drop or vectorize.
uint64_t Spin(int64_t iters, uint64_t x) {
  for (int64_t i = 0; i < iters; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    asm volatile("" : "+r"(x));
  }
  return x;
}

// Spin iterations that take ~200 us of thread CPU time (the best of several runs, so
// preemption by other processes does not inflate it).
int64_t ItersFor200us() {
  static const int64_t iters = [] {
    constexpr int64_t kProbe = 1 << 20;
    int64_t best_ns = INT64_MAX;
    uint64_t sink = 1;
    for (int i = 0; i < 7; ++i) {
      const int64_t t0 = ThreadCpuNow();
      sink = Spin(kProbe, sink);
      best_ns = std::min(best_ns, ThreadCpuNow() - t0);
    }
    benchmark::DoNotOptimize(sink);
    return std::max<int64_t>(1, kProbe * 200000 / std::max<int64_t>(best_ns, 1));
  }();
  return iters;
}

Function BurnCpu() {
  const int64_t iters = ItersFor200us();
  return Function::Map("burn_200us", [iters](Element e, FunctionContext&) -> Result<Element> {
    const uint64_t x = Spin(iters, static_cast<uint64_t>(e[0].scalar<int64_t>()));
    return Element{Tensor::Scalar<int64_t>(static_cast<int64_t>(x & 0xff))};
  });
}

Function Sleep5ms() {
  return Function::Map("sleep_5ms", [](Element e, FunctionContext&) -> Result<Element> {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return e;
  });
}

// The 1-minute load average, to tell a loaded machine's figures from a quiet one's.
void RecordLoad(benchmark::State& state) {
  double load[1] = {0};
  if (getloadavg(load, 1) == 1) state.counters["loadavg_1m"] = load[0];
}

// Drains `ds` once; returns the elements, or -1 after reporting an error to `state`.
int64_t Drain(const Dataset& ds, const Options& rt, benchmark::State& state,
              PipelineStats* stats = nullptr) {
  auto it = MakeIteratorAsBuilt(ds, rt);
  if (!it.ok()) {
    state.SkipWithError(it.status().ToString().c_str());
    return -1;
  }
  int64_t n = 0;
  while (true) {
    auto e = (*it)->GetNext();
    if (!e.ok()) {
      state.SkipWithError(e.status().ToString().c_str());
      return -1;
    }
    if (!*e) break;
    benchmark::DoNotOptimize(**e);
    ++n;
  }
  if (stats != nullptr) *stats = (*it)->Snapshot();
  return n;
}

// Runs the benchmark loop over `ds`, timing each drain; returns elements per second of
// wall time, or -1 on error.
double TimedLoop(benchmark::State& state, const Dataset& ds, const Options& rt) {
  int64_t elements = 0;
  double seconds = 0;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    const int64_t n = Drain(ds, rt, state);
    seconds += std::chrono::duration<double>(Clock::now() - t0).count();
    if (n < 0) return -1;
    elements += n;
  }
  state.SetItemsProcessed(elements);
  RecordLoad(state);
  return seconds > 0 ? elements / seconds : 0;
}

// ---- a) CPU scaling ----

constexpr int64_t kCpuElements = 1000;  // 0.2 s of CPU per drain

Dataset CpuPipeline(int64_t p) {
  Dataset ds = Dataset::Range(kCpuElements);
  return p == 0 ? ds.Map(BurnCpu()) : ds.Map(BurnCpu(), p, true);
}

// range(0) = p; p == 0 is the sequential Map (one element at a time, no pool). For p > 0
// every timed drain is paired with an untimed drain of the sequential baseline right
// before it, so the efficiency compares runs made under the same machine load.
void BM_CpuScaling(benchmark::State& state) {
  const int64_t p = state.range(0);
  Options rt;
  rt.autotune.cpu_budget = std::max<int64_t>(p, 1);
  const Dataset ds = CpuPipeline(p);
  const Dataset baseline_ds = CpuPipeline(0);
  Options baseline_rt;
  baseline_rt.autotune.cpu_budget = 1;
  int64_t elements = 0, baseline_elements = 0;
  double seconds = 0, baseline_seconds = 0;
  for (auto _ : state) {
    if (p > 0) {
      state.PauseTiming();
      const auto b0 = Clock::now();
      const int64_t b = Drain(baseline_ds, baseline_rt, state);
      baseline_seconds += std::chrono::duration<double>(Clock::now() - b0).count();
      state.ResumeTiming();
      if (b < 0) return;
      baseline_elements += b;
    }
    const auto t0 = Clock::now();
    const int64_t n = Drain(ds, rt, state);
    seconds += std::chrono::duration<double>(Clock::now() - t0).count();
    if (n < 0) return;
    elements += n;
  }
  state.SetItemsProcessed(elements);
  RecordLoad(state);
  const double tput = elements / seconds;
  const double baseline = p > 0 ? baseline_elements / baseline_seconds : tput;
  const int cores = CoresAvailable();
  const int64_t p_eff = std::min<int64_t>(std::max<int64_t>(p, 1), cores);
  state.counters["efficiency"] = tput / (p_eff * baseline);
  state.counters["baseline_items_per_s"] = baseline;
  state.counters["cores"] = cores;
  // 5000/s when a burn takes exactly 200 us and the framework costs nothing.
  state.counters["ideal_seq_items_per_s"] = 1.0 / 200e-6;
  state.SetLabel(p == 0 ? "sequential" : "parallel p=" + std::to_string(p));
}
BENCHMARK(BM_CpuScaling)
    ->ArgName("p")
    ->Arg(0)
    ->Arg(1)
    ->Arg(2)
    ->Arg(3)
    ->Arg(4)
    ->Iterations(2)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// ---- b) Waiting-bound ----

constexpr double kSleepSeconds = 0.005;

void BM_SleepMap(benchmark::State& state) {
  const int64_t p = state.range(0);
  // ~0.3 s per drain at the ideal rate p / 5 ms.
  const Dataset ds = Dataset::Range(64 * p).Map(Sleep5ms(), p, true);
  Options rt;
  rt.autotune.cpu_budget = p;
  const double tput = TimedLoop(state, ds, rt);
  if (tput < 0) return;
  state.counters["ideal_fraction"] = tput / (p / kSleepSeconds);
}
BENCHMARK(BM_SleepMap)
    ->ArgName("p")
    ->Arg(1)
    ->Arg(4)
    ->Arg(16)
    ->Arg(32)
    ->Iterations(2)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

void BM_SleepParallelInterleave(benchmark::State& state) {
  const int64_t p = state.range(0);
  Function inner = Function::DatasetFunction(
      "range20_sleep", [](Element, FunctionContext&) -> Result<Dataset> {
        return Dataset::Range(20).Map(Sleep5ms());
      });
  const Dataset ds = Dataset::Range(32).Interleave(inner, /*cycle_length=*/p,
                                                   /*block_length=*/1,
                                                   /*num_parallel_calls=*/p, true);
  Options rt;
  rt.autotune.cpu_budget = p;
  const double tput = TimedLoop(state, ds, rt);
  if (tput < 0) return;
  state.counters["ideal_fraction"] = tput / (p / kSleepSeconds);
}
BENCHMARK(BM_SleepParallelInterleave)
    ->ArgName("p")
    ->Arg(1)
    ->Arg(4)
    ->Arg(16)
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// ---- c) Memory budget ----

constexpr int64_t kBigBytes = int64_t{64} << 20;
constexpr int64_t kBigElements = 96;
constexpr int64_t kRamBudget = int64_t{256} << 20;

void BM_MemoryBudget(benchmark::State& state) {
  Function big = Function::Map(
      "zeros_64mib",
      [](Element, FunctionContext&) -> Result<Element> {
        return Element{Tensor::Zeros(DType::kUInt8, Shape({kBigBytes}))};
      },
      {}, [](const ElementSpec&) -> Result<ElementSpec> {
        return ElementSpec{{TensorSpec{DType::kUInt8, PartialShape({kBigBytes})}}};
      });
  // Unbounded, the buffers would hold 64 prefetched + 8 mapped elements: 4.5 GiB.
  const Dataset ds = Dataset::Range(kBigElements).Map(big, 4).Prefetch(64);
  Options rt;
  rt.autotune.cpu_budget = 4;
  rt.autotune.ram_budget = kRamBudget;
  PipelineStats stats;
  int64_t elements = 0;
  for (auto _ : state) {
    const int64_t n = Drain(ds, rt, state, &stats);
    if (n < 0) return;
    elements += n;
  }
  state.SetItemsProcessed(elements);
  state.SetBytesProcessed(elements * kBigBytes);
  RecordLoad(state);
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  state.counters["peak_buffered_bytes"] = static_cast<double>(stats.peak_buffered_bytes);
  state.counters["budget"] = static_cast<double>(stats.ram_budget);
  state.counters["overshoot_bytes"] = static_cast<double>(stats.budget_overshoot_bytes);
  state.counters["max_rss_mib"] = static_cast<double>(ru.ru_maxrss) / 1024.0;  // KiB on Linux
  if (stats.ram_budget != kRamBudget) {
    state.SkipWithError(("budget not applied: " + std::to_string(stats.ram_budget)).c_str());
  } else if (stats.peak_buffered_bytes > stats.ram_budget) {
    state.SkipWithError(("peak_buffered_bytes " + std::to_string(stats.peak_buffered_bytes) +
                         " > ram_budget " + std::to_string(stats.ram_budget))
                            .c_str());
  }
}
BENCHMARK(BM_MemoryBudget)->Iterations(1)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace sluice

BENCHMARK_MAIN();
