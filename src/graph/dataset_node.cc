#include "graph/dataset_node.h"

#include <algorithm>

#include "runtime/iterator_base.h"
#include "runtime/runtime.h"

namespace sluice {

DatasetNode::DatasetNode(std::string op, OpArgs args, ElementSpec spec)
    : op_(std::move(op)), args_(std::move(args)), spec_(std::move(spec)) {
  constexpr int64_t kCap = int64_t{1} << 62;
  for (const DatasetPtr& in : args_.inputs) {
    if (in) iterator_count_ = std::min(kCap, iterator_count_ + in->iterator_count_);
  }
}

DatasetNode::~DatasetNode() = default;

bool DatasetNode::IsReplayable() const {
  int cached = replayable_.load(std::memory_order_relaxed);
  if (cached < 0) {
    cached = 1;
    for (const DatasetPtr& in : args_.inputs) {
      if (!in->IsReplayable()) cached = 0;
      if (cached == 0) break;
    }
    replayable_.store(cached, std::memory_order_relaxed);
  }
  return cached == 1;
}

Result<IteratorPtr> DatasetNode::MakeIterator(const IteratorContext& ctx,
                                              const std::string& prefix,
                                              std::string_view parent_op) const {
  if (iterator_count_ > kMaxIteratorTree) {
    return ResourceExhaustedError(
        "an iterator over '" + op_ + "' would need " +
        (iterator_count_ >= (int64_t{1} << 62) ? std::string("more than 2^62")
                                               : std::to_string(iterator_count_)) +
        " iterators (more than " + std::to_string(kMaxIteratorTree) +
        "): the graph uses shared nodes so many times that each use's iterator does not fit");
  }
  SLUICE_ASSIGN_OR_RETURN(IteratorPtr it, MakeIteratorInternal(ctx, prefix));
  const Runtime* rt = ctx.runtime();
  it->node_id_ = rt->NodeId(this);
  if (it->node_id_ >= 0) {
    it->totals_table_ = rt->node_totals();
    it->totals_ = it->totals_table_ != nullptr ? it->totals_table_->at(it->node_id_) : nullptr;
  }
  SpanRecorder* spans = rt->span_recorder();
  if (spans != nullptr) {
    it->spans_ = spans->Wants(prefix, parent_op) ? spans : nullptr;
    // A parallel op's pool work is reported as "<prefix>/fn", asked for separately.
    it->work_spans_ = spans->Wants(prefix + "/fn", op_) ? spans : nullptr;
  }
  SLUICE_RETURN_IF_ERROR(it->Initialize(ctx));
  return it;
}

std::vector<DatasetPtr> GraphNodesInIdOrder(const DatasetPtr& root) {
  // Iterative post-order (deep graphs must not overflow the stack): a node is emitted once
  // all its inputs are, inputs visited in order, each node once.
  std::vector<DatasetPtr> order;
  std::unordered_map<const DatasetNode*, bool> state;  // false: open, true: emitted
  std::vector<std::pair<DatasetPtr, size_t>> stack;
  if (root == nullptr) return order;
  stack.emplace_back(root, 0);
  state[root.get()] = false;
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    if (next < node->inputs().size()) {
      const DatasetPtr& in = node->inputs()[next++];
      if (in != nullptr && state.emplace(in.get(), false).second) stack.emplace_back(in, 0);
      continue;
    }
    state[node.get()] = true;
    order.push_back(node);
    stack.pop_back();
  }
  return order;
}

NodeIdMap GraphNodeIds(const DatasetPtr& root) {
  NodeIdMap ids;
  int64_t id = 0;
  for (const DatasetPtr& n : GraphNodesInIdOrder(root)) ids.emplace(n.get(), id++);
  return ids;
}

int64_t CardinalityTimes(int64_t c, int64_t count) {
  if (count == 0 || c == 0) return 0;
  if (c == kUnknownCardinality) return kUnknownCardinality;
  if (count < 0 || c == kInfiniteCardinality) return kInfiniteCardinality;
  int64_t product;
  // Too many to count is not infinite: unknown is never wrong.
  if (__builtin_mul_overflow(c, count, &product)) return kUnknownCardinality;
  return product;
}

int64_t CardinalityPlus(int64_t a, int64_t b) {
  if (a == kInfiniteCardinality || b == kInfiniteCardinality) return kInfiniteCardinality;
  if (a == kUnknownCardinality || b == kUnknownCardinality) return kUnknownCardinality;
  int64_t sum;
  if (__builtin_add_overflow(a, b, &sum)) return kUnknownCardinality;
  return sum;
}

}  // namespace sluice
