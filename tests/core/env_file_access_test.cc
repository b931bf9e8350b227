// The file-system seam (src/core/env.h): faults injected through FaultEnv reach every
// file source with errors naming the file and offset and nothing else lost; confinement
// (Options::files) refuses reads and writes outside the roots; non-regular files are
// refused; the default RAM budget's memory figure.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <thread>

#include "api/dataset_internal.h"
#include "core/env.h"
#include "formats/idx.h"
#include "formats/tfrecord.h"
#include "runtime/resources.h"
#include "sluice/serialize.h"
#include "testing/conformance.h"
#include "testing/fault_env.h"

namespace sluice {
namespace {

using testing::FaultEnv;
using testing::FileFault;
using testing::TempDir;
using testing::WriteFile;

void WriteTFRecord(const std::string& path, const std::vector<std::string>& records) {
  auto w = TFRecordWriter::Open(path);
  ASSERT_TRUE(w.ok()) << w.status();
  for (const std::string& r : records) ASSERT_TRUE((*w)->Write(r).ok());
  ASSERT_TRUE((*w)->Close().ok());
}

std::vector<std::string> Records(const std::string& file_tag, int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i)
    out.push_back(file_tag + "-" + std::to_string(i) + std::string(50, 'x'));
  return out;
}

struct Pass {
  std::vector<Element> elements;
  std::vector<Status> errors;
};

// Every element and every error of a full pass (errors do not stop it; an op that cannot
// go on ends its input).
Pass Drain(const Dataset& ds, Env* env, int max_errors = 20) {
  Pass run;
  Options o;
  o.env = env;
  o.inline_execution = true;
  auto it = MakeIteratorAsBuilt(ds, o);
  if (!it.ok()) {
    run.errors.push_back(it.status());
    return run;
  }
  while (true) {
    auto r = (*it)->GetNext();
    if (!r.ok()) {
      run.errors.push_back(r.status());
      if (static_cast<int>(run.errors.size()) >= max_errors) break;
      continue;
    }
    if (!r->has_value()) break;
    run.elements.push_back(std::move(**r));
  }
  return run;
}

std::vector<std::string> StringsOf(const std::vector<Element>& es) {
  std::vector<std::string> out;
  for (const Element& e : es) out.push_back(e[0].scalar<std::string>());
  return out;
}

bool Contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

class RecordFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int f = 0; f < 3; ++f) {
      files_.push_back(dir_.File("f" + std::to_string(f) + ".tfrecord"));
      WriteTFRecord(files_.back(), Records("f" + std::to_string(f), 20));
    }
  }
  std::vector<std::string> All() const {
    std::vector<std::string> out;
    for (int f = 0; f < 3; ++f) {
      for (const std::string& r : Records("f" + std::to_string(f), 20)) out.push_back(r);
    }
    return out;
  }
  TempDir dir_;
  std::vector<std::string> files_;
};

TEST_F(RecordFaultTest, EioNamesFileAndOffsetAndOtherFilesStillArrive) {
  FaultEnv env;
  env.Set(files_[1], {.eio_after = 300});
  Pass run = Drain(Dataset::TFRecord(files_), &env);
  ASSERT_EQ(run.errors.size(), 1u);
  const std::string msg = run.errors[0].ToString();
  EXPECT_TRUE(Contains(msg, files_[1])) << msg;
  EXPECT_TRUE(Contains(msg, "offset 300")) << msg;
  EXPECT_TRUE(Contains(msg, "TFRecord")) << msg;
  // Files 0 and 2 whole, file 1 up to the damage.
  std::vector<std::string> got = StringsOf(run.elements);
  std::vector<std::string> want = All();
  for (const std::string& r : Records("f0", 20))
    EXPECT_NE(std::count(got.begin(), got.end(), r), 0) << r;
  for (const std::string& r : Records("f2", 20))
    EXPECT_NE(std::count(got.begin(), got.end(), r), 0) << r;
  EXPECT_GT(got.size(), 40u);
  EXPECT_LT(got.size(), want.size());

  // Under ignore_errors the pass ends normally with the same elements.
  Options o;
  o.env = &env;
  auto it = MakeIteratorAsBuilt(Dataset::TFRecord(files_).IgnoreErrors(), o);
  ASSERT_TRUE(it.ok());
  size_t n = 0;
  while (true) {
    auto r = (*it)->GetNext();
    ASSERT_TRUE(r.ok()) << r.status();
    if (!r->has_value()) break;
    ++n;
  }
  EXPECT_EQ(n, got.size());
}

