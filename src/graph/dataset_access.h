// Internal pieces of the public Dataset value that the framework and the API layer share.
//
// Dataset::OptimizedGraph is the statically rewritten graph the first MakeIterator() of a
// Dataset value computes (src/api/dataset.cc) and its copies share. It is defined here,
// in the framework layer, because every constructor of a Dataset (src/graph/
// dataset_value.cc) makes an empty one; only the API layer fills it in.
//
// Thread-safety: `once` guards the one-time fill; after it the fields are read-only.
#ifndef SLUICE_GRAPH_DATASET_ACCESS_H_
#define SLUICE_GRAPH_DATASET_ACCESS_H_

#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "graph/dataset_node.h"
#include "sluice/dataset.h"

namespace sluice {

struct Dataset::OptimizedGraph {
  std::once_flag once;
  Status status;
  DatasetPtr graph;
  // OptimizeReport::Lines() of the rewrite (src/optimizer/optimizer.h).
  std::vector<std::string> report_lines;
};

namespace internal {
// Access to Dataset's private parts for the framework and the API layer.
struct DatasetAccess {
  // Dataset::FromOp without installing the builtins (see BuildDataset).
  static Dataset FromOp(std::string_view op, AttrMap attrs, std::vector<Dataset> inputs,
                        std::vector<Function> functions);
};
}  // namespace internal

// A dataset of the registered op `op` (Registry::Global()) over `inputs`, carrying their
// options merged left to right; an invalid input or function, or the registry's error,
// gives a dataset carrying that error. What Dataset::FromOp does, minus installing the
// builtins: for code below the API layer, which runs only once a node exists (and so
// once the builtins are installed).
Dataset BuildDataset(std::string_view op, AttrMap attrs, std::vector<Dataset> inputs = {},
                     std::vector<Function> functions = {});

}  // namespace sluice

#endif  // SLUICE_GRAPH_DATASET_ACCESS_H_
