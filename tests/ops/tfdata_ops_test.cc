// TakeWhile, Unique, Random, ChooseFromDatasets and SampleFromDatasets: the conformance
// fixture and the behaviours of tf.data's take_while_test.py, unique_test.py,
// random_test.py, choose_from_datasets_test.py and sample_from_datasets_test.py.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "testing/conformance.h"

namespace sluice {
namespace {

using testing::CheckDataset;
using testing::CheckTransform;
using testing::CollectOrDie;
using testing::Ints;
using testing::IntsOf;

Function Less(double v) {
  return *Function::Kernel("compare", {{"op", std::string("less")}, {"value", v}});
}

Dataset Choices(std::vector<int64_t> v) {
  return Dataset::FromTensorSlices(Element{Tensor::FromVector<int64_t>(v)});
}

// take_while_test.py: elements until the predicate first fails; later ones are not read.
TEST(TakeWhileTest, StopsAtTheFirstFalse) {
  Dataset ds = Dataset::Range(10).TakeWhile(Less(4));
  CheckDataset(ds, Ints({0, 1, 2, 3}));
  EXPECT_EQ(ds.Cardinality(), kUnknownCardinality);
  CheckDataset(Choices({1, 2, 9, 1}).TakeWhile(Less(5)), Ints({1, 2}));
  CheckTransform([](Dataset in) { return in.TakeWhile(Less(1e9)); });
}

// random_test.py: the same seed gives the same stream; another seed another; endless.
TEST(RandomTest, SeededAndEndless) {
  Dataset a = Dataset::Random(42).Take(20);
  std::vector<int64_t> x = IntsOf(CollectOrDie(a));
  EXPECT_EQ(x, IntsOf(CollectOrDie(Dataset::Random(42).Take(20))));
  EXPECT_NE(x, IntsOf(CollectOrDie(Dataset::Random(43).Take(20))));
  EXPECT_EQ(std::set<int64_t>(x.begin(), x.end()).size(), 20u);
  EXPECT_EQ(Dataset::Random(1).Cardinality(), kInfiniteCardinality);
  CheckDataset(a, Ints(x));
  // Skip moves by position: the tail equals the stream's own tail.
  std::vector<int64_t> tail = IntsOf(CollectOrDie(Dataset::Random(42).Skip(5).Take(15)));
  EXPECT_EQ(tail, std::vector<int64_t>(x.begin() + 5, x.end()));
}

TEST(RandomTest, RerandomizeEachIterationChangesEpochs) {
  std::vector<int64_t> two = IntsOf(CollectOrDie(Dataset::Random(3).Take(4).Repeat(2)));
  EXPECT_EQ(std::vector<int64_t>(two.begin(), two.begin() + 4),
            std::vector<int64_t>(two.begin() + 4, two.end()));
  two = IntsOf(CollectOrDie(Dataset::Random(3, true).Take(4).Repeat(2)));
  EXPECT_NE(std::vector<int64_t>(two.begin(), two.begin() + 4),
            std::vector<int64_t>(two.begin() + 4, two.end()));
}

// choose_from_datasets_test.py (testChooseFromDatasets): elements in the selector's
// order.
TEST(ChooseFromDatasetsTest, FollowsTheSelector) {
  Dataset ds = Dataset::ChooseFromDatasets({Dataset::Range(0, 3), Dataset::Range(10, 13)},
                                           Choices({0, 1, 1, 0, 1, 0}));
  CheckDataset(ds, Ints({0, 10, 11, 1, 12, 2}));
  CheckTransform([](Dataset in) {
    return Dataset::ChooseFromDatasets({in}, Dataset::Range(1).Repeat());
  });
}

// choose_from_datasets_test.py (testStopOnEmptyDataset / testSkipEmptyDataset).
TEST(ChooseFromDatasetsTest, ExhaustedInputStopsOrIsSkipped) {
  std::vector<Dataset> in = {Dataset::Range(0, 1), Dataset::Range(10, 13)};
  CheckDataset(Dataset::ChooseFromDatasets(in, Choices({0, 0, 1, 1})), Ints({0}));
  CheckDataset(Dataset::ChooseFromDatasets(in, Choices({0, 0, 1, 1}), false),
               Ints({0, 10, 11}));
  // Every input exhausted: the end, even with an endless selector.
  CheckDataset(Dataset::ChooseFromDatasets(in, Dataset::Range(2).Repeat(), false),
               Ints({0, 10, 11, 12}), {.check_save_restore = true});
}

// choose_from_datasets_test.py (testErrors): a selector value out of range names it.
TEST(ChooseFromDatasetsTest, BadSelector) {
  auto it =
      Dataset::ChooseFromDatasets({Dataset::Range(3)}, Choices({0, 5})).MakeIterator();
  ASSERT_TRUE(it.ok());
  ASSERT_TRUE((*it)->GetNext().ok());
  Result<std::optional<Element>> e = (*it)->GetNext();
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(e.status().message().find("selector value 5"), std::string::npos)
      << e.status();
  Dataset bad = Dataset::ChooseFromDatasets(
      {Dataset::Range(3),
       Dataset::Range(3).Map(*Function::Kernel("cast", {{"dtype", DType::kFloat32}}))},
      Choices({0}));
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("input 1"), std::string::npos) << bad.status();
}

// sample_from_datasets_test.py (testSampleFromDatasets): frequencies follow the weights.
TEST(SampleFromDatasetsTest, FrequenciesFollowWeights) {
  std::vector<Dataset> in;
  for (int64_t i = 0; i < 3; ++i) in.push_back(Dataset::Range(i, i + 1).Repeat());
  Dataset ds = Dataset::SampleFromDatasets(in, {0.2, 0.3, 0.5}, 11).Take(20000);
  std::map<int64_t, int> counts;
  for (int64_t v : IntsOf(CollectOrDie(ds))) ++counts[v];
  EXPECT_NEAR(counts[0] / 20000.0, 0.2, 0.02);
  EXPECT_NEAR(counts[1] / 20000.0, 0.3, 0.02);
  EXPECT_NEAR(counts[2] / 20000.0, 0.5, 0.02);
  EXPECT_EQ(Dataset::SampleFromDatasets(in, {}, 1).Cardinality(), kInfiniteCardinality);
}

// sample_from_datasets_test.py (testSampleFromDatasetsSkippingDatasetsWithZeroWeight and
// stop_on_empty_dataset): exhausted inputs drop out; every element is produced once.
TEST(SampleFromDatasetsTest, ExhaustionAndConformance) {
  Dataset ds = Dataset::SampleFromDatasets({Dataset::Range(0, 5), Dataset::Range(10, 15)},
                                           {0.5, 0.5}, 3);
  std::vector<int64_t> got = IntsOf(CollectOrDie(ds));
  EXPECT_EQ(got.size(), 10u);
  CheckDataset(ds, Ints(got));
  CheckTransform([](Dataset in) { return Dataset::SampleFromDatasets({in}, {1.0}, 2); });
  Dataset zero = Dataset::SampleFromDatasets(
      {Dataset::Range(0, 5), Dataset::Range(10, 15)}, {0.0, 1.0}, 3);
  EXPECT_EQ(IntsOf(CollectOrDie(zero)), std::vector<int64_t>({10, 11, 12, 13, 14}));
  Dataset stop = Dataset::SampleFromDatasets(
      {Dataset::Range(0, 1), Dataset::Range(10, 100)}, {0.5, 0.5}, 3, true);
  EXPECT_LT(CollectOrDie(stop).size(), 90u);
  EXPECT_EQ(Dataset::SampleFromDatasets({Dataset::Range(1)}, {-1.0}).status().code(),
            StatusCode::kInvalidArgument);
}

// cardinality_test.py: parallel interleave, group_by_window and bucket_by_sequence_length
// over an endless input are INFINITE (finite inputs stay UNKNOWN).
TEST(CardinalityTest, EndlessInputsStayEndless) {
  Dataset rows = Dataset::FromTensors(Element{Tensor::FromVector<int64_t>({1, 2})});
  Function slices = *Function::Kernel("from_tensor_slices", {});
  EXPECT_EQ(rows.Repeat().Interleave(slices, 2, 1, 2, true).Cardinality(),
            kInfiniteCardinality);
  EXPECT_EQ(rows.Repeat(3).Interleave(slices, 2, 1, 2, true).Cardinality(),
            kUnknownCardinality);
  Function key = Function::Map("zero", [](Element, FunctionContext&) -> Result<Element> {
    return Element{Tensor::Scalar<int64_t>(0)};
  });
  Function reduce = Function::DatasetFunction(
      "batch2", [](Element&&, FunctionContext& ctx) -> Result<Dataset> {
        return ctx.window()->Batch(2);
      });
  EXPECT_EQ(rows.Repeat().GroupByWindow(key, reduce, 2).Cardinality(),
            kInfiniteCardinality);
  EXPECT_EQ(rows.Repeat(2).GroupByWindow(key, reduce, 2).Cardinality(),
            kUnknownCardinality);
  Function length =
      Function::Map("len", [](Element, FunctionContext&) -> Result<Element> {
        return Element{Tensor::Scalar<int64_t>(2)};
      });
  EXPECT_EQ(rows.Repeat().BucketBySequenceLength(length, {3}, {2, 2}).Cardinality(),
            kInfiniteCardinality);
}

// unique_test.py: first occurrences in order, for int and string elements.
TEST(UniqueTest, FirstOccurrencesInOrder) {
  CheckDataset(Choices({1, 2, 1, 3, 2, 2, 5}).Unique(), Ints({1, 2, 3, 5}));
  Dataset words = Dataset::FromTensorSlices(
      Element{Tensor::FromVector<std::string>({"a", "b", "a", "", "b", ""})});
  std::vector<Element> got = CollectOrDie(words.Unique());
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[2][0].scalar<std::string>(), "");
  CheckTransform([](Dataset in) { return in.Unique(); });
  // Vectors compare by shape and values.
  Dataset vecs = Dataset::FromTensorSlices(
      Element{Tensor::FromVector<int64_t>({1, 2, 1, 2, 2, 1}, Shape{3, 2})});
  EXPECT_EQ(CollectOrDie(vecs.Unique()).size(), 2u);
  // unique_test.py::testUnsupportedTypes: other dtypes are refused when built.
  Dataset floats =
      Dataset::Range(3).Map(*Function::Kernel("cast", {{"dtype", DType::kFloat32}}));
  EXPECT_EQ(floats.Unique().status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sluice
