// The per-element fast paths of #22: fused maps applied as one flat list of stages, and
// batches of one row that take the row's buffer instead of copying it (Batch(1), and
// MapAndBatch(1) / ParallelBatch(1) through the BatchProcessor).
#include <gtest/gtest.h>

#include <mutex>
#include <set>
#include <vector>

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

// Records the buffers of the tensors a map produces (thread-safe: MapAndBatch may run the
// function on the pool).
struct BufferLog {
  std::mutex mu;
  std::set<const void*> buffers;
};

Function RecordBuffer(BufferLog* log) {
  return Function::Map("record", [log](Element e, FunctionContext&) -> Result<Element> {
    std::lock_guard<std::mutex> l(log->mu);
    log->buffers.insert(e[0].buffer().get());
    return e;
  });
}

// Rows of two int64 (16 bytes: above Tensor::kInlineBytes, so each has a buffer).
Function Pair() {
  return Function::Map("pair", [](Element e, FunctionContext&) -> Result<Element> {
    const int64_t v = e[0].scalar<int64_t>();
    return Element{Tensor::FromVector<int64_t>({v, -v})};
  });
}

void ExpectBatchesOfOneTakeTheBuffer(const Options& options) {
  BufferLog log;
  Dataset ds = Dataset::Range(6).Map(Pair()).Map(RecordBuffer(&log)).Batch(1);
  auto it = ds.MakeIterator(options);
  ASSERT_TRUE(it.ok()) << it.status();
  for (int64_t i = 0; i < 6; ++i) {
    auto e = (*it)->GetNext();
    ASSERT_TRUE(e.ok()) << e.status();
    ASSERT_TRUE(e->has_value());
    const Tensor& t = (**e)[0];
    ASSERT_EQ(t.shape(), Shape({1, 2}));
    EXPECT_EQ(t.flat<int64_t>()[0], i);
    EXPECT_EQ(t.flat<int64_t>()[1], -i);
    ASSERT_NE(t.buffer().get(), nullptr);
    std::lock_guard<std::mutex> l(log.mu);
    EXPECT_EQ(log.buffers.count(t.buffer().get()), 1u) << "batch " << i << " was copied";
  }
  auto end = (*it)->GetNext();
  ASSERT_TRUE(end.ok());
  EXPECT_FALSE(end->has_value());
}

TEST(BatchOfOneTest, BatchTakesTheRowsBuffer) {
  Options o;
  o.optimization.apply_default_optimizations = false;
  ExpectBatchesOfOneTakeTheBuffer(o);
}

TEST(BatchOfOneTest, MapAndBatchTakesTheRowsBuffer) {
  Options o;  // defaults: map_and_batch_fusion makes MapAndBatch(record, 1)
  ExpectBatchesOfOneTakeTheBuffer(o);
}

TEST(BatchOfOneTest, RowThatViewsALargerBufferIsCopied) {
  // Unbatch's rows are views of their 4-row batch: a batch of one must not keep the
  // whole 4-row buffer alive. Rows of two int64 are views (16 bytes, buffered); scalar
  // rows are copied out inline by Unbatch (tensor.h), so they hold no buffer at all.
  for (bool defaults : {false, true}) {
    Options o;
    o.optimization.apply_default_optimizations = defaults;
    Dataset pairs = Dataset::Range(8).Map(Pair()).Batch(4).Unbatch().Batch(1);
    auto it = pairs.MakeIterator(o);
    ASSERT_TRUE(it.ok()) << it.status();
    for (int64_t i = 0; i < 8; ++i) {
      auto e = (*it)->GetNext();
      ASSERT_TRUE(e.ok() && e->has_value());
      const Tensor& t = (**e)[0];
      EXPECT_EQ(t.flat<int64_t>()[0], i);
      ASSERT_NE(t.buffer().get(), nullptr);
      EXPECT_EQ(t.buffer()->size(), 2 * sizeof(int64_t)) << "defaults=" << defaults;
    }
    auto scalars = Dataset::Range(8).Batch(4).Unbatch().Batch(1).MakeIterator(o);
    ASSERT_TRUE(scalars.ok()) << scalars.status();
    for (int64_t i = 0; i < 8; ++i) {
      auto e = (*scalars)->GetNext();
      ASSERT_TRUE(e.ok() && e->has_value());
      const Tensor& t = (**e)[0];
      EXPECT_EQ(t.flat<int64_t>()[0], i);
      EXPECT_TRUE(t.is_inline()) << "defaults=" << defaults;
      EXPECT_EQ(t.buffer().get(), nullptr);
    }
  }
}

TEST(BatchOfOneTest, StringsAndErrorsAreUnchanged) {
  Options o;
  o.optimization.apply_default_optimizations = false;
  Dataset ds = Dataset::FromTensorSlices({Tensor::FromStrings({"x", "y"})}).Batch(1);
  auto it = ds.MakeIterator(o);
  ASSERT_TRUE(it.ok()) << it.status();
  auto e = (*it)->GetNext();
  ASSERT_TRUE(e.ok() && e->has_value());
  EXPECT_EQ((**e)[0].shape(), Shape({1}));
  EXPECT_EQ((**e)[0].flat<std::string>()[0], "x");
  // A failing function in a fused MapAndBatch(1) still reports the element's position.
  Dataset bad = Dataset::Range(3).Map(Named("ok")).Map(Named("bad", true)).Batch(1);
  auto bit = bad.MakeIterator(Options());
  ASSERT_TRUE(bit.ok()) << bit.status();
  auto r = (*bit)->GetNext();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("in function 'bad'"), std::string::npos) << r.status();
  EXPECT_NE(r.status().message().find("element 0"), std::string::npos) << r.status();
}

