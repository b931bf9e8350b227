// RewriteGraph and the matchers shared by passes (pass.h).
#include <unordered_set>

#include "graph/registry.h"
#include "optimizer/pass.h"

namespace sluice {

bool RewriteContext::Shared(const DatasetPtr& node) const {
  const DatasetNode* n = node.get();
  if (auto it = origin_.find(n); it != origin_.end()) n = it->second;
  auto it = uses_.find(n);
  return it != uses_.end() && it->second > 1;
}

const DatasetNode* RewriteContext::Origin(const DatasetPtr& node) const {
  auto it = origin_.find(node.get());
  return it != origin_.end() ? it->second : node.get();
}

Result<DatasetPtr> RewriteContext::Make(std::string_view op, AttrMap attrs,
                                        std::vector<DatasetPtr> inputs,
                                        std::vector<Function> functions) {
  return Registry::Global().CreateOp(
      op, OpArgs{std::move(attrs), std::move(inputs), std::move(functions)});
}

Result<PassResult> RewriteGraph(const DatasetPtr& root, const RewriteRule& rule) {
  if (!root) return InvalidArgumentError("optimizer: null graph");
  RewriteContext ctx;
  // Consumers per node, counting every edge (Zip(a, a) uses a twice).
  {
    std::vector<const DatasetNode*> stack{root.get()};
    std::unordered_set<const DatasetNode*> seen{root.get()};
    ctx.uses_[root.get()] = 1;
    while (!stack.empty()) {
      const DatasetNode* n = stack.back();
      stack.pop_back();
      for (const DatasetPtr& in : n->inputs()) {
        if (!in) return InvalidArgumentError("optimizer: op '" + n->op() + "' has a null input");
        ++ctx.uses_[in.get()];
        if (seen.insert(in.get()).second) stack.push_back(in.get());
      }
    }
  }
  // Post-order walk: a node is finished once all its inputs are.
  PassResult out;
  std::unordered_map<const DatasetNode*, DatasetPtr> done;
  std::vector<std::pair<DatasetPtr, bool>> stack{{root, false}};
  while (!stack.empty()) {
    auto [node, expanded] = stack.back();
    stack.pop_back();
    if (done.count(node.get())) continue;
    if (!expanded) {
      stack.push_back({node, true});
      for (const DatasetPtr& in : node->inputs()) {
        if (!done.count(in.get())) stack.push_back({in, false});
      }
      continue;
    }
    std::vector<DatasetPtr> inputs;
    inputs.reserve(node->inputs().size());
    bool changed = false;
    for (const DatasetPtr& in : node->inputs()) {
      inputs.push_back(done.at(in.get()));
      changed |= inputs.back() != in;
    }
    DatasetPtr cur = node;
    if (changed) {
      auto rebuilt = RewriteContext::Make(node->op(), node->attrs(), std::move(inputs),
                                          node->functions());
      if (!rebuilt.ok()) {
        return rebuilt.status().WithContext("optimizer: rebuilding '" + node->op() + "'");
      }
      cur = std::move(rebuilt).value();
      ctx.origin_.emplace(cur.get(), node.get());
    }
    auto replaced = rule(cur, ctx);
    if (!replaced.ok()) {
      return replaced.status().WithContext("optimizer: rewriting '" + node->op() + "'");
    }
    if (*replaced && *replaced != cur) {
      ++out.changes;
      cur = std::move(replaced).value();
      ctx.origin_.emplace(cur.get(), node.get());
    }
    done.emplace(node.get(), std::move(cur));
  }
  out.root = done.at(root.get());
  return out;
}

std::optional<AttrMap> FusedAttrs(const DatasetNode& first, const DatasetNode& second,
                                  bool parallel) {
  AttrMap attrs{{"seed", int64_t{0}}};
  if (!parallel) return attrs;
  const int64_t d = IntAttr(second, "deterministic", -1);
  if (IntAttr(first, "deterministic", -1) != d) return std::nullopt;
  attrs["deterministic"] = d;
  attrs["num_parallel_calls"] = LargerParallelism(IntAttr(first, "num_parallel_calls", kAutotune),
                                                  IntAttr(second, "num_parallel_calls", kAutotune));
  return attrs;
}

int64_t IntAttr(const DatasetNode& node, std::string_view name, int64_t fallback) {
  auto it = node.attrs().find(name);
  if (it == node.attrs().end()) return fallback;
  const int64_t* v = std::get_if<int64_t>(&it->second);
  return v ? *v : fallback;
}

bool BoolAttr(const DatasetNode& node, std::string_view name, bool fallback) {
  auto it = node.attrs().find(name);
  if (it == node.attrs().end()) return fallback;
  const bool* v = std::get_if<bool>(&it->second);
  return v ? *v : fallback;
}

int64_t LargerParallelism(int64_t a, int64_t b) {
  if (a == kAutotune || b == kAutotune) return kAutotune;
  return std::max(a, b);
}

bool IsAsyncOp(std::string_view op) {
  const OpDef* def = Registry::Global().FindOp(op);
  return def != nullptr && def->traits().async;
}

namespace {
// Whether a node neither reads the iterator context's seed_mix nor makes iterators whose
// randomness depends on it, given inputs that do not (its OpDef's seed_mix trait; an
// unregistered op or one with a dataset function is assumed to read it).
bool SeedMixFree(const DatasetNode& n) {
  const OpDef* def = FindOpDef(n);
  if (def == nullptr || def->ReadsSeedMix(n.attrs())) return false;
  for (const Function& f : n.functions()) {
    if (f.kind() == Function::Kind::kDataset) return false;
  }
  return true;
}
}  // namespace

bool ReadsSeedMix(const DatasetPtr& node) {
  std::vector<const DatasetNode*> stack{node.get()};
  std::unordered_set<const DatasetNode*> seen{node.get()};
  while (!stack.empty()) {
    const DatasetNode* n = stack.back();
    stack.pop_back();
    if (!SeedMixFree(*n)) return true;
    for (const DatasetPtr& in : n->inputs()) {
      if (seen.insert(in.get()).second) stack.push_back(in.get());
    }
  }
  return false;
}

}  // namespace sluice
