// InputStream (buffering, compression, seeking) and the TFRecord reader/writer: round
// trips, TensorFlow-written vectors, damage detection and resynchronization, truncation,
// absurd lengths, gzip interoperability.
#include "formats/tfrecord.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdio>
#include <random>

#include "core/crc32c.h"
#include "formats/input_stream.h"
#include "testing/conformance.h"

namespace sluice {
namespace {

using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

const Compression kAllCompressions[] = {Compression::kNone, Compression::kGzip,
                                        Compression::kZlib};

std::string Name(Compression c) {
  return c == Compression::kNone ? "NONE" : std::string(CompressionName(c));
}

std::string RandomBytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

std::string DataDir() { return testing::SourceDir() + "/tests/data/tfrecord/"; }

// Writes raw bytes through OutputStream (so tests can compress hand-made, damaged
// content).
void WriteCompressed(const std::string& path, const std::string& bytes, Compression c) {
  auto out = OutputStream::Open(path, c);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_TRUE((*out)->Append(bytes).ok());
  ASSERT_TRUE((*out)->Close().ok());
}

void WriteRecords(const std::string& path, const std::vector<std::string>& records,
                  Compression c) {
  auto w = TFRecordWriter::Open(path, c);
  ASSERT_TRUE(w.ok()) << w.status();
  for (const std::string& r : records) ASSERT_TRUE((*w)->Write(r).ok());
  Status s = (*w)->Close();
  ASSERT_TRUE(s.ok()) << s;
}

std::string Frame(const std::vector<std::string>& records) {
  std::string out;
  for (const std::string& r : records) AppendTFRecord(&out, r);
  return out;
}

struct ReadResult {
  std::vector<std::string> records;
  std::vector<uint64_t> offsets;
  std::vector<Status> errors;
};

// Reads every record, calling ReadRecord again after errors (what ignore_errors does).
ReadResult ReadAll(TFRecordReader* r) {
  ReadResult out;
  for (int i = 0; i < 1000000; ++i) {
    auto rec = r->ReadRecord();
    if (!rec.ok()) {
      out.errors.push_back(rec.status());
      continue;
    }
    if (!*rec) {
      // The end is sticky.
      auto again = r->ReadRecord();
      EXPECT_TRUE(again.ok() && !again->has_value());
      return out;
    }
    out.records.push_back(std::move(**rec));
    out.offsets.push_back(r->last_record_offset());
  }
  ADD_FAILURE() << "reader did not end";
  return out;
}

ReadResult ReadFileRecords(const std::string& path, Compression c, size_t buffer = 0) {
  TFRecordReader::Options o;
  o.compression = c;
  if (buffer) o.buffer_size = buffer;
  auto r = TFRecordReader::Open(path, o);
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return {};
  return ReadAll(r->get());
}

ReadResult ReadMemory(const std::string& bytes, Compression c = Compression::kNone,
                      uint64_t budget = TFRecordReader::Options().resync_probe_budget) {
  TFRecordReader::Options o;
  o.compression = c;
  o.resync_probe_budget = budget;
  TFRecordReader r(InputStream::FromMemory("mem", bytes, c, 16), o);
  return ReadAll(&r);
}

bool Contains(const Status& s, const std::string& what) {
  return s.message().find(what) != std::string::npos;
}

// ---- TensorFlow's own values ----

TEST(Crc32cTest, MatchesTensorFlowMaskedValues) {
  // Masked CRC-32C values stated in Apache Beam's tfrecordio_test.py, which checks them
  // against TensorFlow.
  EXPECT_EQ(crc32c::Mask(crc32c::Value(std::string(32, '\0').data(), 32)), 0x0fd7fffau);
  EXPECT_EQ(crc32c::Mask(crc32c::Value(std::string(32, '\xff').data(), 32)), 0xf909b029u);
  EXPECT_EQ(crc32c::Mask(crc32c::Value("foo", 3)), 0xfebe8a61u);
  EXPECT_EQ(crc32c::Mask(crc32c::Value("\x03\0\0\0\0\0\0\0", 8)), 0x0e4999b0u);
  EXPECT_EQ(crc32c::Unmask(crc32c::Mask(0x12345678u)), 0x12345678u);
}

TEST(TensorFlowVectors, ReadFilesWrittenByTensorFlow) {
  ReadResult foo = ReadFileRecords(DataDir() + "tf_foo.tfrecord", Compression::kNone);
  EXPECT_TRUE(foo.errors.empty());
  EXPECT_EQ(foo.records, std::vector<std::string>({"foo"}));
  const std::vector<std::string> foo_bar = {"foo", "bar"};
  struct {
    const char* file;
    Compression c;
  } cases[] = {{"tf_foo_bar.tfrecord", Compression::kNone},
               {"tf_foo_bar.tfrecord.gz", Compression::kGzip},
               {"tf_foo_bar.tfrecord.zlib", Compression::kZlib}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.file);
    for (size_t buffer : {size_t{0}, size_t{1}, size_t{5}}) {
      ReadResult r = ReadFileRecords(DataDir() + c.file, c.c, buffer);
      EXPECT_TRUE(r.errors.empty()) << r.errors[0];
      EXPECT_EQ(r.records, foo_bar);
      EXPECT_EQ(r.offsets, std::vector<uint64_t>({0, 19}));
    }
  }
}

TEST(TensorFlowVectors, WriterOutputIsBitIdentical) {
  TempDir dir;
  WriteRecords(dir.File("foo"), {"foo"}, Compression::kNone);
  WriteRecords(dir.File("foo_bar"), {"foo", "bar"}, Compression::kNone);
  std::string tf_foo = ReadFile(DataDir() + "tf_foo.tfrecord");
  std::string tf_foo_bar = ReadFile(DataDir() + "tf_foo_bar.tfrecord");
  ASSERT_EQ(tf_foo.size(), 19u);
  ASSERT_EQ(tf_foo_bar.size(), 38u);
  EXPECT_EQ(ReadFile(dir.File("foo")), tf_foo);
  EXPECT_EQ(ReadFile(dir.File("foo_bar")), tf_foo_bar);
  EXPECT_EQ(Frame({"foo", "bar"}), tf_foo_bar);
  // The compressed variants decompress (with the standard tools' output) to the same
  // bytes.
  WriteRecords(dir.File("foo_bar.gz"), {"foo", "bar"}, Compression::kGzip);
  auto in = InputStream::Open(dir.File("foo_bar.gz"), Compression::kGzip);
  ASSERT_TRUE(in.ok());
  std::string round;
  ASSERT_TRUE((*in)->ReadAppend(&round, 1000).ok());
  EXPECT_EQ(round, tf_foo_bar);
}

// ---- Round trips ----

class RoundTripTest : public ::testing::TestWithParam<std::tuple<Compression, size_t>> {};

TEST_P(RoundTripTest, BitExact) {
  auto [c, buffer] = GetParam();
  std::vector<std::string> records = {"", RandomBytes(1 << 20, 1), ""};
  std::mt19937_64 rng(2);
  for (int i = 0; i < 3000; ++i) records.push_back(RandomBytes(rng() % 64, rng()));
  records.push_back("");
  records.push_back(RandomBytes(1 << 20, 3));
  records.push_back("last");
  TempDir dir;
  WriteRecords(dir.File("r"), records, c);
  ReadResult r = ReadFileRecords(dir.File("r"), c, buffer);
  ASSERT_TRUE(r.errors.empty()) << r.errors[0];
  ASSERT_EQ(r.records.size(), records.size());
  uint64_t offset = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    ASSERT_EQ(r.records[i], records[i]) << "record " << i;
    EXPECT_EQ(r.offsets[i], offset);
    offset += records[i].size() + 16;
  }
  if (c == Compression::kNone) {
    EXPECT_EQ(ReadFile(dir.File("r")), Frame(records));
  }
}

