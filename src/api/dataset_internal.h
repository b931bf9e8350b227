// Internals of the API layer's Dataset and Iterator (sluice/dataset.h, sluice/iterator.h)
// for in-tree tests, benchmarks, tools and the Python module.
//
// MakeIteratorAsBuilt is the iterator tests and benchmarks of single ops want: the graph
// exactly as built (no static rewrites) under the given options alone. The dataset's own
// options are ignored, except Options::files when `options.files` sets nothing (file
// confinement is never dropped). `provider` as in Dataset::MakeIterator(provider).
//
// Thread-safety: as Dataset (immutable) and Iterator (see iterator.h).
#ifndef SLUICE_API_DATASET_INTERNAL_H_
#define SLUICE_API_DATASET_INTERNAL_H_

#include <memory>

#include "graph/dataset_access.h"
#include "graph/dataset_node.h"
#include "sluice/dataset.h"

namespace sluice {

class Runtime;

namespace internal {
struct IteratorAccess {
  // The graph an iterator runs (after static rewrites).
  static const DatasetPtr& Graph(const Iterator& it);
  // The runtime (pool, memory budget, tunables) of an iterator's pipeline.
  static Runtime* RuntimeOf(const Iterator& it);
  // Builds an iterator over `graph`, numbered `instance`, under `options`. With `tuned`
  // (the Dataset's cached graph), its tuning starts from what the last iterator of that
  // graph ended with, and hands its own end state on (autotune/autotuner.h, "Carry-over").
  static Result<std::unique_ptr<Iterator>> Make(
      const DatasetPtr& graph, int64_t instance, const Options& options,
      std::shared_ptr<SplitProvider> provider,
      std::shared_ptr<const DatasetAccess::OptimizedGraph> tuned = nullptr);
};
}  // namespace internal

Result<std::unique_ptr<Iterator>> MakeIteratorAsBuilt(
    const Dataset& dataset, const Options& options = {},
    std::shared_ptr<SplitProvider> provider = nullptr);

// The graph `it` runs (after static rewrites).
inline const DatasetPtr& IteratorGraph(const Iterator& it) {
  return internal::IteratorAccess::Graph(it);
}

}  // namespace sluice

#endif  // SLUICE_API_DATASET_INTERNAL_H_
