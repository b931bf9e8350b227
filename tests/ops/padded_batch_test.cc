// PaddedBatch: conformance, the tf.data padded_batch examples, errors.
#include <gtest/gtest.h>

#include "testing/conformance.h"

namespace sluice {
namespace {

using testing::CheckDataset;
using testing::CheckTransform;

// tf.data's example: A = range(1, 5).map(lambda x: tf.fill([x], x)) (int32).
Function FillInt32(bool declare_spec = true) {
  Function::SpecFn spec = nullptr;
  if (declare_spec) {
    spec = [](const ElementSpec&) -> Result<ElementSpec> {
      return ElementSpec{{{DType::kInt32, PartialShape{-1}}}};
    };
  }
  return Function::Map(
      "fill",
      [](Element e, FunctionContext&) -> Result<Element> {
        int64_t x = e[0].scalar<int64_t>();
        return Element{Tensor::FromVector<int32_t>(
            std::vector<int32_t>(x, static_cast<int32_t>(x)))};
      },
      {}, spec);
}

Dataset A() { return Dataset::Range(1, 5).Map(FillInt32()); }

Element I32(std::vector<int32_t> v, Shape s) {
  return Element{Tensor::FromVector<int32_t>(v, s)};
}

TEST(PaddedBatchTest, DocExamplePadToBatchMax) {
  Dataset b = A().PaddedBatch(2);
  CheckDataset(b, {I32({1, 0, 2, 2}, {2, 2}), I32({3, 3, 3, 0, 4, 4, 4, 4}, {2, 4})});
  EXPECT_EQ(b.Cardinality(), 2);
  EXPECT_EQ(b.element_spec().ToString(), "(int32[?, ?])");
}

TEST(PaddedBatchTest, DocExamplePadToFixedSize) {
  Dataset c = A().PaddedBatch(2, {PartialShape{5}});
  CheckDataset(c, {I32({1, 0, 0, 0, 0, 2, 2, 0, 0, 0}, {2, 5}),
                   I32({3, 3, 3, 0, 0, 4, 4, 4, 4, 0}, {2, 5})});
  EXPECT_EQ(c.element_spec().ToString(), "(int32[?, 5])");
  EXPECT_EQ(A().PaddedBatch(2, {PartialShape{5}}, {}, true).element_spec().ToString(),
            "(int32[2, 5])");
}

TEST(PaddedBatchTest, DocExampleCustomPaddingValue) {
  Dataset d = A().PaddedBatch(2, {PartialShape{5}}, {Tensor::Scalar<int32_t>(-1)});
  CheckDataset(d, {I32({1, -1, -1, -1, -1, 2, 2, -1, -1, -1}, {2, 5}),
                   I32({3, 3, 3, -1, -1, 4, 4, 4, 4, -1}, {2, 5})});
}

TEST(PaddedBatchTest, DocExampleComponentsPaddedIndependently) {
  // elements = [([1, 2, 3], [10]), ([4, 5], [11, 12])]
  // padded_batch(2, padded_shapes=([4], [None]), padding_values=(-1, 100))
  Dataset in = Dataset::Range(2).Map(
      Function::Map("pairs", [](Element e, FunctionContext&) -> Result<Element> {
        if (e[0].scalar<int64_t>() == 0) {
          return Element{Tensor::FromVector<int32_t>({1, 2, 3}),
                         Tensor::FromVector<int32_t>({10})};
        }
        return Element{Tensor::FromVector<int32_t>({4, 5}),
                       Tensor::FromVector<int32_t>({11, 12})};
      }));
  Dataset ds =
      in.PaddedBatch(2, {PartialShape{4}, PartialShape{-1}},
                     {Tensor::Scalar<int32_t>(-1), Tensor::Scalar<int32_t>(100)});
  CheckDataset(
      ds, {Element{Tensor::FromVector<int32_t>({1, 2, 3, -1, 4, 5, -1, -1}, Shape{2, 4}),
                   Tensor::FromVector<int32_t>({10, 100, 11, 12}, Shape{2, 2})}});
}

TEST(PaddedBatchTest, DocExampleOnePaddingValueForAllComponents) {
  // tf.data.Dataset.zip((A, A)).padded_batch(2, padding_values=-1)
  Dataset aa = Dataset::Range(1, 5).Map(
      Function::Map("fill2", [](Element e, FunctionContext&) -> Result<Element> {
        int64_t x = e[0].scalar<int64_t>();
        Tensor t =
            Tensor::FromVector<int32_t>(std::vector<int32_t>(x, static_cast<int32_t>(x)));
        return Element{t, t};
      }));
  auto got = testing::CollectOrDie(aa.PaddedBatch(2, {}, {Tensor::Scalar<int32_t>(-1)}));
  ASSERT_EQ(got.size(), 2u);
  Tensor first = Tensor::FromVector<int32_t>({1, -1, 2, 2}, Shape{2, 2});
  Tensor second = Tensor::FromVector<int32_t>({3, 3, 3, -1, 4, 4, 4, 4}, Shape{2, 4});
  EXPECT_TRUE(got[0].ContentEquals(Element{first, first})) << got[0].DebugString();
  EXPECT_TRUE(got[1].ContentEquals(Element{second, second})) << got[1].DebugString();
}

TEST(PaddedBatchTest, TwoDimensionalStringsAndNames) {
  // Element i (0..2): a string matrix of shape [i + 1, 3 - i] filled with "r<row>c<col>".
  Dataset in = Dataset::Range(3).Map(
      Function::Map("grid", [](Element e, FunctionContext&) -> Result<Element> {
        int64_t i = e[0].scalar<int64_t>();
        std::vector<std::string> v;
        for (int64_t r = 0; r <= i; ++r) {
          for (int64_t c = 0; c < 3 - i; ++c)
            v.push_back("r" + std::to_string(r) + "c" + std::to_string(c));
        }
        return Element({Tensor::FromStrings(v, Shape{i + 1, 3 - i}), e[0]},
                       MakeNames({"s", "i"}));
      }));
  auto got = testing::CollectOrDie(
      in.PaddedBatch(3, {}, {Tensor::Scalar("_"), Tensor::Scalar<int64_t>(0)}));
  ASSERT_EQ(got.size(), 1u);
  const Element& b = got[0];
  ASSERT_TRUE(b.names());
  EXPECT_EQ((*b.names())[0], "s");
  ASSERT_EQ(b[0].shape(), (Shape{3, 3, 3}));
  std::vector<std::string> expected;
  for (int64_t i = 0; i < 3; ++i) {
    for (int64_t r = 0; r < 3; ++r) {
      for (int64_t c = 0; c < 3; ++c) {
        bool inside = r <= i && c < 3 - i;
        expected.push_back(inside ? "r" + std::to_string(r) + "c" + std::to_string(c)
                                  : "_");
      }
    }
  }
  EXPECT_TRUE(b[0].ContentEquals(Tensor::FromStrings(expected, Shape{3, 3, 3})))
      << b[0].DebugString(27);
  EXPECT_TRUE(b[1].ContentEquals(Tensor::FromVector<int64_t>({0, 1, 2})));
  // Default string padding is "".
  auto def = testing::CollectOrDie(in.PaddedBatch(3));
  ASSERT_EQ(def.size(), 1u);
  EXPECT_EQ(def[0][0].flat<std::string>()[2], "r0c2");
  EXPECT_EQ(def[0][0].flat<std::string>()[3], "");
}

TEST(PaddedBatchTest, Conformance) {
  CheckDataset(
      Dataset::Range(1, 8).Map(FillInt32()).PaddedBatch(3, {PartialShape{7}}, {}, true),
      {I32({1, 0, 0, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 0, 3, 3, 3, 0, 0, 0, 0}, {3, 7}),
       I32({4, 4, 4, 4, 0, 0, 0, 5, 5, 5, 5, 5, 0, 0, 6, 6, 6, 6, 6, 6, 0}, {3, 7})});
  CheckDataset(Dataset::Range(1, 4).Map(FillInt32()).PaddedBatch(2),
               {I32({1, 0, 2, 2}, {2, 2}), I32({3, 3, 3}, {1, 3})});
  // Scalars: a padded batch of scalars is a batch.
  CheckDataset(Dataset::Range(5).PaddedBatch(2),
               {Element{Tensor::FromVector<int64_t>({0, 1})},
                Element{Tensor::FromVector<int64_t>({2, 3})},
                Element{Tensor::FromVector<int64_t>({4})}});
  EXPECT_EQ(Dataset::Range(7).PaddedBatch(3).Cardinality(), 3);
  EXPECT_EQ(Dataset::Range(7).PaddedBatch(3, {}, {}, true).Cardinality(), 2);
  CheckTransform([](Dataset in) { return in.PaddedBatch(3); });
  CheckTransform(
      [](Dataset in) { return in.Map(FillInt32()).PaddedBatch(2, {PartialShape{12}}); });
}

TEST(PaddedBatchTest, ElementLargerThanPaddedShapeFailsAndMovesOn) {
  auto it = A().PaddedBatch(2, {PartialShape{3}}).MakeIterator();
  ASSERT_TRUE(it.ok());
  auto first = (*it)->GetNext();
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = (*it)->GetNext();  // holds [4, 4, 4, 4]
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kDataLoss);  // as tf.data
  EXPECT_NE(second.status().message().find("larger than the padded shape"),
            std::string::npos)
      << second.status();
  EXPECT_NE(second.status().message().find("PaddedBatch"), std::string::npos)
      << second.status();
  auto end = (*it)->GetNext();
  ASSERT_TRUE(end.ok());
  EXPECT_FALSE(end->has_value());
  // Statically impossible padded shapes are rejected when the dataset is built.
  Dataset fixed = Dataset::FromTensors(Element{Tensor::FromVector<int32_t>({1, 2, 3})});
  Dataset bad = fixed.PaddedBatch(2, {PartialShape{2}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("smaller"), std::string::npos) << bad.status();
}

TEST(PaddedBatchTest, RankMismatch) {
  Dataset bad = A().PaddedBatch(2, {PartialShape{2, 2}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("rank"), std::string::npos) << bad.status();
  // Without a static spec the mismatch is found per batch.
  auto r = Dataset::Range(1, 3)
               .Map(FillInt32(false))
               .PaddedBatch(2, {PartialShape{2, 2}})
               .Collect();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("rank"), std::string::npos) << r.status();
  // Elements of one batch with different ranks.
  Dataset mixed = Dataset::Range(2).Map(
      Function::Map("mixed", [](Element e, FunctionContext&) -> Result<Element> {
        if (e[0].scalar<int64_t>() == 0)
          return Element{Tensor::Zeros(DType::kFloat32, Shape{2})};
        return Element{Tensor::Zeros(DType::kFloat32, Shape{2, 2})};
      }));
  auto m = mixed.PaddedBatch(2).Collect();
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("different ranks"), std::string::npos)
      << m.status();
}

TEST(PaddedBatchTest, PaddingValueDtypeMismatch) {
  Dataset bad = A().PaddedBatch(2, {}, {Tensor::Scalar<int64_t>(0)});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("padding value"), std::string::npos)
      << bad.status();
  auto r = Dataset::Range(1, 3)
               .Map(FillInt32(false))
               .PaddedBatch(2, {}, {Tensor::Scalar(1.5f)})
               .Collect();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("padding value"), std::string::npos) << r.status();
  // Padding values must be scalars; counts must match.
  EXPECT_FALSE(A().PaddedBatch(2, {}, {Tensor::FromVector<int32_t>({1, 2})}).ok());
  EXPECT_FALSE(A().PaddedBatch(2, {PartialShape{3}, PartialShape{3}}).ok());
  EXPECT_FALSE(A().PaddedBatch(0).ok());
  EXPECT_FALSE(A().PaddedBatch(2, {PartialShape{-5}}).ok());
}

}  // namespace
}  // namespace sluice
