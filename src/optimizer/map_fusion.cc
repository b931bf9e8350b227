// map_fusion: Map(f).Map(g) -> Map(g . f), and ParallelMap(f).ParallelMap(g) with equal
// `deterministic` -> ParallelMap(g . f) with the larger parallelism (AUTOTUNE counts as
// the largest). The fused function (Function::Compose) runs f and g on one element, each
// with its own op's seed at the element's position, so random maps draw what they drew
// before. Not applied when either function is stateful, when the first map feeds another
// consumer, or when one map is sequential and the other parallel (that would parallelize
// or serialize a function; map_parallelization decides the former).
#include "optimizer/pass.h"

namespace sluice {

std::unique_ptr<OptimizerPass> MakeMapFusionPass() {
  return std::make_unique<RulePass>(
      "map_fusion", /*on_by_default=*/true,
      [](const DatasetPtr& n, const RewriteContext& ctx) -> Result<DatasetPtr> {
        const bool parallel = IsOp(n, "ParallelMap");
        if (!parallel && !IsOp(n, "Map")) return DatasetPtr();
        const DatasetPtr& first = n->input(0);
        if (first->op() != n->op() || ctx.Shared(first)) return DatasetPtr();
        const Function& f = first->functions()[0];
        const Function& g = n->functions()[0];
        if (IsStateful(f) || IsStateful(g)) return DatasetPtr();
        std::optional<AttrMap> attrs = FusedAttrs(*first, *n, parallel);
        if (!attrs) return DatasetPtr();
        Function fused =
            Function::Compose(f, static_cast<uint64_t>(IntAttr(*first, "seed", 0)), g,
                              static_cast<uint64_t>(IntAttr(*n, "seed", 0)));
        return RewriteContext::Make(n->op(), std::move(*attrs), {first->input(0)},
                                    {std::move(fused)});
      });
}

}  // namespace sluice
