// Per-element overhead of the runtime, with the default rewrites and as built.
//
// Pipeline: range -> map(identity) x5 -> batch(1) -> unbatch (8 operators). The functions do
// no work, so the time per element is the framework's own cost: iterator calls, Result and
// Element moves, tensor allocation in range and batch, refcounting in unbatch, and, with
// the default options, whatever the rewrites add (handoffs to pool threads, prefetch).
//
// Each benchmark runs once per (function kind, options) pair:
//   defaults  MakeIterator() with default options (what users get)
//   as_built  apply_default_optimizations=false (the graph as written)
//   diagnostic rows switch one default pass off, to show where the default cost goes.
// Reported counters: ns_per_element and ns_per_element_per_op (target: <= 25 ns for both
// defaults and as_built), per wall-clock second (async ops use other threads).
//
//   ./build/overhead_bench --benchmark_format=json
#include <benchmark/benchmark.h>

#include <string>

#include "sluice/dataset.h"

namespace sluice {
namespace {

constexpr int kMaps = 5;
constexpr int kOps = 1 + kMaps + 2;  // range, maps, batch, unbatch

enum Mode { kDefaults, kAsBuilt, kNoParallelBatch, kNoInjectPrefetch, kNoMapParallelization };

Dataset Pipeline(int64_t n, bool kernel_identity) {
  Dataset ds = Dataset::Range(n);
  for (int i = 0; i < kMaps; ++i) {
    if (kernel_identity) {
      ds = ds.Map(*Function::Kernel("identity"));
    } else {
      ds = ds.Map(Function::Map("identity", [](Element e, FunctionContext&) -> Result<Element> {
        return e;
      }));
    }
  }
  return ds.Batch(1).Unbatch();
}

Options ModeOptions(Mode mode) {
  Options o;
  switch (mode) {
    case kDefaults:
      break;
    case kAsBuilt:
      o.optimization.apply_default_optimizations = false;
      break;
    case kNoParallelBatch:
      o.optimization.Set("parallel_batch", false);
      break;
    case kNoInjectPrefetch:
      o.optimization.Set("inject_prefetch", false);
      break;
    case kNoMapParallelization:
      o.optimization.Set("map_parallelization", false);
      break;
  }
  return o;
}

void Run(benchmark::State& state) {
  const bool kernel_identity = state.range(0) != 0;
  const Mode mode = static_cast<Mode>(state.range(1));
  const int64_t n = 1 << 19;
  Dataset ds = Pipeline(n, kernel_identity);
  const Options options = ModeOptions(mode);
  int64_t elements = 0;
  for (auto _ : state) {
    auto it = ds.MakeIterator(options);
    if (!it.ok()) {
      state.SkipWithError(it.status().ToString().c_str());
      return;
    }
    int64_t sum = 0;
    while (true) {
      auto e = (*it)->GetNext();
      if (!e.ok() || !*e) break;
      sum += (**e)[0].scalar<int64_t>();
      ++elements;
    }
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(elements);
  state.counters["ns_per_element"] = benchmark::Counter(
      static_cast<double>(elements) * 1e-9,  // inverted rate: ns (not s) per element
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["ns_per_element_per_op"] =
      benchmark::Counter(static_cast<double>(elements) * kOps * 1e-9,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void Args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"kernel", "mode"});
  for (int kernel : {0, 1}) {
    for (int mode : {kDefaults, kAsBuilt, kNoParallelBatch, kNoInjectPrefetch,
                     kNoMapParallelization}) {
      b->Args({kernel, mode});
    }
  }
}

// mode: 0 defaults, 1 as_built, 2 no parallel_batch, 3 no inject_prefetch,
// 4 no map_parallelization. kernel: 0 lambda identity, 1 registered identity kernel.
BENCHMARK(Run)
    ->Name("BM_Overhead")
    ->Apply(Args)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(1.0)
    ->UseRealTime();

}  // namespace
}  // namespace sluice

BENCHMARK_MAIN();