TEST_F(RecordFaultTest, ShortAndSlowReadsAreRetriedNotErrors) {
  FaultEnv env;
  for (const std::string& f : files_) env.Set(f, {.max_read = 7, .delay_us = 50});
  Pass run = Drain(Dataset::TFRecord(files_), &env);
  EXPECT_TRUE(run.errors.empty()) << run.errors[0];
  EXPECT_EQ(StringsOf(run.elements), All());
  EXPECT_GT(env.faulty_reads(), 100);  // the reads really were short
  // The same through a small read buffer and a compressed-looking path: TextLine.
  const std::string text = dir_.File("t.txt");
  WriteFile(text, "alpha\nbeta\ngamma\n");
  env.Set(text, {.max_read = 1});
  Pass lines = Drain(Dataset::TextLine({text}), &env);
  EXPECT_TRUE(lines.errors.empty());
  EXPECT_EQ(StringsOf(lines.elements),
            (std::vector<std::string>{"alpha", "beta", "gamma"}));
}

TEST_F(RecordFaultTest, FileShrinkingBetweenStatAndReadIsDataLossNamingIt) {
  FaultEnv env;
  env.Set(files_[0], {.shrink_to = 500});
  Pass run = Drain(Dataset::TFRecord(files_), &env);
  ASSERT_EQ(run.errors.size(), 1u);
  EXPECT_EQ(run.errors[0].code(), StatusCode::kDataLoss) << run.errors[0];
  EXPECT_TRUE(Contains(run.errors[0].ToString(), files_[0])) << run.errors[0];
  EXPECT_TRUE(Contains(run.errors[0].ToString(), "offset")) << run.errors[0];
  std::vector<std::string> got = StringsOf(run.elements);
  for (const std::string& r : Records("f1", 20))
    EXPECT_NE(std::count(got.begin(), got.end(), r), 0);
  for (const std::string& r : Records("f2", 20))
    EXPECT_NE(std::count(got.begin(), got.end(), r), 0);
}

TEST_F(RecordFaultTest, OpenFailureIsReportedOnceAndSkipped) {
  FaultEnv env;
  env.Set(files_[2], {.fail_open = true});
  Pass run = Drain(Dataset::TFRecord(files_), &env);
  ASSERT_EQ(run.errors.size(), 1u);
  EXPECT_TRUE(Contains(run.errors[0].ToString(), files_[2])) << run.errors[0];
  EXPECT_EQ(run.elements.size(), 40u);
}

TEST_F(RecordFaultTest, CountingEnvAndStatsCountBytesPerFile) {
  CountingEnv env(Env::Default());
  Options o;
  o.env = &env;
  auto it = MakeIteratorAsBuilt(Dataset::TFRecord(files_), o);
  ASSERT_TRUE(it.ok());
  while (true) {
    auto r = (*it)->GetNext();
    ASSERT_TRUE(r.ok());
    if (!r->has_value()) break;
  }
  auto per_file = env.BytesReadPerFile();
  uint64_t total = 0;
  for (const std::string& f : files_) {
    struct stat st;
    ASSERT_EQ(stat(f.c_str(), &st), 0);
    EXPECT_EQ(per_file[f], static_cast<uint64_t>(st.st_size)) << f;
    total += static_cast<uint64_t>(st.st_size);
  }
  EXPECT_EQ(env.TotalBytesRead(), total);
  int64_t stats_bytes = 0;
  for (const IteratorStats& s : (*it)->Stats()) {
    if (s.name == "TFRecord") stats_bytes += s.file_bytes_read;
  }
  EXPECT_EQ(stats_bytes, static_cast<int64_t>(total));
}

