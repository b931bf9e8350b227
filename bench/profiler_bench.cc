// Overhead of the profiler and of the doctor's trace collection (docs/profiler.md,
// docs/doctor.md), side by side with profiling off, on:
//
//   micro     Range -> 3 identity maps -> Batch(32), one thread: near-free operators, so
//             the difference is the hook's cost per span (ns/span);
//   imagenet  examples/specs/imagenet.json with its null seeds fixed, default options
//             (the documented pipeline: parallel ops, autotune, prefetch);
//   imagenet_1thread  the same graph made sequential (Interleave, Map, Map + Batch, no
//             prefetch) on the consumer thread: the same work, far less run-to-run noise;
//   doctor    the imagenet graph under plumber::TracePipeline (its sampler thread and
//             counting file system included) vs the same graph and options run plainly;
//             both warm up for --doctor-warmup-seconds (the tracer's warm-up is timed),
//             then measure --doctor-batches batches;
//   doctor_whole  the same, measured over the whole call (set-up, warm-up, the tracer's
//             fixed costs such as its handoff probe) per element produced: what a whole
//             short trace costs (not in the default --configs).
//
// Method: every round parses the spec afresh (same seeds: the same images in the same
// order), makes a fresh iterator, runs --warmup batches, then measures --batches batches:
// the process's CPU time (CLOCK_PROCESS_CPUTIME_ID: every thread, the recorder's drain
// thread and the doctor's sampler included) and wall time. The modes of a configuration
// alternate in an order rotated each round; one untimed round per mode first (warm page
// cache and allocator). Overheads are the median per-round ratio mode/off with a 95%
// bootstrap interval and a sign test (bench/paired_stats.h).
//
// Second, independent estimate: the micro pipeline's ns per span x the events the
// imagenet rounds recorded per batch / the off rounds' CPU per batch.
//
//   profiler_bench [--spec examples/specs/imagenet.json] [--configs micro,imagenet,
//     imagenet_1thread,doctor[,doctor_whole]] [--batches 1] [--warmup 1] [--rounds 80]
//     [--micro-elements 200000] [--micro-rounds 20] [--doctor-batches 4]
//     [--doctor-warmup-seconds 0.5]
// Run from the repository root (the spec names data/imagenet/...). Prints one JSON object.
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "paired_stats.h"
#include "sluice/dataset.h"
#include "sluice/plumber.h"
#include "sluice/profiler.h"
#include "sluice/serialize.h"

