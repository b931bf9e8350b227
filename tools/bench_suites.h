// The pipelines `sluice bench <suite>` times, one file each (tools/bench_<suite>.cc).
//
// Every suite builds its pipeline on the data in args.data, runs a warm-up, then counts
// items (images, samples, sequences) delivered to the consumer for args.seconds, and
// reports the rate. The side-by-side driver (bench/side_by_side.py) runs these next to
// their PyTorch peers (bench/peers/*.py), which report the same JSON fields.
#ifndef SLUICE_TOOLS_BENCH_SUITES_H_
#define SLUICE_TOOLS_BENCH_SUITES_H_

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "data_roots.h"
#include "sluice/dataset.h"
#include "sluice/status.h"

namespace sluice {

struct BenchArgs {
  std::string data;           // the suite's data directory (or file)
  double seconds = 10;        // measured time, after warm-up
  double warmup_seconds = 2;
  int64_t threads = 0;        // cpu budget; 0: the cores the process may use
  int64_t batch_size = 0;     // 0: the suite's default
  bool sequential = false;    // no parallel ops, no prefetch: the naive baseline
  // Knobs (sluice bench autotune's grid): the parallelism of every parallel op and the
  // final prefetch's buffer, explicit values or kAutotune; 0: the suite's default.
  int64_t parallelism = 0;
  int64_t prefetch = 0;
  bool autotune = true;            // Options::autotune.enabled
  bool optimize = true;            // the default static rewrites (src/optimizer/)
  int64_t initial_parallelism = 0;  // Options::autotune.initial_parallelism
  // Record items delivered every timeline_step seconds from the iterator's creation (the
  // warm-up included) in extra["timeline"] as [seconds, items] pairs; 0: none.
  double timeline_step = 0;
  DataRoots roots;  // --data-root / --write-root (spec pipelines)
};

struct BenchResult {
  std::string suite;
  double items_per_second = 0;
  int64_t items = 0;
  double seconds = 0;
  nlohmann::json extra = nlohmann::json::object();  // suite-specific figures
};

// The shared timing loop: iterates `ds` (which should repeat forever) under a runtime with
// args.threads cores (and args.autotune / initial_parallelism), discards
// args.warmup_seconds, then counts items_of(batch) for args.seconds. extra gets the
// pipeline's stats (peak buffered bytes, cpu per op), the tuned knobs at the end
// ("tuned": [{prefix, name, value}]) and, with args.timeline_step, the timeline.
// Shows a progress line on stderr when `progress`.
Result<BenchResult> TimePipeline(const Dataset& ds, const BenchArgs& args, std::string suite,
                                 const std::function<int64_t(const Element&)>& items_of,
                                 bool progress = true);

// ImageNet-style: TFRecord shards -> parse_example -> decode_and_random_crop 224 -> flip
// -> normalize -> batch -> prefetch. args.data: the datagen output directory.
Result<BenchResult> BenchImagenet(const BenchArgs& args);
// The physical limit: a bare libjpeg-turbo full decode of the same JPEGs on all cores.
Result<BenchResult> BenchDecodeLoop(const BenchArgs& args);
// Fashion-MNIST: IDX -> shuffle -> normalize -> batch 256. args.data: the IDX directory.
Result<BenchResult> BenchFashionMnist(const BenchArgs& args);
// Text: TFRecord -> tokenize -> bucket_by_sequence_length -> padded_batch.
Result<BenchResult> BenchText(const BenchArgs& args);
// Autotuning against a grid search (tools/bench_autotune.cc) on imagenet (args.data) and
// fashion-mnist; writes bench/results/autotune.json.
Result<BenchResult> BenchAutotune(const BenchArgs& args);

}  // namespace sluice

#endif  // SLUICE_TOOLS_BENCH_SUITES_H_