INSTANTIATE_TEST_SUITE_P(AllCompressions, RoundTripTest,
                         ::testing::Combine(::testing::ValuesIn(kAllCompressions),
                                            ::testing::Values(size_t{0}, size_t{7},
                                                              size_t{4096})),
                         [](const auto& info) {
                           return Name(std::get<0>(info.param)) + "_buffer" +
                                  std::to_string(std::get<1>(info.param));
                         });

TEST(TFRecordWriterTest, GzipIsARealGzipStream) {
  TempDir dir;
  std::vector<std::string> records = {"alpha", "", RandomBytes(100000, 4), "omega"};
  WriteRecords(dir.File("r.gz"), records, Compression::kGzip);
  std::string gz = ReadFile(dir.File("r.gz"));
  ASSERT_GE(gz.size(), 18u);
  EXPECT_EQ(static_cast<unsigned char>(gz[0]), 0x1f);
  EXPECT_EQ(static_cast<unsigned char>(gz[1]), 0x8b);
  // zcat must read it back to exactly the uncompressed framing.
  FILE* p = popen(("zcat '" + dir.File("r.gz") + "' 2>/dev/null").c_str(), "r");
  if (p == nullptr) GTEST_SKIP() << "zcat not available";
  std::string out;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  int rc = pclose(p);
  if (rc != 0 && out.empty()) GTEST_SKIP() << "zcat not available";
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(out, Frame(records));
}

