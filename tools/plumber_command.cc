// sluice plumber [spec.json] [--trace t] [--save-trace t] [--apply out.json] [--json]
//                [--html r.html] [--measure] [--seconds s] [--cores n]
//
// The bottleneck doctor (docs/doctor.md) on a JSON pipeline spec: traces it for a few
// seconds (or loads a saved trace), prints the ranked bottlenecks and the plan, and with
// --apply writes the rewritten pipeline as a spec (a GraphDef in protobuf JSON, which
// `sluice spec` and LoadPipelineSpec read). --measure runs the rewritten pipeline and
// prints predicted vs measured.
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>

#include "commands.h"
#include "data_roots.h"
#include "sluice/plumber.h"
#include "sluice/serialize.h"

namespace sluice {
namespace {

struct PlumberArgs {
  std::string spec;
  std::string trace;
  std::string save_trace;
  std::string apply;
  std::string html;
  bool json = false;
  bool measure = false;
  double seconds = 3;
  double warmup = 0.5;
  double probe = 1;
  int64_t cores = 0;
  int64_t ram_budget = 0;
  DataRoots roots;
};

int Fail(const Status& s) {
  std::fprintf(stderr, "sluice plumber: %s\n", s.ToString().c_str());
  return 1;
}

Status WriteFile(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  f.close();
  if (!f) return InternalError("cannot write '" + path + "'");
  return Status::OK();
}

int RunPlumber(const PlumberArgs& args) {
  if (args.spec.empty() && args.trace.empty()) {
    return Fail(InvalidArgumentError("give a pipeline spec, a --trace file, or both"));
  }
  std::optional<Dataset> ds;
  if (!args.spec.empty()) {
    Result<Dataset> loaded = LoadSpecConfined(args.spec, args.roots);
    if (!loaded.ok()) return Fail(loaded.status());
    ds = *loaded;
  }
  // From a saved trace: analyze and plan it. Otherwise trace, plan, rewrite and probe
  // the rewritten pipeline (OptimizeDetailed).
  plumber::Analysis analysis;
  plumber::Plan plan;
  std::optional<Dataset> rewritten;
  double predicted = 0;
  bool probed = false;
  plumber::PlanOptions po;
  po.cores = args.cores;
  po.ram_budget = args.ram_budget;
  if (!args.trace.empty()) {
    Result<plumber::Trace> t = plumber::LoadTrace(args.trace);
    if (!t.ok()) return Fail(t.status());
    if (!ds && !t->graph_json.empty()) {
      Result<Dataset> g = DeserializeDataset(t->graph_json, GraphFormat::kJson);
      if (g.ok()) ds = *g;
    }
    Result<plumber::Analysis> a = plumber::Analyze(*t);
    if (!a.ok()) return Fail(a.status());
    analysis = std::move(*a);
    Result<plumber::Plan> p = plumber::MakePlan(analysis, po);
    if (!p.ok()) return Fail(p.status());
    plan = std::move(*p);
    predicted = plan.predicted_rate;
    if (ds && (!args.apply.empty() || args.measure)) {
      Result<Dataset> r = plumber::ApplyPlan(*ds, plan);
      if (!r.ok()) return Fail(r.status());
      rewritten = *r;
    }
  } else {
    plumber::OptimizeOptions o;
    o.trace.seconds = args.seconds;
    o.trace.warmup_seconds = args.warmup;
    o.trace.cpu_budget = args.cores;
    o.plan = po;
    o.probe_seconds = args.probe;
    if (!args.json) {
      std::fprintf(stderr, "tracing %s for %.1f s...\n", args.spec.c_str(), args.seconds);
    }
    Result<plumber::Optimized> opt = plumber::OptimizeDetailed(*ds, o);
    if (!opt.ok()) return Fail(opt.status());
    analysis = std::move(opt->analysis);
    plan = std::move(opt->plan);
    rewritten = opt->dataset;
    predicted = opt->predicted_rate;
    probed = opt->probed;
  }
  if (!args.save_trace.empty()) {
    if (Status s = plumber::SaveTrace(analysis.trace, args.save_trace); !s.ok()) return Fail(s);
  }

  double measured = 0;
  if (!args.apply.empty() || args.measure) {
    if (!rewritten) return Fail(FailedPreconditionError("--apply/--measure need the pipeline spec"));
    if (!args.apply.empty()) {
      Result<std::string> g = SerializeDataset(*rewritten, GraphFormat::kJson);
      if (!g.ok()) return Fail(g.status());
      if (Status s = WriteFile(args.apply, *g); !s.ok()) return Fail(s);
    }
    if (args.measure) {
      // A cache predicts the rate once it is full: warm up past the first pass.
      const double warm = plan.cache_nodes.empty() ? args.warmup : args.warmup + args.seconds;
      Result<double> r =
          plumber::MeasureThroughput(*rewritten, args.seconds, warm, args.cores);
      if (!r.ok()) return Fail(r.status());
      measured = *r;
    }
  }
  // The rate predicted for the pipeline returned (the probe's when one ran).
  plan.predicted_rate = predicted;
  if (!args.html.empty()) {
    if (Status s = WriteFile(args.html, plumber::ReportHtml(analysis, plan, measured));
        !s.ok()) {
      return Fail(s);
    }
  }
  if (args.json) {
    nlohmann::json j = nlohmann::json::parse(plumber::ReportJson(analysis, plan));
    j["probed"] = probed;
    if (args.measure) j["measured_after"] = measured;
    if (!args.apply.empty()) j["applied_to"] = args.apply;
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("%s", plumber::ReportText(analysis, plan).c_str());
  if (probed) std::printf("\n(The prediction is from a probe of the rewritten pipeline.)\n");
  if (args.measure) {
    std::printf("\nMeasured after the plan: %.4g elements/s (predicted %.4g: %+.1f%%)\n",
                measured, predicted, 100.0 * (measured - predicted) / std::max(predicted, 1e-9));
  }
  if (!args.apply.empty()) std::printf("Rewritten pipeline written to %s\n", args.apply.c_str());
  return 0;
}

}  // namespace

void AddPlumberCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<PlumberArgs>();
  auto* cmd = app.add_subcommand(
      "plumber", "Find the bottleneck of a pipeline spec and rewrite it (docs/doctor.md)");
  cmd->add_option("spec", args->spec, "The pipeline spec (.json)");
  cmd->add_option("--trace", args->trace, "Analyze this saved trace instead of tracing");
  cmd->add_option("--save-trace", args->save_trace, "Write the trace here");
  cmd->add_option("--apply", args->apply, "Write the rewritten pipeline spec here");
  cmd->add_option("--html", args->html, "Write an HTML report (inline SVG charts) here");
  cmd->add_flag("--json", args->json, "Print the report as one JSON object");
  cmd->add_flag("--measure", args->measure,
                "Run the rewritten pipeline and print predicted vs measured");
  cmd->add_option("--seconds", args->seconds, "Traced (and measured) seconds")
      ->check(CLI::Range(0.05, 3600.0));
  cmd->add_option("--warmup", args->warmup, "Warm-up seconds before tracing")
      ->check(CLI::Range(0.0, 600.0));
  cmd->add_option("--probe", args->probe,
                 "Seconds to probe the rewritten pipeline before predicting (0: none)")
      ->check(CLI::Range(0.0, 600.0));
  cmd->add_option("--cores", args->cores, "Cores to plan for (default: those available)")
      ->check(CLI::Range(int64_t{0}, int64_t{4096}));
  cmd->add_option("--ram-budget", args->ram_budget, "Bytes a cache may use (default: the "
                                                    "pipeline's RAM budget)");
  AddDataRootFlags(cmd, &args->roots);
  cmd->callback([args, exit_code] { *exit_code = RunPlumber(*args); });
}

}  // namespace sluice
