// IgnoreErrors: skips failed elements, counts them in the iterator's stats, never hangs.
#include <gtest/gtest.h>

#include <mutex>

#include "api/builtins.h"
#include "api/dataset_internal.h"
#include "graph/registry.h"
#include "runtime/iterator_base.h"
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

// An op that fails forever with the same error without reading anything: it breaks the
// iterator contract (an error consumes the failed element), the case IgnoreErrors guards
// against.
class StuckDataset : public DatasetNode {
 public:
  explicit StuckDataset(OpArgs args)
      : DatasetNode("StuckForTest", std::move(args),
                    ElementSpec{{{DType::kInt64, PartialShape{}}}}) {}
  int64_t Cardinality() const override { return kUnknownCardinality; }

 protected:
  Result<IteratorPtr> MakeIteratorInternal(const IteratorContext&,
                                           const std::string& prefix) const override;
};

class StuckIterator : public IteratorBase {
 public:
  StuckIterator(const StuckDataset* ds, const std::string& prefix)
      : IteratorBase(ds->shared(), prefix) {}

 protected:
  Result<std::optional<Element>> GetNextInternal() override {
    return UnavailableError("device gone");
  }
  Status SaveInternal(CheckpointWriter*) const override { return Status::OK(); }
  Status RestoreInternal(const CheckpointReader&) override { return Status::OK(); }
};

Result<IteratorPtr> StuckDataset::MakeIteratorInternal(const IteratorContext&,
                                                       const std::string& prefix) const {
  return IteratorPtr(new StuckIterator(this, prefix));
}

Dataset Stuck() {
  static std::once_flag once;
  std::call_once(once, [] {
    BuiltinRegistry().RegisterOp(
        OpDef("StuckForTest")
            .Summary("A test source that fails forever without reading anything.")
            .Inputs(0)
            .Traits({.source = true, .seed_mix = SeedMix::kNone}),
        [](OpArgs args) -> Result<DatasetPtr> {
          return DatasetPtr(std::make_shared<StuckDataset>(std::move(args)));
        });
    ASSERT_TRUE(BuiltinRegistry().status().ok()) << BuiltinRegistry().status();
  });
  return Dataset::FromOp("StuckForTest", {});
}

TEST(IgnoreErrorsTest, AnInputThatMakesNoProgressDoesNotHang) {
  // The same error again and again with nothing read: IgnoreErrors passes it on after a
  // bounded number of tries instead of looping forever.
  auto it = Stuck().IgnoreErrors().MakeIterator();
  ASSERT_TRUE(it.ok());
  auto e = (*it)->GetNext();
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("device gone"), std::string::npos) << e.status();
  EXPECT_NE(e.status().message().find("makes no progress"), std::string::npos)
      << e.status();
  EXPECT_GT(FindStats((*it)->Stats(), "IgnoreErrors")->elements_skipped, 0);
}

TEST(IgnoreErrorsTest, ManyDistinctElementsFailingAlikeAreAllIgnored) {
  // 25,000 consecutive elements fail with the very same message (a predicate does not
  // name the element): each is a distinct element, so none of them stops the pipeline
  // (this used to end with "keeps failing" after 10,000).
  Function pred = Function::Predicate(
      "fails_below_25000", [](const Element& e, FunctionContext&) -> Result<bool> {
        if (e[0].scalar<int64_t>() < 25000) return UnavailableError("device gone");
        return true;
      });
  Dataset ds = Dataset::Range(25003).Filter(pred).IgnoreErrors();
  auto it = ds.MakeIterator();
  ASSERT_TRUE(it.ok());
  std::vector<int64_t> got;
  while (true) {
    auto e = (*it)->GetNext();
    ASSERT_TRUE(e.ok()) << e.status();
    if (!*e) break;
    got.push_back(testing::IntOf(**e));
  }
  EXPECT_EQ(got, (std::vector<int64_t>{25000, 25001, 25002}));
  EXPECT_EQ(FindStats((*it)->Stats(), "IgnoreErrors")->elements_skipped, 25000);
}

TEST(IgnoreErrorsTest, MapErrorsNameTheElement) {
  // Every failure of a bad shard used to read "in function 'decode': bad data": now each
  // names its position in the map's input, and a path component when the element has one.
  Function decode =
      Function::Map("decode", [](Element e, FunctionContext&) -> Result<Element> {
        if (e[1].scalar<int64_t>() % 2 == 1) return DataLossError("bad data");
        return Element{e[1]};
      });
  Dataset paths = Dataset::FromTensorSlices(Element{
      Tensor::FromStrings({"/data/a.jpg", "/data/b.jpg", "/data/c.jpg", "/data/d.jpg"})});
  Dataset ds = Dataset::Zip({paths, Dataset::Range(4)}).Map(decode);
  for (int parallel : {0, 2}) {
    SCOPED_TRACE(parallel);
    Dataset d =
        parallel ? Dataset::Zip({paths, Dataset::Range(4)}).Map(decode, parallel) : ds;
    auto it = MakeIteratorAsBuilt(d, {});
    ASSERT_TRUE(it.ok());
    std::vector<std::string> errors;
    for (int i = 0; i < 4; ++i) {
      auto e = (*it)->GetNext();
      if (!e.ok()) errors.push_back(e.status().message());
    }
    ASSERT_EQ(errors.size(), 2u);
    EXPECT_NE(errors[0].find("element 1 of the input ('/data/b.jpg')"), std::string::npos)
        << errors[0];
    EXPECT_NE(errors[1].find("element 3 of the input ('/data/d.jpg')"), std::string::npos)
        << errors[1];
    EXPECT_NE(errors[0].find("bad data"), std::string::npos) << errors[0];
  }
  // MapAndBatch names the row's position in its input.
  auto it = MakeIteratorAsBuilt(
      Dataset::Zip({paths, Dataset::Range(4)}).MapAndBatch(decode, 2), {});
  ASSERT_TRUE(it.ok());
  auto first = (*it)->GetNext();
  ASSERT_FALSE(first.ok());
  EXPECT_NE(first.status().message().find("element 1 of the input ('/data/b.jpg')"),
            std::string::npos)
      << first.status();
}

}  // namespace
}  // namespace sluice
