// The public TFRecord writer and Example builder (include/sluice/io.h): round trips
// through the TFRecord source for every compression, edge records, the close/flush
// contract, errors that name the file (unwritable paths, a faulting Env), and Examples
// that the parser and protobuf read back.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "core/logging.h"
#include "formats/example_parser.h"
#include "formats/proto/example.pb.h"
#include "sluice/dataset.h"
#include "sluice/io.h"
#include "testing/conformance.h"
#include "testing/fault_env.h"

namespace sluice {
namespace {

using io::ExampleBuilder;
using io::TFRecordOptions;
using io::TFRecordWriter;
using testing::TempDir;

bool Contains(const Status& s, const std::string& what) {
  return s.message().find(what) != std::string::npos;
}

std::string RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

// The records Dataset::TFRecord reads from `path` (fails the test on an error).
std::vector<std::string> ReadBack(const std::string& path,
                                  const std::string& compression) {
  Result<Compression> c = CompressionFromName(compression);
  EXPECT_TRUE(c.ok()) << c.status();
  Result<std::vector<Element>> elements = Dataset::TFRecord({path}, *c).Collect();
  EXPECT_TRUE(elements.ok()) << elements.status();
  std::vector<std::string> out;
  if (!elements.ok()) return out;
  for (const Element& e : *elements) out.push_back(e[0].scalar<std::string>());
  return out;
}

TFRecordWriter MustOpen(const std::string& path, const std::string& compression = "") {
  Result<TFRecordWriter> w = TFRecordWriter::Open(path, {compression});
  EXPECT_TRUE(w.ok()) << w.status();
  return std::move(*w);
}

class WriterRoundTrip : public ::testing::TestWithParam<std::string> {};

TEST_P(WriterRoundTrip, ReadsBackThroughTheTFRecordSource) {
  TempDir dir;
  const std::string path = dir.File("r.tfrecord");
  // An empty record, small ones, and records larger than the writer's 256 KiB buffer.
  const std::vector<std::string> records = {"",      "a",
                                            "hello", RandomBytes(1000, 1),
                                            "",      RandomBytes(3 << 20, 2),
                                            "tail",  RandomBytes(300 << 10, 3)};
  TFRecordWriter w = MustOpen(path, GetParam());
  for (const std::string& r : records) ASSERT_TRUE(w.Write(r).ok());
  EXPECT_EQ(w.records_written(), static_cast<int64_t>(records.size()));
  ASSERT_TRUE(w.Close().ok());
  EXPECT_EQ(ReadBack(path, GetParam()), records);

  const std::string bytes = testing::ReadFile(path);
  if (GetParam() == "GZIP") {
    ASSERT_GE(bytes.size(), 2u);
    EXPECT_EQ(static_cast<unsigned char>(bytes[0]), 0x1f);  // gzip magic
    EXPECT_EQ(static_cast<unsigned char>(bytes[1]), 0x8b);
  } else if (GetParam() == "ZLIB") {
    ASSERT_GE(bytes.size(), 2u);
    EXPECT_EQ(static_cast<unsigned char>(bytes[0]) & 0x0f, 8);  // deflate method
  } else {
    size_t framed = 0;
    for (const std::string& r : records) framed += r.size() + 16;
    EXPECT_EQ(bytes.size(), framed);
  }
}

INSTANTIATE_TEST_SUITE_P(Compressions, WriterRoundTrip,
                         ::testing::Values("", "NONE", "GZIP", "ZLIB"),
                         [](const auto& info) {
                           return info.param.empty() ? std::string("Empty") : info.param;
                         });

TEST(TFRecordWriter, OnlyAnEmptyRecord) {
  TempDir dir;
  TFRecordWriter w = MustOpen(dir.File("r"));
  ASSERT_TRUE(w.Write("").ok());
  ASSERT_TRUE(w.Close().ok());
  EXPECT_EQ(ReadBack(dir.File("r"), ""), std::vector<std::string>{""});
  EXPECT_EQ(testing::ReadFile(dir.File("r")).size(), 16u);
}

TEST(TFRecordWriter, NoRecordsIsAnEmptyFile) {
  TempDir dir;
  for (std::string c : {"", "GZIP", "ZLIB"}) {
    const std::string path = dir.File("r" + c);
    ASSERT_TRUE(MustOpen(path, c).Close().ok());
    EXPECT_TRUE(ReadBack(path, c).empty()) << c;
  }
}

TEST(TFRecordWriter, CloseIsIdempotentAndFinal) {
  TempDir dir;
  const std::string path = dir.File("r");
  TFRecordWriter w = MustOpen(path, "GZIP");
  ASSERT_TRUE(w.Write("x").ok());
  ASSERT_TRUE(w.Close().ok());
  EXPECT_TRUE(w.Close().ok());
  EXPECT_TRUE(w.Close().ok());
  Status late = w.Write("late");
  EXPECT_EQ(late.code(), StatusCode::kFailedPrecondition) << late;
  EXPECT_TRUE(Contains(late, path)) << late;
  EXPECT_EQ(w.Flush().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(ReadBack(path, "GZIP"), std::vector<std::string>{"x"});
}

TEST(TFRecordWriter, FlushMakesRecordsReadableBeforeClose) {
  TempDir dir;
  const std::string path = dir.File("r");
  TFRecordWriter w = MustOpen(path);
  ASSERT_TRUE(w.Write("first").ok());
  ASSERT_TRUE(w.Write("second").ok());
  ASSERT_TRUE(w.Flush().ok());
  EXPECT_EQ(ReadBack(path, ""), (std::vector<std::string>{"first", "second"}));
  ASSERT_TRUE(w.Close().ok());
}

TEST(TFRecordWriter, DestructorAndMoveAssignmentClose) {
  TempDir dir;
  {
    TFRecordWriter w = MustOpen(dir.File("a"), "ZLIB");
    ASSERT_TRUE(w.Write("kept").ok());
  }  // no Close(): the destructor finishes the zlib stream
  EXPECT_EQ(ReadBack(dir.File("a"), "ZLIB"), std::vector<std::string>{"kept"});

  TFRecordWriter w = MustOpen(dir.File("b"), "GZIP");
  ASSERT_TRUE(w.Write("b").ok());
  w = MustOpen(dir.File("c"));  // closes b
  EXPECT_EQ(ReadBack(dir.File("b"), "GZIP"), std::vector<std::string>{"b"});
  EXPECT_EQ(w.path(), dir.File("c"));

  TFRecordWriter moved = std::move(w);
  ASSERT_TRUE(moved.Write("c").ok());
  EXPECT_EQ(w.Write("x").code(), StatusCode::kFailedPrecondition);  // NOLINT: moved from
  ASSERT_TRUE(moved.Close().ok());
  EXPECT_EQ(ReadBack(dir.File("c"), ""), std::vector<std::string>{"c"});
}

TEST(TFRecordWriter, UnwritablePathIsNamed) {
  TempDir dir;
  for (const std::string& path :
       {std::string("/nonexistent-dir/x.tfrecord"), dir.path() /* a directory */}) {
    Result<TFRecordWriter> w = TFRecordWriter::Open(path);
    ASSERT_FALSE(w.ok()) << path;
    EXPECT_TRUE(Contains(w.status(), path)) << w.status();
    EXPECT_TRUE(Contains(w.status(), "TFRecordWriter")) << w.status();
  }
  Result<TFRecordWriter> missing = TFRecordWriter::Open("/nonexistent-dir/x.tfrecord");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

TEST(TFRecordWriter, UnknownCompressionIsRefused) {
  TempDir dir;
  Result<TFRecordWriter> w = TFRecordWriter::Open(dir.File("r"), {"LZ4"});
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(w.status(), "LZ4")) << w.status();
  EXPECT_TRUE(Contains(w.status(), dir.File("r"))) << w.status();
  // Names differ from the reader's in case only: the reader refuses "gzip", so does this.
  EXPECT_FALSE(TFRecordWriter::Open(dir.File("r"), {"gzip"}).ok());
}

TEST(TFRecordWriter, WritesGoThroughTheEnvAndFaultsNameTheFile) {
  TempDir dir;
  for (std::string c : {"", "GZIP"}) {
    SCOPED_TRACE(c);
    const std::string path = dir.File("full" + c);
    testing::FaultEnv env;
    env.Set(path, {.write_fail_after = 1000});  // the disk fills after 1000 bytes
    TFRecordOptions options{c, &env};
    Result<TFRecordWriter> w = TFRecordWriter::Open(path, options);
    ASSERT_TRUE(w.ok()) << w.status();
    // The buffered bytes reach the Env at a Write, a Flush or the Close; the first error
    // names the file, and later calls keep failing.
    Status first;
    for (int i = 0; i < 20 && first.ok(); ++i) {
      first = w->Write(RandomBytes(100 << 10, i));
    }
    if (first.ok()) first = w->Flush();
    ASSERT_FALSE(first.ok());
    EXPECT_TRUE(Contains(first, path)) << first;
    EXPECT_TRUE(Contains(first, "TFRecordWriter")) << first;
    EXPECT_EQ(w->Write("more"), first);  // sticky: the same error again
    Status closed = w->Close();
    EXPECT_FALSE(closed.ok());
    EXPECT_TRUE(Contains(closed, path)) << closed;
  }
}

TEST(TFRecordWriter, DestructorLogsTheErrorItCannotReturn) {
  TempDir dir;
  const std::string path = dir.File("full");
  testing::FaultEnv env;
  env.Set(path, {.write_fail_after = 10});
  if (!LogEnabled(LogLevel::kError))
    SetLogLevel(LogLevel::kError);  // SLUICE_LOG_LEVEL=off
  ::testing::internal::CaptureStderr();
  {
    Result<TFRecordWriter> w = TFRecordWriter::Open(path, {"", &env});
    ASSERT_TRUE(w.ok()) << w.status();
    ASSERT_TRUE(w->Write(std::string(100, 'x')).ok());  // buffered: fails at the close
  }
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find(path), std::string::npos) << log;
  EXPECT_NE(log.find("No space left"), std::string::npos) << log;
}

// ---- ExampleBuilder ----

TEST(ExampleBuilder, ParsesBackWithTheExampleParser) {
  const std::vector<int64_t> ids = {7, -1, int64_t{1} << 40};
  const std::vector<std::string> words = {"one", std::string("\0two", 4)};
  ExampleBuilder b;
  b.AddInt64("ids", ids)
      .AddInt64("label", 3)
      .AddFloat("weights", {0.5f, -2.25f})
      .AddFloat("scale", 1.5f)
      .AddBytes("words", words)
      .AddBytes("image", std::string_view("\xff\xd8jpeg", 6))
      .AddBytes("pair", {"a", "bc"});
  const std::string serialized = b.Serialize();

  auto fixed = [](std::string key, DType dt, Shape shape) {
    FeatureConfig f;
    f.key = std::move(key);
    f.dtype = dt;
    f.shape = std::move(shape);
    return f;
  };
  FeatureConfig var = fixed("words", DType::kString, Shape{});
  var.kind = FeatureKind::kVar;
  std::vector<FeatureConfig> features = {fixed("ids", DType::kInt64, Shape{3}),
                                         fixed("label", DType::kInt64, Shape{}),
                                         fixed("weights", DType::kFloat32, Shape{2}),
                                         fixed("scale", DType::kFloat32, Shape{}),
                                         var,
                                         fixed("image", DType::kString, Shape{}),
                                         fixed("pair", DType::kString, Shape{2})};
  Result<std::vector<Tensor>> t =
      ParseExamples({&serialized, 1}, /*batched=*/false, features, "test");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(std::vector<int64_t>((*t)[0].flat<int64_t>().begin(),
                                 (*t)[0].flat<int64_t>().end()),
            ids);
  EXPECT_EQ((*t)[1].scalar<int64_t>(), 3);
  EXPECT_EQ((*t)[2].flat<float>()[0], 0.5f);
  EXPECT_EQ((*t)[2].flat<float>()[1], -2.25f);
  EXPECT_EQ((*t)[3].scalar<float>(), 1.5f);
  ASSERT_EQ((*t)[4].shape(), Shape{2});
  EXPECT_EQ((*t)[4].flat<std::string>()[1], words[1]);
  EXPECT_EQ((*t)[5].scalar<std::string>(), std::string("\xff\xd8jpeg", 6));
  EXPECT_EQ((*t)[6].flat<std::string>()[1], "bc");
}

TEST(ExampleBuilder, SameBytesAsProtobufAndKeyOrderIndependent) {
  ExampleBuilder a, b;
  a.AddInt64("z", {1, 2}).AddBytes("a", "x").AddFloat("m", 2.0f);
  b.AddFloat("m", 2.0f).AddBytes("a", "x").AddInt64("z", {1, 2});
  EXPECT_EQ(a.Serialize(), b.Serialize());

  tensorflow::Example ex;
  ASSERT_TRUE(ex.ParseFromString(a.Serialize()));
  const auto& f = ex.features().feature();
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f.at("z").int64_list().value_size(), 2);
  EXPECT_EQ(f.at("z").int64_list().value(1), 2);
  EXPECT_EQ(f.at("a").bytes_list().value(0), "x");
  EXPECT_EQ(f.at("m").float_list().value(0), 2.0f);
}

TEST(ExampleBuilder, AddingAKeyAgainReplacesItAndClearEmpties) {
  ExampleBuilder b;
  b.AddInt64("k", {1, 2, 3}).AddBytes("k", "now bytes");
  tensorflow::Example ex;
  ASSERT_TRUE(ex.ParseFromString(b.Serialize()));
  ASSERT_EQ(ex.features().feature().size(), 1u);
  const tensorflow::Feature& k = ex.features().feature().at("k");
  EXPECT_EQ(k.kind_case(), tensorflow::Feature::kBytesList);
  EXPECT_EQ(k.bytes_list().value(0), "now bytes");

  b.Clear();
  EXPECT_EQ(b.Serialize(), "");  // an empty Example
  EXPECT_EQ(ExampleBuilder().Serialize(), "");
}

TEST(ExampleBuilder, WrittenExamplesParseInAPipeline) {
  TempDir dir;
  const std::string path = dir.File("ex.tfrecord.gz");
  {
    TFRecordWriter w = MustOpen(path, "GZIP");
    for (int64_t id = 0; id < 10; ++id) {
      ExampleBuilder ex;
      ex.AddInt64("x", {3 * id, 3 * id + 1, 3 * id + 2}).AddInt64("label", id % 4);
      ASSERT_TRUE(w.Write(ex.Serialize()).ok());
    }
    ASSERT_TRUE(w.Close().ok());
  }
  Result<Function> parse = Function::Kernel(
      "parse_example",
      {{"keys", std::vector<std::string>{"x", "label"}},
       {"kinds", std::vector<std::string>{"fixed", "fixed"}},
       {"dtypes", std::vector<DType>{DType::kInt64, DType::kInt64}},
       {"shapes", std::vector<PartialShape>{PartialShape{3}, PartialShape{}}}});
  ASSERT_TRUE(parse.ok()) << parse.status();
  Result<std::vector<Element>> got =
      Dataset::TFRecord({path}, Compression::kGzip).Map(*parse).Collect();
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 10u);
  for (int64_t id = 0; id < 10; ++id) {
    const Element& e = (*got)[id];
    EXPECT_EQ(e[0].flat<int64_t>()[2], 3 * id + 2);
    EXPECT_EQ(e[1].scalar<int64_t>(), id % 4);
  }
}

}  // namespace
}  // namespace sluice
