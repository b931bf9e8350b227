// parallel_batch: Batch(n, drop) -> ParallelBatch(n, drop, AUTOTUNE, deterministic=true).
// ParallelBatch produces exactly Batch's elements and errors (parallel_batch_dataset.cc)
// with the row copies on the pool; deterministic keeps the order whatever
// Options::deterministic says.
//
// Cost model (cost_model.h): a batch of one row, or of rows so small that copying the
// whole batch costs less than ParallelBatch's per-batch overhead, stays sequential: the
// rewrite would only add a handoff (Batch(1) became ~10 us of CPU per element). So does
// a Batch that gathers its rows from memory (graph/random_access.h, GathersRowsFromMemory:
// a GlobalShuffle or a source over from_tensor_slices, IDX or range rows): one copy per row
// straight into the batch, which ParallelBatch's per-row elements and handoffs would undo
// (Fashion-MNIST: 3.3M against 1.6M rows/s). A ParallelBatch the user wrote over such an
// input becomes that Batch (the same batches; ParallelBatch's order even when it was not
// deterministic).
#include "graph/random_access.h"
#include "optimizer/cost_model.h"
#include "optimizer/pass.h"

namespace sluice {
namespace {

class ParallelBatchPass final : public OptimizerPass {
 public:
  std::string_view name() const override { return "parallel_batch"; }
  bool on_by_default() const override { return true; }
  Result<PassResult> Apply(const DatasetPtr& root) const override {
    int64_t kept = 0, gathers = 0;
    SLUICE_ASSIGN_OR_RETURN(
        PassResult r,
        RewriteGraph(root, [&kept, &gathers](const DatasetPtr& n, const RewriteContext&)
                               -> Result<DatasetPtr> {
          if (n->inputs().empty() || !n->inputs()[0]) return DatasetPtr();
          if (IsOp(n, "ParallelBatch") && CostModelOn() &&
              GathersRowsFromMemory(*n->inputs()[0])) {
            // Written parallel by the user: the same batches, gathered (see above).
            ++gathers;
            AttrMap attrs;
            attrs["batch_size"] = IntAttr(*n, "batch_size", 1);
            attrs["drop_remainder"] = BoolAttr(*n, "drop_remainder", false);
            return RewriteContext::Make("Batch", std::move(attrs), n->inputs());
          }
          if (!IsOp(n, "Batch")) return DatasetPtr();
          if (BatchBelowHandoff(IntAttr(*n, "batch_size", 0), *n->inputs()[0])) {
            ++kept;
            return DatasetPtr();
          }
          if (CostModelOn() && GathersRowsFromMemory(*n->inputs()[0])) {
            ++gathers;
            return DatasetPtr();
          }
          AttrMap attrs = n->attrs();
          attrs["num_parallel_calls"] = kAutotune;
          attrs["deterministic"] = int64_t{1};
          return RewriteContext::Make("ParallelBatch", std::move(attrs), n->inputs());
        }));
    if (kept > 0) {
      r.notes.push_back("kept " + std::to_string(kept) +
                        " Batch sequential (cost model: batch copy below a handoff)");
    }
    if (gathers > 0) {
      r.notes.push_back("kept " + std::to_string(gathers) +
                        " Batch sequential, or made it so (gathers its rows from memory, "
                        "one copy each)");
    }
    return r;
  }
};

}  // namespace

std::unique_ptr<OptimizerPass> MakeParallelBatchPass() {
  return std::make_unique<ParallelBatchPass>();
}

}  // namespace sluice