TEST(FaultEnvTest, TextLineAndFixedLengthErrorsNameFileAndOffset) {
  TempDir dir;
  const std::string text = dir.File("a.txt"), text2 = dir.File("b.txt");
  WriteFile(text, std::string(1000, 'a') + "\n" + std::string(1000, 'b') + "\n");
  WriteFile(text2, "ok\n");
  FaultEnv env;
  env.Set(text, {.eio_after = 1500});
  Pass run = Drain(Dataset::TextLine({text, text2}), &env);
  ASSERT_EQ(run.errors.size(), 1u);
  EXPECT_TRUE(Contains(run.errors[0].ToString(), text)) << run.errors[0];
  EXPECT_TRUE(Contains(run.errors[0].ToString(), "offset 1500")) << run.errors[0];
  ASSERT_EQ(run.elements.size(), 2u);  // the first line, then b.txt's
  EXPECT_EQ(run.elements[1][0].scalar<std::string>(), "ok");

  const std::string fixed = dir.File("r.bin"), fixed2 = dir.File("r2.bin");
  WriteFile(fixed, std::string(400, 'r'));
  WriteFile(fixed2, std::string(100, 's'));
  env.Set(fixed, {.eio_after = 250});
  Pass recs = Drain(Dataset::FixedLengthRecord({fixed, fixed2}, 100), &env);
  ASSERT_EQ(recs.errors.size(), 1u);
  EXPECT_TRUE(Contains(recs.errors[0].ToString(), fixed)) << recs.errors[0];
  EXPECT_TRUE(Contains(recs.errors[0].ToString(), "offset 250")) << recs.errors[0];
  EXPECT_EQ(recs.elements.size(), 3u);  // records 0 and 1, then r2.bin's
}

Tensor Matrix(int rows, int cols) {
  Tensor t = Tensor::Allocate(DType::kUInt8, Shape{rows, cols}).value();
  for (int i = 0; i < rows * cols; ++i)
    t.mutable_data<uint8_t>()[i] = static_cast<uint8_t>(i);
  return t;
}

TEST(FaultEnvTest, IdxReadErrorNamesFileAndOffsetAfterGoodRows) {
  TempDir dir;
  const std::string path = dir.File("m.idx");
  WriteFile(path, EncodeIdx(Matrix(10, 100)).value());  // header 12 bytes, rows of 100
  FaultEnv env;
  env.Set(path, {.eio_after = 12 + 350, .max_read = 64});
  Dataset ds = Dataset::Idx(path);
  ASSERT_TRUE(ds.ok()) << ds.status();
  Pass run = Drain(ds, &env);
  ASSERT_EQ(run.errors.size(), 1u);
  const std::string msg = run.errors[0].ToString();
  EXPECT_TRUE(Contains(msg, path)) << msg;
  EXPECT_TRUE(Contains(msg, "offset")) << msg;
  EXPECT_EQ(run.elements.size(), 3u);  // rows 0..2 precede the damage
}

TEST(FaultEnvTest, ImageFolderReadOfImageBytes) {
  TempDir dir;
  mkdir(dir.File("cat").c_str(), 0755);
  mkdir(dir.File("dog").c_str(), 0755);
  WriteFile(dir.File("cat/1.jpg"), "c1");
  WriteFile(dir.File("cat/2.jpg"), "c2");
  WriteFile(dir.File("dog/1.jpg"), "d1");
  FaultEnv env;
  env.Set(dir.File("cat/2.jpg"), {.eio_after = 0});
  auto read = Function::Kernel("read_file", {});
  ASSERT_TRUE(read.ok());
  Pass run = Drain(Dataset::ImageFolder(dir.path()).Map(*read), &env);
  ASSERT_EQ(run.errors.size(), 1u);
  EXPECT_TRUE(Contains(run.errors[0].ToString(), dir.File("cat/2.jpg"))) << run.errors[0];
  EXPECT_TRUE(Contains(run.errors[0].ToString(), "offset 0")) << run.errors[0];
  ASSERT_EQ(run.elements.size(), 2u);
  EXPECT_EQ(run.elements[0][0].scalar<std::string>(), "c1");
  EXPECT_EQ(run.elements[1][0].scalar<std::string>(), "d1");
}