TEST(TFRecordWriterTest, ZlibIsARealZlibStream) {
  TempDir dir;
  std::vector<std::string> records = {"one", "two", RandomBytes(5000, 5)};
  WriteRecords(dir.File("r.z"), records, Compression::kZlib);
  std::string z = ReadFile(dir.File("r.z"));
  std::string expected = Frame(records);
  std::string out(expected.size() + 10, '\0');
  uLongf len = out.size();
  ASSERT_EQ(uncompress(reinterpret_cast<Bytef*>(out.data()), &len,
                       reinterpret_cast<const Bytef*>(z.data()), z.size()),
            Z_OK);
  out.resize(len);
  EXPECT_EQ(out, expected);
}

TEST(TFRecordWriterTest, FlushMakesRecordsReadableAndCloseIsFinal) {
  for (Compression c : kAllCompressions) {
    SCOPED_TRACE(Name(c));
    TempDir dir;
    auto w = TFRecordWriter::Open(dir.File("r"), c);
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Write("first").ok());
    ASSERT_TRUE((*w)->Write("second").ok());
    EXPECT_EQ((*w)->offset(), 5u + 16 + 6 + 16);
    ASSERT_TRUE((*w)->Flush().ok());
    // Before Close, a reader sees both records (a compressed stream then looks
    // truncated).
    ReadResult r = ReadFileRecords(dir.File("r"), c);
    EXPECT_EQ(r.records, std::vector<std::string>({"first", "second"}));
    if (c == Compression::kNone) {
      EXPECT_TRUE(r.errors.empty());
    }
    ASSERT_TRUE((*w)->Close().ok());
    EXPECT_TRUE((*w)->Close().ok());  // idempotent
    EXPECT_EQ((*w)->Write("late").code(), StatusCode::kFailedPrecondition);
    r = ReadFileRecords(dir.File("r"), c);
    EXPECT_TRUE(r.errors.empty());
    EXPECT_EQ(r.records, std::vector<std::string>({"first", "second"}));
  }
}

TEST(TFRecordWriterTest, UnwritablePathFails) {
  auto w = TFRecordWriter::Open("/nonexistent-dir/x.tfrecord");
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(Contains(w.status(), "/nonexistent-dir/x.tfrecord")) << w.status();
}

// ---- Damage ----

