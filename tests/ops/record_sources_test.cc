// The record-file sources TFRecord, TextLine and FixedLengthRecord: conformance (every
// compression, save/restore at every position), damaged and unopenable files, attributes.
#include <gtest/gtest.h>

#include "api/dataset_internal.h"
#include "formats/input_stream.h"
#include "formats/tfrecord.h"
#include "graph/dataset_node.h"
#include "runtime/iterator_base.h"
#include "testing/conformance.h"

namespace sluice {
namespace {

using testing::CheckDataset;
using testing::TempDir;

const Compression kAllCompressions[] = {Compression::kNone, Compression::kGzip,
                                        Compression::kZlib};

std::string Name(Compression c) {
  return c == Compression::kNone ? "NONE" : std::string(CompressionName(c));
}

std::vector<Element> Strings(const std::vector<std::string>& v) {
  std::vector<Element> out;
  for (const std::string& s : v) out.push_back(Element{Tensor::Scalar(s)});
  return out;
}

void WriteBytes(const std::string& path, const std::string& bytes, Compression c) {
  auto out = OutputStream::Open(path, c);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_TRUE((*out)->Append(bytes).ok());
  ASSERT_TRUE((*out)->Close().ok());
}

std::string Frame(const std::vector<std::string>& records) {
  std::string out;
  for (const std::string& r : records) AppendTFRecord(&out, r);
  return out;
}

// What an iterator yields when every error is skipped over by calling GetNext again.
struct Outcome {
  std::vector<std::string> values;  // an element, or "ERROR: <message>" for an error
};

Outcome Drain(const Dataset& ds) {
  Outcome out;
  auto it = ds.MakeIterator();
  EXPECT_TRUE(it.ok()) << it.status();
  if (!it.ok()) return out;
  for (int i = 0; i < 10000; ++i) {
    auto e = (*it)->GetNext();
    if (!e.ok()) {
      out.values.push_back("ERROR: " + e.status().ToString());
      continue;
    }
    if (!*e) return out;
    out.values.push_back((**e)[0].scalar<std::string>());
  }
  ADD_FAILURE() << "iterator did not end";
  return out;
}

bool IsError(const std::string& v, const std::vector<std::string>& parts) {
  if (v.rfind("ERROR: ", 0) != 0) return false;
  for (const std::string& p : parts) {
    if (v.find(p) == std::string::npos) return false;
  }
  return true;
}

// ---- TFRecord ----

TEST(TFRecordDatasetTest, Conformance) {
  for (Compression c : kAllCompressions) {
    SCOPED_TRACE(Name(c));
    TempDir dir;
    WriteBytes(dir.File("a"), Frame({"a", "bb", ""}), c);
    WriteBytes(dir.File("empty"), "", c);
    WriteBytes(dir.File("b"), Frame({"ccc", std::string(3000, 'z')}), c);
    Dataset ds = Dataset::TFRecord({dir.File("a"), dir.File("empty"), dir.File("b")}, c);
    ASSERT_TRUE(ds.ok()) << ds.status();
    EXPECT_EQ(ds.Cardinality(), kUnknownCardinality);
    EXPECT_EQ(ds.element_spec().ToString(), "(string[])");
    CheckDataset(ds, Strings({"a", "bb", "", "ccc", std::string(3000, 'z')}));
  }
  CheckDataset(Dataset::TFRecord({}), {});
}

TEST(TFRecordDatasetTest, ReadsFilesWrittenByTensorFlow) {
  const std::string d = testing::SourceDir() + "/tests/data/tfrecord/";
  CheckDataset(Dataset::TFRecord({d + "tf_foo.tfrecord", d + "tf_foo_bar.tfrecord"}),
               Strings({"foo", "foo", "bar"}));
  CheckDataset(Dataset::TFRecord({d + "tf_foo_bar.tfrecord.gz"}, Compression::kGzip),
               Strings({"foo", "bar"}));
  CheckDataset(Dataset::TFRecord({d + "tf_foo_bar.tfrecord.zlib"}, Compression::kZlib),
               Strings({"foo", "bar"}));
}

TEST(TFRecordDatasetTest, UnopenableFileIsReportedOnceThenSkipped) {
  TempDir dir;
  WriteBytes(dir.File("a"), Frame({"a1", "a2"}), Compression::kNone);
  WriteBytes(dir.File("b"), Frame({"b1"}), Compression::kNone);
  Outcome o =
      Drain(Dataset::TFRecord({dir.File("a"), dir.File("missing"), dir.File("b")}));
  ASSERT_EQ(o.values.size(), 4u);
  EXPECT_EQ(o.values[0], "a1");
  EXPECT_EQ(o.values[1], "a2");
  EXPECT_TRUE(IsError(o.values[2], {"NotFound", "TFRecord", dir.File("missing")}))
      << o.values[2];
  EXPECT_EQ(o.values[3], "b1");
}

TEST(TFRecordDatasetTest, DamagedRecordsAreReportedAndReadingResumes) {
  for (Compression c : kAllCompressions) {
    SCOPED_TRACE(Name(c));
    TempDir dir;
    std::string bytes = Frame({"r0", "r1", "r2", "r3"});
    bytes[18 + 4] ^= 0x01;       // r1's length field
    bytes[3 * 18 + 12] ^= 0x01;  // r3's data
    WriteBytes(dir.File("a"), bytes, c);
    WriteBytes(dir.File("b"), Frame({"b0"}), c);
    Dataset ds = Dataset::TFRecord({dir.File("a"), dir.File("b")}, c);
    Outcome o = Drain(ds);
    ASSERT_EQ(o.values.size(), 5u);
    EXPECT_EQ(o.values[0], "r0");
    EXPECT_TRUE(IsError(
        o.values[1], {"DataLoss", "TFRecord",
                      "corrupt record at offset 18 in file " + dir.File("a"), "header"}))
        << o.values[1];
    EXPECT_EQ(o.values[2], "r2");
    EXPECT_TRUE(IsError(o.values[3], {"corrupt record at offset 54", "data checksum"}))
        << o.values[3];
    EXPECT_EQ(o.values[4], "b0");

    // A checkpoint taken right after the first error resumes where the reader
    // resynchronized.
    auto it = ds.MakeIterator();
    ASSERT_TRUE(it.ok());
    ASSERT_TRUE((*it)->GetNext().ok());
    ASSERT_FALSE((*it)->GetNext().ok());
    auto ckpt = (*it)->Save();
    ASSERT_TRUE(ckpt.ok()) << ckpt.status();
    auto restored = ds.MakeIterator();
    ASSERT_TRUE((*restored)->Restore(*ckpt).ok());
    auto next = (*restored)->GetNext();
    ASSERT_TRUE(next.ok()) << next.status();
    EXPECT_EQ((**next)[0].scalar<std::string>(), "r2");
  }
}

TEST(TFRecordDatasetTest, CorruptCompressedFileEndsOnlyThatFile) {
  TempDir dir;
  WriteBytes(dir.File("not_gzip"), Frame({"plain"}), Compression::kNone);
  WriteBytes(dir.File("good"), Frame({"g"}), Compression::kGzip);
  Outcome o = Drain(
      Dataset::TFRecord({dir.File("not_gzip"), dir.File("good")}, Compression::kGzip));
  ASSERT_EQ(o.values.size(), 2u);
  EXPECT_TRUE(
      IsError(o.values[0], {"DataLoss", "TFRecord", "GZIP", dir.File("not_gzip")}))
      << o.values[0];
  EXPECT_EQ(o.values[1], "g");
}

TEST(TFRecordDatasetTest, RestoreNeedsTheFile) {
  TempDir dir;
  WriteBytes(dir.File("a"), Frame({"x", "y"}), Compression::kNone);
  Dataset ds = Dataset::TFRecord({dir.File("a")});
  // The graph as built: an injected prefetch may have read the whole file already, and
  // its checkpoint would then hold the records instead of a position.
  auto it = MakeIteratorAsBuilt(ds, {});
  ASSERT_TRUE((*it)->GetNext().ok());
  auto ckpt = (*it)->Save();
  ASSERT_TRUE(ckpt.ok());
  std::remove(dir.File("a").c_str());
  auto restored = MakeIteratorAsBuilt(ds, {});
  Status s = (*restored)->Restore(*ckpt);
  EXPECT_EQ(s.code(), StatusCode::kNotFound) << s;
}

// ---- TextLine ----

TEST(TextLineDatasetTest, Conformance) {
  for (Compression c : kAllCompressions) {
    SCOPED_TRACE(Name(c));
    TempDir dir;
    WriteBytes(dir.File("a"), "a\nbb\r\n\nlast", c);
    WriteBytes(dir.File("empty"), "", c);
    WriteBytes(dir.File("b"), "x\n\r\ny\r", c);
    Dataset ds = Dataset::TextLine({dir.File("a"), dir.File("empty"), dir.File("b")}, c);
    ASSERT_TRUE(ds.ok()) << ds.status();
    EXPECT_EQ(ds.Cardinality(), kUnknownCardinality);
    EXPECT_EQ(ds.element_spec().ToString(), "(string[])");
    CheckDataset(ds, Strings({"a", "bb", "", "last", "x", "", "y"}));
  }
}

TEST(TextLineDatasetTest, ManyLinesAcrossSmallBuffers) {
  TempDir dir;
  std::string text;
  std::vector<std::string> lines;
  for (int i = 0; i < 500; ++i) {
    lines.push_back(std::string(i % 37, static_cast<char>('a' + i % 26)));
    text += lines.back() + (i % 3 == 0 ? "\r\n" : "\n");
  }
  WriteBytes(dir.File("t.gz"), text, Compression::kGzip);
  Dataset ds = Dataset::FromOp("TextLine",
                               {{"filenames", std::vector<std::string>{dir.File("t.gz")}},
                                {"compression", std::string("GZIP")},
                                {"buffer_size", int64_t{5}}});
  CheckDataset(ds, Strings(lines), {.save_restore_stride = 13});
}

TEST(TextLineDatasetTest, UnopenableAndBrokenFiles) {
  TempDir dir;
  WriteBytes(dir.File("a"), "one\ntwo\n", Compression::kNone);
  Outcome o = Drain(Dataset::TextLine({dir.File("missing"), dir.File("a")}));
  ASSERT_EQ(o.values.size(), 3u);
  EXPECT_TRUE(IsError(o.values[0], {"NotFound", "TextLine", dir.File("missing")}))
      << o.values[0];
  EXPECT_EQ(o.values[1], "one");
  EXPECT_EQ(o.values[2], "two");
  // A truncated gzip file: its lines up to the damage, one error, then the next file.
  WriteBytes(dir.File("full.gz"), "l1\nl2\nl3\n", Compression::kGzip);
  std::string gz = testing::ReadFile(dir.File("full.gz"));
  testing::WriteFile(dir.File("cut.gz"), gz.substr(0, gz.size() - 4));
  o = Drain(
      Dataset::TextLine({dir.File("cut.gz"), dir.File("full.gz")}, Compression::kGzip));
  ASSERT_EQ(o.values.size(), 7u);
  EXPECT_EQ(o.values[2], "l3");
  EXPECT_TRUE(IsError(o.values[3],
                      {"DataLoss", "TextLine", "truncated GZIP", dir.File("cut.gz")}))
      << o.values[3];
  EXPECT_EQ(o.values[6], "l3");
}

// ---- FixedLengthRecord ----

TEST(FixedLengthRecordDatasetTest, Conformance) {
  for (Compression c : kAllCompressions) {
    SCOPED_TRACE(Name(c));
    TempDir dir;
    WriteBytes(dir.File("a"), "HHHr0__r1__r2__FF", c);
    WriteBytes(dir.File("none"), "HHHFF", c);
    WriteBytes(dir.File("b"), "hhhr3__ff", c);
    Dataset ds =
        Dataset::FixedLengthRecord({dir.File("a"), dir.File("none"), dir.File("b")},
                                   /*record_bytes=*/4, /*header_bytes=*/3,
                                   /*footer_bytes=*/2, c);
    ASSERT_TRUE(ds.ok()) << ds.status();
    EXPECT_EQ(ds.Cardinality(), kUnknownCardinality);
    EXPECT_EQ(ds.element_spec().ToString(), "(string[])");
    CheckDataset(ds, Strings({"r0__", "r1__", "r2__", "r3__"}));
  }
  TempDir dir;
  WriteBytes(dir.File("plain"), "abcdefgh", Compression::kNone);
  CheckDataset(Dataset::FixedLengthRecord({dir.File("plain")}, 2),
               Strings({"ab", "cd", "ef", "gh"}));
}

TEST(FixedLengthRecordDatasetTest, TrailingPartialRecordIsDataLoss) {
  for (Compression c : kAllCompressions) {
    SCOPED_TRACE(Name(c));
    TempDir dir;
    WriteBytes(dir.File("a"), "HHHr0__r1__xyzFF", c);
    WriteBytes(dir.File("short"), "HHHF", c);
    WriteBytes(dir.File("b"), "HHHr2__FF", c);
    Outcome o = Drain(Dataset::FixedLengthRecord(
        {dir.File("a"), dir.File("short"), dir.File("b")}, 4, 3, 2, c));
    ASSERT_EQ(o.values.size(), 5u);
    EXPECT_EQ(o.values[0], "r0__");
    EXPECT_EQ(o.values[1], "r1__");
    EXPECT_TRUE(IsError(o.values[2],
                        {"DataLoss", "FixedLengthRecord",
                         "trailing partial record at offset 11 in file " + dir.File("a"),
                         "3 of 4 bytes (1 bytes missing)"}))
        << o.values[2];
    EXPECT_TRUE(
        IsError(o.values[3], {"DataLoss", "FixedLengthRecord", dir.File("short")}))
        << o.values[3];
    EXPECT_EQ(o.values[4], "r2__");
  }
}

TEST(FixedLengthRecordDatasetTest, SkipWithoutReading) {
  TempDir dir;
  std::string body;
  for (int i = 0; i < 100; ++i) body += "rec" + std::to_string(i % 10);
  for (Compression c : kAllCompressions) {
    SCOPED_TRACE(Name(c));
    WriteBytes(dir.File("a"), "H" + body + "F", c);
    WriteBytes(dir.File("b"), "H" + body.substr(0, 8) + "F", c);
    Dataset ds = Dataset::FixedLengthRecord({dir.File("a"), dir.File("b")}, 4, 1, 1, c);
    auto it = NodeOf(ds)->MakeIterator(IteratorContext{}, "Root");
    ASSERT_TRUE(it.ok());
    auto k = (*it)->Skip(57);
    ASSERT_TRUE(k.ok());
    EXPECT_EQ(*k, 57);
    auto e = (*it)->GetNext();
    ASSERT_TRUE(e.ok() && e->has_value());
    EXPECT_EQ((**e)[0].scalar<std::string>(), "rec7");
    k = (*it)->Skip(1000);
    ASSERT_TRUE(k.ok());
    EXPECT_EQ(*k, 100 - 58 + 2);
    e = (*it)->GetNext();
    ASSERT_TRUE(e.ok());
    EXPECT_FALSE(e->has_value());
  }
}

TEST(FixedLengthRecordDatasetTest, UnopenableFileIsReportedOnceThenSkipped) {
  TempDir dir;
  WriteBytes(dir.File("a"), "abcd", Compression::kNone);
  Outcome o = Drain(Dataset::FixedLengthRecord({dir.File("missing"), dir.File("a")}, 2));
  ASSERT_EQ(o.values.size(), 3u);
  EXPECT_TRUE(
      IsError(o.values[0], {"NotFound", "FixedLengthRecord", dir.File("missing")}))
      << o.values[0];
  EXPECT_EQ(o.values[1], "ab");
  EXPECT_EQ(o.values[2], "cd");
}

// ---- Attributes ----

TEST(RecordSourcesTest, BadAttributesFailClearly) {
  auto msg = [](const Dataset& ds) { return ds.status().message(); };
  Dataset bad = Dataset::FromOp("TFRecord", {{"filenames", std::vector<std::string>{"x"}},
                                             {"compression", std::string("BZIP2")}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(msg(bad).find("TFRecord"), std::string::npos) << msg(bad);
  EXPECT_NE(msg(bad).find("BZIP2"), std::string::npos) << msg(bad);
  EXPECT_FALSE(Dataset::FromOp("TextLine", {}).ok());
  EXPECT_FALSE(Dataset::FromOp("TextLine", {{"filenames", std::string("x")}}).ok());
  EXPECT_FALSE(Dataset::FixedLengthRecord({"x"}, 0).ok());
  EXPECT_FALSE(Dataset::FixedLengthRecord({"x"}, -4).ok());
  EXPECT_FALSE(Dataset::FixedLengthRecord({"x"}, 4, -1).ok());
  EXPECT_FALSE(Dataset::FixedLengthRecord({"x"}, 4, 0, -1).ok());
  EXPECT_FALSE(Dataset::FixedLengthRecord({"x"}, int64_t{1} << 40).ok());
  Dataset no_record = Dataset::FromOp("FixedLengthRecord",
                                      {{"filenames", std::vector<std::string>{"x"}}});
  ASSERT_FALSE(no_record.ok());
  EXPECT_NE(msg(no_record).find("record_bytes"), std::string::npos) << msg(no_record);
  EXPECT_FALSE(Dataset::FromOp("TextLine", {{"filenames", std::vector<std::string>{"x"}},
                                            {"buffer_size", int64_t{0}}})
                   .ok());
  // Sources take no inputs.
  EXPECT_FALSE(Dataset::FromOp("TFRecord", {{"filenames", std::vector<std::string>{"x"}}},
                               {Dataset::Range(3)})
                   .ok());
}

}  // namespace
}  // namespace sluice
