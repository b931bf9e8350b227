// Options: how a pipeline runs, attached to a Dataset (tf.data's tf.data.Options).
//
//   Options o;
//   o.autotune.ram_budget = 512 << 20;              // hard limit on buffered bytes
//   o.optimization.Set("map_parallelization", false);
//   Dataset ds = Dataset::TFRecord(files).Map(parse).Batch(128).WithOptions(o);
//   auto it = ds.MakeIterator();                   // rewrites, then tunes online
//
// Every field is optional: an unset field takes the default below. These are all the
// settings a pipeline has: Dataset::WithOptions attaches them, and
// Dataset::MakeIterator(extra) merges `extra` over them for one iterator. WithOptions merges
// (fields set in the argument win), and a transformation carries the options of its inputs
// (merged left to right for zip/concatenate), so options set anywhere upstream reach the
// iterator, as in tf.data.
//
// Thread-safety: a plain value.
#ifndef SLUICE_OPTIONS_H_
#define SLUICE_OPTIONS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sluice {

class Env;           // the file-system seam (src/core/env.h; docs/files.md)
class SpanRecorder;  // the profiler's span hook (src/runtime/span.h)

// Online tuning of AUTOTUNE parallelism and buffer sizes (src/autotune/).
struct AutotuneOptions {
  // Tune AUTOTUNE knobs online (default true). When false they are fixed at start: the
  // CPU budget for parallelism, tf.data's defaults for buffers.
  std::optional<bool> enabled;
  // Threads the pipeline may keep busy, a hard limit on the pool and on the total
  // parallelism the tuner hands out. Unset or 0: the cores available to the process (CPU
  // affinity and cgroup quota respected).
  std::optional<int64_t> cpu_budget;
  // Bytes that operator buffers may hold in total, a hard limit. Unset or 0: half the
  // memory available to the process; -1: unlimited.
  std::optional<int64_t> ram_budget;
  // Where tuned parallelism starts (default: the CPU budget, as tf.data; the tuner then
  // moves it).
  std::optional<int64_t> initial_parallelism;
};

// Static graph rewrites (src/optimizer/), one toggle per pass name.
struct OptimizationOptions {
  // Whether passes that are on by default run (default true). A pass switched on or off by
  // Set() ignores this.
  std::optional<bool> apply_default_optimizations;
  // Explicit toggles by pass name ("map_fusion", "inject_prefetch", ...).
  std::map<std::string, bool, std::less<>> passes;

  OptimizationOptions& Set(std::string pass, bool enabled) {
    passes[std::move(pass)] = enabled;
    return *this;
  }
  // Whether `pass` runs, given whether it is on by default.
  bool Enabled(std::string_view pass, bool on_by_default) const {
    auto it = passes.find(pass);
    if (it != passes.end()) return it->second;
    return on_by_default && apply_default_optimizations.value_or(true);
  }
};

struct ThreadingOptions {
  // Threads of the pipeline's private pool; unset or 0: the CPU budget.
  std::optional<int64_t> private_threadpool_size;
};

// Which files a pipeline may touch (docs/files.md). Unset: no confinement. When either
// list is set, every file the pipeline opens, stats, lists or globs must resolve
// (realpath: no escape through ".." or symlinks) under one of allowed_roots or
// allowed_write_roots, and every file it creates, renames or deletes (the Cache op's
// files) under one of allowed_write_roots; anything else is PermissionDenied naming the
// path and the roots. Reading non-regular files (devices, FIFOs, sockets) is refused
// whether confined or not.
struct FileOptions {
  std::optional<std::vector<std::string>> allowed_roots;
  std::optional<std::vector<std::string>> allowed_write_roots;

  bool confined() const {
    return allowed_roots.has_value() || allowed_write_roots.has_value();
  }
};

struct Options {
  // Order guarantee of parallel operators whose `deterministic` argument is unset (default
  // true).
  std::optional<bool> deterministic;
  AutotuneOptions autotune;
  OptimizationOptions optimization;
  ThreadingOptions threading;
  FileOptions files;
  // Run function calls on the operators' own threads instead of a pool (tests, debugging).
  std::optional<bool> inline_execution;

  // Hooks into one run of the pipeline. Neither is owned: each must outlive every
  // iterator made with it. Neither is serialized (a deserialized dataset has them null),
  // and Merge takes the other's when it is non-null.
  //   span_recorder: receives a span for every GetNext of every iterator of the pipeline
  //     (the profiler's hook) and for each piece of a parallel operator's pool work.
  //     Null: a global profiler session's recorder if one runs (sluice/profiler.h), else
  //     nothing is recorded and the hook costs one branch per call.
  //   env: the file system the pipeline reads and writes through (tests inject faults
  //     with it). Null: the POSIX default. When `files` confines the pipeline, this Env
  //     is wrapped in a confined one.
  SpanRecorder* span_recorder = nullptr;
  Env* env = nullptr;

  // These options with every field set in `other` overriding (pass toggles merge by name).
  Options Merge(const Options& other) const;
  // Readable "key=value" lines for the fields that are set (CLI output, logs).
  std::vector<std::string> DebugLines() const;
};

}  // namespace sluice

#endif  // SLUICE_OPTIONS_H_