TEST(TFRecordReaderTest, EverySingleByteFlipIsDetectedAndIsolated) {
  const std::vector<std::string> records = {"", "a", "hello world", RandomBytes(40, 6),
                                            "xyz"};
  const std::string file = Frame(records);
  std::vector<uint64_t> starts;
  uint64_t off = 0;
  for (const std::string& r : records) {
    starts.push_back(off);
    off += r.size() + 16;
  }
  ASSERT_EQ(off, file.size());
  TempDir dir;
  for (size_t b = 0; b < file.size(); ++b) {
    for (unsigned char mask : {0x01, 0xff}) {
      SCOPED_TRACE("byte " + std::to_string(b) + " ^ " + std::to_string(mask));
      std::string bad = file;
      bad[b] = static_cast<char>(bad[b] ^ mask);
      size_t k = records.size() - 1;
      while (starts[k] > b) --k;
      const bool in_header = b < starts[k] + 12;
      const std::string path = dir.File("flip");
      WriteFile(path, bad);
      ReadResult r = ReadFileRecords(path, Compression::kNone, b % 3 == 0 ? 5 : 0);
      ASSERT_EQ(r.errors.size(), 1u);
      const Status& e = r.errors[0];
      EXPECT_EQ(e.code(), StatusCode::kDataLoss);
      EXPECT_TRUE(Contains(e, "corrupt record at offset " + std::to_string(starts[k]) +
                                  " in file " + path))
          << e;
      EXPECT_TRUE(Contains(e, in_header ? "header checksum" : "data checksum")) << e;
      std::vector<std::string> expected = records;
      expected.erase(expected.begin() + static_cast<long>(k));
      EXPECT_EQ(r.records, expected);
    }
  }
}

TEST(TFRecordReaderTest, ResynchronizesInCompressedStreams) {
  const std::vector<std::string> records = {"r0", RandomBytes(300, 7), "r2", "r3", "r4"};
  std::string bytes = Frame(records);
  const uint64_t o2 = 2 + 16 + 300 + 16;
  bytes[o2 + 3] ^= 0x10;  // damage r2's length field
  for (Compression c : kAllCompressions) {
    SCOPED_TRACE(Name(c));
    TempDir dir;
    WriteCompressed(dir.File("r"), bytes, c);
    ReadResult r = ReadFileRecords(dir.File("r"), c, 64);
    ASSERT_EQ(r.errors.size(), 1u);
    EXPECT_TRUE(Contains(r.errors[0], "corrupt record at offset " + std::to_string(o2)))
        << r.errors[0];
    EXPECT_TRUE(
        Contains(r.errors[0], "resynchronized at offset " + std::to_string(o2 + 18)))
        << r.errors[0];
    EXPECT_EQ(r.records, std::vector<std::string>({"r0", records[1], "r3", "r4"}));
  }
}

TEST(TFRecordReaderTest, ResyncSkipsFalseCandidates) {
  // A damaged header, then a well-formed header whose data checksum is wrong (a false
  // candidate), then intact records.
  std::string bytes = Frame({"damaged"});
  bytes[2] ^= 0x40;
  std::string fake = Frame({"zzzzz"});
  fake[fake.size() - 1] ^= 0x01;
  bytes += fake;
  const uint64_t ob = bytes.size();
  bytes += Frame({"B", "C"});
  ReadResult r = ReadMemory(bytes);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_TRUE(Contains(r.errors[0], "resynchronized at offset " + std::to_string(ob)))
      << r.errors[0];
  EXPECT_EQ(r.records, std::vector<std::string>({"B", "C"}));
  // With a tiny probe budget the reader gives up on the file instead of probing on.
  r = ReadMemory(bytes, Compression::kNone, /*budget=*/10);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_TRUE(Contains(r.errors[0], "too many false record candidates")) << r.errors[0];
  EXPECT_TRUE(r.records.empty());
}