namespace sluice {
namespace {

using json = nlohmann::json;

[[noreturn]] void Die(const Status& s) {
  std::fprintf(stderr, "%s\n", s.ToString().c_str());
  std::exit(1);
}

double CpuNow() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}
double WallNow() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

struct RoundResult {
  double wall_s = 0;
  double cpu_s = 0;
  int64_t events = 0;
};

struct Config {
  std::string name;
  std::function<Dataset()> make;  // a fresh graph, the same elements every time
  Options options;                // applied to every mode's iterator
  std::vector<std::string> modes;  // "off" first
  int64_t warmup = 0, n = 0;      // root elements
  double warmup_seconds = 0;      // instead of `warmup` when > 0 (TracePipeline's way)
  // Measure the whole run (iterator or trace set-up and warm-up included), scaled to n
  // elements by the elements it produced, instead of the window after the warm-up.
  bool whole = false;
  double items_per_element = 1;   // elements per root element (the batch size)
};

// One round of `mode`: off, full, batches (the profiler), doctor (TracePipeline).
RoundResult Run(const Config& c, const std::string& mode) {
  const Dataset ds = c.make();
  RoundResult out;
  if (mode == "doctor") {
    plumber::TraceOptions to;
    to.warmup_seconds = c.warmup_seconds;  // then the window: c.n elements
    to.seconds = 3600;
    to.max_elements = c.n;
    to.measure_bandwidth = false;  // a one-off probe of the disk, not per element
    const double cpu0 = CpuNow(), wall0 = WallNow();
    auto t = plumber::TracePipeline(ds.WithOptions(c.options), to);
    const double cpu1 = CpuNow(), wall1 = WallNow();
    if (!t.ok()) Die(t.status());
    out.wall_s = t->duration_ns * 1e-9;
    out.cpu_s = t->process_cpu_ns * 1e-9;
    if (c.whole) {
      auto a = plumber::Analyze(*t);
      if (!a.ok()) Die(a.status());
      const double total = static_cast<double>(t->nodes.at(a->root).total_elements);
      out.wall_s = (wall1 - wall0) * c.n / total;
      out.cpu_s = (cpu1 - cpu0) * c.n / total;
    }
    return out;
  }
  std::unique_ptr<profiler::Session> session;
  Options o = c.options;
  if (mode == "full" || mode == "batches") {
    profiler::ProfileOptions po;
    po.sampling =
        mode == "batches" ? profiler::Sampling::kBatchesOnly : profiler::Sampling::kAll;
    auto s = profiler::Session::Start(po);
    if (!s.ok()) Die(s.status());
    session = std::move(*s);
    o.span_recorder = session->recorder();
  }
  {
    const double whole_cpu0 = CpuNow(), whole_wall0 = WallNow();
    int64_t produced = 0;
    auto it = ds.MakeIterator(o);
    if (!it.ok()) Die(it.status());
    const auto next_or_die = [&] {
      auto next = (*it)->GetNext();
      if (!next.ok()) Die(next.status());
      if (!*next) Die(OutOfRangeError("pipeline " + c.name + " ended early"));
      ++produced;
    };
    const double warm_end = WallNow() + c.warmup_seconds;
    if (c.warmup_seconds > 0) {
      while (WallNow() < warm_end) next_or_die();
    } else {
      for (int64_t i = 0; i < c.warmup; ++i) next_or_die();
    }
    const double cpu0 = CpuNow(), wall0 = WallNow();
    for (int64_t i = 0; i < c.n; ++i) next_or_die();
    out.cpu_s = CpuNow() - cpu0;
    out.wall_s = WallNow() - wall0;
    if (c.whole) {
      out.cpu_s = (CpuNow() - whole_cpu0) * c.n / produced;
      out.wall_s = (WallNow() - whole_wall0) * c.n / produced;
    }
  }
  if (session != nullptr) {
    (void)session->Stop();
    out.events = session->summary().events;
  }
  return out;
}

json Compare(const Config& c, int rounds) {
  std::map<std::string, std::vector<double>> wall, cpu;
  std::map<std::string, std::vector<double>> events;
  for (const std::string& m : c.modes) (void)Run(c, m);  // warm caches, discarded
  for (int r = 0; r < rounds; ++r) {
    for (size_t k = 0; k < c.modes.size(); ++k) {
      const std::string& m = c.modes[(k + r) % c.modes.size()];
      const RoundResult rr = Run(c, m);
      wall[m].push_back(rr.wall_s);
      cpu[m].push_back(rr.cpu_s);
      events[m].push_back(static_cast<double>(rr.events));
    }
  }
  json out = {{"rounds", rounds},
              {"warmup_elements", c.warmup},
              {"warmup_seconds", c.warmup_seconds},
              {"measured_elements", c.n},
              {"items_per_element", c.items_per_element}};
  const double items = c.n * c.items_per_element;
  for (const std::string& m : c.modes) {
    const double w = bench::MedianOf(wall[m]), p = bench::MedianOf(cpu[m]);
    out[m] = {{"median_wall_s", w},
              {"median_cpu_s", p},
              {"wall_per_item_us", 1e6 * w / items},
              {"cpu_per_item_us", 1e6 * p / items},
              {"wall_s", wall[m]},
              {"cpu_s", cpu[m]}};
    // Events of a whole round (warm-up, read-ahead and the end included).
    if (m == "full" || m == "batches") {
      out[m]["events_per_round"] = bench::MedianOf(events[m]);
    }
    if (m == "off") continue;
    out[m]["overhead_wall"] = bench::OverheadJson(bench::SummarizePairs(wall["off"], wall[m]));
    out[m]["overhead_cpu"] = bench::OverheadJson(bench::SummarizePairs(cpu["off"], cpu[m]));
  }
  return out;
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path);
  if (!f) Die(NotFoundError("cannot read " + path));
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The spec with every null seed fixed (a spec's null seed is drawn at each load).
json FixSeeds(json spec) {
  int64_t next = 1001;
  for (json& op : spec.at("dataset")) {
    if (op.contains("attrs") && op["attrs"].contains("seed") && op["attrs"]["seed"].is_null()) {
      op["attrs"]["seed"] = next++;
    }
  }
  return spec;
}

// The same graph run on the consumer's thread: parallel ops become their sequential
// forms (MapAndBatch: Map then Batch), Prefetch goes.
json Sequential(const json& spec) {
  json out = spec;
  out["dataset"] = json::array();
  for (json op : spec.at("dataset")) {
    const std::string name = op.at("op");
    if (name == "Prefetch") continue;
    if (op.contains("attrs")) op["attrs"].erase("num_parallel_calls");
    if (name == "ParallelInterleave") op["op"] = "Interleave";
    if (name == "ParallelMap") op["op"] = "Map";
    if (name == "MapAndBatch") {
      json batch = {{"op", "Batch"},
                    {"attrs", {{"batch_size", op["attrs"].at("batch_size")}}}};
      op["op"] = "Map";
      op["attrs"].erase("batch_size");
      out["dataset"].push_back(op);
      out["dataset"].push_back(batch);
      continue;
    }
    out["dataset"].push_back(op);
  }
  return out;
}

std::function<Dataset()> Parser(const json& spec, const std::string& source) {
  const std::string text = spec.dump();
  return [text, source] {
    Result<Dataset> ds = ParsePipelineSpec(text, source);
    if (!ds.ok()) Die(ds.status());
    return *ds;
  };
}

int64_t BatchSizeOf(const json& spec) {
  for (const json& op : spec.at("dataset")) {
    if (op.contains("attrs") && op["attrs"].contains("batch_size")) {
      return op["attrs"]["batch_size"].get<int64_t>();
    }
  }
  return 1;
}

std::string LoadAvg() {
  std::string s;
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    char buf[128] = {0};
    if (std::fgets(buf, sizeof buf, f)) s.assign(buf, std::strcspn(buf, "\n"));
    std::fclose(f);
  }
  return s;
}

}  // namespace
}  // namespace sluice

