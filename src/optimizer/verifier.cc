// VerifyGraph (pass.h): the checks the driver runs after every pass.
#include <unordered_set>

#include "graph/registry.h"
#include "optimizer/pass.h"

namespace sluice {
namespace {

// Whether two shapes can describe the same tensors: equal ranks, equal dims where both
// are known. An unknown rank is compatible with anything.
bool ShapesCompatible(const PartialShape& a, const PartialShape& b) {
  if (!a.rank_known() || !b.rank_known()) return true;
  if (a.rank() != b.rank()) return false;
  for (int i = 0; i < a.rank(); ++i) {
    if (a.dim(i) >= 0 && b.dim(i) >= 0 && a.dim(i) != b.dim(i)) return false;
  }
  return true;
}

Status SpecCompatible(const ElementSpec& before, const ElementSpec& after) {
  if (before.unknown) return Status::OK();
  auto mismatch = [&](const std::string& what) {
    return InvalidArgumentError("element spec changed from " + before.ToString() + " to " +
                                after.ToString() + " (" + what + ")");
  };
  if (after.unknown) return mismatch("became unknown");
  if (before.size() != after.size()) return mismatch("component count");
  for (size_t i = 0; i < before.size(); ++i) {
    if (before[i].dtype != after[i].dtype) {
      return mismatch("dtype of component " + std::to_string(i));
    }
    if (!ShapesCompatible(before[i].shape, after[i].shape)) {
      return mismatch("shape of component " + std::to_string(i));
    }
  }
  if (before.names && after.names && *before.names != *after.names) {
    return mismatch("component names");
  }
  return Status::OK();
}

std::string CardinalityString(int64_t c) {
  if (c == kInfiniteCardinality) return "infinite";
  if (c == kUnknownCardinality) return "unknown";
  return std::to_string(c);
}

}  // namespace

Status VerifyGraph(const DatasetPtr& before, const DatasetPtr& after) {
  if (!after) return InvalidArgumentError("the graph is null");
  std::unordered_set<const DatasetNode*> old_nodes;
  {
    std::vector<const DatasetNode*> stack{before.get()};
    while (!stack.empty()) {
      const DatasetNode* n = stack.back();
      stack.pop_back();
      if (!n || !old_nodes.insert(n).second) continue;
      for (const DatasetPtr& in : n->inputs()) stack.push_back(in.get());
    }
  }
  // Iterative DFS with colors: grey nodes are on the current path, so reaching one again
  // is a cycle. (Immutable shared_ptr graphs cannot have one unless a node was built
  // wrongly; the check keeps later walks from looping.)
  enum Color { kGrey, kBlack };
  std::unordered_map<const DatasetNode*, Color> color;
  std::vector<std::pair<const DatasetNode*, bool>> stack{{after.get(), false}};
  while (!stack.empty()) {
    auto [n, exit] = stack.back();
    stack.pop_back();
    if (exit) {
      color[n] = kBlack;
      continue;
    }
    if (auto it = color.find(n); it != color.end()) {
      if (it->second == kGrey) return InvalidArgumentError("op '" + n->op() + "' is its own input");
      continue;
    }
    color[n] = kGrey;
    stack.push_back({n, true});
    for (size_t i = 0; i < n->inputs().size(); ++i) {
      const DatasetPtr& in = n->inputs()[i];
      if (!in) {
        return InvalidArgumentError("op '" + n->op() + "': input " + std::to_string(i) +
                                    " is null");
      }
      if (auto it = color.find(in.get()); it != color.end() && it->second == kGrey) {
        return InvalidArgumentError("op '" + n->op() + "' is its own input");
      }
      stack.push_back({in.get(), false});
    }
    for (size_t i = 0; i < n->functions().size(); ++i) {
      if (!n->functions()[i].valid()) {
        return InvalidArgumentError("op '" + n->op() + "': function " + std::to_string(i) +
                                    " is invalid");
      }
    }
    if (old_nodes.count(n)) continue;
    // A node the pass built: it must be what the Registry builds from its parts.
    auto rebuilt = Registry::Global().CreateOp(
        n->op(), OpArgs{n->attrs(), n->inputs(), n->functions()});
    if (!rebuilt.ok()) {
      return InvalidArgumentError("op '" + n->op() +
                                  "' cannot be rebuilt from its parts: " +
                                  rebuilt.status().ToString());
    }
    if (!((*rebuilt)->element_spec() == n->element_spec())) {
      return InvalidArgumentError("op '" + n->op() + "' has element spec " +
                                  n->element_spec().ToString() + " but rebuilds to " +
                                  (*rebuilt)->element_spec().ToString());
    }
  }
  Status s = SpecCompatible(before->element_spec(), after->element_spec());
  if (!s.ok()) return s;
  const int64_t c0 = before->Cardinality(), c1 = after->Cardinality();
  if (c0 != kUnknownCardinality && c0 != c1) {
    return InvalidArgumentError("cardinality changed from " + CardinalityString(c0) + " to " +
                                CardinalityString(c1));
  }
  return Status::OK();
}

}  // namespace sluice
