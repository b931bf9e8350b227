#include "runtime/runtime_options.h"

#include <algorithm>
#include <atomic>

#include "runtime/span.h"

namespace sluice {

namespace {
std::atomic<SpanRecorder*> global_span_recorder{nullptr};
}  // namespace

SpanRecorder* GlobalSpanRecorder() {
  return global_span_recorder.load(std::memory_order_acquire);
}
void SetGlobalSpanRecorder(SpanRecorder* recorder) {
  global_span_recorder.store(recorder, std::memory_order_release);
}

RuntimeOptions RuntimeOptions::FromOptions(const Options& o) {
  RuntimeOptions r;
  r.cpu_budget = o.autotune.cpu_budget.value_or(0);
  // The pool is the CPU budget unless a private pool size is given (never above it).
  if (o.threading.private_threadpool_size.value_or(0) > 0) {
    r.cpu_budget = r.cpu_budget > 0
                       ? std::min(r.cpu_budget, *o.threading.private_threadpool_size)
                       : *o.threading.private_threadpool_size;
  }
  r.ram_budget = o.autotune.ram_budget.value_or(0);
  r.deterministic = o.deterministic.value_or(true);
  r.inline_execution = o.inline_execution.value_or(false);
  r.autotune = o.autotune.enabled.value_or(true);
  r.initial_parallelism = o.autotune.initial_parallelism.value_or(0);
  r.span_recorder = o.span_recorder != nullptr ? o.span_recorder : GlobalSpanRecorder();
  r.env = o.env;
  r.files = o.files;
  return r;
}

}  // namespace sluice
