// The TFRecord offset index (formats/tfrecord_index.h) and row access built on it: index
// round trip, corrupt and stale indexes, TFRecord serving rows (global shuffle over
// indexed files is a permutation), and row access through Take and Skip.
#include "formats/tfrecord_index.h"

#include <gtest/gtest.h>
#include <sys/time.h>

#include <algorithm>
#include <set>

#include "api/dataset_internal.h"
#include "formats/tfrecord.h"
#include "graph/random_access.h"
#include "runtime/iterator_base.h"
#include "runtime/random_access.h"
#include "sluice/dataset.h"
#include "testing/conformance.h"

namespace sluice {
namespace {

using testing::CollectOrDie;
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

std::string Rec(int64_t i) { return "record-" + std::to_string(i) + std::string(i % 7, 'x'); }

// Writes records [from, to) to `path`.
void WriteRecords(const std::string& path, int64_t from, int64_t to) {
  auto w = TFRecordWriter::Open(path);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  for (int64_t i = from; i < to; ++i) ASSERT_TRUE((*w)->Write(Rec(i)).ok());
  ASSERT_TRUE((*w)->Close().ok());
}

std::vector<std::string> Strings(const std::vector<Element>& es) {
  std::vector<std::string> out;
  for (const Element& e : es) out.push_back(e[0].scalar<std::string>());
  return out;
}

TEST(TFRecordIndexTest, RoundTripAndReadAt) {
  TempDir dir;
  const std::string f = dir.File("a.tfrecord");
  WriteRecords(f, 0, 100);
  auto built = WriteTFRecordIndex(f);
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  ASSERT_EQ(built->offsets.size(), 100u);
  auto read = ReadTFRecordIndex(f);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->offsets, built->offsets);
  EXPECT_EQ(read->file_size, ReadFile(f).size());
  EXPECT_NE(read->mtime_ns, 0);
  // 40 header bytes + 8 per record + 4 CRC bytes.
  EXPECT_EQ(ReadFile(TFRecordIndexPath(f)).size(), 40u + 8 * 100 + 4);
  auto h = Env::Default()->NewRandomAccessFile(f);
  ASSERT_TRUE(h.ok());
  for (int64_t i : {99, 0, 42, 7}) {
    auto r = ReadTFRecordAt(**h, f, read->offsets[i]);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(*r, Rec(i));
  }
  // An offset that is not a record's start fails its header checksum.
  auto bad = ReadTFRecordAt(**h, f, read->offsets[3] + 1);
  EXPECT_EQ(bad.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(bad.status().message().find(f), std::string::npos);
  // An empty file has an empty index.
  const std::string e = dir.File("empty.tfrecord");
  WriteFile(e, "");
  auto empty = WriteTFRecordIndex(e);
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  EXPECT_TRUE(empty->offsets.empty());
  EXPECT_EQ(Dataset::TFRecord({e}).Cardinality(), 0);
}

TEST(TFRecordIndexTest, CorruptIndexIsDataLossNamingTheFile) {
  TempDir dir;
  const std::string f = dir.File("a.tfrecord");
  WriteRecords(f, 0, 20);
  ASSERT_TRUE(WriteTFRecordIndex(f).ok());
  const std::string good = ReadFile(TFRecordIndexPath(f));
  auto corrupt = [&](std::string bytes, const std::string& what) {
    SCOPED_TRACE(what);
    WriteFile(TFRecordIndexPath(f), bytes);
    auto r = ReadTFRecordIndex(f);
    ASSERT_EQ(r.status().code(), StatusCode::kDataLoss) << r.status().ToString();
    EXPECT_NE(r.status().message().find(TFRecordIndexPath(f)), std::string::npos);
    // The source refuses it too, naming the op and the index file.
    Dataset ds = Dataset::TFRecord({f});
    ASSERT_EQ(ds.status().code(), StatusCode::kDataLoss) << ds.status().ToString();
    EXPECT_NE(ds.status().message().find("TFRecord"), std::string::npos);
    EXPECT_NE(ds.status().message().find(TFRecordIndexPath(f)), std::string::npos);
  };
  for (size_t pos : {size_t{0}, size_t{20}, size_t{40}, good.size() - 1}) {
    std::string b = good;
    b[pos] ^= 0x10;
    corrupt(b, "flipped byte " + std::to_string(pos));
  }
  corrupt(good.substr(0, good.size() - 8), "truncated");
  corrupt("", "empty");
  corrupt(good + "12345678", "trailing bytes");
}

TEST(TFRecordIndexTest, StaleIndexIsIgnored) {
  TempDir dir;
  const std::string f = dir.File("a.tfrecord");
  WriteRecords(f, 0, 10);
  ASSERT_TRUE(WriteTFRecordIndex(f).ok());
  EXPECT_EQ(Dataset::TFRecord({f}).Cardinality(), 10);
  WriteRecords(f, 0, 12);  // rewritten: size and mtime change
  Dataset ds = Dataset::TFRecord({f});
  ASSERT_TRUE(ds.status().ok()) << ds.status().ToString();
  EXPECT_LT(ds.Cardinality(), 0);  // no index: unknown, read sequentially
  EXPECT_EQ(CollectOrDie(ds).size(), 12u);
  // An explicit global_shuffle names the op that cannot serve rows.
  Dataset g = ds.GlobalShuffle(1);
  EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument) << g.status().ToString();
  EXPECT_NE(g.status().message().find("TFRecord"), std::string::npos);
  // Same size, other mtime: stale too.
  ASSERT_TRUE(WriteTFRecordIndex(f).ok());
  struct timeval times[2] = {{1000000000, 0}, {1000000000, 0}};
  ASSERT_EQ(utimes(f.c_str(), times), 0);
  EXPECT_LT(Dataset::TFRecord({f}).Cardinality(), 0);
}

TEST(TFRecordIndexTest, IndexedFilesServeRowsAndGlobalShuffleIsAPermutation) {
  TempDir dir;
  std::vector<std::string> files;
  for (int k = 0; k < 3; ++k) {
    files.push_back(dir.File("part-" + std::to_string(k)));
    WriteRecords(files.back(), k * 40, k * 40 + 40 + k);  // 40, 41, 42 records
  }
  // Not every file indexed: no row access.
  ASSERT_TRUE(WriteTFRecordIndex(files[0]).ok());
  EXPECT_FALSE(IsRandomAccess(NodeOf(Dataset::TFRecord(files))));
  for (const auto& f : files) ASSERT_TRUE(WriteTFRecordIndex(f).ok());
  Dataset ds = Dataset::TFRecord(files);
  ASSERT_EQ(ds.Cardinality(), 123);
  ASSERT_TRUE(IsRandomAccess(NodeOf(ds)));
  const std::vector<std::string> in_order = Strings(CollectOrDie(ds));
  ASSERT_EQ(in_order.size(), 123u);
  // Rows by index equal rows in order.
  auto it = NodeOf(ds)->MakeIterator(IteratorContext{}, "T");
  ASSERT_TRUE(it.ok());
  RandomAccess* rows = (*it)->AsRandomAccess();
  ASSERT_NE(rows, nullptr);
  ASSERT_EQ(rows->RowCount(), 123);
  for (int64_t i : {122, 0, 40, 39, 81, 80, 5}) {
    auto r = rows->GetRow(i);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ((*r)[0].scalar<std::string>(), in_order[i]) << i;
  }
  EXPECT_EQ(rows->GetRow(123).status().code(), StatusCode::kOutOfRange);
  // global_shuffle: each epoch a permutation of the records, not the file order.
  Dataset shuffled = ds.GlobalShuffle(7);
  ASSERT_TRUE(shuffled.status().ok()) << shuffled.status().ToString();
  std::vector<std::string> got = Strings(CollectOrDie(shuffled));
  EXPECT_NE(got, in_order);
  std::sort(got.begin(), got.end());
  std::vector<std::string> want = in_order;
  std::sort(want.begin(), want.end());
  EXPECT_EQ(got, want);
  // The iterator contract (save/restore at every position: resume is exact), both with a
  // fresh permutation per epoch and with a fixed one.
  testing::ConformanceOptions o;
  o.ordered = false;
  o.same_each_iteration = false;
  CheckDataset(shuffled, CollectOrDie(ds), o);
  o.same_each_iteration = true;
  CheckDataset(ds.GlobalShuffle(7, false), CollectOrDie(ds), o);
  // The whole-input shuffle becomes the index shuffle by default.
  std::vector<std::string> rewritten = Strings(CollectOrDie(ds.Shuffle(1000, 3)));
  std::sort(rewritten.begin(), rewritten.end());
  EXPECT_EQ(rewritten, want);
}

TEST(TFRecordIndexTest, DamagedRecordUnderRowAccessNamesFileAndOffset) {
  TempDir dir;
  const std::string f = dir.File("a.tfrecord");
  WriteRecords(f, 0, 10);
  auto index = WriteTFRecordIndex(f);
  ASSERT_TRUE(index.ok());
  std::string bytes = ReadFile(f);
  bytes[index->offsets[4] + kTFRecordHeaderSize] ^= 1;  // record 4's data
  WriteFile(f, bytes);
  ASSERT_TRUE(WriteTFRecordIndex(f).status().code() == StatusCode::kDataLoss);
  // Keep the old index but make it fresh for the damaged file (same size; refresh mtime).
  TFRecordIndex fresh = *index;
  auto st = Env::Default()->Stat(f);
  ASSERT_TRUE(st.ok());
  fresh.mtime_ns = st->mtime_ns;
  WriteFile(TFRecordIndexPath(f), EncodeTFRecordIndex(fresh));
  auto it = NodeOf(Dataset::TFRecord({f}))->MakeIterator(IteratorContext{}, "T");
  ASSERT_TRUE(it.ok());
  auto r = (*it)->AsRandomAccess()->GetRow(4);
  ASSERT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find(f), std::string::npos);
  EXPECT_NE(r.status().message().find("offset " + std::to_string(index->offsets[4])),
            std::string::npos);
}