int main(int argc, char** argv) {
  using namespace sluice;
  std::string spec_path = "examples/specs/imagenet.json";
  std::string configs = "micro,imagenet,imagenet_1thread,doctor";
  int64_t batches = 1, warmup = 1, micro = 200000, doctor_batches = 4;
  int rounds = 80, micro_rounds = 20;
  double doctor_warmup = 0.5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--spec") spec_path = argv[i + 1];
    else if (k == "--configs") configs = argv[i + 1];
    else if (k == "--batches") batches = std::atoll(argv[i + 1]);
    else if (k == "--warmup") warmup = std::atoll(argv[i + 1]);
    else if (k == "--rounds" || k == "--repeats") rounds = std::atoi(argv[i + 1]);
    else if (k == "--micro-elements") micro = std::atoll(argv[i + 1]);
    else if (k == "--micro-rounds") micro_rounds = std::atoi(argv[i + 1]);
    else if (k == "--doctor-batches") doctor_batches = std::atoll(argv[i + 1]);
    else if (k == "--doctor-warmup-seconds") doctor_warmup = std::atof(argv[i + 1]);
  }
  const auto wants = [&](const std::string& c) {
    return ("," + configs + ",").find("," + c + ",") != std::string::npos;
  };
  json out;
  out["loadavg_before"] = LoadAvg();

  double ns_per_span = 0;
  if (wants("micro")) {
    constexpr int64_t kBatch = 32;
    Config c;
    c.name = "micro";
    c.make = [] {
      Dataset d = Dataset::Range(int64_t{1} << 40);
      for (int i = 0; i < 3; ++i) {
        d = d.Map(Function::Map("identity", [](Element e, FunctionContext&)
                                                -> Result<Element> { return e; }));
      }
      return d.Batch(kBatch);
    };
    c.options.optimization.apply_default_optimizations = false;
    c.options.autotune.enabled = false;
    c.modes = {"off", "full", "batches"};
    c.warmup = 100;
    c.n = std::max<int64_t>(1, micro / kBatch);
    c.items_per_element = kBatch;
    json m = Compare(c, micro_rounds);
    // Spans per element: Range and 3 maps each, plus the batch's once per 32.
    const double spans_per_item = 4 + 1.0 / kBatch;
    for (const char* kind : {"wall", "cpu"}) {
      const std::string k = kind;
      const double off_ns = 1e3 * m["off"][k + "_per_item_us"].get<double>();
      const double pct = m["full"]["overhead_" + k]["median_pct"].get<double>();
      m["cost_per_span_ns_" + k] = off_ns * pct / 100 / spans_per_item;
      const double bpct = m["batches"]["overhead_" + k]["median_pct"].get<double>();
      m["batches_cost_per_element_ns_" + k] = off_ns * bpct / 100;
    }
    ns_per_span = m["cost_per_span_ns_cpu"].get<double>();
    out["micro"] = m;
  }

  const bool any_spec = wants("imagenet") || wants("imagenet_1thread") || wants("doctor") ||
                        wants("doctor_whole");
  if (any_spec) {
    const json spec = FixSeeds(json::parse(ReadFile(spec_path)));
    const int64_t batch = BatchSizeOf(spec);
    if (wants("imagenet")) {
      Config c;
      c.name = "imagenet";
      c.make = Parser(spec, spec_path);
      c.modes = {"off", "full", "batches"};
      c.warmup = warmup;
      c.n = batches;
      c.items_per_element = batch;
      json m = Compare(c, rounds);
      // The independent estimate: the micro pipeline's ns per span x events per batch.
      if (ns_per_span > 0) {
        const double cpu_per_batch_ns = 1e9 * m["off"]["median_cpu_s"].get<double>() / batches;
        for (const char* mode : {"full", "batches"}) {
          const double events_per_batch =
              m[mode]["events_per_round"].get<double>() / (warmup + batches);
          m[mode]["estimate_from_ns_per_span"] = {
              {"ns_per_span", ns_per_span},
              {"events_per_batch", events_per_batch},
              {"cpu_per_batch_ms", cpu_per_batch_ns / 1e6},
              {"overhead_pct", 100 * ns_per_span * events_per_batch / cpu_per_batch_ns}};
        }
      }
      out["imagenet"] = m;
    }
    if (wants("imagenet_1thread")) {
      Config c;
      c.name = "imagenet_1thread";
      c.make = Parser(Sequential(spec), spec_path + " (sequential)");
      c.modes = {"off", "full", "batches"};
      c.warmup = warmup;
      c.n = batches;
      c.items_per_element = batch;
      out["imagenet_1thread"] = Compare(c, rounds);
    }
    if (wants("doctor")) {
      // The doctor traces with default rewrites and autotune off: the plain side too.
      Config c;
      c.name = "doctor";
      c.make = Parser(spec, spec_path);
      c.options.optimization.apply_default_optimizations = false;
      c.options.autotune.enabled = false;
      c.modes = {"off", "doctor"};
      c.warmup_seconds = doctor_warmup;  // TracePipeline's warm-up is timed
      c.n = doctor_batches;
      c.items_per_element = batch;
      out["doctor"] = Compare(c, rounds);
    }
    if (wants("doctor_whole")) {
      // As `doctor`, measured over the whole call: the tracer's set-up, warm-up and
      // fixed costs included, per element produced.
      Config c;
      c.name = "doctor_whole";
      c.make = Parser(spec, spec_path);
      c.options.optimization.apply_default_optimizations = false;
      c.options.autotune.enabled = false;
      c.modes = {"off", "doctor"};
      c.warmup_seconds = doctor_warmup;
      c.n = doctor_batches;
      c.items_per_element = batch;
      c.whole = true;
      out["doctor_whole"] = Compare(c, rounds);
    }
  }
  out["loadavg_after"] = LoadAvg();
  std::printf("%s\n", out.dump(2).c_str());
  return 0;
}
