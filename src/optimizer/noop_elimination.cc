// noop_elimination: removes ops that pass their input through unchanged:
//   Take(count < 0), Skip(0), Repeat(1), Shard(1, 0), Map/ParallelMap(identity kernel).
// Repeat(1) is removed only when nothing under it reads the iterator context's seed_mix
// (Repeat runs its input in epoch 0's mixed context, which a reshuffling Shuffle below
// would notice). Prefetch(0) cannot be built (buffer_size must be > 0 or AUTOTUNE), so
// there is none to remove.
#include "optimizer/pass.h"

namespace sluice {
namespace {

bool IsNoop(const DatasetPtr& n) {
  const std::string& op = n->op();
  if (op == "Take") return IntAttr(*n, "count", 0) < 0;
  if (op == "Skip") return IntAttr(*n, "count", -1) == 0;
  if (op == "Repeat") return IntAttr(*n, "count", -1) == 1 && !ReadsSeedMix(n->input(0));
  if (op == "Shard") return IntAttr(*n, "num_shards", 0) == 1 && IntAttr(*n, "index", -1) == 0;
  if (op == "Map" || op == "ParallelMap") {
    const Function& f = n->functions()[0];
    return f.serializable() && f.name() == "identity" && !IsStateful(f);
  }
  return false;
}

}  // namespace

std::unique_ptr<OptimizerPass> MakeNoopEliminationPass() {
  return std::make_unique<RulePass>(
      "noop_elimination", /*on_by_default=*/true,
      [](const DatasetPtr& n, const RewriteContext&) -> Result<DatasetPtr> {
        if (n->inputs().size() == 1 && IsNoop(n)) return n->input(0);
        return DatasetPtr();
      });
}

}  // namespace sluice