TEST(TFRecordReaderTest, TruncationAtEveryLength) {
  const std::vector<std::string> records = {"abc", "", RandomBytes(50, 8)};
  const std::string file = Frame(records);
  std::vector<uint64_t> ends;
  uint64_t off = 0;
  for (const std::string& r : records) ends.push_back(off += r.size() + 16);
  TempDir dir;
  for (Compression c : kAllCompressions) {
    for (size_t len = 0; len < file.size(); ++len) {
      SCOPED_TRACE(Name(c) + " cut at " + std::to_string(len));
      WriteCompressed(dir.File("t"), file.substr(0, len), c);
      ReadResult r = ReadFileRecords(dir.File("t"), c);
      size_t whole = 0;
      while (whole < ends.size() && ends[whole] <= len) ++whole;
      EXPECT_EQ(r.records,
                std::vector<std::string>(records.begin(), records.begin() + whole));
      uint64_t start = whole == 0 ? 0 : ends[whole - 1];
      if (len == start) {
        EXPECT_TRUE(r.errors.empty());
        continue;
      }
      ASSERT_EQ(r.errors.size(), 1u);
      const Status& e = r.errors[0];
      EXPECT_EQ(e.code(), StatusCode::kDataLoss);
      EXPECT_TRUE(Contains(e, "truncated record at offset " + std::to_string(start)))
          << e;
      uint64_t missing = len - start < 12 ? 12 - (len - start) : ends[whole] - len;
      EXPECT_TRUE(Contains(e, std::to_string(missing) + " bytes missing")) << e;
    }
  }
}

std::string HeaderWithLength(uint64_t len) {
  std::string h(12, '\0');
  memcpy(h.data(), &len, 8);
  uint32_t crc = crc32c::Mask(crc32c::Value(h.data(), 8));
  memcpy(h.data() + 8, &crc, 4);
  return h;
}

TEST(TFRecordReaderTest, AbsurdLengthsAreReportedNotAllocated) {
  TempDir dir;
  // Uncompressed: longer than the file (1 TiB would abort under ASan if allocated).
  std::string bytes = HeaderWithLength(uint64_t{1} << 40) + "0123456789";
  WriteFile(dir.File("a"), bytes);
  ReadResult r = ReadFileRecords(dir.File("a"), Compression::kNone);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_TRUE(Contains(r.errors[0], "truncated record at offset 0")) << r.errors[0];
  EXPECT_TRUE(Contains(r.errors[0],
                       std::to_string((uint64_t{1} << 40) + 4 - 10) + " bytes missing"))
      << r.errors[0];
  // Compressed, over the 2 GiB limit: reported, nothing allocated.
  WriteCompressed(dir.File("b"), bytes, Compression::kGzip);
  r = ReadFileRecords(dir.File("b"), Compression::kGzip);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_TRUE(Contains(r.errors[0], "exceeds the limit")) << r.errors[0];
  // Compressed, under the limit but far longer than the data: memory follows the data.
  bytes = HeaderWithLength((uint64_t{1} << 31) - 1) + std::string(100, 'x');
  WriteCompressed(dir.File("c"), bytes, Compression::kZlib);
  r = ReadFileRecords(dir.File("c"), Compression::kZlib);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_TRUE(Contains(r.errors[0], "truncated record at offset 0")) << r.errors[0];
  EXPECT_TRUE(Contains(
      r.errors[0], std::to_string((uint64_t{1} << 31) - 1 - 100 + 4) + " bytes missing"))
      << r.errors[0];
  // A record over the length limit (lowered here from 2 GiB) is skipped without being
  // read into memory, and the record after it is still returned.
  bytes = Frame({"first", std::string(5000, 'L'), "after"});
  for (Compression c : kAllCompressions) {
    SCOPED_TRACE(Name(c));
    WriteCompressed(dir.File("d"), bytes, c);
    TFRecordReader::Options o;
    o.compression = c;
    o.max_record_length = 1000;
    auto reader = TFRecordReader::Open(dir.File("d"), o);
    ASSERT_TRUE(reader.ok());
    r = ReadAll(reader->get());
    ASSERT_EQ(r.errors.size(), 1u);
    EXPECT_TRUE(Contains(r.errors[0], "corrupt record at offset 21")) << r.errors[0];
    EXPECT_TRUE(Contains(r.errors[0], "exceeds the limit of 1000 bytes; skipped"))
        << r.errors[0];
    EXPECT_EQ(r.records, std::vector<std::string>({"first", "after"}));
  }
}

