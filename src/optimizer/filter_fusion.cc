// filter_fusion: Filter(p).Filter(q) -> Filter(p && q), and ParallelFilter(p).
// ParallelFilter(q) with equal `deterministic` -> ParallelFilter(p && q) with the larger
// parallelism. q is evaluated only when p holds (Function::Conjunction), each with its own
// op's seed.
//
// Positions: q's FunctionContext position was its index among the elements p kept; in the
// fused predicate it is the index in p's input. So the rewrite applies only when q is not
// random (functions that read ctx.position() for other purposes must be marked stateful),
// and not when either predicate is stateful or the first filter feeds another consumer.
#include "graph/function_internal.h"
#include "optimizer/pass.h"

namespace sluice {

std::unique_ptr<OptimizerPass> MakeFilterFusionPass() {
  return std::make_unique<RulePass>(
      "filter_fusion", /*on_by_default=*/true,
      [](const DatasetPtr& n, const RewriteContext& ctx) -> Result<DatasetPtr> {
        const bool parallel = IsOp(n, "ParallelFilter");
        if (!parallel && !IsOp(n, "Filter")) return DatasetPtr();
        const DatasetPtr& first = n->input(0);
        if (first->op() != n->op() || ctx.Shared(first)) return DatasetPtr();
        const Function& p = first->functions()[0];
        const Function& q = n->functions()[0];
        if (IsStateful(p) || IsStateful(q) || q.is_random()) return DatasetPtr();
        std::optional<AttrMap> attrs = FusedAttrs(*first, *n, parallel);
        if (!attrs) return DatasetPtr();
        Function fused =
            ConjoinFunctions(p, static_cast<uint64_t>(IntAttr(*first, "seed", 0)), q,
                             static_cast<uint64_t>(IntAttr(*n, "seed", 0)));
        return RewriteContext::Make(n->op(), std::move(*attrs), {first->input(0)},
                                    {std::move(fused)});
      });
}

}  // namespace sluice