TEST(FaultEnvTest, CacheWriteFailureDeliversEverythingAndPublishesNothing) {
  TempDir dir;
  const std::string cache = dir.File("c");
  FaultEnv env;
  env.Set(cache + ".tmp-", {.write_fail_after = 10});
  Pass run = Drain(Dataset::Range(1000).Cache(cache), &env);
  ASSERT_EQ(run.elements.size(), 1000u);
  ASSERT_EQ(run.errors.size(), 1u);
  EXPECT_TRUE(Contains(run.errors[0].ToString(), cache + ".tmp-")) << run.errors[0];
  struct stat st;
  EXPECT_NE(stat((cache + ".sluice-cache").c_str(), &st), 0);
  // A good pass writes it; a read fault in it is DataLoss naming the file and offset.
  Pass good = Drain(Dataset::Range(1000).Cache(cache), Env::Default());
  ASSERT_TRUE(good.errors.empty());
  ASSERT_EQ(stat((cache + ".sluice-cache").c_str(), &st), 0);
  FaultEnv bad;
  bad.Set(cache + ".sluice-cache", {.eio_after = 100});
  Pass read = Drain(Dataset::Range(1000).Cache(cache), &bad);
  ASSERT_FALSE(read.errors.empty());
  EXPECT_TRUE(Contains(read.errors[0].ToString(), cache + ".sluice-cache"))
      << read.errors[0];
  EXPECT_TRUE(Contains(read.errors[0].ToString(), "offset")) << read.errors[0];
}

// ---- confinement ----

class ConfinedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = inside_.path();
    secret_ = outside_.File("secret.tfrecord");
    WriteTFRecord(secret_, {"secret"});
    WriteTFRecord(inside_.File("ok.tfrecord"), {"ok"});
    WriteFile(outside_.File("secret.txt"), "SECRETSECRET\n");
    ASSERT_EQ(symlink(outside_.path().c_str(), inside_.File("link").c_str()), 0);
  }
  Options Confined() const {
    Options o;
    o.files.allowed_roots = std::vector<std::string>{root_};
    return o;
  }
  // The paths to `name` in the outside directory: direct, through "..", through a
  // symlink inside the root.
  std::vector<std::string> Escapes(const std::string& name) const {
    const std::string base = outside_.path().substr(outside_.path().rfind('/') + 1);
    return {outside_.File(name), root_ + "/../" + base + "/" + name,
            inside_.File("link/" + name)};
  }
  static void ExpectDenied(const Status& s, const std::string& path) {
    EXPECT_EQ(s.code(), StatusCode::kPermissionDenied) << s;
    EXPECT_TRUE(Contains(s.ToString(), path)) << s;
    EXPECT_TRUE(Contains(s.ToString(), "allowed roots")) << s;
  }
  TempDir inside_, outside_;
  std::string root_, secret_;
};

TEST_F(ConfinedTest, RecordSourcesOutsideTheRootsAreRefused) {
  for (const std::string& p : Escapes("secret.tfrecord")) {
    Pass run = Drain(Dataset::TFRecord({p}).WithOptions(Confined()), Env::Default());
    ASSERT_EQ(run.errors.size(), 1u) << p;
    ExpectDenied(run.errors[0], p);
    EXPECT_TRUE(run.elements.empty());
  }
  for (const std::string& p : Escapes("secret.txt")) {
    Pass text = Drain(Dataset::TextLine({p}).WithOptions(Confined()), Env::Default());
    ASSERT_EQ(text.errors.size(), 1u);
    ExpectDenied(text.errors[0], p);
    Pass fixed =
        Drain(Dataset::FixedLengthRecord({p}, 4).WithOptions(Confined()), Env::Default());
    ASSERT_EQ(fixed.errors.size(), 1u);
    ExpectDenied(fixed.errors[0], p);
  }
  // Inside the root: read.
  Pass ok =
      Drain(Dataset::TFRecord({inside_.File("ok.tfrecord")}).WithOptions(Confined()),
            Env::Default());
  EXPECT_TRUE(ok.errors.empty());
  EXPECT_EQ(ok.elements.size(), 1u);
}

