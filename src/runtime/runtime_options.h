// RuntimeOptions: how one pipeline runs, resolved from the user's Options
// (sluice/options.h) by RuntimeOptions::FromOptions, the one place that maps them. The
// Runtime (runtime/runtime.h) then fills in the defaults that depend on the machine.
// Internal: users set Options.
//
// Thread-safety: a plain value.
#ifndef SLUICE_RUNTIME_RUNTIME_OPTIONS_H_
#define SLUICE_RUNTIME_RUNTIME_OPTIONS_H_

#include <cstdint>

#include "sluice/options.h"

namespace sluice {

class Env;
class SpanRecorder;

struct RuntimeOptions {
  // Threads in the pipeline's pool (Options::autotune.cpu_budget, capped by
  // threading.private_threadpool_size). 0: the cores available to the process.
  int64_t cpu_budget = 0;
  // Bytes that operator buffers may hold in total, a hard limit (docs/runtime.md).
  // 0: half the memory available to the process; -1: unlimited.
  int64_t ram_budget = 0;
  // Order guarantee of parallel operators whose `deterministic` argument is unset.
  bool deterministic = true;
  // Run function calls on the operators' own threads instead of a pool.
  bool inline_execution = false;
  // Tune AUTOTUNE parallelism and buffer sizes online (src/autotune/).
  bool autotune = true;
  // Where AUTOTUNE parallelism starts. 0: the CPU budget.
  int64_t initial_parallelism = 0;
  // Options::span_recorder and Options::env: not owned, must outlive the iterator.
  SpanRecorder* span_recorder = nullptr;
  Env* env = nullptr;
  // Options::files: when set, `env` is wrapped in a confined Env.
  FileOptions files;

  // The settings `options` asks for, unset fields at their defaults above.
  static RuntimeOptions FromOptions(const Options& options);
};

}  // namespace sluice

#endif  // SLUICE_RUNTIME_RUNTIME_OPTIONS_H_
