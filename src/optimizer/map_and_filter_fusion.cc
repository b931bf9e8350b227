// map_and_filter_fusion: Map(f).Filter(p) -> MapAndFilter(f, p), and ParallelMap(f).
// Filter(p) or ParallelMap(f).ParallelFilter(p) -> ParallelMapAndFilter(f, p) with the
// map's parallelism and `deterministic` (src/ops/transforms/map_and_filter_dataset.cc).
// p sees f's output in place: no handoff between two iterators, and in the parallel form
// p runs in the map's pool task instead of on the consumer's thread.
//
// tf.data instead rewrites to map(x -> (f(x), p(f(x)))).filter(last).map(drop last),
// which here would add an op and a bool tensor per element; the fused op is cheaper and
// keeps both functions (and their serializability) as they are. Each function keeps its
// own op's seed. Not applied when f or p is stateful, when the map feeds another consumer,
// or for Map(f).ParallelFilter(p) (that would parallelize f).
#include "optimizer/pass.h"

namespace sluice {

std::unique_ptr<OptimizerPass> MakeMapAndFilterFusionPass() {
  return std::make_unique<RulePass>(
      "map_and_filter_fusion", /*on_by_default=*/true,
      [](const DatasetPtr& n, const RewriteContext& ctx) -> Result<DatasetPtr> {
        if (!IsOp(n, "Filter") && !IsOp(n, "ParallelFilter")) return DatasetPtr();
        const DatasetPtr& map = n->input(0);
        const bool parallel = IsOp(map, "ParallelMap");
        if (!parallel && !(IsOp(map, "Map") && IsOp(n, "Filter"))) return DatasetPtr();
        if (ctx.Shared(map)) return DatasetPtr();
        const Function& f = map->functions()[0];
        const Function& p = n->functions()[0];
        if (IsStateful(f) || IsStateful(p)) return DatasetPtr();
        AttrMap attrs{{"map_seed", IntAttr(*map, "seed", 0)},
                      {"filter_seed", IntAttr(*n, "seed", 0)}};
        if (parallel) {
          attrs["num_parallel_calls"] = IntAttr(*map, "num_parallel_calls", kAutotune);
          attrs["deterministic"] = IntAttr(*map, "deterministic", -1);
        }
        return RewriteContext::Make(parallel ? "ParallelMapAndFilter" : "MapAndFilter",
                                    std::move(attrs), {map->input(0)}, {f, p});
      });
}

}  // namespace sluice
