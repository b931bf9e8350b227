// Conformance of Range, FromTensors, FromTensorSlices, Map, Batch, Unbatch.
#include <gtest/gtest.h>

#include "testing/conformance.h"

namespace sluice {
namespace {

using testing::CheckDataset;
using testing::CheckTransform;
using testing::Ints;
using testing::IntsOf;

Function AddOne() {
  return Function::Map("add_one", [](Element e, FunctionContext&) -> Result<Element> {
    return Element{Tensor::Scalar<int64_t>(e[0].scalar<int64_t>() + 1)};
  });
}

TEST(RangeTest, Conformance) {
  CheckDataset(Dataset::Range(5), Ints({0, 1, 2, 3, 4}));
  CheckDataset(Dataset::Range(2, 11, 3), Ints({2, 5, 8}));
  CheckDataset(Dataset::Range(5, 0, -2), Ints({5, 3, 1}));
  CheckDataset(Dataset::Range(0), {});
  EXPECT_EQ(Dataset::Range(2, 11, 3).Cardinality(), 3);
  EXPECT_EQ(Dataset::Range(5, 0, -2).Cardinality(), 3);
  EXPECT_FALSE(Dataset::Range(0, 10, 0).ok());
  EXPECT_NE(Dataset::Range(0, 10, 0).status().message().find("step"), std::string::npos);
}

TEST(FromTensorsTest, Conformance) {
  Element e({Tensor::FromVector<int32_t>({1, 2, 3}), Tensor::Scalar("x")}, MakeNames({"a", "b"}));
  CheckDataset(Dataset::FromTensors(e), {e});
  Dataset slices = Dataset::FromTensorSlices(
      Element({Tensor::FromVector<int64_t>({1, 2, 3}), Tensor::FromStrings({"a", "b", "c"})}));
  CheckDataset(slices, {Element{Tensor::Scalar<int64_t>(1), Tensor::Scalar("a")},
                        Element{Tensor::Scalar<int64_t>(2), Tensor::Scalar("b")},
                        Element{Tensor::Scalar<int64_t>(3), Tensor::Scalar("c")}});
  EXPECT_EQ(slices.Cardinality(), 3);
  EXPECT_EQ(slices.element_spec().ToString(), "(int64[], string[])");
  EXPECT_FALSE(Dataset::FromTensorSlices(Element{Tensor::Scalar<int64_t>(1)}).ok());
  EXPECT_FALSE(Dataset::FromTensorSlices(Element{Tensor::FromVector<int64_t>({1, 2}),
                                                 Tensor::FromVector<int64_t>({1})}).ok());
}

TEST(MapTest, Conformance) {
  CheckDataset(Dataset::Range(5).Map(AddOne()), Ints({1, 2, 3, 4, 5}));
  CheckTransform([](Dataset in) { return in.Map(AddOne()); });
}

TEST(MapTest, RandomFunctionsAreKeyedByPosition) {
  Function noisy = Function::Map(
      "noisy",
      [](Element e, FunctionContext& ctx) -> Result<Element> {
        return Element{Tensor::Scalar<int64_t>(static_cast<int64_t>(ctx.rng().UniformInt(1000000)))};
      },
      {.is_random = true});
  Dataset ds = Dataset::Range(50).Map(noisy);
  auto a = testing::CollectOrDie(ds);
  auto b = testing::CollectOrDie(ds);
  EXPECT_EQ(IntsOf(a), IntsOf(b));  // same dataset, same seed: same draws
  // Saving mid-way and restoring reproduces the draws (conformance does the rest).
  testing::CheckDataset(ds, a, {.save_restore_stride = 7});
  Dataset other = Dataset::Range(50).Map(noisy);  // a new op gets a new seed
  EXPECT_NE(IntsOf(a), IntsOf(testing::CollectOrDie(other)));
}

TEST(MapTest, ErrorsNameTheOperator) {
  auto it = testing::FailingAt(5, 2).MakeIterator();
  ASSERT_TRUE(it.ok());
  for (int i = 0; i < 2; ++i) ASSERT_TRUE((*it)->GetNext().ok());
  auto e = (*it)->GetNext();
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("Root"), std::string::npos) << e.status();
  EXPECT_NE(e.status().message().find("fail_at"), std::string::npos) << e.status();
  // The iterator goes on after a per-element error.
  auto next = (*it)->GetNext();
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(testing::IntOf(**next), 3);
}

TEST(BatchTest, Conformance) {
  auto batch = [](std::vector<int64_t> v) {
    return Element{Tensor::FromVector<int64_t>(v)};
  };
  CheckDataset(Dataset::Range(7).Batch(3), {batch({0, 1, 2}), batch({3, 4, 5}), batch({6})});
  CheckDataset(Dataset::Range(7).Batch(3, true), {batch({0, 1, 2}), batch({3, 4, 5})});
  EXPECT_EQ(Dataset::Range(7).Batch(3).Cardinality(), 3);
  EXPECT_EQ(Dataset::Range(7).Batch(3, true).Cardinality(), 2);
  EXPECT_EQ(Dataset::Range(7).Batch(3, true).element_spec().ToString(), "(int64[3])");
  EXPECT_EQ(Dataset::Range(7).Batch(3).element_spec().ToString(), "(int64[?])");
  CheckTransform([](Dataset in) { return in.Batch(2); });
  EXPECT_FALSE(Dataset::Range(3).Batch(0).ok());
}

TEST(BatchTest, MismatchedShapesFailClearly) {
  Dataset ds = Dataset::Range(1, 4).Map(Function::Map(
      "ragged", [](Element e, FunctionContext&) -> Result<Element> {
        return Element{Tensor::Zeros(DType::kFloat32, Shape{e[0].scalar<int64_t>()})};
      }));
  auto r = ds.Batch(3).Collect();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("different shapes"), std::string::npos) << r.status();
}

