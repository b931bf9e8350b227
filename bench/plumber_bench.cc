// The bottleneck doctor on the ImageNet-style, Fashion-MNIST and text pipelines, each
// started misconfigured (bench/plumber/<suite>_naive.json: parallelism 1, no prefetch, no
// cache): the doctor traces it, plans and rewrites it; then the rewritten, the AUTOTUNE
// (bench/plumber/<suite>_autotune.json: the same graph with AUTOTUNE everywhere and the
// default rewrites) and the naive configuration (run with the engine's default rewrites)
// are measured alternating A B C C B A (each figure the mean of two), `--reps` times.
// Each run also shows the probe (the rewritten graph as the engine runs it): its rate,
// plan and node costs.
// Also the tracing overhead: the rewritten ImageNet-style pipeline run by the tracer vs
// run plainly, alternating.
//
//   ./build/plumber_bench [--seconds=3] [--reps=3] [--cores=2] [--suites=imagenet,...]
//     [--no-overhead] [--overhead-reps=N] [--verbose]
//
// --verbose: each configuration (the naive spec with the engine's defaults, AUTOTUNE, the
// doctor's) is also run once more and its stats tree printed on stderr: per iterator its
// parallelism, buffer, CPU per root element and the tuned knobs, to compare them.
//
// Run from the repository root after `sluice datagen imagenet --out data/imagenet
// --images 1000 --shards 8 --no-jpeg-folder` and `sluice datagen text --out data/text
// --sentences 100000` (Fashion-MNIST: Debian's dataset-fashion-mnist). Prints one JSON
// document: per suite and repetition, predicted and measured rates (root elements/s),
// the error of the prediction, and the speed-ups; medians; min and max show the noise.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "runtime/resources.h"
#include "sluice/plumber.h"
#include "sluice/serialize.h"
#include "paired_stats.h"

namespace {

using namespace sluice;
using json = nlohmann::json;

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

json Stats(const std::vector<double>& v) {
  if (v.empty()) return json::object();
  return {{"median", Median(v)},
          {"min", *std::min_element(v.begin(), v.end())},
          {"max", *std::max_element(v.begin(), v.end())},
          {"values", v}};
}

bool verbose = false;

// `ds` run for `seconds` after a warm-up; its stats window printed on stderr.
Status PrintTree(const char* what, const Dataset& ds, double seconds, double warmup,
                 int64_t cores) {
  using Clock = std::chrono::steady_clock;
  Options extra;
  if (cores > 0) extra.autotune.cpu_budget = cores;
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<Iterator> it, ds.MakeIterator(extra));
  auto run = [&](double s) -> Result<int64_t> {
    const auto end = Clock::now() + std::chrono::duration<double>(s);
    int64_t n = 0;
    while (Clock::now() < end) {
      SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, it->GetNext());
      if (!e) break;
      ++n;
    }
    return n;
  };
  SLUICE_RETURN_IF_ERROR(run(warmup).status());
  StatsWindow window(it->Snapshot());
  SLUICE_ASSIGN_OR_RETURN(int64_t n, run(seconds));
  const StatsDelta d = window.Delta(it->Snapshot());
  fprintf(stderr, "  %s: %.2f root elements/s\n", what,
          n * 1e9 / std::max<int64_t>(1, d.duration_ns));
  for (const IteratorStats& s : d.nodes) {
    fprintf(stderr, "    %-60s par=%lld buf=%lld cpu/root=%.3g ms elements=%lld\n",
            s.prefix.c_str(), static_cast<long long>(s.parallelism),
            static_cast<long long>(s.buffer_limit), n > 0 ? s.cpu_ns / 1e6 / n : 0.0,
            static_cast<long long>(s.elements_produced));
  }
  for (const TunedParameter& p : it->TunedParameters()) {
    fprintf(stderr, "    knob %s %s = %lld [%lld, %lld]\n", p.prefix.c_str(),
            p.name.c_str(),
            static_cast<long long>(p.value), static_cast<long long>(p.min),
            static_cast<long long>(p.max));
  }
  return Status::OK();
}