TEST(RowAccessTest, TakeAndSkipServeRows) {
  Dataset base = Dataset::Range(10, 30);  // 20 rows: 10..29
  struct Case {
    Dataset ds;
    std::vector<int64_t> want;
  };
  std::vector<int64_t> skip5, take7, skip3_take4;
  for (int64_t i = 15; i < 30; ++i) skip5.push_back(i);
  for (int64_t i = 10; i < 17; ++i) take7.push_back(i);
  for (int64_t i = 13; i < 17; ++i) skip3_take4.push_back(i);
  std::vector<Case> cases = {{base.Skip(5), skip5},
                             {base.Take(7), take7},
                             {base.Take(100), {}},
                             {base.Skip(100), {}},
                             {base.Skip(3).Take(4), skip3_take4},
                             {base.Take(-1), {}}};
  for (int64_t i = 10; i < 30; ++i) {
    cases[2].want.push_back(i);
    cases[5].want.push_back(i);
  }
  for (const Case& c : cases) {
    SCOPED_TRACE(NodeOf(c.ds)->op() + " of " + std::to_string(c.want.size()));
    ASSERT_TRUE(IsRandomAccess(NodeOf(c.ds)));
    auto it = NodeOf(c.ds)->MakeIterator(IteratorContext{}, "R");
    ASSERT_TRUE(it.ok());
    RandomAccess* rows = (*it)->AsRandomAccess();
    ASSERT_NE(rows, nullptr);
    ASSERT_EQ(rows->RowCount(), static_cast<int64_t>(c.want.size()));
    for (int64_t i = rows->RowCount() - 1; i >= 0; --i) {
      auto r = rows->GetRow(i);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_EQ(testing::IntOf(*r), c.want[i]);
    }
    EXPECT_EQ(rows->GetRow(rows->RowCount()).status().code(), StatusCode::kOutOfRange);
    // And a global shuffle over it is a permutation of those rows.
    std::vector<int64_t> got = testing::IntsOf(CollectOrDie(c.ds.GlobalShuffle(5)));
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, c.want);
  }
  // Over an input that cannot serve rows, neither can Take or Skip.
  EXPECT_FALSE(IsRandomAccess(NodeOf(base.Filter(Function::Kernel("compare",
      {{"op", std::string("less")}, {"value", int64_t{20}}}).value()).Take(3))));
}

}  // namespace
}  // namespace sluice