TEST_F(ConfinedTest, SpecsAreConfinedWhileBuiltToo) {
  WriteFile(outside_.File("m.idx"), EncodeIdx(Matrix(2, 2)).value());
  WriteFile(outside_.File("vocab.txt"), "a\nb\n");
  mkdir(outside_.File("cls").c_str(), 0755);
  WriteFile(outside_.File("cls/x.jpg"), "x");
  const std::string options =
      R"("options": {"files": {"allowed_roots": [")" + root_ + R"("]}})";
  auto spec = [&](const std::string& dataset) {
    return ParsePipelineSpec("{" + options + R"(, "dataset": )" + dataset + "}");
  };
  for (const std::string& p : Escapes("m.idx")) {
    auto ds = spec(R"({"op": "Idx", "attrs": {"path": ")" + p + R"("}})");
    ASSERT_FALSE(ds.ok());
    ExpectDenied(ds.status(), p);
  }
  for (const std::string& p : Escapes("*.txt")) {
    auto ds = spec(R"({"op": "ListFiles", "attrs": {"patterns": [")" + p + R"("]}})");
    ASSERT_FALSE(ds.ok()) << p;
    EXPECT_EQ(ds.status().code(), StatusCode::kPermissionDenied) << ds.status();
  }
  for (const std::string& p : {std::string("/"), outside_.path(), inside_.File("link")}) {
    auto ds = spec(R"({"op": "ImageFolder", "attrs": {"root": ")" + p + R"("}})");
    ASSERT_FALSE(ds.ok());
    ExpectDenied(ds.status(), p);
  }
  auto vocab = spec(R"({"op": "Map", "input": {"op": "Range", "attrs": {"stop": 2}},
      "functions": [{"kernel": "vocab_lookup", "attrs": {"vocab_file": ")" +
                    outside_.File("vocab.txt") + R"("}}]})");
  ASSERT_FALSE(vocab.ok());
  ExpectDenied(vocab.status(), outside_.File("vocab.txt"));
  // The same specs without the option build.
  EXPECT_TRUE(ParsePipelineSpec(R"({"dataset": {"op": "Idx", "attrs": {"path": ")" +
                                outside_.File("m.idx") + R"("}}})")
                  .ok());
}

TEST_F(ConfinedTest, ListFilesAndImageFolderBuiltUnconfinedRefuseAtIteration) {
  Pass files =
      Drain(Dataset::ListFiles({outside_.File("*")}, false).WithOptions(Confined()),
            Env::Default());
  ASSERT_FALSE(files.errors.empty());
  ExpectDenied(files.errors[0], outside_.path());
  EXPECT_TRUE(files.elements.empty());
  mkdir(outside_.File("cls").c_str(), 0755);
  WriteFile(outside_.File("cls/x.jpg"), "x");
  Pass images = Drain(Dataset::ImageFolder(outside_.path()).WithOptions(Confined()),
                      Env::Default());
  ASSERT_FALSE(images.errors.empty());
  EXPECT_EQ(images.errors[0].code(), StatusCode::kPermissionDenied);
  EXPECT_TRUE(images.elements.empty());
  // read_file of a path outside the roots.
  auto read = Function::Kernel("read_file", {});
  Pass bytes =
      Drain(Dataset::FromTensors(Element{Tensor::Scalar(outside_.File("secret.txt"))})
                .Map(*read)
                .WithOptions(Confined()),
            Env::Default());
  ASSERT_EQ(bytes.errors.size(), 1u);
  ExpectDenied(bytes.errors[0], outside_.File("secret.txt"));
}

