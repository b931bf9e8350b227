// inject_prefetch: appends Prefetch(AUTOTUNE) to the pipeline when its last op does not
// already run asynchronously (Prefetch, the parallel ops, MapAndBatch), so that producing
// the next element overlaps the consumer's work. Only the root is looked at.
#include "optimizer/pass.h"

namespace sluice {
namespace {

class InjectPrefetchPass final : public OptimizerPass {
 public:
  std::string_view name() const override { return "inject_prefetch"; }
  bool on_by_default() const override { return true; }
  Result<PassResult> Apply(const DatasetPtr& root) const override {
    if (IsAsyncOp(root->op())) return PassResult{root, 0};
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
