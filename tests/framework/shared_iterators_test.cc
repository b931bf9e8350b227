// The shared iterator bases: UnaryIterator (one input made at Initialize),
// IndexedIterator (sources producing rows by index), the record-file sequence
// (ops/sources/file_sequence.h) and the batch helpers of ops/op_util.h. The ops built on
// them run through the conformance fixture in their own tests; these pin what the bases
// add.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <limits>

#include "api/dataset_internal.h"
#include "runtime/checkpoint.h"
#include "testing/conformance.h"

// Checkpoints are built and inspected by hand for the graph as built: iterators here run
// without the static rewrites (MakeIterator(Options)).
namespace sluice {
namespace {

using testing::CollectOrDie;
using testing::IntsOf;
using testing::TempDir;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

// Saves `ds` after `n` elements.
std::string SaveAfter(const Dataset& ds, int n) {
  auto it = MakeIteratorAsBuilt(ds, {});
  EXPECT_TRUE(it.ok()) << it.status();
  for (int i = 0; i < n; ++i) EXPECT_TRUE((*it)->GetNext().ok());
  auto ckpt = (*it)->Save();
  EXPECT_TRUE(ckpt.ok()) << ckpt.status();
  return *ckpt;
}

// A checkpoint for a one-iterator pipeline whose root writes `ints` under "Root".
std::string RootCheckpoint(const Dataset& ds,
                           const std::vector<std::pair<std::string, int64_t>>& ints) {
  auto saved = CheckpointReader::Parse(SaveAfter(ds, 0));
  EXPECT_TRUE(saved.ok()) << saved.status();
  CheckpointWriter w;
  w.WriteInt("Root", "instance", *saved->ReadInt("Root", "instance"));
  w.WriteString("Root", "op", *saved->ReadString("Root", "op"));
  for (const auto& [k, v] : ints) w.WriteInt("Root", k, v);
  return w.Serialize();
}

Status RestoreInto(const Dataset& ds, const std::string& ckpt) {
  auto it = MakeIteratorAsBuilt(ds, {});
  if (!it.ok()) return it.status();
  return (*it)->Restore(ckpt);
}

TEST(UnaryIteratorTest, CheckpointHoldsStateThenInput) {
  // Enumerate's own state and its input's position, under their own prefixes.
  Dataset ds = Dataset::Range(10).Enumerate(5);
  auto r = CheckpointReader::Parse(SaveAfter(ds, 3));
  ASSERT_TRUE(r.ok()) << r.status();
  auto next = r->ReadInt("Root", "next");
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(*next, 8);
  auto input = r->ReadInt("Root/Range[0]", "next");
  ASSERT_TRUE(input.ok()) << input.status();
  EXPECT_EQ(*input, 3);
}

TEST(UnaryIteratorTest, StateErrorStopsRestore) {
  // Take's RestoreState rejects a negative count before the input is touched.
  Dataset ds = Dataset::Range(10).Take(4);
  Status s = RestoreInto(ds, RootCheckpoint(ds, {{"taken", -1}}));
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s;
  EXPECT_NE(s.message().find("Take"), std::string::npos) << s;
}

TEST(UnaryIteratorTest, MissingInputStateIsAnError) {
  // The input's checkpoint entries are required too.
  Dataset ds = Dataset::Range(10).Take(4);
  Status s = RestoreInto(ds, RootCheckpoint(ds, {{"taken", 1}}));
  EXPECT_EQ(s.code(), StatusCode::kNotFound) << s;
  EXPECT_NE(s.message().find("Root/Range[0]"), std::string::npos) << s;
}

TEST(IndexedIteratorTest, RestoreRejectsPositionsOutsideTheRows) {
  Dataset ds = Dataset::FromTensorSlices(Element{Tensor::FromVector<int64_t>({1, 2, 3})});
  for (int64_t bad : {int64_t{-1}, int64_t{4}, kMax}) {
    Status s = RestoreInto(ds, RootCheckpoint(ds, {{"next", bad}}));
    EXPECT_EQ(s.code(), StatusCode::kDataLoss) << bad << ": " << s;
  }
  // The end itself is a valid position.
  auto it = MakeIteratorAsBuilt(ds, {});
  ASSERT_TRUE((*it)->Restore(RootCheckpoint(ds, {{"next", 3}})).ok());
  auto e = (*it)->GetNext();
  ASSERT_TRUE(e.ok());
  EXPECT_FALSE(e->has_value());
}

TEST(IndexedIteratorTest, SkipSaturatesAtTheEnd) {
  Dataset ds = Dataset::FromTensorSlices(Element{Tensor::FromVector<int64_t>({1, 2, 3})});
  EXPECT_TRUE(CollectOrDie(ds.Skip(-1)).empty());
  EXPECT_EQ(IntsOf(CollectOrDie(ds.Skip(2))), std::vector<int64_t>({3}));
}

TEST(BatchHelpersTest, SkippingAllBatchesDoesNotOverflow) {
  // Skip(-1) asks the batch to skip int64 max batches of 3 input elements each.
  EXPECT_TRUE(CollectOrDie(Dataset::Range(10).Batch(3).Skip(-1)).empty());
  EXPECT_TRUE(CollectOrDie(Dataset::Range(10).PaddedBatch(3).Skip(-1)).empty());
  EXPECT_EQ(CollectOrDie(Dataset::Range(10).Batch(3, true).Skip(2)).size(), 1u);
  EXPECT_EQ(CollectOrDie(Dataset::Range(10).Batch(3).Skip(3)).size(), 1u);
}

TEST(BatchHelpersTest, Cardinality) {
  EXPECT_EQ(Dataset::Range(10).Batch(3).Cardinality(), 4);
  EXPECT_EQ(Dataset::Range(10).Batch(3, true).Cardinality(), 3);
  EXPECT_EQ(Dataset::Range(10).PaddedBatch(5).Cardinality(), 2);
  EXPECT_EQ(Dataset::Range(10).Repeat().Batch(3).Cardinality(), kInfiniteCardinality);
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f << bytes;
}

TEST(FileSequenceTest, CheckpointErrorsNameTheOp) {
  TempDir dir;
  WriteFile(dir.File("a"), "HHHHaabbcc");
  Dataset flr = Dataset::FixedLengthRecord({dir.File("a")}, 2, 4);
  // An offset inside the header is refused; the first record's offset is fine.
  Status s = RestoreInto(flr, RootCheckpoint(flr, {{"file_index", 0}, {"offset", 2}}));
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s;
  EXPECT_NE(s.message().find("FixedLengthRecord: invalid checkpoint"), std::string::npos)
      << s;
  EXPECT_TRUE(
      RestoreInto(flr, RootCheckpoint(flr, {{"file_index", 0}, {"offset", 4}})).ok());

  WriteFile(dir.File("t"), "x\ny\n");
  Dataset text = Dataset::TextLine({dir.File("t")});
  s = RestoreInto(text, RootCheckpoint(text, {{"file_index", 2}, {"offset", -1}}));
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s;
  EXPECT_NE(s.message().find("TextLine: invalid checkpoint"), std::string::npos) << s;
  // Past the last file with no open file: the end.
  EXPECT_TRUE(
      RestoreInto(text, RootCheckpoint(text, {{"file_index", 1}, {"offset", -1}})).ok());
}

TEST(FileSequenceTest, SkipReportsAnUnopenableFileOnceAndGoesOn) {
  TempDir dir;
  WriteFile(dir.File("a"), "1\n2\n");
  WriteFile(dir.File("c"), "3\n4\n");
  Dataset ds = Dataset::TextLine({dir.File("a"), dir.File("missing"), dir.File("c")});
  // Skipping two lines stops before the missing file; it is reported on the next call.
  std::vector<std::string> after_two;
  auto skip2 = MakeIteratorAsBuilt(ds.Skip(2), {});
  ASSERT_TRUE(skip2.ok());
  auto err = (*skip2)->GetNext();
  EXPECT_EQ(err.status().code(), StatusCode::kNotFound) << err.status();
  while (true) {
    auto e = (*skip2)->GetNext();
    ASSERT_TRUE(e.ok()) << e.status();
    if (!*e) break;
    after_two.push_back((**e)[0].scalar<std::string>());
  }
  EXPECT_EQ(after_two, std::vector<std::string>({"3", "4"}));
  // Skipping three runs into it: the error is returned (the lines skipped before it are
  // not counted, as in tf.data), and the next call moves on instead of failing again.
  auto skip3 = MakeIteratorAsBuilt(ds.Skip(3), {});
  ASSERT_TRUE(skip3.ok());
  auto first = (*skip3)->GetNext();
  EXPECT_EQ(first.status().code(), StatusCode::kNotFound) << first.status();
  auto next = (*skip3)->GetNext();
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_FALSE(next->has_value());
  auto it = MakeIteratorAsBuilt(ds, {});
  ASSERT_TRUE(it.ok());
  // Iterating directly: the error comes once, between the files.
  std::vector<std::string> seen;
  int errors = 0;
  while (true) {
    auto e = (*it)->GetNext();
    if (!e.ok()) {
      ++errors;
      EXPECT_NE(e.status().message().find("TextLine"), std::string::npos) << e.status();
      continue;
    }
    if (!*e) break;
    seen.push_back((**e)[0].scalar<std::string>());
  }
  EXPECT_EQ(errors, 1);
  EXPECT_EQ(seen, std::vector<std::string>({"1", "2", "3", "4"}));
}

}  // namespace
}  // namespace sluice