TEST(TFRecordReaderTest, CorruptCompressedDataEndsTheFile) {
  TempDir dir;
  std::vector<std::string> records;
  for (int i = 0; i < 200; ++i) records.push_back(RandomBytes(100, 100 + i));
  WriteRecords(dir.File("r.gz"), records, Compression::kGzip);
  std::string gz = ReadFile(dir.File("r.gz"));
  // Damage the deflate data in the middle.
  std::string bad = gz;
  for (size_t i = gz.size() / 2; i < gz.size() / 2 + 8; ++i) bad[i] ^= 0x55;
  WriteFile(dir.File("bad.gz"), bad);
  ReadResult r = ReadFileRecords(dir.File("bad.gz"), Compression::kGzip);
  // Damaged deflate data may first decode to wrong bytes (failing record checksums)
  // before zlib notices; the last error is the stream's, and it ends the file.
  ASSERT_GE(r.errors.size(), 1u);
  EXPECT_EQ(r.errors.back().code(), StatusCode::kDataLoss);
  EXPECT_TRUE(Contains(r.errors.back(), "GZIP")) << r.errors.back();
  EXPECT_TRUE(Contains(r.errors.back(), dir.File("bad.gz"))) << r.errors.back();
  // What was returned is intact: a subsequence of what was written, minus the damage.
  EXPECT_LT(r.records.size(), records.size());
  size_t j = 0;
  for (const std::string& rec : r.records) {
    while (j < records.size() && records[j] != rec) ++j;
    EXPECT_LT(j, records.size()) << "a returned record was never written";
  }
  // A truncated gzip stream.
  WriteFile(dir.File("cut.gz"), gz.substr(0, gz.size() - 30));
  r = ReadFileRecords(dir.File("cut.gz"), Compression::kGzip);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_TRUE(Contains(r.errors[0], "truncated")) << r.errors[0];
  // Not compressed at all.
  r = ReadFileRecords(DataDir() + "tf_foo_bar.tfrecord", Compression::kZlib);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_TRUE(Contains(r.errors[0], "corrupt ZLIB data")) << r.errors[0];
  EXPECT_TRUE(r.records.empty());
}

TEST(TFRecordReaderTest, SeekToAndOffsets) {
  TempDir dir;
  std::vector<std::string> records = {"zero", "one", "two", "three"};
  for (Compression c : kAllCompressions) {
    SCOPED_TRACE(Name(c));
    WriteRecords(dir.File("r"), records, c);
    auto r = TFRecordReader::Open(dir.File("r"), c);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ((*r)->offset(), 0u);
    ASSERT_EQ(*(*r)->ReadRecord().value(), "zero");
    const uint64_t after0 = (*r)->offset();
    EXPECT_EQ(after0, 20u);
    ASSERT_EQ(*(*r)->ReadRecord().value(), "one");
    ASSERT_EQ(*(*r)->ReadRecord().value(), "two");
    // Backward (a re-inflate when compressed) and forward again.
    ASSERT_TRUE((*r)->SeekTo(after0).ok());
    ASSERT_EQ(*(*r)->ReadRecord().value(), "one");
    EXPECT_EQ((*r)->last_record_offset(), after0);
    auto fresh = TFRecordReader::Open(dir.File("r"), c);
    ASSERT_TRUE((*fresh)->SeekTo(20 + 19 + 19).ok());
    ASSERT_EQ(*(*fresh)->ReadRecord().value(), "three");
    EXPECT_FALSE((*fresh)->ReadRecord().value().has_value());
    EXPECT_TRUE((*fresh)->done());
    EXPECT_FALSE((*fresh)->SeekTo(10000).ok());
  }
}