Result<json> RunSuite(const std::string& suite, double seconds, int reps, int64_t cores) {
  SLUICE_ASSIGN_OR_RETURN(Dataset naive,
                          LoadPipelineSpec("bench/plumber/" + suite + "_naive.json"));
  SLUICE_ASSIGN_OR_RETURN(Dataset autotune,
                          LoadPipelineSpec("bench/plumber/" + suite + "_autotune.json"));
  json out = {{"suite", suite}, {"runs", json::array()}};
  std::vector<double> err, err_same, err_first, vs_naive, vs_autotune, predicted, after;
  for (int r = 0; r < reps; ++r) {
    fprintf(stderr, "%s: repetition %d/%d\n", suite.c_str(), r + 1, reps);
    plumber::OptimizeOptions oo;
    oo.trace.seconds = seconds;
    oo.trace.warmup_seconds = 0.5;
    oo.trace.cpu_budget = cores;
    oo.plan.cores = cores;
    oo.probe_seconds = 1;
    SLUICE_ASSIGN_OR_RETURN(plumber::Optimized opt, plumber::OptimizeDetailed(naive, oo));
    const plumber::Analysis& a = opt.analysis;
    const plumber::Plan& plan = opt.plan;
    const plumber::PlanOptions& po = oo.plan;
    const Dataset& applied = opt.dataset;
    // The rewritten pipeline, AUTOTUNE and the naive spec (with the engine's defaults)
    // measured in turn, A B C C B A, so that a load that drifts over the repetition
    // weighs on all alike; each figure is the mean of two. A cache is full after the
    // first pass: warm up past it.
    const double warm = plan.cache_nodes.empty() ? 0.5 : 0.5 + seconds;
    double m_auto = 0, m_after = 0, m_naive = 0, share = 0;
    for (int k = 0; k < 6; ++k) {
      if (k == 2 || k == 3) {
        SLUICE_ASSIGN_OR_RETURN(double r,
                                plumber::MeasureThroughput(naive, seconds, 0.5, cores));
        m_naive += r / 2;
      } else if (k == 1 || k == 4) {
        SLUICE_ASSIGN_OR_RETURN(double r,
                                plumber::MeasureThroughput(autotune, seconds, 2.0, cores));
        m_auto += r / 2;
      } else {
        SLUICE_ASSIGN_OR_RETURN(plumber::Measurement ma,
                                plumber::Measure(applied, seconds, warm, cores));
        m_after += ma.rate / 2;
        share += ma.cpu_availability / 2;
      }
    }
    // The machine is shared: the final prediction at the CPU share the measured runs got
    // (the trace's own share may differ): the final plan at that share, or where the
    // probe's measured rate was the prediction (above its plan), that rate moved as the
    // plan moves from the probe's share to the measured one.
    if (verbose) {
      SLUICE_RETURN_IF_ERROR(
          PrintTree("naive spec, engine defaults", naive, seconds, 0.5, cores));
      SLUICE_RETURN_IF_ERROR(PrintTree("AUTOTUNE", autotune, seconds, 2.0, cores));
      SLUICE_RETURN_IF_ERROR(PrintTree("doctor", applied, seconds, warm, cores));
    }
    plumber::Analysis at = opt.probed ? opt.probe_analysis : a;
    at.trace.machine.cpu_availability = share;
    SLUICE_ASSIGN_OR_RETURN(plumber::Plan replan, plumber::MakePlan(at, po));
    if (opt.probed && opt.probe_plan.predicted_rate > 0) {
      replan.predicted_rate =
          std::max(replan.predicted_rate, opt.probe_analysis.root_elements_per_second *
                                              replan.predicted_rate /
                                              opt.probe_plan.predicted_rate);
    }
    const double e = (m_after - opt.predicted_rate) / opt.predicted_rate;
    const double e_first = (m_after - plan.predicted_rate) / plan.predicted_rate;
    err_first.push_back(e_first);
    const double e_same = (m_after - replan.predicted_rate) / replan.predicted_rate;
    err_same.push_back(e_same);
    err.push_back(e);
    vs_naive.push_back(m_after / m_naive);
    vs_autotune.push_back(m_after / m_auto);
    predicted.push_back(opt.predicted_rate);
    after.push_back(m_after);
    json run = {{"traced_rate", a.root_elements_per_second},
                {"predicted", opt.predicted_rate},
                {"predicted_first_trace", plan.predicted_rate},
                {"prediction_error_first_trace", e_first},
                {"probed", opt.probed},
                {"measured_naive", m_naive},
                {"measured_applied", m_after},
                {"measured_autotune", m_auto},
                {"prediction_error", e},
                {"cpu_availability_trace", a.trace.machine.cpu_availability},
                {"cpu_availability_measured", share},
                {"predicted_at_measured_availability", replan.predicted_rate},
                {"prediction_error_at_measured_availability", e_same},
                {"handoff_ns", a.trace.machine.handoff_ns},
                {"speedup_vs_naive", m_after / m_naive},
                {"ratio_vs_autotune", m_after / m_auto},
                {"cache_nodes", plan.cache_nodes},
                {"cache_bytes", plan.cache_bytes},
                {"bottleneck", plan.bottlenecks.empty() ? "" : plan.bottlenecks[0].text},
                {"cpu_scale", a.cpu_scale}};
    json pars = json::array();
    for (const auto& n : plan.nodes) {
      if (n.parallelism > 0) pars.push_back({{"node", a.nodes[n.id].name}, {"parallelism", n.parallelism}});
    }
    run["parallelism"] = pars;
    if (opt.probed) {
      // The probe: the rewritten graph as the engine runs it, its counters and its plan.
      const plumber::Analysis& pa = opt.probe_analysis;
      json nodes = json::array();
      for (const auto& n : pa.nodes) {
        nodes.push_back({{"node", n.name},
                         {"visit_ratio", n.visit_ratio},
                         {"cpu_ns_per_root", n.cpu_ns_per_root},
                         {"sequential", n.sequential},
                         {"parallelism", opt.probe_plan.nodes[n.id].parallelism}});
      }
      run["probe"] = {{"rate", pa.root_elements_per_second},
                      {"cpu_availability", pa.trace.machine.cpu_availability},
                      {"predicted", opt.probe_plan.predicted_rate},
                      {"framework_ns_per_root", pa.framework_ns_per_root},
                      {"cpu_scale", pa.cpu_scale},
                      {"cpu_utilization", pa.cpu_utilization},
                      {"handoff_ns", pa.trace.machine.handoff_ns},
                      {"nodes", nodes}};
    }
    out["runs"].push_back(run);
  }
  out["prediction_error"] = Stats(err);
  out["prediction_error_first_trace"] = Stats(err_first);
  out["prediction_error_at_measured_availability"] = Stats(err_same);
  out["predicted"] = Stats(predicted);
  out["measured_applied"] = Stats(after);
  out["speedup_vs_naive"] = Stats(vs_naive);
  out["ratio_vs_autotune"] = Stats(vs_autotune);
  return out;
}

