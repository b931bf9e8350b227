// The static cost model the parallelizing rewrites consult (map_parallelization,
// parallel_batch, inject_prefetch): a rewrite that moves work to another thread pays a
// handoff per element, so it is made only where the work it moves is known, or may be,
// larger than that handoff. "Rewrites never slow a pipeline down" (issue #22).
//
// The figures are per element on one core, measured with bench/overhead_bench and
// bench/handoff_bench (docs/performance.md). They are deliberately rough: the model only
// separates "clearly below the handoff" from "maybe above it"; the runtime's inline mode
// (runtime/async_buffer.h) corrects what the static model lets through.
//
// Thread-safety: constants and pure functions.
#ifndef SLUICE_OPTIMIZER_COST_MODEL_H_
#define SLUICE_OPTIMIZER_COST_MODEL_H_

#include <cstdint>
#include <string_view>

#include "graph/dataset_node.h"
#include "runtime/async_buffer.h"
#include "runtime/node_stats.h"
#include "sluice/function.h"

namespace sluice {

// What handing one element to another thread costs (queueing, wake-up, cache misses of
// the element moving cores), in ns: the runtime's figure, which its inline mode uses too.
inline constexpr int64_t kHandoffNs = AsyncBufferIterator::kHandoffNs;
// A function call that does nothing (a view, a metadata change: FunctionTraits::cheap).
inline constexpr int64_t kCheapCallNs = 50;
// Copying one byte of a batch row into the batch (memcpy at about 5 GB/s, cold caches).
inline constexpr double kCopyNsPerByte = 0.2;
// ParallelBatch's fixed cost per batch over Batch (slot, pool task, wake-ups).
inline constexpr int64_t kParallelBatchNs = 10000;

// The model can be switched off with the pseudo-pass toggle "cost_model"
// (Options::optimization.Set("cost_model", false)): the gated rewrites are then made
// unconditionally, as tf.data makes them (bench/small_elements.py's "all rewrites on").
// RunPasses scopes the switch to the thread running the passes.
inline constexpr std::string_view kCostModelToggle = "cost_model";
inline thread_local bool cost_model_off = false;
inline bool CostModelOn() { return !cost_model_off; }

// Switches the model off on this thread for its lifetime when `off`.
class CostModelScope {
 public:
  explicit CostModelScope(bool off) : saved_(cost_model_off) { cost_model_off = off; }
  ~CostModelScope() { cost_model_off = saved_; }
  CostModelScope(const CostModelScope&) = delete;
  CostModelScope& operator=(const CostModelScope&) = delete;

 private:
  bool saved_;
};

// The estimated ns per element of `f` on elements of `in` bytes (-1: unknown), or -1
// when nothing is known about its cost (a lambda, a kernel without a cost hint).
inline int64_t EstimatedCallNs(const Function& f, int64_t in_bytes) {
  const FunctionTraits& t = f.traits();
  if (t.cheap) return kCheapCallNs;
  if (t.ns_per_byte > 0 && in_bytes >= 0) {
    return kCheapCallNs + static_cast<int64_t>(t.ns_per_byte * static_cast<double>(in_bytes));
  }
  return -1;
}

// Whether mapping `f` over `input`'s elements is known to cost less than a handoff, so
// running it on the pool would only add the handoff.
inline bool MapBelowHandoff(const Function& f, const DatasetNode& input) {
  if (!CostModelOn()) return false;
  const int64_t ns = EstimatedCallNs(f, StaticElementBytes(input.element_spec()));
  return ns >= 0 && ns < kHandoffNs;
}

// Whether batching `batch_size` elements of `input` is known to gain nothing from
// ParallelBatch: one row, or rows so small that copying a whole batch costs less than
// ParallelBatch's own per-batch cost.
inline bool BatchBelowHandoff(int64_t batch_size, const DatasetNode& input) {
  if (!CostModelOn()) return false;
  if (batch_size <= 1) return true;
  const int64_t row = StaticElementBytes(input.element_spec());
  if (row < 0) return false;
  return kCopyNsPerByte * static_cast<double>(row) * static_cast<double>(batch_size) <
         static_cast<double>(kParallelBatchNs);
}

}  // namespace sluice

#endif  // SLUICE_OPTIMIZER_COST_MODEL_H_