TEST(TFRecordReaderTest, MissingFileAndDirectory) {
  auto r = TFRecordReader::Open("/nonexistent/file.tfrecord");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(Contains(r.status(), "/nonexistent/file.tfrecord")) << r.status();
  TempDir dir;
  r = TFRecordReader::Open(dir.path());
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Contains(r.status(), dir.path())) << r.status();
}

TEST(TFRecordReaderTest, EmptyFiles) {
  TempDir dir;
  for (Compression c : kAllCompressions) {
    SCOPED_TRACE(Name(c));
    WriteRecords(dir.File("e"), {}, c);  // a compressed empty stream is not zero bytes
    ReadResult r = ReadFileRecords(dir.File("e"), c);
    EXPECT_TRUE(r.errors.empty());
    EXPECT_TRUE(r.records.empty());
    WriteFile(dir.File("zero"), "");
    r = ReadFileRecords(dir.File("zero"), c);
    EXPECT_TRUE(r.errors.empty());
    EXPECT_TRUE(r.records.empty());
  }
}

// ---- InputStream ----

class InputStreamTest : public ::testing::TestWithParam<std::tuple<Compression, size_t>> {
};

TEST_P(InputStreamTest, MatchesAModelUnderRandomOperations) {
  auto [c, buffer] = GetParam();
  const std::string content = RandomBytes(60000, 9) + std::string(20000, 'a');
  TempDir dir;
  WriteCompressed(dir.File("s"), content, c);
  auto s = InputStream::Open(dir.File("s"), c, buffer);
  ASSERT_TRUE(s.ok()) << s.status();
  InputStream& in = **s;
  uint64_t pos = 0;
  std::mt19937_64 rng(10);
  for (int step = 0; step < 1500; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    const uint64_t rest = content.size() - pos;
    size_t n = rng() % 3 == 0 ? rng() % 20000 : rng() % 50;
    switch (rng() % 6) {
      case 0: {
        auto v = in.Read(n);
        ASSERT_TRUE(v.ok()) << v.status();
        ASSERT_EQ(*v, content.substr(pos, n));
        pos += v->size();
        break;
      }
      case 1: {
        auto v = in.Peek(n);
        ASSERT_TRUE(v.ok());
        ASSERT_EQ(*v, content.substr(pos, n));
        break;
      }
      case 2: {
        std::string dst(n, '\0');
        auto k = in.ReadInto(dst.data(), n);
        ASSERT_TRUE(k.ok());
        ASSERT_EQ(*k, std::min<uint64_t>(n, rest));
        ASSERT_EQ(dst.substr(0, *k), content.substr(pos, *k));
        pos += *k;
        break;
      }
      case 3: {
        auto k = in.Skip(n);
        ASSERT_TRUE(k.ok());
        ASSERT_EQ(*k, std::min<uint64_t>(n, rest));
        pos += *k;
        break;
      }
      case 4: {
        std::string out = "prefix";
        auto k = in.ReadAppend(&out, n);
        ASSERT_TRUE(k.ok());
        ASSERT_EQ(out, "prefix" + content.substr(pos, n));
        pos += *k;
        break;
      }
      case 5: {
        if (rng() % 4 != 0) break;  // seeks are the expensive case when compressed
        uint64_t to = rng() % (content.size() + 1);
        ASSERT_TRUE(in.SeekTo(to).ok());
        pos = to;
        break;
      }
    }
    ASSERT_EQ(in.Tell(), pos);
  }
  EXPECT_EQ(in.SeekTo(content.size() + 1).code(), StatusCode::kOutOfRange);
}

INSTANTIATE_TEST_SUITE_P(
    AllCompressions, InputStreamTest,
    ::testing::Combine(::testing::ValuesIn(kAllCompressions),
                       ::testing::Values(size_t{1}, size_t{13}, size_t{4096},
                                         InputStream::kDefaultBufferSize)),
    [](const auto& info) {
      return Name(std::get<0>(info.param)) + "_buffer" +
             std::to_string(std::get<1>(info.param));
    });

