// sluice bench <suite>: times one of the built-in pipelines (tools/bench_suites.h) and
// prints its rate, as text or as one JSON object (the side-by-side driver's input).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>

#include "bench_suites.h"
#include "commands.h"
#include "runtime/resources.h"

namespace sluice {

Result<BenchResult> TimePipeline(const Dataset& ds, const BenchArgs& args, std::string suite,
                                 const std::function<int64_t(const Element&)>& items_of,
                                 bool progress) {
  using Clock = std::chrono::steady_clock;
  RuntimeOptions options;
  options.cpu_budget = args.threads;
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<Iterator> it, ds.MakeIterator(options));
  const bool tty = isatty(STDERR_FILENO);
  auto run = [&](double seconds, bool measured, int64_t* items) -> Result<double> {
    const auto start = Clock::now();
    double elapsed = 0, last_print = 0;
    while (elapsed < seconds) {
      SLUICE_ASSIGN_OR_RETURN(auto next, it->GetNext());
      if (!next) return FailedPreconditionError(suite + ": the pipeline ended; it must repeat");
      *items += items_of(*next);
      elapsed = std::chrono::duration<double>(Clock::now() - start).count();
      if (progress && elapsed - last_print > (tty ? 0.25 : 5.0)) {
        last_print = elapsed;
        std::fprintf(stderr, "%s  [%s] %s %5.1fs  %10.0f items/s%s", tty ? "\r" : "", suite.c_str(),
                     measured ? "measuring" : "warming up", elapsed, *items / elapsed, tty ? "" : "\n");
      }
    }
    if (progress && tty) std::fprintf(stderr, "\r%70s\r", "");
    return elapsed;
  };
  int64_t warm_items = 0, items = 0;
  SLUICE_RETURN_IF_ERROR(run(args.warmup_seconds, false, &warm_items).status());
  SLUICE_ASSIGN_OR_RETURN(double seconds, run(args.seconds, true, &items));
  BenchResult r;
  r.suite = std::move(suite);
  r.items = items;
  r.seconds = seconds;
  r.items_per_second = items / seconds;
  PipelineStats stats = it->Snapshot();
  r.extra["cpu_budget"] = stats.cpu_budget;
  r.extra["peak_buffered_mb"] = stats.peak_buffered_bytes / 1e6;
  nlohmann::json ops = nlohmann::json::array();
  for (const IteratorStats& s : stats.nodes) {
    ops.push_back({{"name", s.name}, {"cpu_ms", s.cpu_ns / 1e6}, {"produced", s.elements_produced},
                   {"parallelism", s.parallelism}});
  }
  r.extra["ops"] = std::move(ops);
  return r;
}

namespace {

using SuiteFn = Result<BenchResult> (*)(const BenchArgs&);

struct Suite {
  SuiteFn fn;
  const char* default_data;
  const char* help;
};

const std::map<std::string, Suite>& Suites() {
  static const auto* suites = new std::map<std::string, Suite>{
      {"imagenet", {&BenchImagenet, "data/imagenet",
                    "TFRecord shards -> parse_example -> decode_and_random_crop 224 -> flip -> "
                    "normalize -> batch 128 (data: `sluice datagen imagenet --shards 8` output)"}},
      {"decode-loop", {&BenchDecodeLoop, "data/imagenet",
                       "bare libjpeg-turbo full decode of the same JPEGs on all cores"}},
      {"fashion-mnist", {&BenchFashionMnist, "/usr/share/datasets/fashion-mnist",
                         "IDX -> shuffle -> normalize -> batch 256"}},
      {"text", {&BenchText, "data/text",
                "TFRecord -> tokenize -> bucket_by_sequence_length -> padded_batch"}},
  };
  return *suites;
}

}  // namespace

void AddBenchCommand(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("bench", "Time a built-in pipeline (suites: imagenet, "
                                          "decode-loop, fashion-mnist, text)");
  auto suite = std::make_shared<std::string>();
  auto args = std::make_shared<BenchArgs>();
  auto json = std::make_shared<bool>(false);
  std::string names;
  for (const auto& [name, s] : Suites()) names += "\n  " + name + ": " + s.help;
  cmd->add_option("suite", *suite, "The pipeline to time:" + names)->required();
  cmd->add_option("--data", args->data, "Data directory (default: the suite's)");
  cmd->add_option("--seconds", args->seconds, "Measured seconds")->capture_default_str();
  cmd->add_option("--warmup", args->warmup_seconds, "Warm-up seconds")->capture_default_str();
  cmd->add_option("--threads", args->threads, "CPU budget (0: the cores available)")->capture_default_str();
  cmd->add_option("--batch-size", args->batch_size, "Batch size (0: the suite's)");
  cmd->add_flag("--sequential", args->sequential, "No parallel ops or prefetch (the naive baseline)");
  cmd->add_flag("--json", *json, "Print one JSON object");
  cmd->callback([=] {
    auto it = Suites().find(*suite);
    if (it == Suites().end()) {
      std::fprintf(stderr, "sluice bench: unknown suite '%s'; suites:%s\n", suite->c_str(), names.c_str());
      *exit_code = 2;
      return;
    }
    BenchArgs a = *args;
    if (a.data.empty()) a.data = it->second.default_data;
    if (a.threads == 0) a.threads = AvailableCores();
    Result<BenchResult> r = it->second.fn(a);
    if (!r.ok()) {
      std::fprintf(stderr, "sluice bench %s: %s\n", suite->c_str(), r.status().ToString().c_str());
      *exit_code = 1;
      return;
    }
    const std::string impl = *suite == "decode-loop" ? "libjpeg-turbo"
                             : a.sequential          ? "sluice-sequential"
                                                     : "sluice";
    if (*json) {
      nlohmann::json j = {{"suite", r->suite}, {"impl", impl}, {"items_per_second", r->items_per_second},
                          {"items", r->items}, {"seconds", r->seconds}, {"threads", a.threads}};
      j.update(r->extra);
      std::printf("%s\n", j.dump().c_str());
    } else {
      std::printf("%s (%s, %ld threads): %.1f items/s (%ld items in %.1f s)\n", r->suite.c_str(),
                  impl.c_str(), static_cast<long>(a.threads), r->items_per_second,
                  static_cast<long>(r->items), r->seconds);
    }
  });
}

}  // namespace sluice
