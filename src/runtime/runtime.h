// Runtime: what one pipeline (one top-level Iterator) shares: its thread pool, its memory
// budget, its AUTOTUNE knobs (TunableRegistry) and its resolved options. Made by Dataset::MakeIterator from RuntimeOptions and
// reached by every iterator of the tree through IteratorContext::runtime().
//
// Thread-safety: thread-safe (options are immutable; the executor is made once; the budget
// is atomic).
#ifndef SLUICE_RUNTIME_RUNTIME_H_
#define SLUICE_RUNTIME_RUNTIME_H_

#include <atomic>
#include <memory>
#include <mutex>

#include "core/env.h"
#include "graph/dataset_node.h"
#include "runtime/executor.h"
#include "runtime/memory_budget.h"
#include "runtime/node_stats.h"
#include "runtime/runtime_options.h"
#include "runtime/tunable.h"
#include "sluice/dataset.h"

namespace sluice {

class Runtime {
 public:
  // Resolves defaults (cpu_budget 0: AvailableCores(); ram_budget 0: half of
  // AvailableMemory(), -1: unlimited; initial_parallelism 0: the CPU
  // budget; an explicit one is clamped to [1, cpu_budget]).
  explicit Runtime(const RuntimeOptions& options);
  // The same from the user's Options (RuntimeOptions::FromOptions).
  explicit Runtime(const Options& options)
      : Runtime(RuntimeOptions::FromOptions(options)) {}
  ~Runtime();

  // The options with defaults resolved.
  const RuntimeOptions& options() const { return options_; }
  // Started on first use, so pipelines without parallel operators create no threads.
  Executor& executor();
  MemoryBudget& memory() { return memory_; }
  int64_t cpu_budget() const { return options_.cpu_budget; }
  // Whether AUTOTUNE knobs are tuned online: operators register them in tunables() and
  // the Iterator runs an Autotuner. Off for Default().
  bool autotune() const { return options_.autotune; }
  // Where AUTOTUNE parallelism starts (resolved, in [1, cpu_budget]).
  int64_t initial_parallelism() const { return options_.initial_parallelism; }
  TunableRegistry& tunables() { return tunables_; }
  // The file system every iterator of the pipeline reads and writes through:
  // options().env or Env::Default(), confined when options().files sets roots.
  Env* env() const { return env_; }
  bool deterministic_default() const { return options_.deterministic; }
  // The process-wide runtime used by iterators made without one (defaults, no tuning:
  // AUTOTUNE parallelism is the CPU budget).
  static Runtime* Default();

  // The ids of the graph's nodes (GraphNodeIds of the graph this pipeline runs), set once
  // before the iterator tree is made; NodeId is -1 for a node outside it.
  void SetGraph(const DatasetPtr& graph) {
    node_ids_ = GraphNodeIds(graph);
    SwapNodeTotals(nullptr);
  }
  // The retired totals of the graph's nodes (node_stats.h) that iterators made from now
  // on share; null before SetGraph. Read once per iterator made, never per element.
  std::shared_ptr<NodeTotalsTable> node_totals() const {
    std::lock_guard<std::mutex> l(totals_mu_);
    return node_totals_;
  }
  // Makes `t` the table (null: a fresh one) and returns the previous one. Restore gives
  // the new tree a fresh table, so it counts from zero while the old tree, whose
  // iterators hold the old table, dies; a failed Restore puts the old one back.
  std::shared_ptr<NodeTotalsTable> SwapNodeTotals(std::shared_ptr<NodeTotalsTable> t) {
    if (t == nullptr) t = std::make_shared<NodeTotalsTable>(node_ids_.size());
    std::lock_guard<std::mutex> l(totals_mu_);
    std::swap(node_totals_, t);
    return t;
  }
  int64_t NodeId(const DatasetNode* node) const {
    auto it = node_ids_.find(node);
    return it == node_ids_.end() ? -1 : it->second;
  }
  SpanRecorder* span_recorder() const { return options_.span_recorder; }

  // The value of a tri-state `deterministic` attribute (-1: unset, 0, 1).
  bool Deterministic(int64_t attr) const {
    return attr < 0 ? options_.deterministic : attr != 0;
  }

 private:
  RuntimeOptions options_;
  MemoryBudget memory_;
  TunableRegistry tunables_;
  NodeIdMap node_ids_;
  mutable std::mutex totals_mu_;  // iterator creation only, never GetNext
  std::shared_ptr<NodeTotalsTable> node_totals_;
  std::unique_ptr<Env> confined_env_;  // owned when options().files confines
  Env* env_;
  std::once_flag executor_once_;
  std::unique_ptr<Executor> executor_;
};

}  // namespace sluice

#endif  // SLUICE_RUNTIME_RUNTIME_H_
