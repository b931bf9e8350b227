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
#include "sluice/serialize.h"

namespace sluice {

Result<BenchResult> TimePipeline(const Dataset& ds, const BenchArgs& args, std::string suite,
                                 const std::function<int64_t(const Element&)>& items_of,
                                 bool progress) {
  using Clock = std::chrono::steady_clock;
  // The dataset's own options, with the bench's budget and tuning on top; MakeIterator()
  // runs the static rewrites they enable, as a user's iterator would.
  Options options;
  options.autotune.cpu_budget = args.threads;
  options.autotune.enabled = args.autotune;
  if (args.initial_parallelism > 0) options.autotune.initial_parallelism = args.initial_parallelism;
  if (!args.optimize) options.optimization.apply_default_optimizations = false;
  const Dataset tuned = ds.WithOptions(options);
  const auto created = Clock::now();
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<Iterator> it, tuned.MakeIterator());
  const bool tty = isatty(STDERR_FILENO);
  nlohmann::json timeline = nlohmann::json::array();
  int64_t delivered = 0;  // warm-up included, for the timeline
  double next_point = args.timeline_step;
  auto run = [&](double seconds, bool measured, int64_t* items) -> Result<double> {
    const auto start = Clock::now();
    double elapsed = 0, last_print = 0;
    while (elapsed < seconds) {
      SLUICE_ASSIGN_OR_RETURN(auto next, it->GetNext());
      if (!next) return FailedPreconditionError(suite + ": the pipeline ended; it must repeat");
      const int64_t n = items_of(*next);
      *items += n;
      delivered += n;
      const auto now = Clock::now();
      elapsed = std::chrono::duration<double>(now - start).count();
      if (args.timeline_step > 0) {
        const double since = std::chrono::duration<double>(now - created).count();
        if (since >= next_point) {
          timeline.push_back({since, delivered});
          while (next_point <= since) next_point += args.timeline_step;
        }
      }
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
  // The stats plane in its one schema (include/sluice/stats.h).
  r.extra["stats"] = nlohmann::json::parse(StatsToJson(it->Snapshot()));
  nlohmann::json knobs = nlohmann::json::array();
  for (const TunedParameter& p : it->TunedParameters()) {
    knobs.push_back({{"prefix", p.prefix}, {"op", p.op}, {"name", p.name}, {"value", p.value}});
  }
  r.extra["tuned"] = std::move(knobs);
  if (args.timeline_step > 0) r.extra["timeline"] = std::move(timeline);
  if (auto report = tuned.OptimizationReport(); report.ok()) r.extra["rewrites"] = *report;
  return r;
}

namespace {

// A JSON pipeline spec (docs/spec.md) timed like a suite: items are the rows of each
// element's first component (its dim 0; 1 for a scalar). The spec must repeat.
Result<BenchResult> BenchSpec(const std::string& path, const BenchArgs& args) {
  SLUICE_ASSIGN_OR_RETURN(Dataset ds, LoadSpecConfined(path, args.roots));
  std::string stem = path.substr(path.find_last_of('/') + 1);
  stem = stem.substr(0, stem.size() - 5);  // ".json"
  SLUICE_ASSIGN_OR_RETURN(
      BenchResult r, TimePipeline(ds, args, "spec:" + stem, [](const Element& e) -> int64_t {
        return e.empty() || e[0].rank() == 0 ? 1 : e[0].dim(0);
      }));
  r.extra["spec"] = path;
  SLUICE_ASSIGN_OR_RETURN(std::string fingerprint, DatasetFingerprint(ds));
  r.extra["fingerprint"] = fingerprint;
  return r;
}

bool IsSpecPath(const std::string& s) {
  return s.size() > 5 && s.compare(s.size() - 5, 5, ".json") == 0;
}

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
      {"autotune", {&BenchAutotune, "data/imagenet",
                    "AUTOTUNE from parallelism 1 vs a grid search over parallelism and "
                    "prefetch buffers, on imagenet (--data) and fashion-mnist; writes "
                    "bench/results/autotune.json"}},
  };
  return *suites;
}

}  // namespace

