// DatasetNode: one immutable node of the dataset graph (the IR every layer shares).
//
// A node is an op name, typed attributes, input nodes and functions, plus the derived facts
// (element spec, cardinality). The fluent Dataset API, the (future) serializer and the
// optimizer all build nodes through the Registry from exactly these four parts, so a node
// can always be rebuilt from (op, attrs, inputs, functions).
//
// Subclasses live in an anonymous namespace in src/ops/**, one op per file, behind a
// RegisterXxx(Registry*) function.
//
// Thread-safety: immutable after construction; MakeIterator may be called concurrently.
#ifndef SLUICE_GRAPH_DATASET_NODE_H_
#define SLUICE_GRAPH_DATASET_NODE_H_

#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "sluice/dataset.h"

namespace sluice {

class IteratorBase;
struct IteratorContext;

using DatasetPtr = std::shared_ptr<const DatasetNode>;

// Owns an iterator of the tree. Deleting one first unlinks it from its parent in the
// iterator tree, so a concurrent Cancel or stats snapshot never reaches a half-destroyed
// iterator (src/runtime/iterator_base.cc).
struct IteratorDeleter {
  void operator()(IteratorBase* it) const;
};
using IteratorPtr = std::unique_ptr<IteratorBase, IteratorDeleter>;

// What an op is built from.
struct OpArgs {
  AttrMap attrs;
  std::vector<DatasetPtr> inputs;
  std::vector<Function> functions;
};

class DatasetNode : public std::enable_shared_from_this<DatasetNode> {
 public:
  DatasetNode(std::string op, OpArgs args, ElementSpec spec);
  virtual ~DatasetNode();
  DatasetNode(const DatasetNode&) = delete;
  DatasetNode& operator=(const DatasetNode&) = delete;

  const std::string& op() const { return op_; }
  const AttrMap& attrs() const { return args_.attrs; }
  const std::vector<DatasetPtr>& inputs() const { return args_.inputs; }
  const DatasetPtr& input(size_t i) const { return args_.inputs[i]; }
  const std::vector<Function>& functions() const { return args_.functions; }
  const ElementSpec& element_spec() const { return spec_; }

  // kInfiniteCardinality, kUnknownCardinality or a count.
  virtual int64_t Cardinality() const = 0;

  // True when a fresh iterator over this node yields the same elements again (files, ranges,
  // deterministic transforms). Shuffle uses this to checkpoint positions instead of buffer
  // contents. Default: every input is replayable and no function is random... random
  // functions are keyed by position, so they replay too; only non-replayable sources
  // (generators, remote streams) override this to return false.
  // The default asks each input once per node (cached), so shared nodes cost one visit.
  virtual bool IsReplayable() const;

  // How many iterators a tree over this node has statically: 1 + the inputs' counts
  // (saturating; a node shared by k consumers counts k times, since each gets its own
  // iterator). Computed at construction. MakeIterator refuses trees larger than
  // kMaxIteratorTree with ResourceExhausted: a small graph of shared nodes (Zip(a, a)
  // repeated) can ask for more iterators than memory holds.
  int64_t iterator_count() const { return iterator_count_; }
  static constexpr int64_t kMaxIteratorTree = 100000;

  // Creates an iterator at `prefix` (its unique path in the iterator tree); parent_op is
  // the op of the iterator that makes it ("" for a root), for the span recorder's Wants.
  Result<IteratorPtr> MakeIterator(const IteratorContext& ctx, const std::string& prefix,
                                   std::string_view parent_op = {}) const;

  DatasetPtr shared() const { return shared_from_this(); }

  // Numbers the top-level iterators made from this node (0, 1, ...), so that each pass of
  // a `for` loop over the same dataset reshuffles, as in tf.data.
  int64_t NextInstance() const { return instances_.fetch_add(1, std::memory_order_relaxed); }

 protected:
  virtual Result<IteratorPtr> MakeIteratorInternal(
      const IteratorContext& ctx, const std::string& prefix) const = 0;

 private:
  std::string op_;
  OpArgs args_;
  ElementSpec spec_;
  mutable std::atomic<int64_t> instances_{0};
  int64_t iterator_count_ = 1;
  mutable std::atomic<int> replayable_{-1};  // IsReplayable's cache: -1 unknown, 0, 1
};

// The id of every node of the graph under `root`: its position in the GraphDef that
// SerializeDataset writes (post-order: inputs before their consumers, in input order; a
// shared node once). The stats plane (IteratorStats::node_id), `sluice spec show` and the
// serializer all use these ids.
using NodeIdMap = std::unordered_map<const DatasetNode*, int64_t>;
NodeIdMap GraphNodeIds(const DatasetPtr& root);
// The nodes in id order (GraphNodeIds' order).
std::vector<DatasetPtr> GraphNodesInIdOrder(const DatasetPtr& root);

// Cardinality arithmetic helpers shared by ops.
int64_t CardinalityTimes(int64_t c, int64_t count);  // repeat
int64_t CardinalityPlus(int64_t a, int64_t b);       // concatenate

}  // namespace sluice

#endif  // SLUICE_GRAPH_DATASET_NODE_H_