TEST(UnbatchTest, Conformance) {
  CheckDataset(Dataset::Range(7).Batch(3).Unbatch(), Ints({0, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(Dataset::Range(6).Batch(3, true).Unbatch().Cardinality(), 6);
  EXPECT_EQ(Dataset::Range(7).Batch(3).Unbatch().Cardinality(), kUnknownCardinality);
  CheckTransform([](Dataset in) { return in.Batch(2).Unbatch(); });
  // Batches of one row become their rows in place; mixed with larger batches (the last
  // batch of Range(7).Batch(2) has one row), with checkpoints at every position.
  CheckDataset(Dataset::Range(5).Batch(1).Unbatch(), Ints({0, 1, 2, 3, 4}));
  CheckDataset(Dataset::Range(7).Batch(2).Unbatch(), Ints({0, 1, 2, 3, 4, 5, 6}));
  CheckTransform([](Dataset in) { return in.Batch(1).Unbatch(); });
  {
    Tensor m = Tensor::FromVector<float>({1, 2, 3}, Shape{1, 3});
    auto rows = Dataset::FromTensors(Element{m, Tensor::FromVector<int64_t>({9})})
                    .Unbatch()
                    .Collect();
    ASSERT_TRUE(rows.ok()) << rows.status();
    ASSERT_EQ(rows->size(), 1u);
    EXPECT_EQ((*rows)[0][0].shape(), (Shape{3}));
    EXPECT_EQ((*rows)[0][0].data<float>()[2], 3.0f);
    EXPECT_EQ((*rows)[0][1].shape(), Shape{});
    EXPECT_EQ((*rows)[0][1].scalar<int64_t>(), 9);
  }
  {
    // A one-row component beside a two-row one (a spec not known statically): the
    // batch-size mismatch is reported, not taken as a row.
    Dataset ragged = Dataset::Range(1).Map(
        Function::Map("ragged", [](Element, FunctionContext&) -> Result<Element> {
          return Element{Tensor::FromVector<int64_t>({1}), Tensor::FromVector<int64_t>({1, 2})};
        }));
    auto r = ragged.Unbatch().Collect();
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("different batch sizes"), std::string::npos)
        << r.status();
  }
  // Unbatching a scalar is an error, not a crash; with a known spec it is refused when
  // the op is made (tf.data raises when unbatch() is called), as are known first
  // dimensions that differ.
  auto r = Dataset::Range(3).Unbatch().Collect();
  EXPECT_FALSE(r.ok());
  Dataset scalars = Dataset::Range(3).Unbatch();
  EXPECT_EQ(scalars.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(scalars.status().message().find("scalar"), std::string::npos)
      << scalars.status();
  Dataset mixed = Dataset::FromTensors(Element{Tensor::FromVector<int64_t>({1, 2}),
                                               Tensor::FromVector<int64_t>({1, 2, 3})})
                      .Unbatch();
  EXPECT_EQ(mixed.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(mixed.status().message().find("first dimensions differ"), std::string::npos)
      << mixed.status();
}

}  // namespace
}  // namespace sluice

namespace sluice {
namespace {

Function RangeOf(DType declared) {
  return Function::DatasetFunction(
      "range_of",
      [](Element e, FunctionContext&) -> Result<Dataset> {
        return Dataset::Range(e[0].scalar<int64_t>());
      },
      {}, [declared](const ElementSpec&) -> Result<ElementSpec> {
        return ElementSpec{{{declared, PartialShape{}}}};
      });
}

TEST(DatasetFunctionTest, DeclaredSpecFlowsThroughInterleave) {
  Dataset ds = Dataset::Range(4).FlatMap(RangeOf(DType::kInt64)).Batch(2, true);
  EXPECT_EQ(ds.element_spec().ToString(), "(int64[2])");
  testing::CheckDataset(Dataset::Range(4).FlatMap(RangeOf(DType::kInt64)),
                        testing::Ints({0, 0, 1, 0, 1, 2}));
  // A function whose datasets do not match what it declared is caught, naming it.
  auto r = Dataset::Range(3).FlatMap(RangeOf(DType::kString)).Collect();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("range_of"), std::string::npos) << r.status();
}

}  // namespace
}  // namespace sluice
