// Per-element overhead of the sequential runtime.
//
// Pipeline: range -> map(identity) x5 -> batch(1) -> unbatch (8 operators). The functions do
// no work, so the time per element is the framework's own cost: iterator calls, Result and
// Element moves, tensor allocation in range and batch, refcounting in unbatch.
// Reported counters: ns_per_element and ns_per_element_per_op (target: <= 50 ns).
//
//   ./build/overhead_bench --benchmark_format=json
#include <benchmark/benchmark.h>

#include "sluice/dataset.h"

namespace sluice {
namespace {

constexpr int kMaps = 5;
constexpr int kOps = 1 + kMaps + 2;  // range, maps, batch, unbatch

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

void Run(benchmark::State& state, bool kernel_identity) {
  const int64_t n = 1 << 20;
  Dataset ds = Pipeline(n, kernel_identity);
  int64_t elements = 0;
  for (auto _ : state) {
    auto it = ds.MakeIterator();
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
      static_cast<double>(elements), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["ns_per_element_per_op"] =
      benchmark::Counter(static_cast<double>(elements) * kOps,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_OverheadLambda(benchmark::State& state) { Run(state, false); }
void BM_OverheadKernel(benchmark::State& state) { Run(state, true); }

BENCHMARK(BM_OverheadLambda)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_OverheadKernel)->Unit(benchmark::kMillisecond)->MinTime(2.0);

}  // namespace
}  // namespace sluice

BENCHMARK_MAIN();
