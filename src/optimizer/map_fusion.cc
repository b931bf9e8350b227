// map_fusion: Map(f).Map(g) -> Map(g . f), and ParallelMap(f).ParallelMap(g) with equal
// `deterministic` -> ParallelMap(g . f) with the larger parallelism (AUTOTUNE counts as
// the largest). The fused function (Function::Compose) runs f and g on one element, each
// with its own op's seed at the element's position, so random maps draw what they drew
// before. Not applied when either function is stateful, when the first map feeds another
// consumer, or when one map is sequential and the other parallel (that would parallelize
// or serialize a function; map_parallelization decides the former).
//
// ParallelMap(f).MapAndBatch(g) fuses the same way into MapAndBatch(g . f), keeping the
// batch attributes: each element then goes from f to g on one thread, with f's result
// still in cache, and without a buffer between the two ops. This is what
// map_and_batch_fusion makes of Map(f).Map(g).Batch(n), with the same one difference on
// errors (see there): a failing f call now fails its whole batch, like a failing g call,
// where before it dropped only the rows before it.
#include "graph/function_internal.h"
#include "optimizer/pass.h"

namespace sluice {

std::unique_ptr<OptimizerPass> MakeMapFusionPass() {
  return std::make_unique<RulePass>(
      "map_fusion", /*on_by_default=*/true,
      [](const DatasetPtr& n, const RewriteContext& ctx) -> Result<DatasetPtr> {
        const bool into_batch = IsOp(n, "MapAndBatch");
        const bool parallel = into_batch || IsOp(n, "ParallelMap");
        if (!parallel && !IsOp(n, "Map")) return DatasetPtr();
        const DatasetPtr& first = n->input(0);
        const std::string_view first_op =
            into_batch ? std::string_view("ParallelMap") : std::string_view(n->op());
        if (first->op() != first_op || ctx.Shared(first)) return DatasetPtr();
        const Function& f = first->functions()[0];
        const Function& g = n->functions()[0];
        if (IsStateful(f) || IsStateful(g)) return DatasetPtr();
        std::optional<AttrMap> attrs = FusedAttrs(*first, *n, parallel);
        if (!attrs) return DatasetPtr();
        if (into_batch) {
          (*attrs)["batch_size"] = IntAttr(*n, "batch_size", 0);
          (*attrs)["drop_remainder"] = BoolAttr(*n, "drop_remainder", false);
        }
        Function fused =
            ComposeFunctions(f, static_cast<uint64_t>(IntAttr(*first, "seed", 0)), g,
                             static_cast<uint64_t>(IntAttr(*n, "seed", 0)));
        return RewriteContext::Make(n->op(), std::move(*attrs), {first->input(0)},
                                    {std::move(fused)});
      });
}

}  // namespace sluice