void AddBenchCommand(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("bench", "Time a built-in pipeline (suites: imagenet, "
                                          "decode-loop, fashion-mnist, text) or a JSON "
                                          "pipeline spec");
  auto suite = std::make_shared<std::string>();
  auto args = std::make_shared<BenchArgs>();
  auto json = std::make_shared<bool>(false);
  std::string names;
  for (const auto& [name, s] : Suites()) names += "\n  " + name + ": " + s.help;
  names += "\n  <file.json>: a pipeline spec (docs/spec.md); it must repeat. --data, "
           "--batch-size and --sequential do not apply";
  cmd->add_option("suite", *suite, "The pipeline to time:" + names)->required();
  cmd->add_option("--data", args->data, "Data directory (default: the suite's)");
  cmd->add_option("--seconds", args->seconds, "Measured seconds")->capture_default_str();
  cmd->add_option("--warmup", args->warmup_seconds, "Warm-up seconds")->capture_default_str();
  cmd->add_option("--threads", args->threads, "CPU budget (0: the cores available)")->capture_default_str();
  cmd->add_option("--batch-size", args->batch_size, "Batch size (0: the suite's)");
  cmd->add_flag("--sequential", args->sequential, "No parallel ops or prefetch (the naive baseline)");
  cmd->add_option("--parallelism", args->parallelism,
                  "Every parallel op's parallelism, as a hand-tuned pipeline would set it "
                  "(0: the suite's default, AUTOTUNE; -1: AUTOTUNE)")
      ->check(CLI::Range(int64_t{-1}, int64_t{4096}));
  cmd->add_option("--prefetch", args->prefetch,
                  "The final prefetch's buffer (0: the suite's default; -1: AUTOTUNE)")
      ->check(CLI::Range(int64_t{-1}, int64_t{1} << 20));
  cmd->add_option("--initial-parallelism", args->initial_parallelism,
                  "Where AUTOTUNE parallelism starts (0: the CPU budget, the default; "
                  "`sluice bench autotune` starts from 1)")
      ->check(CLI::Range(int64_t{0}, int64_t{4096}));
  cmd->add_flag("--json", *json, "Print one JSON object");
  AddDataRootFlags(cmd, &args->roots);
  cmd->add_flag("!--no-optimize", args->optimize,
                "Run the graph as built, without the static rewrites (docs/optimizer.md)");
  cmd->add_flag("!--no-autotune", args->autotune,
                "Leave AUTOTUNE knobs at their starting values (docs/autotune.md)");
  cmd->callback([=] {
    auto it = Suites().find(*suite);
    const bool spec = it == Suites().end() && IsSpecPath(*suite);
    if (it == Suites().end() && !spec) {
      std::fprintf(stderr, "sluice bench: unknown suite '%s'; suites:%s\n", suite->c_str(), names.c_str());
      *exit_code = 2;
      return;
    }
    BenchArgs a = *args;
    if (a.sequential) a.optimize = false;  // the naive baseline runs as built
    if (a.data.empty() && !spec) a.data = it->second.default_data;
    if (a.threads == 0) a.threads = AvailableCores();
    Result<BenchResult> r = spec ? BenchSpec(*suite, a) : it->second.fn(a);
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
      if (r->extra.contains("rewrites")) {
        std::string changed;
        for (const auto& line : r->extra["rewrites"]) {
          const std::string l = line.get<std::string>();
          if (l.find(": 0 changes") == std::string::npos && l.find("disabled") == std::string::npos) {
            changed += "\n  " + l;
          }
        }
        std::printf("rewrites:%s\n", changed.empty() ? " none applied" : changed.c_str());
      }
      if (r->extra.contains("tuned") && !r->extra["tuned"].empty()) {
        std::printf("tuned:\n");
        for (const auto& k : r->extra["tuned"]) {
          std::printf("  %-48s %-12s %-12s %ld\n", k["prefix"].get<std::string>().c_str(),
                      k["op"].get<std::string>().c_str(), k["name"].get<std::string>().c_str(),
                      static_cast<long>(k["value"].get<int64_t>()));
        }
      }
    }
  });
}

}  // namespace sluice
