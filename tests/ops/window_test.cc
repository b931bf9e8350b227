// Window: the tf.data window examples (members stacked), a reference model over many
// (size, shift, stride, drop_remainder) combinations, conformance.
#include <gtest/gtest.h>

#include "testing/conformance.h"

namespace sluice {
namespace {

using testing::CheckDataset;
using testing::CheckTransform;

Element Vec(std::vector<int64_t> v) { return Element{Tensor::FromVector<int64_t>(v)}; }
std::vector<Element> Vecs(std::vector<std::vector<int64_t>> vs) {
  std::vector<Element> out;
  for (auto& v : vs) out.push_back(Vec(v));
  return out;
}

TEST(WindowTest, DocExamples) {
  // tf.data.Dataset.range(7).window(3)
  CheckDataset(Dataset::Range(7).Window(3), Vecs({{0, 1, 2}, {3, 4, 5}, {6}}));
  // window(3, drop_remainder=True)
  CheckDataset(Dataset::Range(7).Window(3, -1, 1, true), Vecs({{0, 1, 2}, {3, 4, 5}}));
  // window(3, 2, 1, True)
  CheckDataset(Dataset::Range(7).Window(3, 2, 1, true),
               Vecs({{0, 1, 2}, {2, 3, 4}, {4, 5, 6}}));
  // window(3, 1, 2, True)
  CheckDataset(Dataset::Range(7).Window(3, 1, 2, true),
               Vecs({{0, 2, 4}, {1, 3, 5}, {2, 4, 6}}));
  // The same without drop_remainder: the partial windows follow.
  CheckDataset(Dataset::Range(7).Window(3, 1, 2),
               Vecs({{0, 2, 4}, {1, 3, 5}, {2, 4, 6}, {3, 5}, {4, 6}, {5}, {6}}));
  // shift larger than the window: elements in between are skipped.
  CheckDataset(Dataset::Range(7).Window(2, 3), Vecs({{0, 1}, {3, 4}, {6}}));
  CheckDataset(Dataset::Range(12).Window(2, 5, 2), Vecs({{0, 2}, {5, 7}, {10}}));
}

TEST(WindowTest, SpecAndCardinality) {
  EXPECT_EQ(Dataset::Range(7).Window(3).element_spec().ToString(), "(int64[?])");
  EXPECT_EQ(Dataset::Range(7).Window(3, 2, 1, true).element_spec().ToString(),
            "(int64[3])");
  EXPECT_EQ(Dataset::Range(7).Window(3).Cardinality(), 3);
  EXPECT_EQ(Dataset::Range(7).Window(3, 2, 1, true).Cardinality(), 3);
  EXPECT_EQ(Dataset::Range(2).Window(3, 1, 1, true).Cardinality(), 0);
  EXPECT_FALSE(Dataset::Range(7).Window(0).ok());
  EXPECT_FALSE(Dataset::Range(7).Window(2, 0).ok());
  EXPECT_FALSE(Dataset::Range(7).Window(2, 1, 0).ok());
  EXPECT_FALSE(Dataset::Range(7).Window(int64_t{1} << 40, 1, int64_t{1} << 40).ok());
}

// tf.data's definition: window i starts at input i*shift (while that exists) and holds
// the inputs i*shift + j*stride < n, j < size; incomplete windows go when drop_remainder.
std::vector<Element> Reference(int64_t n, int64_t size, int64_t shift, int64_t stride,
                               bool drop) {
  std::vector<Element> out;
  for (int64_t start = 0; start < n; start += shift) {
    std::vector<int64_t> w;
    for (int64_t j = 0; j < size && start + j * stride < n; ++j)
      w.push_back(start + j * stride);
    if (drop && static_cast<int64_t>(w.size()) < size) break;
    out.push_back(Vec(w));
  }
  return out;
}

TEST(WindowTest, MatchesTheReferenceModel) {
  for (int64_t n : {0, 1, 5, 11}) {
    for (int64_t size : {1, 2, 3, 5}) {
      for (int64_t shift : {1, 2, 4, 7}) {
        for (int64_t stride : {1, 2, 3}) {
          for (bool drop : {false, true}) {
            SCOPED_TRACE("n=" + std::to_string(n) + " size=" + std::to_string(size) +
                         " shift=" + std::to_string(shift) + " stride=" +
                         std::to_string(stride) + " drop=" + std::to_string(drop));
            Dataset ds = Dataset::Range(n).Window(size, shift, stride, drop);
            std::vector<Element> expected = Reference(n, size, shift, stride, drop);
            EXPECT_EQ(ds.Cardinality(), static_cast<int64_t>(expected.size()));
            // Save/restore at every position for a subset, plain comparison for the rest.
            testing::ConformanceOptions opts;
            opts.check_save_restore = (n == 11 && stride != 3) || n == 5;
            CheckDataset(ds, expected, opts);
          }
        }
      }
    }
  }
}

TEST(WindowTest, ComponentsAreStackedWithNames) {
  Element e({Tensor::FromVector<int64_t>({1, 2, 3, 4, 5}),
             Tensor::FromStrings({"a", "b", "c", "d", "e"})},
            MakeNames({"x", "s"}));
  Dataset ds = Dataset::FromTensorSlices(e).Window(2, 2, 1, true);
  std::vector<Element> expected = {
      Element{Tensor::FromVector<int64_t>({1, 2}), Tensor::FromStrings({"a", "b"})},
      Element{Tensor::FromVector<int64_t>({3, 4}), Tensor::FromStrings({"c", "d"})}};
  CheckDataset(ds, expected);
  EXPECT_EQ(ds.element_spec().ToString(), "(x: int64[2], s: string[2])");
  auto got = testing::CollectOrDie(ds);
  ASSERT_TRUE(got[0].names());
  EXPECT_EQ((*got[0].names())[1], "s");
  // Matrices stack to rank 3.
  Dataset rows = Dataset::FromTensorSlices(
      Element{Tensor::FromVector<int32_t>({1, 2, 3, 4, 5, 6, 7, 8}, Shape{4, 1, 2})});
  auto w = testing::CollectOrDie(rows.Window(3, 1, 1, true));
  ASSERT_EQ(w.size(), 2u);
  EXPECT_TRUE(w[1][0].ContentEquals(
      Tensor::FromVector<int32_t>({3, 4, 5, 6, 7, 8}, Shape{3, 1, 2})));
}

TEST(WindowTest, MismatchedShapesFailAndMoveOn) {
  Dataset ragged = Dataset::Range(1, 7).Map(
      Function::Map("ragged", [](Element e, FunctionContext&) -> Result<Element> {
        int64_t x = e[0].scalar<int64_t>();
        return Element{Tensor::Zeros(DType::kFloat32, Shape{x <= 2 ? 1 : 2})};
      }));
  // Windows [1,2] ok, [3,4] ok... shapes [1],[1] | [2],[2] | [2],[2] with size 2; use
  // size 3: [1,2,3] mixes shapes (error), [4,5,6] is fine.
  auto it = ragged.Window(3).MakeIterator();
  ASSERT_TRUE(it.ok());
  auto first = (*it)->GetNext();
  ASSERT_FALSE(first.ok());
  EXPECT_NE(first.status().message().find("Window"), std::string::npos) << first.status();
  auto second = (*it)->GetNext();
  ASSERT_TRUE(second.ok()) << second.status();
  ASSERT_TRUE(second->has_value());
  EXPECT_EQ((**second)[0].shape(), (Shape{3, 2}));
  auto end = (*it)->GetNext();
  ASSERT_TRUE(end.ok());
  EXPECT_FALSE(end->has_value());
}

// tf.data counts a failed element as a position: the windows holding it fail, the
// boundaries of the others do not move (and checkpoints keep the failed position).
TEST(WindowTest, FailedElementKeepsItsPosition) {
  auto run = [](Dataset ds) {
    std::vector<std::string> out;
    auto it = ds.MakeIterator();
    EXPECT_TRUE(it.ok());
    for (int i = 0; i < 20; ++i) {
      auto e = (*it)->GetNext();
      if (!e.ok()) {
        EXPECT_NE(e.status().message().find("injected failure at 2"), std::string::npos)
            << e.status();
        out.push_back("E");
        continue;
      }
      if (!e->has_value()) break;
      std::string w;
      const Tensor& t = (**e)[0];
      for (int64_t j = 0; j < t.num_elements(); ++j) {
        w += std::to_string(t.data<int64_t>()[j]);
      }
      out.push_back(w);
    }
    return out;
  };
  EXPECT_EQ(run(testing::FailingAt(8, 2).Window(3)),
            (std::vector<std::string>{"E", "345", "67"}));
  EXPECT_EQ(run(testing::FailingAt(6, 2).Window(2, 1)),
            (std::vector<std::string>{"01", "E", "E", "34", "45", "5"}));
  EXPECT_EQ(run(testing::FailingAt(7, 2).Window(2, 1, 2, true)),
            (std::vector<std::string>{"E", "13", "E", "35", "46"}));
  // Saved while the failed element is buffered, restored into a fresh iterator.
  Dataset ds = testing::FailingAt(6, 2).Window(2, 1);
  auto a = ds.MakeIterator();
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE((*a)->GetNext().ok());  // [0, 1]; the buffer now holds 1, failed 2
  auto ckpt = (*a)->Save();
  ASSERT_TRUE(ckpt.ok()) << ckpt.status();
  auto b = ds.MakeIterator();
  ASSERT_TRUE(b.ok());
  ASSERT_TRUE((*b)->Restore(*ckpt).ok());
  EXPECT_FALSE((*b)->GetNext().ok());  // [1, E]
  EXPECT_FALSE((*b)->GetNext().ok());  // [E, 3]
  auto next = (*b)->GetNext();
  ASSERT_TRUE(next.ok() && next->has_value());
  EXPECT_EQ((**next)[0].data<int64_t>()[0], 3);
}

TEST(WindowTest, Transform) {
  CheckTransform([](Dataset in) { return in.Window(3); });
  CheckTransform([](Dataset in) { return in.Window(2, 1, 2, true); });
  CheckTransform([](Dataset in) { return in.Window(2, 4, 1); });
}

}  // namespace
}  // namespace sluice
