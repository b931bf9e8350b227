// map_and_batch_fusion: Map(f).Batch(n, drop) or ParallelMap(f).Batch(n, drop) ->
// MapAndBatch(f, n, drop) with the map's seed, parallelism and `deterministic` (AUTOTUNE
// and deterministic=true for a sequential map). Each result is copied straight into its
// row of the batch. Not applied when f is stateful (MapAndBatch runs it in parallel) or
// the map feeds another consumer.
//
// Outputs are identical without errors. On a failing f call MapAndBatch fails the whole
// batch and starts the next one at the next batch boundary, where map().batch() drops only
// the rows before the failure (tf.data's behaviour too; see map_and_batch_dataset.cc).
#include "optimizer/pass.h"

namespace sluice {

std::unique_ptr<OptimizerPass> MakeMapAndBatchFusionPass() {
  return std::make_unique<RulePass>(
      "map_and_batch_fusion", /*on_by_default=*/true,
      [](const DatasetPtr& n, const RewriteContext& ctx) -> Result<DatasetPtr> {
        if (!IsOp(n, "Batch")) return DatasetPtr();
        const DatasetPtr& map = n->input(0);
        const bool parallel = IsOp(map, "ParallelMap");
        if (!parallel && !IsOp(map, "Map")) return DatasetPtr();
        if (ctx.Shared(map) || IsStateful(map->functions()[0])) return DatasetPtr();
        return RewriteContext::Make(
            "MapAndBatch",
            {{"seed", IntAttr(*map, "seed", 0)},
             {"batch_size", IntAttr(*n, "batch_size", 0)},
             {"drop_remainder", BoolAttr(*n, "drop_remainder", false)},
             {"num_parallel_calls",
              parallel ? IntAttr(*map, "num_parallel_calls", kAutotune) : kAutotune},
             {"deterministic", parallel ? IntAttr(*map, "deterministic", -1) : int64_t{1}}},
            {map->input(0)}, map->functions());
      });
}

}  // namespace sluice