TEST(BatchOfOneTest, EveryComponentAndTheNamesAreKept) {
  // Two numeric components (each the whole of its buffer) and names, through Batch(1)
  // and the fused MapAndBatch(1): each row comes back reshaped to [1, ...], values and
  // names intact; a row with a string component takes the per-component path.
  const Function tag =
      Function::Map("tag", [](Element e, FunctionContext&) -> Result<Element> {
        Tensor v = Tensor::FromVector<float>({1.5f, 2.5f});
        return Element({e[0], v}, MakeNames({"id", "vec"}));
      });
  for (bool defaults : {false, true}) {
    Options o;
    o.optimization.apply_default_optimizations = defaults;
    auto it = Dataset::Range(3).Map(tag).Batch(1).MakeIterator(o);
    ASSERT_TRUE(it.ok()) << it.status();
    for (int64_t i = 0; i < 3; ++i) {
      auto e = (*it)->GetNext();
      ASSERT_TRUE(e.ok() && e->has_value()) << "defaults=" << defaults;
      ASSERT_EQ((*e)->size(), 2u);
      EXPECT_EQ((**e)[0].shape(), Shape({1}));
      EXPECT_EQ((**e)[0].flat<int64_t>()[0], i);
      EXPECT_EQ((**e)[1].shape(), Shape({1, 2}));
      EXPECT_EQ((**e)[1].flat<float>()[1], 2.5f);
      ASSERT_NE((*e)->names(), nullptr);
      EXPECT_EQ(*(*e)->names(), (std::vector<std::string>{"id", "vec"}));
    }
  }
  Options o;
  o.optimization.apply_default_optimizations = false;
  auto mixed =
      Dataset::Zip({Dataset::Range(2),
                    Dataset::FromTensorSlices({Tensor::FromStrings({"x", "y"})})})
          .Batch(1)
          .MakeIterator(o);
  ASSERT_TRUE(mixed.ok()) << mixed.status();
  auto e = (*mixed)->GetNext();
  ASSERT_TRUE(e.ok() && e->has_value());
  EXPECT_EQ((**e)[0].shape(), Shape({1}));
  EXPECT_EQ((**e)[1].shape(), Shape({1}));
  EXPECT_EQ((**e)[1].flat<std::string>()[0], "x");
}

TEST(BatchOfOneTest, FusedBatchOfOneErrorNamesTheLaterElement) {
  // The failing call is the third element's: the error names its position, and the
  // first two batches came out.
  const Function third =
      Function::Map("third", [](Element e, FunctionContext&) -> Result<Element> {
        if (e[0].scalar<int64_t>() == 2) return InvalidArgumentError("boom");
        return e;
      });
  auto it =
      Dataset::Range(4).Map(Named("ok")).Map(third).Batch(1).MakeIterator(Options());
  ASSERT_TRUE(it.ok()) << it.status();
  for (int i = 0; i < 2; ++i) {
    auto e = (*it)->GetNext();
    ASSERT_TRUE(e.ok() && e->has_value()) << e.status();
  }
  auto r = (*it)->GetNext();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("in function 'ok+third'"), std::string::npos)
      << r.status();
  EXPECT_NE(r.status().message().find("element 2"), std::string::npos) << r.status();
}

TEST(TensorMoveTest, RvalueSubTensorAndReshapeTakeTheBuffer) {
  // Rows of two int64: 16 bytes, above Tensor::kInlineBytes, so views of the buffer.
  Tensor t = Tensor::FromVector<int64_t>({2, 3, 4, 5}, Shape({2, 2}));
  const Buffer* buffer = t.buffer().get();
  Tensor row = std::move(t).SubTensor(1);
  EXPECT_FALSE(t.valid());
  EXPECT_EQ(row.buffer().get(), buffer);
  EXPECT_EQ(buffer->use_count(), 1);  // moved, not shared
  EXPECT_EQ(row.flat<int64_t>()[1], 5);
  auto bad = std::move(row).Reshape(Shape({3}));
  EXPECT_FALSE(bad.ok());
  EXPECT_TRUE(row.valid());  // unchanged on error
  auto one = std::move(row).Reshape(Shape({1, 2}));
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_FALSE(row.valid());
  EXPECT_EQ(one->buffer().get(), buffer);
  EXPECT_EQ(one->flat<int64_t>()[0], 4);
}

TEST(TensorMoveTest, RvalueSubTensorOfASmallRowCopiesItInline) {
  Tensor t = Tensor::FromVector<int64_t>({4, 5});
  ASSERT_FALSE(t.is_inline());  // 16 bytes
  Tensor row = std::move(t).SubTensor(1);
  EXPECT_FALSE(t.valid());
  EXPECT_TRUE(row.is_inline());
  EXPECT_EQ(row.scalar<int64_t>(), 5);
  auto one = std::move(row).Reshape(Shape({1}));
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_FALSE(row.valid());
  EXPECT_TRUE(one->is_inline());
  EXPECT_EQ(one->flat<int64_t>()[0], 5);
}

}  // namespace
}  // namespace sluice
