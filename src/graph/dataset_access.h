// Internal pieces of the public Dataset value that the framework and the API layer share:
// its graph node (NodeOf, DatasetOf), building a node by op name below the API layer
// (BuildDataset), and the optimized-graph cache.
//
// Dataset::OptimizedGraph is the statically rewritten graph the first MakeIterator() of a
// Dataset value computes (src/api/dataset.cc) and its copies share. It is defined here,
// in the framework layer, because every constructor of a Dataset (src/graph/
// dataset_value.cc) makes an empty one; only the API layer fills it in.
//
// Thread-safety: `once` guards the one-time fill; after it the fields are read-only, except
// the tuned state, under tuned_mu.
#ifndef SLUICE_GRAPH_DATASET_ACCESS_H_
#define SLUICE_GRAPH_DATASET_ACCESS_H_

#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "graph/dataset_node.h"
#include "runtime/tunable.h"
#include "sluice/dataset.h"

namespace sluice {

struct Dataset::OptimizedGraph {
  std::once_flag once;
  Status status;
  DatasetPtr graph;
  // OptimizeReport::Lines() of the rewrite (src/optimizer/optimizer.h).
  std::vector<std::string> report_lines;
  // What the iterators of this graph that tuned ended with (autotune/autotuner.h,
  // "Carry-over"); the next MakeIterator() starts from it.
  mutable std::mutex tuned_mu;
  mutable TunedState tuned;
};

namespace internal {
// Access to Dataset's private parts for the framework and the API layer.
struct DatasetAccess {
  using OptimizedGraph = Dataset::OptimizedGraph;
  // The graph node a valid dataset holds (null for one carrying an error).
  static const DatasetPtr& Node(const Dataset& ds) { return ds.node_; }
  // A dataset holding `node` (an InternalError dataset for null), default options.
  static Dataset FromNode(DatasetPtr node) { return Dataset(std::move(node)); }
  // Dataset::FromOp without installing the builtins (see BuildDataset).
  static Dataset FromOp(std::string_view op, AttrMap attrs, std::vector<Dataset> inputs,
                        std::vector<Function> functions);
};
}  // namespace internal

// Shorthands for the two above.
inline const DatasetPtr& NodeOf(const Dataset& ds) {
  return internal::DatasetAccess::Node(ds);
}
inline Dataset DatasetOf(DatasetPtr node) {
  return internal::DatasetAccess::FromNode(std::move(node));
}

// A dataset of the registered op `op` (Registry::Global()) over `inputs`, carrying their
// options merged left to right; an invalid input or function, or the registry's error,
// gives a dataset carrying that error. What Dataset::FromOp does, minus installing the
// builtins: for code below the API layer, which runs only once a node exists (and so
// once the builtins are installed).
Dataset BuildDataset(std::string_view op, AttrMap attrs, std::vector<Dataset> inputs = {},
                     std::vector<Function> functions = {});

}  // namespace sluice

#endif  // SLUICE_GRAPH_DATASET_ACCESS_H_