// The pipeline run plainly for `seconds` after `warmup`: root elements/s and process CPU
// seconds per root element over the window (as a trace's process_cpu_ns covers its own).
Result<std::pair<double, double>> PlainRun(const Dataset& ds, double seconds, double warmup,
                                           int64_t cores) {
  using Clock = std::chrono::steady_clock;
  Options extra;
  if (cores > 0) extra.autotune.cpu_budget = cores;
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<Iterator> it, ds.MakeIterator(extra));
  const auto warm_end = Clock::now() + std::chrono::duration<double>(warmup);
  while (Clock::now() < warm_end) {
    SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, it->GetNext());
    if (!e) return FailedPreconditionError("the pipeline ended during the warm-up");
  }
  bench::RoundClock clock;
  clock.Start();
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  int64_t n = 0;
  while (Clock::now() < end) {
    SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, it->GetNext());
    if (!e) break;
    ++n;
  }
  clock.Stop();
  if (n == 0) return FailedPreconditionError("no element in the window");
  return std::make_pair(n / clock.wall_s(), clock.cpu_s() / n);
}

// Tracing overhead: the rewritten ImageNet-style pipeline, traced vs plain, alternating
// (the order swapped every repetition); the median per-pair ratio with a bootstrap
// interval and a sign test (paired_stats.h).
Result<json> Overhead(double seconds, int reps, int64_t cores) {
  SLUICE_ASSIGN_OR_RETURN(Dataset naive, LoadPipelineSpec("bench/plumber/imagenet_naive.json"));
  plumber::TraceOptions to;
  to.seconds = seconds;
  to.warmup_seconds = 0.5;
  to.cpu_budget = cores;
  to.measure_bandwidth = false;
  SLUICE_ASSIGN_OR_RETURN(plumber::Trace t0, plumber::TracePipeline(naive, to));
  SLUICE_ASSIGN_OR_RETURN(plumber::Analysis a0, plumber::Analyze(t0));
  plumber::PlanOptions po;
  po.cores = cores;
  SLUICE_ASSIGN_OR_RETURN(plumber::Plan plan, plumber::MakePlan(a0, po));
  SLUICE_ASSIGN_OR_RETURN(Dataset ds, plumber::ApplyPlan(naive, plan));
  std::vector<double> traced, plain, ratio, traced_cpu, plain_cpu;
  for (int r = 0; r < reps; ++r) {
    fprintf(stderr, "overhead: repetition %d/%d\n", r + 1, reps);
    std::pair<double, double> pr;
    if (r % 2 == 0) {
      SLUICE_ASSIGN_OR_RETURN(pr, PlainRun(ds, seconds, 0.5, cores));
    }
    SLUICE_ASSIGN_OR_RETURN(plumber::Trace t, plumber::TracePipeline(ds, to));
    SLUICE_ASSIGN_OR_RETURN(plumber::Analysis a, plumber::Analyze(t));
    if (r % 2 == 1) {
      SLUICE_ASSIGN_OR_RETURN(pr, PlainRun(ds, seconds, 0.5, cores));
    }
    const double p = pr.first;
    plain_cpu.push_back(pr.second);
    const double traced_elements = a.root_elements_per_second * t.duration_ns / 1e9;
    traced_cpu.push_back(traced_elements > 0 ? t.process_cpu_ns / 1e9 / traced_elements : 0);
    plain.push_back(p);
    traced.push_back(a.root_elements_per_second);
    ratio.push_back(a.root_elements_per_second / p);
  }
  return json{{"pipeline", "imagenet (rewritten)"},
              {"plain", Stats(plain)},
              {"traced", Stats(traced)},
              {"traced_over_plain", Stats(ratio)},
              {"overhead", 1 - Median(ratio)},
              // Rates: the variant is "plain", so a positive figure is tracing's cost.
              {"overhead_paired", bench::OverheadJson(bench::SummarizePairs(traced, plain))},
              // Process CPU seconds per root element in the window: traced over plain.
              {"cpu_per_element_plain", Stats(plain_cpu)},
              {"cpu_per_element_traced", Stats(traced_cpu)},
              {"overhead_cpu_paired",
               bench::OverheadJson(bench::SummarizePairs(plain_cpu, traced_cpu))}};
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 3;
  int reps = 3;
  int64_t cores = 0;
  std::vector<std::string> suites = {"imagenet", "fashion_mnist", "text"};
  bool overhead = true;
  int overhead_reps = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--seconds=", 0) == 0) seconds = std::stod(a.substr(10));
    else if (a.rfind("--reps=", 0) == 0) reps = std::stoi(a.substr(7));
    else if (a.rfind("--cores=", 0) == 0) cores = std::stoll(a.substr(8));
    else if (a == "--no-overhead") overhead = false;
    else if (a == "--verbose") verbose = true;
    else if (a.rfind("--overhead-reps=", 0) == 0) overhead_reps = std::stoi(a.substr(16));
    else if (a.rfind("--suites=", 0) == 0) {
      suites.clear();
      std::string s = a.substr(9);
      for (size_t p = 0; p <= s.size();) {
        size_t q = s.find(',', p);
        if (q == std::string::npos) q = s.size();
        if (q > p) suites.push_back(s.substr(p, q - p));
        p = q + 1;
      }
    } else {
      fprintf(stderr, "usage: plumber_bench [--seconds=S] [--reps=N] [--cores=C] "
                      "[--suites=a,b] [--no-overhead] [--overhead-reps=N] [--verbose]\n");
      return 2;
    }
  }
  if (cores <= 0) cores = sluice::AvailableCores();
  if (overhead_reps <= 0) overhead_reps = reps;
  json doc = {{"cores", cores}, {"seconds", seconds}, {"reps", reps}};
  if (FILE* f = fopen("/proc/loadavg", "r")) {
    char buf[128] = {0};
    if (fgets(buf, sizeof buf, f)) doc["loadavg_before"] = std::string(buf, strcspn(buf, "\n"));
    fclose(f);
  }
  doc["suites"] = json::array();
  int rc = 0;
  for (const std::string& s : suites) {
    auto r = RunSuite(s, seconds, reps, cores);
    if (!r.ok()) {
      fprintf(stderr, "%s: %s\n", s.c_str(), r.status().ToString().c_str());
      doc["suites"].push_back({{"suite", s}, {"error", r.status().ToString()}});
      rc = 1;
      continue;
    }
    doc["suites"].push_back(*r);
  }
  if (overhead) {
    auto o = Overhead(seconds, std::max(overhead_reps, 3), cores);
    if (o.ok()) {
      doc["tracing_overhead"] = *o;
    } else {
      doc["tracing_overhead"] = {{"error", o.status().ToString()}};
      rc = 1;
    }
  }
  if (FILE* f = fopen("/proc/loadavg", "r")) {
    char buf[128] = {0};
    if (fgets(buf, sizeof buf, f)) doc["loadavg_after"] = std::string(buf, strcspn(buf, "\n"));
    fclose(f);
  }
  printf("%s\n", doc.dump(2).c_str());
  return rc;
}
