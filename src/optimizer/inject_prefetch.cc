// inject_prefetch: appends Prefetch(AUTOTUNE) to the pipeline when its last op does not
// already run asynchronously (Prefetch, the parallel ops, MapAndBatch), so that producing
// the next element overlaps the consumer's work. Only the root is looked at, and the
// element plumbing under it: a root of Unbatch/Take/Skip/Shard/Enumerate over an async op
// gets none either (cost model), as that op overlaps the work already.
//
// Cost model (cost_model.h): when every op of the graph is known to cost less per element
// than a handoff (cheap sources, maps below the handoff, small batches, element plumbing),
// a prefetch could only add its handoff to each element, so none is injected. In-memory
// slices of small rows and shuffle buffers count as cheap: with them a root prefetch over
// `from_tensor_slices(...).shuffle(1000).batch(256)` ran at 0.81-0.94x the graph as built
// (bench/small_elements.py).
//
// The decision is runtime/async_payoff.h's rule, min(work moved, consumer's own time) >
// handoff, which the tuner applies again with measured figures: here the consumer is
// unknown, so only a graph known to be below the handoff vetoes. The injected prefetch is
// AUTOTUNE, so in a tuning runtime it starts inline and goes async only once the tuner
// has measured both sides (an idle consumer keeps it inline).
#include <unordered_set>

#include "optimizer/cost_model.h"
#include "optimizer/pass.h"
#include "runtime/async_payoff.h"

namespace sluice {
namespace {

// Whether producing one element of `n` (its own work, not its inputs') is known to cost
// less than a handoff.
bool NodeBelowHandoff(const DatasetNode& n) {
  static const std::unordered_set<std::string_view> kCheapOps = {
      "Range", "Unbatch", "Take", "Skip", "Shard", "Enumerate", "Repeat", "Zip",
      "Concatenate", "TakeWhile"};
  const std::string& op = n.op();
  if (kCheapOps.count(op) && (op != "TakeWhile" || n.functions().empty() ||
                              n.functions()[0].traits().cheap)) {
    return true;
  }
  // A shuffle buffer moves elements without copying them; in-memory slices copy one row.
  if (op == "Shuffle") return true;
  if (op == "FromTensorSlices" || op == "FromTensors") {
    const int64_t row = StaticElementBytes(n.element_spec());
    return row >= 0 && kCopyNsPerByte * static_cast<double>(row) < kHandoffNs;
  }
  if (n.inputs().empty() || !n.inputs()[0]) return false;
  if (op == "Map") return MapBelowHandoff(n.functions()[0], *n.inputs()[0]);
  if (op == "Batch") return BatchBelowHandoff(IntAttr(n, "batch_size", 0), *n.inputs()[0]);
  return false;
}

// Whether every node under `root` is NodeBelowHandoff.
bool GraphBelowHandoff(const DatasetPtr& root) {
  std::unordered_set<const DatasetNode*> seen{root.get()};
  std::vector<const DatasetNode*> stack{root.get()};
  while (!stack.empty()) {
    const DatasetNode* n = stack.back();
    stack.pop_back();
    if (!NodeBelowHandoff(*n)) return false;
    for (const DatasetPtr& in : n->inputs()) {
      if (in && seen.insert(in.get()).second) stack.push_back(in.get());
    }
  }
  return true;
}

// The async op that `root` reaches through single-input element plumbing known to cost
// less than a handoff per element (Unbatch, Take, Skip, Shard, Enumerate), or null.
const DatasetNode* AsyncUnderPlumbing(const DatasetPtr& root) {
  static const std::unordered_set<std::string_view> kPlumbing = {
      "Unbatch", "Take", "Skip", "Shard", "Enumerate"};
  const DatasetNode* n = root.get();
  while (n != nullptr && kPlumbing.count(n->op()) && n->inputs().size() == 1) {
    n = n->inputs()[0].get();
  }
  return n != nullptr && n != root.get() && IsAsyncOp(n->op()) ? n : nullptr;
}

class InjectPrefetchPass final : public OptimizerPass {
 public:
  std::string_view name() const override { return "inject_prefetch"; }
  bool on_by_default() const override { return true; }
  Result<PassResult> Apply(const DatasetPtr& root) const override {
    if (IsAsyncOp(root->op())) return PassResult{root, 0};
    // Plumbing over an async op: that op overlaps its work with the consumer once the
    // work pays for a handoff (the tuner decides it), and the plumbing above it costs
    // less than one; a prefetch would add a second buffer of the same elements and its
    // own cost per element (overhead_bench's lambda row: a root Prefetch over Unbatch).
    if (CostModelOn()) {
      if (const DatasetNode* async = AsyncUnderPlumbing(root)) {
        return PassResult{root,
                          0,
                          {"kept the root synchronous (cost model: only element "
                           "plumbing above the asynchronous " +
                           async->op() + ")"}};
      }
    }
    // Known below the handoff counts as no work moved; the consumer is unknown here.
    const double work = CostModelOn() && GraphBelowHandoff(root) ? 0 : kUnknownNs;
    if (!RootAsyncPaysOff(work, kUnknownNs)) {
      return PassResult{root, 0, {"kept the root synchronous (cost model: every op below a "
                                  "handoff)"}};
    }
    SLUICE_ASSIGN_OR_RETURN(DatasetPtr p,
                            RewriteContext::Make("Prefetch", {{"buffer_size", kAutotune}}, {root}));
    return PassResult{std::move(p), 1};
  }
};

}  // namespace

std::unique_ptr<OptimizerPass> MakeInjectPrefetchPass() {
  return std::make_unique<InjectPrefetchPass>();
}

}  // namespace sluice