TEST(InputStreamTest, ReadLineFollowsTensorFlow) {
  const std::string text = "a\nbb\r\n\n\r\nmid\rdle\nlast\r";
  for (Compression c : kAllCompressions) {
    for (size_t buffer : {size_t{1}, size_t{3}, size_t{1024}}) {
      SCOPED_TRACE(Name(c) + " buffer " + std::to_string(buffer));
      TempDir dir;
      WriteCompressed(dir.File("t"), text, c);
      auto s = InputStream::Open(dir.File("t"), c, buffer);
      ASSERT_TRUE(s.ok());
      std::vector<std::string> lines;
      std::string line;
      while (true) {
        auto got = (*s)->ReadLine(&line);
        ASSERT_TRUE(got.ok());
        if (!*got) break;
        lines.push_back(line);
      }
      EXPECT_EQ(lines, std::vector<std::string>({"a", "bb", "", "", "mid\rdle", "last"}));
    }
  }
}

TEST(InputStreamTest, ConcatenatedGzipMembersReadAsOne) {
  TempDir dir;
  WriteCompressed(dir.File("a"), Frame({"one", "two"}), Compression::kGzip);
  WriteCompressed(dir.File("b"), Frame({"three"}), Compression::kGzip);
  WriteFile(dir.File("ab"), ReadFile(dir.File("a")) + ReadFile(dir.File("b")));
  ReadResult r = ReadFileRecords(dir.File("ab"), Compression::kGzip, 7);
  EXPECT_TRUE(r.errors.empty());
  EXPECT_EQ(r.records, std::vector<std::string>({"one", "two", "three"}));
}

TEST(InputStreamTest, CountsBytesReadFromDisk) {
  TempDir dir;
  const std::string content = RandomBytes(700000, 11);
  for (Compression c : kAllCompressions) {
    SCOPED_TRACE(Name(c));
    WriteCompressed(dir.File("s"), content, c);
    const uint64_t disk = ReadFile(dir.File("s")).size();
    auto s = InputStream::Open(dir.File("s"), c);
    ASSERT_TRUE(s.ok());
    EXPECT_EQ((*s)->bytes_read_from_disk(), 0u);
    std::string all;
    ASSERT_EQ(*(*s)->ReadAppend(&all, 1 << 30), content.size());
    EXPECT_EQ(all, content);
    EXPECT_EQ((*s)->bytes_read_from_disk(), disk);
    EXPECT_EQ((*s)->Size().has_value(), c == Compression::kNone);
  }
}

TEST(InputStreamTest, HugeRequestsAllocateOnlyWhatExists) {
  const std::string content(1000, 'q');
  for (Compression c : kAllCompressions) {
    SCOPED_TRACE(Name(c));
    TempDir dir;
    WriteCompressed(dir.File("s"), content, c);
    auto s = InputStream::Open(dir.File("s"), c, 64);
    ASSERT_TRUE(s.ok());
    auto peek = (*s)->Peek(size_t{1} << 40);  // would abort under ASan if allocated
    ASSERT_TRUE(peek.ok());
    EXPECT_EQ(peek->size(), content.size());
    std::string out;
    auto k = (*s)->ReadAppend(&out, size_t{1} << 40);
    ASSERT_TRUE(k.ok());
    EXPECT_EQ(out, content);
    EXPECT_LT(out.capacity(), size_t{1} << 20);
  }
}

TEST(InputStreamTest, FromMemory) {
  const std::string bytes = Frame({"m1", "m2"});
  auto s = InputStream::FromMemory("memory-name", bytes, Compression::kNone, 3);
  auto v = s->Read(bytes.size());
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, bytes);
  EXPECT_EQ(s->name(), "memory-name");
  // A broken compressed memory stream names itself.
  auto z = InputStream::FromMemory("broken", bytes, Compression::kGzip);
  auto r = z->Read(10);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Contains(r.status(), "broken")) << r.status();
  // Errors are sticky.
  EXPECT_FALSE(z->Read(10).ok());
}

}  // namespace
}  // namespace sluice
