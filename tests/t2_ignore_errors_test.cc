// IgnoreErrors: skips failed elements, counts them in the iterator's stats, never hangs.
#include <gtest/gtest.h>

#include "testing/conformance.h"

namespace sluice {
namespace {

using testing::CheckDataset;
using testing::Ints;
using testing::IntsOf;

const IteratorStats* FindStats(const std::vector<IteratorStats>& stats,
                               const std::string& name) {
  for (const IteratorStats& s : stats) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

TEST(IgnoreErrorsTest, FailingMap) {
  Dataset ds = testing::FailingAt(10, 3).IgnoreErrors();
  CheckDataset(ds, Ints({0, 1, 2, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(ds.Cardinality(), kUnknownCardinality);
  auto it = ds.MakeIterator();
  ASSERT_TRUE(it.ok());
  int n = 0;
  while (true) {
    auto e = (*it)->GetNext();
    ASSERT_TRUE(e.ok()) << e.status();
    if (!*e) break;
    ++n;
  }
  EXPECT_EQ(n, 9);
  auto stats = (*it)->Stats();
  const IteratorStats* s = FindStats(stats, "IgnoreErrors");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->elements_skipped, 1);
  EXPECT_EQ(s->elements_produced, 9);
}

TEST(IgnoreErrorsTest, CorruptElementInTheMiddle) {
  // Records are decimal strings; "12x" in the middle does not parse.
  Dataset records = Dataset::FromTensorSlices(
      Element{Tensor::FromStrings({"10", "11", "12x", "13", "bad", "15"})});
  Function parse =
      Function::Map("parse", [](Element e, FunctionContext&) -> Result<Element> {
        const std::string& s = e[0].scalar<std::string>();
        int64_t v = 0;
        for (char c : s) {
          if (c < '0' || c > '9') return DataLossError("corrupt record '" + s + "'");
          v = v * 10 + (c - '0');
        }
        return Element{Tensor::Scalar<int64_t>(v)};
      });
  Dataset ds = records.Map(parse).IgnoreErrors();
  CheckDataset(ds, Ints({10, 11, 13, 15}));
  auto it = ds.MakeIterator();
  ASSERT_TRUE(it.ok());
  std::vector<int64_t> got;
  while (true) {
    auto e = (*it)->GetNext();
    ASSERT_TRUE(e.ok());
    if (!*e) break;
    got.push_back(testing::IntOf(**e));
  }
  EXPECT_EQ(got, (std::vector<int64_t>{10, 11, 13, 15}));
  EXPECT_EQ(FindStats((*it)->Stats(), "IgnoreErrors")->elements_skipped, 2);
}

TEST(IgnoreErrorsTest, BatchesThatFailAreSkipped) {
  // An element too large for its padded shape fails its whole batch.
  Dataset ds = Dataset::Range(1, 7)
                   .Map(Function::Map("fill",
                                      [](Element e, FunctionContext&) -> Result<Element> {
                                        int64_t x = e[0].scalar<int64_t>();
                                        return Element{Tensor::FromVector<int64_t>(
                                            std::vector<int64_t>(x == 3 ? 9 : 1, x))};
                                      }))
                   .PaddedBatch(2, {PartialShape{4}})
                   .IgnoreErrors();
  auto got = testing::CollectOrDie(ds);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(got[0][0].ContentEquals(
      Tensor::FromVector<int64_t>({1, 0, 0, 0, 2, 0, 0, 0}, Shape{2, 4})));
  EXPECT_TRUE(got[1][0].ContentEquals(
      Tensor::FromVector<int64_t>({5, 0, 0, 0, 6, 0, 0, 0}, Shape{2, 4})));
}

TEST(IgnoreErrorsTest, EmptyAndErrorFreeInputs) {
  CheckDataset(Dataset::Range(0).IgnoreErrors(), {});
  EXPECT_EQ(Dataset::Range(0).IgnoreErrors().Cardinality(), 0);
  CheckDataset(Dataset::Range(4).IgnoreErrors(), Ints({0, 1, 2, 3}));
  // Everything failing yields nothing.
  CheckDataset(testing::FailingAt(1, 0).IgnoreErrors(), {});
}

TEST(IgnoreErrorsTest, AnInputThatKeepsFailingDoesNotHang) {
  // Every element of a practically endless input fails the same way: IgnoreErrors gives
  // up after a bounded number of identical errors and passes the error on.
  Dataset ds = Dataset::Range(int64_t{1} << 62)
                   .Map(Function::Map("always_fails",
                                      [](Element, FunctionContext&) -> Result<Element> {
                                        return UnavailableError("device gone");
                                      }))
                   .IgnoreErrors();
  auto it = ds.MakeIterator();
  ASSERT_TRUE(it.ok());
  auto e = (*it)->GetNext();
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("device gone"), std::string::npos) << e.status();
  EXPECT_NE(e.status().message().find("keeps failing"), std::string::npos) << e.status();
  EXPECT_GT(FindStats((*it)->Stats(), "IgnoreErrors")->elements_skipped, 0);
}

}  // namespace
}  // namespace sluice
