// sluice bench autotune: online autotuning against an offline grid search (the acceptance
// benchmark of src/autotune/).
//
// For each workload (the ImageNet-style pipeline of imagenet_pipeline.h on args.data, and
// Fashion-MNIST of bench_fashion_mnist.cc):
//  1. Grid: autotune off, every parallel op at an explicit parallelism p in
//     {1, 2, 4, ..., cpu budget} and the final prefetch at an explicit buffer b in
//     {1, 2, 8}; each config warms up args.warmup_seconds and is measured for
//     0.4 x args.seconds. The best config is measured again kRepeats times (median).
//  2. Autotune: every knob AUTOTUNE, initial parallelism 1, no warm-up, run for
//     2 x args.seconds, kRepeats times. From the timeline (items every 0.25 s since the
//     iterator was made): the throughput over the last half of the run (after
//     convergence), and the time at which a 1 s window first reaches 95% of the best grid
//     median. Medians over the repeats.
// Acceptance: autotuned median >= 95% of the best grid median, reached within 10 s.
// Progress lines go to stderr; the JSON goes to stdout and bench/results/autotune.json.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "bench_suites.h"
#include "imagenet_pipeline.h"

namespace sluice {
namespace {

constexpr int kRepeats = 3;
constexpr double kTimelineStep = 0.25;
constexpr double kRateWindow = 1.0;  // seconds, for the time to 95%

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

Result<BenchResult> RunImagenet(const BenchArgs& a) {
  ImagenetPipelineOptions o;
  if (a.batch_size > 0) o.batch_size = a.batch_size;
  o.num_parallel_calls = a.parallelism != 0 ? a.parallelism : kAutotune;
  o.prefetch_buffer = a.prefetch != 0 ? a.prefetch : 2;
  Dataset ds = ImagenetPipeline(a.data, o);
  SLUICE_RETURN_IF_ERROR(ds.status());
  return TimePipeline(ds, a, "imagenet", [](const Element& b) { return b[0].dim(0); },
                      /*progress=*/false);
}

struct Workload {
  std::string name;
  std::string data;
  std::function<Result<BenchResult>(const BenchArgs&)> run;
};

// Time (s) at which the rate over the preceding kRateWindow first reaches `target`; -1
// when never.
double TimeToReach(const nlohmann::json& timeline, double target) {
  std::vector<std::pair<double, double>> pts = {{0.0, 0.0}};
  for (const auto& p : timeline) pts.push_back({p[0].get<double>(), p[1].get<double>()});
  size_t j = 0;
  for (size_t i = 1; i < pts.size(); ++i) {
    while (j + 1 < i && pts[i].first - pts[j + 1].first >= kRateWindow) ++j;
    const double dt = pts[i].first - pts[j].first;
    if (dt >= kRateWindow * 0.9 && (pts[i].second - pts[j].second) / dt >= target) {
      return pts[i].first;
    }
  }
  return -1;
}

// Items per second over the timeline's points at or after `from` seconds.
double RateAfter(const nlohmann::json& timeline, double from) {
  double t0 = -1, n0 = 0, t1 = 0, n1 = 0;
  for (const auto& p : timeline) {
    const double t = p[0].get<double>(), n = p[1].get<double>();
    if (t >= from && t0 < 0) t0 = t, n0 = n;
    t1 = t, n1 = n;
  }
  return t0 >= 0 && t1 > t0 ? (n1 - n0) / (t1 - t0) : 0;
}

Result<nlohmann::json> RunWorkload(const Workload& w, const BenchArgs& args) {
  nlohmann::json out = {{"name", w.name}};
  std::vector<int64_t> ps;
  for (int64_t p = 1; p < args.threads; p *= 2) ps.push_back(p);
  ps.push_back(std::max<int64_t>(1, args.threads));
  const std::vector<int64_t> buffers = {1, 2, 8};
  BenchArgs base = args;
  base.data = w.data;
  base.seconds = std::max(1.0, 0.4 * args.seconds);
  base.autotune = false;
  nlohmann::json grid = nlohmann::json::array();
  double best_rate = -1;
  int64_t best_p = 1, best_b = 1;
  for (int64_t p : ps) {
    for (int64_t b : buffers) {
      BenchArgs a = base;
      a.parallelism = p;
      a.prefetch = b;
      SLUICE_ASSIGN_OR_RETURN(BenchResult r, w.run(a));
      std::fprintf(stderr, "[autotune] %s grid parallelism %ld prefetch %ld: %.1f items/s\n",
                   w.name.c_str(), static_cast<long>(p), static_cast<long>(b),
                   r.items_per_second);
      grid.push_back({{"parallelism", p}, {"prefetch", b}, {"items_per_second", r.items_per_second}});
      if (r.items_per_second > best_rate) {
        best_rate = r.items_per_second;
        best_p = p;
        best_b = b;
      }
    }
  }
  out["grid"] = grid;
  std::vector<double> best_runs;
  for (int i = 0; i < kRepeats; ++i) {
    BenchArgs a = base;
    a.parallelism = best_p;
    a.prefetch = best_b;
    SLUICE_ASSIGN_OR_RETURN(BenchResult r, w.run(a));
    best_runs.push_back(r.items_per_second);
    std::fprintf(stderr, "[autotune] %s best grid config again (%d/%d): %.1f items/s\n",
                 w.name.c_str(), i + 1, kRepeats, r.items_per_second);
  }
  const double best = Median(best_runs);
  out["best"] = {{"parallelism", best_p}, {"prefetch", best_b},
                 {"items_per_second_runs", best_runs}, {"items_per_second", best}};

  const double run_seconds = 2 * args.seconds;
  std::vector<double> rates, t95s;
  nlohmann::json runs = nlohmann::json::array();
  for (int i = 0; i < kRepeats; ++i) {
    BenchArgs a = args;
    a.data = w.data;
    a.autotune = true;
    a.initial_parallelism = 1;
    a.parallelism = kAutotune;
    a.prefetch = kAutotune;
    a.warmup_seconds = 0;
    a.seconds = run_seconds;
    a.timeline_step = kTimelineStep;
    SLUICE_ASSIGN_OR_RETURN(BenchResult r, w.run(a));
    const nlohmann::json& timeline = r.extra["timeline"];
    const double rate = RateAfter(timeline, run_seconds / 2);
    const double t95 = TimeToReach(timeline, 0.95 * best);
    rates.push_back(rate);
    t95s.push_back(t95 < 0 ? 1e9 : t95);
    runs.push_back({{"items_per_second_converged", rate},
                    {"time_to_95_s", t95 < 0 ? nlohmann::json(nullptr) : nlohmann::json(t95)},
                    {"tuned", r.extra["tuned"]}});
    std::fprintf(stderr,
                 "[autotune] %s autotuned (%d/%d): %.1f items/s after convergence, 95%% of best "
                 "at %s\n",
                 w.name.c_str(), i + 1, kRepeats, rate,
                 t95 < 0 ? "never" : (std::to_string(t95) + " s").c_str());
  }
  const double rate = Median(rates);
  const double t95 = Median(t95s);
  out["autotuned"] = {{"runs", runs},
                      {"items_per_second", rate},
                      {"window_s", run_seconds / 2},
                      {"time_to_95_s", t95 >= 1e9 ? nlohmann::json(nullptr) : nlohmann::json(t95)}};
  out["ratio"] = best > 0 ? rate / best : 0;
  out["pass"] = best > 0 && rate >= 0.95 * best && t95 <= 10;
  return out;
}

}  // namespace

Result<BenchResult> BenchAutotune(const BenchArgs& args) {
  const std::vector<Workload> workloads = {
      {"imagenet", args.data, RunImagenet},
      {"fashion_mnist", "/usr/share/datasets/fashion-mnist",
       [](const BenchArgs& a) { return BenchFashionMnist(a); }},
  };
  nlohmann::json all = {{"cpu_budget", args.threads}, {"repeats", kRepeats},
                        {"workloads", nlohmann::json::array()}};
  BenchResult result;
  result.suite = "autotune";
  for (const Workload& w : workloads) {
    SLUICE_ASSIGN_OR_RETURN(nlohmann::json j, RunWorkload(w, args));
    if (w.name == "imagenet") {
      result.items_per_second = j["autotuned"]["items_per_second"].get<double>();
    }
    all["workloads"].push_back(std::move(j));
  }
  std::error_code ec;
  std::filesystem::create_directories("bench/results", ec);
  std::ofstream f("bench/results/autotune.json");
  f << all.dump(2) << "\n";
  if (!f) std::fprintf(stderr, "[autotune] cannot write bench/results/autotune.json\n");
  std::printf("%s\n", all.dump(2).c_str());
  result.extra = {{"autotune", all}};
  return result;
}

}  // namespace sluice
