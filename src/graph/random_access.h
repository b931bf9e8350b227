// Static random-access analysis: whether a dataset can serve row i of its output by index.
//
// An op declares it in its traits (OpTraits::row_access): sources that serve any row
// (kSource) and ops whose row i is a function of row i of their inputs (kInputs: Map with
// a function that is neither random nor stateful, Zip, a memory Cache but not a file
// one). A graph is random-access when its root is, recursively. GlobalShuffle requires it of its input, and
// the global_shuffle optimizer pass rewrites a whole-input Shuffle only over such inputs.
//
// The live side is the iterator's RandomAccess interface (runtime/random_access.h); every
// op that declares row access here implements it (tests/ops/global_shuffle_test.cc checks
// each).
//
// Thread-safety: pure functions of immutable nodes.
#ifndef SLUICE_GRAPH_RANDOM_ACCESS_H_
#define SLUICE_GRAPH_RANDOM_ACCESS_H_

#include "graph/dataset_node.h"

namespace sluice {

// The first node under (and including) `node`, depth first, that cannot serve rows by
// index; null when `node` can. A node of unknown or infinite cardinality cannot.
const DatasetNode* FirstNotRandomAccess(const DatasetPtr& node);

// Whether `node` can serve rows by index (FirstNotRandomAccess is null).
inline bool IsRandomAccess(const DatasetPtr& node) {
  return FirstNotRandomAccess(node) == nullptr;
}

// Whether a Batch over `node` gathers its rows straight from memory (runtime/
// random_access.h, "Gathering a batch"): `node` is a row stream (a source that serves rows,
// or a GlobalShuffle) whose rows lie in memory (FromTensorSlices of numeric tensors, an Idx
// file, a Range, whose rows are computed, a Zip of such). A prediction: an Idx file too big
// for the RAM budget streams.
bool GathersRowsFromMemory(const DatasetNode& node);

// A ParallelMap serves rows as the Map of the same function and seed would: it counts as
// random-access here, and RowNodes(node) is `node` with every ParallelMap under it rebuilt
// as that Map (the node itself when there is none), which GlobalShuffle reads rows from (a
// row is one call; parallelism belongs above the shuffle, where batches are).
Result<DatasetPtr> RowNodes(const DatasetPtr& node);

}  // namespace sluice

#endif  // SLUICE_GRAPH_RANDOM_ACCESS_H_
