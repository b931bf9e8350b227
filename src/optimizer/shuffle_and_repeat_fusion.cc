// shuffle_and_repeat_fusion: Shuffle(buffer_size, seed, reshuffle).Repeat(count) ->
// ShuffleAndRepeat(buffer_size, seed, reshuffle, count) (src/ops/transforms/
// shuffle_and_repeat_dataset.cc), which yields exactly the same elements: each epoch
// drains its buffer before the next begins and reseeds as the Shuffle of that epoch would.
// It keeps one buffer and one op across epochs instead of a new Shuffle iterator per epoch.
// A Shuffle shared with another consumer is left alone.
#include "optimizer/pass.h"

namespace sluice {

std::unique_ptr<OptimizerPass> MakeShuffleAndRepeatFusionPass() {
  return std::make_unique<RulePass>(
      "shuffle_and_repeat_fusion", /*on_by_default=*/true,
      [](const DatasetPtr& n, const RewriteContext& ctx) -> Result<DatasetPtr> {
        if (!IsOp(n, "Repeat")) return DatasetPtr();
        const DatasetPtr& shuffle = n->input(0);
        if (!IsOp(shuffle, "Shuffle") || ctx.Shared(shuffle)) return DatasetPtr();
        AttrMap attrs = shuffle->attrs();
        attrs["count"] = IntAttr(*n, "count", -1);
        return RewriteContext::Make("ShuffleAndRepeat", std::move(attrs), {shuffle->input(0)});
      });
}

}  // namespace sluice
