// sluice profile spec.json --trace out.json [--counters] [--sample N] [--batches-only]
//                [--seconds S] [--elements N] [--summary-json F] [--html F] [--json]
// Runs a JSON pipeline spec (docs/spec.md) under the profiler (docs/profiler.md) for S
// seconds or N elements or to its end, writes the Chrome trace and prints the summary
// per operator (text, or the JSON summary with --json).
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "commands.h"
#include "data_roots.h"
#include "sluice/profiler.h"
#include "sluice/serialize.h"

namespace sluice {
namespace {

struct ProfileArgs {
  std::string spec;
  std::string trace;
  std::string summary_json;
  std::string html;
  bool counters = false;
  int64_t sample = 1;
  bool batches_only = false;
  double seconds = 0;
  int64_t elements = 0;
  bool json = false;
  DataRoots roots;
};

int Fail(const Status& s) {
  std::fprintf(stderr, "sluice profile: %s\n", s.ToString().c_str());
  return 1;
}

int RunProfile(const ProfileArgs& a) {
  if (a.sample < 1) return Fail(InvalidArgumentError("--sample must be >= 1"));
  Result<Dataset> ds = LoadSpecConfined(a.spec, a.roots);
  if (!ds.ok()) return Fail(ds.status());
  profiler::ProfileOptions po;
  po.trace_path = a.trace;
  po.summary_json_path = a.summary_json;
  po.html_path = a.html;
  po.counters = a.counters;
  po.sampling = a.batches_only ? profiler::Sampling::kBatchesOnly
                : a.sample > 1 ? profiler::Sampling::kOneInN
                               : profiler::Sampling::kAll;
  po.sample_every = a.sample;
  auto session = profiler::Session::Start(po);
  if (!session.ok()) return Fail(session.status());
  Options o;
  o.span_recorder = (*session)->recorder();
  const auto start = std::chrono::steady_clock::now();
  int64_t n = 0;
  {
    auto it = ds->MakeIterator(o);
    if (!it.ok()) return Fail(it.status());
    while (true) {
      if (a.elements > 0 && n >= a.elements) break;
      const std::chrono::duration<double> spent =
          std::chrono::steady_clock::now() - start;
      if (a.seconds > 0 && spent.count() >= a.seconds) break;
      auto next = (*it)->GetNext();
      if (!next.ok()) return Fail(next.status());
      if (!*next) break;
      ++n;
    }
  }
  Status st = (*session)->Stop();
  if (!st.ok()) return Fail(st);
  const profiler::Summary& s = (*session)->summary();
  if (a.json) {
    std::printf("%s\n", profiler::SummaryJson(s).c_str());
  } else {
    std::printf("%lld elements from %s\n%s", static_cast<long long>(n), a.spec.c_str(),
                profiler::SummaryText(s).c_str());
    if (!a.trace.empty()) std::printf("trace: %s\n", a.trace.c_str());
  }
  return 0;
}

}  // namespace

void AddProfileCommand(CLI::App& app, int* exit_code) {
  auto a = std::make_shared<ProfileArgs>();
  auto* cmd = app.add_subcommand(
      "profile",
      "Run a pipeline spec under the profiler: Chrome trace + summary per operator");
  cmd->add_option("spec", a->spec, "The pipeline spec (.json)")->required();
  cmd->add_option("--trace", a->trace, "Write the Chrome Trace Event JSON here");
  cmd->add_flag(
      "--counters", a->counters,
      "perf_event_open counters per operator (software; hardware where exposed)");
  cmd->add_option("--sample", a->sample, "Record 1 in N elements per operator");
  cmd->add_flag("--batches-only", a->batches_only,
                "Record only batch production/consumption");
  cmd->add_option("--seconds", a->seconds, "Stop after this many seconds");
  cmd->add_option("--elements", a->elements, "Stop after this many elements");
  cmd->add_option("--summary-json", a->summary_json, "Write the summary as JSON here");
  cmd->add_option("--html", a->html, "Write the summary as an HTML page here");
  cmd->add_flag("--json", a->json, "Print the summary as JSON");
  AddDataRootFlags(cmd, &a->roots);
  cmd->callback([=] { *exit_code = RunProfile(*a); });
}

}  // namespace sluice