TEST_F(ConfinedTest, CacheWritesOnlyUnderWriteRoots) {
  // Reads confined, no write root: no cache file anywhere, the elements still arrive.
  Pass run = Drain(Dataset::Range(5).Cache(inside_.File("c")).WithOptions(Confined()),
                   Env::Default());
  EXPECT_EQ(run.elements.size(), 5u);
  ASSERT_EQ(run.errors.size(), 1u);
  EXPECT_EQ(run.errors[0].code(), StatusCode::kPermissionDenied) << run.errors[0];
  EXPECT_TRUE(Contains(run.errors[0].ToString(), "allowed write roots")) << run.errors[0];
  // A write root: inside it is written, outside (also through the symlink) refused.
  Options o = Confined();
  o.files.allowed_write_roots = std::vector<std::string>{inside_.File("w")};
  mkdir(inside_.File("w").c_str(), 0755);
  Pass ok =
      Drain(Dataset::Range(5).Cache(inside_.File("w/c")).WithOptions(o), Env::Default());
  EXPECT_TRUE(ok.errors.empty());
  struct stat st;
  EXPECT_EQ(stat(inside_.File("w/c.sluice-cache").c_str(), &st), 0);
  for (const std::string& p :
       {outside_.File("c"), inside_.File("link/c"), inside_.File("w/../c")}) {
    Pass bad = Drain(Dataset::Range(5).Cache(p).WithOptions(o), Env::Default());
    EXPECT_EQ(bad.elements.size(), 5u);
    ASSERT_EQ(bad.errors.size(), 1u) << p;
    EXPECT_EQ(bad.errors[0].code(), StatusCode::kPermissionDenied) << bad.errors[0];
  }
  EXPECT_NE(stat(outside_.File("c.sluice-cache").c_str(), &st), 0);
}

TEST_F(ConfinedTest, SaveWritesOnlyUnderWriteRoots) {
  // Dataset::Save goes through the pipeline's confined Env, as Cache does.
  Status denied = Dataset::Range(5).WithOptions(Confined()).Save(inside_.File("s"));
  EXPECT_EQ(denied.code(), StatusCode::kPermissionDenied) << denied;
  struct stat st;
  EXPECT_NE(stat(inside_.File("s").c_str(), &st), 0);
  Options o = Confined();
  o.files.allowed_write_roots = std::vector<std::string>{inside_.File("w")};
  mkdir(inside_.File("w").c_str(), 0755);
  Status ok = Dataset::Range(5).WithOptions(o).Save(inside_.File("w/s"));
  ASSERT_TRUE(ok.ok()) << ok;
  EXPECT_EQ(Drain(Dataset::Load(inside_.File("w/s")), Env::Default()).elements.size(), 5u);
  Status outside = Dataset::Range(5).WithOptions(o).Save(outside_.File("s"));
  EXPECT_EQ(outside.code(), StatusCode::kPermissionDenied) << outside;
  EXPECT_NE(stat(outside_.File("s").c_str(), &st), 0);
}

TEST_F(ConfinedTest, OptionsRoundTripThroughSpecsAndGraphDefs) {
  auto ds = ParsePipelineSpec(R"({"options": {"files": {"allowed_roots": [")" + root_ +
                              R"("], "allowed_write_roots": []}},
      "dataset": {"op": "Range", "attrs": {"stop": 3}}})");
  ASSERT_TRUE(ds.ok()) << ds.status();
  EXPECT_EQ(ds->options().files.allowed_roots, std::vector<std::string>{root_});
  EXPECT_EQ(ds->options().files.allowed_write_roots, std::vector<std::string>{});
  for (GraphFormat f : {GraphFormat::kBinary, GraphFormat::kJson}) {
    auto bytes = SerializeDataset(*ds, f);
    ASSERT_TRUE(bytes.ok());
    auto again = DeserializeDataset(*bytes, f);
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(again->options().files.allowed_roots, std::vector<std::string>{root_});
    EXPECT_EQ(again->options().files.allowed_write_roots, std::vector<std::string>{});
  }
  auto bad = ParsePipelineSpec(R"({"options": {"files": {"allowed_roots": "/"}},
      "dataset": {"op": "Range", "attrs": {"stop": 3}}})");
  EXPECT_FALSE(bad.ok());
}

// ---- non-regular files ----

