// The per-element fast paths of #22: fused maps applied as one flat list of stages, and
// batches of one row that take the row's buffer instead of copying it (Batch(1), and
// MapAndBatch(1) / ParallelBatch(1) through the BatchProcessor).
#include <gtest/gtest.h>

#include "graph/function_internal.h"
#include "sluice/dataset.h"

namespace sluice {
namespace {

Function Named(const std::string& name, bool fail = false) {
  return Function::Map(name, [fail](Element e, FunctionContext&) -> Result<Element> {
    if (fail) return InvalidArgumentError("boom");
    return e;
  });
}

Function AddOne(const std::string& name) {
  return Function::Map(name, [](Element e, FunctionContext&) -> Result<Element> {
    Tensor t = Tensor::Scalar<int64_t>(e[0].scalar<int64_t>() + 1);
    return Element({t});
  });
}

Function DrawSeed(const std::string& name) {
  // Appends a draw of the stage's generator: shows which (seed, position) each stage got.
  return Function::Map(name, [](Element e, FunctionContext& ctx) -> Result<Element> {
    e.push_back(Tensor::Scalar<int64_t>(static_cast<int64_t>(ctx.rng().Next64())));
    return e;
  });
}

TEST(FusedMapTest, NestedCompositionRunsStagesInOrderWithTheirSeeds) {
  Function abc = ComposeFunctions(ComposeFunctions(DrawSeed("a"), 11, AddOne("b"), 12), 0,
                                  DrawSeed("c"), 13);
  EXPECT_EQ(abc.name(), "a+b+c");
  FunctionContext ctx(99, 5);
  Element e({Tensor::Scalar<int64_t>(1)});
  ASSERT_TRUE(abc.Apply(&e, ctx).ok());
  // a appends a draw, b replaces the element by {x + 1}, c appends a draw keyed by its
  // own seed 13 and the call's position 5.
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].scalar<int64_t>(), 2);
  EXPECT_EQ(e[1].scalar<int64_t>(), static_cast<int64_t>(Rng(13, 5).Next64()));
}

TEST(FusedMapTest, NestedCompositionErrorNamesTheFailingStageOnce) {
  Function f = ComposeFunctions(
      ComposeFunctions(ComposeFunctions(Named("a"), 0, Named("b", true), 0), 0, Named("c"), 0),
      0, Named("d"), 0);
  FunctionContext ctx(0, 0);
  Element e({Tensor::Scalar<int64_t>(1)});
  Status s = f.Apply(&e, ctx);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  // One flat loop: the composition's name, then the stage's; no intermediate levels.
  EXPECT_EQ(s.message(), "in function 'a+b+c+d': in function 'b': boom") << s;
}

}  // namespace
}  // namespace sluice
