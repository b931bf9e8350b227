// Overhead of the profiler (docs/profiler.md): the ImageNet-style pipeline
// (examples/specs/imagenet.json, the graph of tools/imagenet_pipeline.cc) run with
// profiling off, with full per-operator per-element tracing and with batch-only tracing;
// and the recorder's cost per span on a pipeline of near-free operators.
//
// The modes run interleaved (off, full, batches, off, ...) so that a noisy neighbour
// slows all of them alike; each figure is the median over the repeats, with min and max
// to show the noise. Prints one JSON object.
//
//   cd DIR_WITH_data/imagenet && profiler_bench --spec .../imagenet.json
//     [--batches 15] [--warmup 3] [--repeats 5] [--micro-elements 2000000]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sluice/dataset.h"
#include "sluice/profiler.h"
#include "sluice/serialize.h"

namespace sluice {
namespace {

using Clock = std::chrono::steady_clock;

struct Stats {
  double median = 0, min = 0, max = 0;
};

Stats Describe(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  Stats s;
  if (v.empty()) return s;
  s.median = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  s.min = v.front();
  s.max = v.back();
  return s;
}

// Seconds for `n` elements after `warmup`, under `mode` ("off", "full", "batches");
// *events gets the events recorded.
double Run(const Dataset& ds, const std::string& mode, int64_t warmup, int64_t n,
           int64_t* events) {
  std::unique_ptr<profiler::Session> session;
  Options o;
  if (mode != "off") {
    profiler::ProfileOptions po;
    po.sampling =
        mode == "batches" ? profiler::Sampling::kBatchesOnly : profiler::Sampling::kAll;
    auto s = profiler::Session::Start(po);
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", s.status().ToString().c_str());
      std::exit(1);
    }
    session = std::move(*s);
    o.span_recorder = session->recorder();
  }
  double seconds = 0;
  {
    auto it = ds.MakeIterator(o);
    if (!it.ok()) {
      std::fprintf(stderr, "%s\n", it.status().ToString().c_str());
      std::exit(1);
    }
    Clock::time_point start;
    for (int64_t i = 0; i < warmup + n; ++i) {
      if (i == warmup) start = Clock::now();
      auto next = (*it)->GetNext();
      if (!next.ok() || !*next) {
        std::fprintf(stderr, "pipeline ended early: %s\n",
                     next.ok() ? "end of data" : next.status().ToString().c_str());
        std::exit(1);
      }
    }
    seconds = std::chrono::duration<double>(Clock::now() - start).count();
  }
  *events = 0;
  if (session != nullptr) {
    (void)session->Stop();
    *events = session->summary().events;
  }
  return seconds;
}

nlohmann::json Compare(const Dataset& ds, int64_t warmup, int64_t n, int repeats,
                       double per) {
  const std::vector<std::string> modes = {"off", "full", "batches"};
  std::map<std::string, std::vector<double>> times;
  std::map<std::string, int64_t> events;
  for (int r = 0; r < repeats; ++r) {
    for (const std::string& m : modes) {
      int64_t ev = 0;
      times[m].push_back(Run(ds, m, warmup, n, &ev));
      events[m] = ev;
    }
  }
  nlohmann::json out;
  const Stats off = Describe(times["off"]);
  for (const std::string& m : modes) {
    const Stats s = Describe(times[m]);
    out[m] = {{"median_s", s.median},
              {"min_s", s.min},
              {"max_s", s.max},
              {"spread_pct", 100 * (s.max - s.min) / s.median},
              {"per_item_us", 1e6 * s.median / (n * per)},
              {"events_last_run", events[m]},
              {"overhead_pct", 100 * (s.median - off.median) / off.median},
              {"runs_s", times[m]}};
  }
  return out;
}

}  // namespace
}  // namespace sluice

int main(int argc, char** argv) {
  using namespace sluice;
  std::string spec = "examples/specs/imagenet.json";
  int64_t batches = 15, warmup = 3, micro = 2000000;
  int repeats = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--spec") spec = argv[i + 1];
    else if (k == "--batches") batches = std::atoll(argv[i + 1]);
    else if (k == "--warmup") warmup = std::atoll(argv[i + 1]);
    else if (k == "--repeats") repeats = std::atoi(argv[i + 1]);
    else if (k == "--micro-elements") micro = std::atoll(argv[i + 1]);
  }
  nlohmann::json out;
  out["repeats"] = repeats;
  // Near-free operators: the recorder's cost per span (5 iterators per element).
  Dataset tiny = Dataset::Range(int64_t{1} << 40);
  for (int i = 0; i < 3; ++i) {
    tiny = tiny.Map(Function::Map("identity", [](Element e, FunctionContext&)
                                                  -> Result<Element> { return e; }));
  }
  Options plain;
  plain.optimization.apply_default_optimizations = false;
  tiny = tiny.Batch(1).WithOptions(plain);
  nlohmann::json m = Compare(tiny, 1000, micro, repeats, 1);
  const double spans_per_element = 5;  // range, 3 maps, batch
  m["cost_per_span_ns"] = 1e3 * (m["full"]["per_item_us"].get<double>() -
                                 m["off"]["per_item_us"].get<double>()) /
                          spans_per_element;
  out["micro"] = m;
  if (!spec.empty() && spec != "none") {
    Result<Dataset> ds = LoadPipelineSpec(spec);
    if (!ds.ok()) {
      std::fprintf(stderr, "%s\n", ds.status().ToString().c_str());
      return 1;
    }
    out["imagenet"] = Compare(*ds, warmup, batches, repeats, 128);
    out["imagenet"]["batches_per_run"] = batches;
  }
  std::printf("%s\n", out.dump(2).c_str());
  return 0;
}
