#include "graph/dataset_node.h"

#include "runtime/iterator_base.h"

namespace sluice {

DatasetNode::DatasetNode(std::string op, OpArgs args, ElementSpec spec)
    : op_(std::move(op)), args_(std::move(args)), spec_(std::move(spec)) {}

DatasetNode::~DatasetNode() = default;

bool DatasetNode::IsReplayable() const {
  for (const DatasetPtr& in : args_.inputs) {
    if (!in->IsReplayable()) return false;
  }
  return true;
}

Result<IteratorPtr> DatasetNode::MakeIterator(const IteratorContext& ctx,
                                                                const std::string& prefix) const {
  SLUICE_ASSIGN_OR_RETURN(IteratorPtr it, MakeIteratorInternal(ctx, prefix));
  SLUICE_RETURN_IF_ERROR(it->Initialize(ctx));
  return it;
}

int64_t CardinalityTimes(int64_t c, int64_t count) {
  if (count == 0 || c == 0) return 0;
  if (c == kUnknownCardinality) return kUnknownCardinality;
  if (count < 0 || c == kInfiniteCardinality) return kInfiniteCardinality;
  return c * count;
}

int64_t CardinalityPlus(int64_t a, int64_t b) {
  if (a == kInfiniteCardinality || b == kInfiniteCardinality) return kInfiniteCardinality;
  if (a == kUnknownCardinality || b == kUnknownCardinality) return kUnknownCardinality;
  return a + b;
}

}  // namespace sluice