// Runs `body` in a child process that must exit 0 within `seconds` (a hang fails the
// test instead of the runner).
void ExpectBounded(const std::function<bool()>& body, int seconds) {
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) _exit(body() ? 0 : 1);
  int status = 0;
  for (int i = 0; i < seconds * 100; ++i) {
    if (waitpid(pid, &status, WNOHANG) == pid) {
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child failed";
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  ADD_FAILURE() << "timed out: the read hung";
}

TEST(NonRegularFileTest, DevicesAndFifosAreRefusedQuickly) {
  TempDir dir;
  const std::string fifo = dir.File("fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  for (const std::string& p :
       {std::string("/dev/zero"), std::string("/dev/urandom"), fifo}) {
    ExpectBounded(
        [&] {
          Pass a = Drain(Dataset::TFRecord({p}), Env::Default());
          Pass b = Drain(Dataset::TextLine({p}), Env::Default());
          auto idx = Dataset::Idx(p);
          auto read = Function::Kernel("read_file", {});
          Pass c = Drain(Dataset::FromTensors(Element{Tensor::Scalar(p)}).Map(*read),
                         Env::Default());
          for (const Pass* r : {&a, &b, &c}) {
            if (r->errors.size() != 1 || !r->elements.empty()) return false;
            if (r->errors[0].code() != StatusCode::kInvalidArgument) return false;
            if (!Contains(r->errors[0].ToString(), "regular file")) return false;
            if (!Contains(r->errors[0].ToString(), p)) return false;
          }
          return !idx.ok() && idx.status().code() == StatusCode::kInvalidArgument;
        },
        20);
  }
}

TEST(NonRegularFileTest, IdxErrorsDoNotEchoFileBytes) {
  TempDir dir;
  const std::string path = dir.File("secret");
  WriteFile(path, "SECRETSECRETSECRET");
  Dataset ds = Dataset::Idx(path);
  ASSERT_FALSE(ds.ok());
  const std::string msg = ds.status().ToString();
  EXPECT_TRUE(Contains(msg, path)) << msg;
  EXPECT_TRUE(Contains(msg, "magic")) << msg;
  EXPECT_FALSE(Contains(msg, "SEC")) << msg;
  EXPECT_FALSE(Contains(msg, "0x53")) << msg;  // 'S'
  EXPECT_FALSE(Contains(msg, "0x45")) << msg;  // 'E'
  // A bad type code is not quoted either.
  WriteFile(path, std::string("\0\0\x53\x01", 4) + "SECRET");
  ds = Dataset::Idx(path);
  ASSERT_FALSE(ds.ok());
  EXPECT_FALSE(Contains(ds.status().ToString(), "0x53")) << ds.status();
}

// ---- memory ----

TEST(AvailableMemoryTest, TakesTheSmallestHeadroom) {
  constexpr int64_t kGiB = int64_t{1} << 30;
  EXPECT_EQ(AvailableMemoryFrom({}), 0);
  EXPECT_EQ(AvailableMemoryFrom({.mem_available = 8 * kGiB}), 8 * kGiB);
  // RLIMIT_AS minus the address space in use.
  EXPECT_EQ(
      AvailableMemoryFrom(
          {.mem_available = 8 * kGiB, .rlimit_as = 4 * kGiB, .address_space = kGiB}),
      3 * kGiB);
  // cgroup limit minus usage.
  EXPECT_EQ(AvailableMemoryFrom({.mem_available = 8 * kGiB,
                                 .rlimit_as = 4 * kGiB,
                                 .address_space = kGiB,
                                 .cgroup_limit = 2 * kGiB,
                                 .cgroup_usage = kGiB / 2}),
            kGiB + kGiB / 2);
  // Only a cgroup known.
  EXPECT_EQ(AvailableMemoryFrom({.cgroup_limit = kGiB}), kGiB);
  // A limit already exceeded leaves nothing, whatever comes after it.
  EXPECT_EQ(
      AvailableMemoryFrom(
          {.mem_available = 8 * kGiB, .rlimit_as = kGiB, .address_space = 2 * kGiB}),
      0);
  EXPECT_EQ(AvailableMemoryFrom(
                {.rlimit_as = kGiB, .address_space = 2 * kGiB, .cgroup_limit = 4 * kGiB}),
            0);
  // This process: some memory.
  EXPECT_GT(ReadMemoryFacts().mem_available, 0);
  EXPECT_GT(AvailableMemory(), 0);
}

}  // namespace
}  // namespace sluice
