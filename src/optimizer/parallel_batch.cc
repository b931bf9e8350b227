// parallel_batch: Batch(n, drop) -> ParallelBatch(n, drop, AUTOTUNE, deterministic=true).
// ParallelBatch produces exactly Batch's elements and errors (parallel_batch_dataset.cc)
// with the row copies on the pool; deterministic keeps the order whatever
// Options::deterministic says.
#include "optimizer/pass.h"

namespace sluice {

std::unique_ptr<OptimizerPass> MakeParallelBatchPass() {
  return std::make_unique<RulePass>(
      "parallel_batch", /*on_by_default=*/true,
      [](const DatasetPtr& n, const RewriteContext&) -> Result<DatasetPtr> {
        if (!IsOp(n, "Batch")) return DatasetPtr();
        AttrMap attrs = n->attrs();
        attrs["num_parallel_calls"] = kAutotune;
        attrs["deterministic"] = int64_t{1};
        return RewriteContext::Make("ParallelBatch", std::move(attrs), n->inputs());
      });
}

}  // namespace sluice
