#include "graph/random_access.h"

#include "graph/op_def.h"
#include "graph/registry.h"

namespace sluice {

const DatasetNode* FirstNotRandomAccess(const DatasetPtr& node) {
  if (!node) return nullptr;
  const int64_t n = node->Cardinality();
  if (n < 0) return node.get();  // unknown or infinite: no row count to index
  const OpDef* def = FindOpDef(*node);
  if (def == nullptr) return node.get();
  // ParallelMap rows are its sequential Map's (RowNodes).
  const RowAccess access =
      node->op() == "ParallelMap" ? RowAccess::kInputs : def->traits().row_access;
  if (node->op() == "Cache") {  // only a memory cache serves rows
    auto it = node->attrs().find("filename");
    if (it != node->attrs().end() && std::holds_alternative<std::string>(it->second) &&
        !std::get<std::string>(it->second).empty()) {
      return node.get();
    }
  }
  switch (access) {
    case RowAccess::kNone:
      return node.get();
    case RowAccess::kSource:
      return nullptr;
    case RowAccess::kSlice:
      return FirstNotRandomAccess(node->inputs()[0]);
    case RowAccess::kInputs:
      break;
  }
  for (const Function& f : node->functions()) {
    if (f.traits().is_random || f.traits().stateful) return node.get();
  }
  for (const DatasetPtr& in : node->inputs()) {
    if (in->Cardinality() != n) return node.get();  // zip of unequal inputs
    if (const DatasetNode* bad = FirstNotRandomAccess(in)) return bad;
  }
  return nullptr;
}

namespace {

// Whether `node`'s rows lie in memory as numeric tensors (IndexedIterator::MemoryRows).
bool RowsInMemory(const DatasetNode& node) {
  if (node.op() == "Idx" || node.op() == "Range") return true;  // Range computes them
  if (node.op() == "FromTensorSlices") {
    const ElementSpec& spec = node.element_spec();
    if (spec.unknown) return false;
    for (const auto& c : spec.components) {
      if (c.dtype == DType::kString) return false;
    }
    return true;
  }
  if (node.op() == "Zip") {
    for (const DatasetPtr& in : node.inputs()) {
      if (!in || !RowsInMemory(*in)) return false;
    }
    return !node.inputs().empty();
  }
  return false;
}

}  // namespace

bool GathersRowsFromMemory(const DatasetNode& node) {
  if (node.op() == "GlobalShuffle") {
    return !node.inputs().empty() && node.inputs()[0] && RowsInMemory(*node.inputs()[0]);
  }
  return node.op() != "Zip" && RowsInMemory(node);  // a source in its own order
}

Result<DatasetPtr> RowNodes(const DatasetPtr& node) {
  std::vector<DatasetPtr> inputs;
  bool changed = false;
  for (const DatasetPtr& in : node->inputs()) {
    SLUICE_ASSIGN_OR_RETURN(DatasetPtr r, RowNodes(in));
    changed |= r != in;
    inputs.push_back(std::move(r));
  }
  const bool parallel_map = node->op() == "ParallelMap";
  if (!changed && !parallel_map) return node;
  AttrMap attrs = node->attrs();
  if (parallel_map) {
    AttrMap seq;
    if (auto it = attrs.find("seed"); it != attrs.end()) seq["seed"] = it->second;
    attrs = std::move(seq);
  }
  return Registry::Global().CreateOp(parallel_map ? "Map" : node->op(),
                                     {std::move(attrs), std::move(inputs), node->functions()});
}

}  // namespace sluice
