// Cache: memory and file caches, reuse across passes and processes, rejection of damaged
// files, checkpoints in read and write mode.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <memory>

#include "api/dataset_internal.h"
#include "testing/conformance.h"

namespace sluice {
namespace {

using testing::CheckDataset;
using testing::CheckTransform;
using testing::Ints;
using testing::IntsOf;

// x -> x * x, counting its calls in *calls.
Function CountingSquare(std::shared_ptr<std::atomic<int64_t>> calls) {
  return Function::Map("counting_square",
                       [calls](Element e, FunctionContext&) -> Result<Element> {
                         calls->fetch_add(1);
                         int64_t x = e[0].scalar<int64_t>();
                         return Element{Tensor::Scalar<int64_t>(x * x)};
                       },
                       // It counts its calls: stateful, so no rewrite parallelizes it (a
                       // parallel map would run ahead and call it more often).
                       {.stateful = true});
}

std::shared_ptr<std::atomic<int64_t>> Counter() {
  return std::make_shared<std::atomic<int64_t>>(0);
}

const std::vector<int64_t> kSquares = {0, 1, 4, 9, 16};

std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<Element> ReadN(Iterator* it, int n) {
  std::vector<Element> out;
  for (int i = 0; i < n; ++i) {
    auto e = it->GetNext();
    EXPECT_TRUE(e.ok()) << e.status();
    if (!e.ok() || !*e) break;
    out.push_back(std::move(**e));
  }
  return out;
}

TEST(CacheTest, MemoryCacheReadsTheInputOnce) {
  auto calls = Counter();
  Dataset ds = Dataset::Range(5).Map(CountingSquare(calls)).Cache();
  EXPECT_EQ(IntsOf(testing::CollectOrDie(ds)), kSquares);
  EXPECT_EQ(calls->load(), 5);
  EXPECT_EQ(IntsOf(testing::CollectOrDie(ds)), kSquares);
  EXPECT_EQ(calls->load(), 5) << "the second pass read the input again";
  EXPECT_EQ(ds.Cardinality(), 5);
  EXPECT_EQ(Dataset::Range(5).Cache().element_spec().ToString(), "(int64[])");
}

TEST(CacheTest, MemoryPartialPassIsDiscarded) {
  auto calls = Counter();
  Dataset ds = Dataset::Range(5).Map(CountingSquare(calls)).Cache();
  {
    auto it = MakeIteratorAsBuilt(ds, {});
    ASSERT_TRUE(it.ok());
    EXPECT_EQ(IntsOf(ReadN(it->get(), 2)), (std::vector<int64_t>{0, 1}));
  }  // destroyed mid-way
  EXPECT_EQ(IntsOf(testing::CollectOrDie(ds)), kSquares);
  EXPECT_EQ(calls->load(), 2 + 5);
  EXPECT_EQ(IntsOf(testing::CollectOrDie(ds)), kSquares);
  EXPECT_EQ(calls->load(), 2 + 5);
}

TEST(CacheTest, APassWithAnErrorIsNotCached) {
  Dataset ds = testing::FailingAt(5, 2).Cache();
  for (int pass = 0; pass < 2; ++pass) {
    auto r = ds.Collect();
    ASSERT_FALSE(r.ok()) << "pass " << pass << ": the error was lost";
    EXPECT_NE(r.status().message().find("injected failure at 2"), std::string::npos);
  }
}

TEST(CacheTest, MemoryConformance) {
  auto calls = Counter();
  Dataset ds = Dataset::Range(5).Map(CountingSquare(calls)).Cache();
  CheckDataset(ds, Ints(kSquares));
  EXPECT_EQ(calls->load(), 5);
  CheckDataset(Dataset::Range(0).Cache(), {});
  CheckTransform([](Dataset in) { return in.Cache(); });
}

TEST(CacheTest, FileCacheSurvivesANewDatasetObject) {
  testing::TempDir dir;
  const std::string base = dir.File("squares");
  auto first = Counter();
  EXPECT_EQ(IntsOf(testing::CollectOrDie(
                Dataset::Range(5).Map(CountingSquare(first)).Cache(base))),
            kSquares);
  EXPECT_EQ(first->load(), 5);
  EXPECT_EQ(ListDir(dir.path()), std::vector<std::string>{"squares.sluice-cache"});
  // As in a new process: a new Dataset object with the same file name.
  auto second = Counter();
  Dataset again = Dataset::Range(5).Map(CountingSquare(second)).Cache(base);
  EXPECT_EQ(IntsOf(testing::CollectOrDie(again)), kSquares);
  EXPECT_EQ(second->load(), 0)
      << "the input was read although a complete cache file exists";
}

TEST(CacheTest, FileCacheWrittenByAnotherProcess) {
  testing::TempDir dir;
  const std::string base = dir.File("forked");
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto r = Dataset::Range(5).Map(CountingSquare(Counter())).Cache(base).Collect();
    _exit(r.ok() && r->size() == 5 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  auto calls = Counter();
  EXPECT_EQ(IntsOf(testing::CollectOrDie(
                Dataset::Range(5).Map(CountingSquare(calls)).Cache(base))),
            kSquares);
  EXPECT_EQ(calls->load(), 0);
}

TEST(CacheTest, PartialPassLeavesNoCacheFile) {
  testing::TempDir dir;
  const std::string base = dir.File("partial");
  auto calls = Counter();
  Dataset ds = Dataset::Range(5).Map(CountingSquare(calls)).Cache(base);
  {
    auto it = MakeIteratorAsBuilt(ds, {});
    ASSERT_TRUE(it.ok());
    EXPECT_EQ(ReadN(it->get(), 3).size(), 3u);
  }
  EXPECT_TRUE(ListDir(dir.path()).empty()) << "left behind: " << ListDir(dir.path())[0];
  EXPECT_EQ(IntsOf(testing::CollectOrDie(ds)), kSquares);
  EXPECT_EQ(calls->load(), 3 + 5);
}

TEST(CacheTest, LeftoverTempFilesAreIgnored) {
  testing::TempDir dir;
  const std::string base = dir.File("c");
  testing::WriteFile(base + ".tmp-999999-0", "garbage from a writer that died");
  auto calls = Counter();
  Dataset ds = Dataset::Range(5).Map(CountingSquare(calls)).Cache(base);
  EXPECT_EQ(IntsOf(testing::CollectOrDie(ds)), kSquares);
  EXPECT_EQ(calls->load(), 5);
  EXPECT_TRUE(std::filesystem::exists(base + ".sluice-cache"));
  EXPECT_EQ(IntsOf(testing::CollectOrDie(ds)), kSquares);
  EXPECT_EQ(calls->load(), 5);
}

// Writes a cache of Range(5) squares at `base` and returns its bytes.
std::string MakeCacheFile(const std::string& base) {
  auto r = Dataset::Range(5).Map(CountingSquare(Counter())).Cache(base).Collect();
  EXPECT_TRUE(r.ok()) << r.status();
  return testing::ReadFile(base + ".sluice-cache");
}

void ExpectRejected(const std::string& base, const std::string& what) {
  SCOPED_TRACE(what);
  auto calls = Counter();
  Dataset ds = Dataset::Range(5).Map(CountingSquare(calls)).Cache(base);
  auto r = ds.Collect();
  ASSERT_FALSE(r.ok()) << "a damaged cache file was used";
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss) << r.status();
  EXPECT_NE(r.status().message().find(base + ".sluice-cache"), std::string::npos)
      << r.status();
  EXPECT_NE(r.status().message().find("offset"), std::string::npos) << r.status();
  EXPECT_EQ(calls->load(), 0);
}

TEST(CacheTest, DamagedCacheFilesAreRejected) {
  testing::TempDir dir;
  const std::string base = dir.File("c");
  const std::string path = base + ".sluice-cache";
  const std::string good = MakeCacheFile(base);
  ASSERT_GT(good.size(), 32u);

  testing::WriteFile(path, good.substr(0, good.size() - 5));
  ExpectRejected(base, "truncated trailer");
  testing::WriteFile(path, good.substr(0, 10));
  ExpectRejected(base, "shorter than a trailer");
  testing::WriteFile(path, "");
  ExpectRejected(base, "empty");
  std::string flipped = good;
  flipped[3] ^= 0x01;
  testing::WriteFile(path, flipped);
  ExpectRejected(base, "corrupt body byte");
  std::string bad_count = good;
  bad_count[good.size() - 32 + 8] ^= 0x02;
  testing::WriteFile(path, bad_count);
  ExpectRejected(base, "corrupt element count");
  // A truncated body followed by a valid-looking trailer.
  testing::WriteFile(path, good.substr(0, 2) + good.substr(good.size() - 32));
  ExpectRejected(base, "truncated body");

  // The intact file is accepted again.
  testing::WriteFile(path, good);
  auto calls = Counter();
  EXPECT_EQ(IntsOf(testing::CollectOrDie(
                Dataset::Range(5).Map(CountingSquare(calls)).Cache(base))),
            kSquares);
  EXPECT_EQ(calls->load(), 0);
}

TEST(CacheTest, FileConformance) {
  testing::TempDir dir;
  auto calls = Counter();
  Dataset ds = Dataset::Range(5).Map(CountingSquare(calls)).Cache(dir.File("conf"));
  CheckDataset(ds, Ints(kSquares));
  EXPECT_EQ(calls->load(), 5);
  // Strings and component names survive the file.
  Element e(
      {Tensor::FromStrings({"a", "", "ccc"}), Tensor::FromVector<float>({1.5f, -2, 3})},
      MakeNames({"s", "f"}));
  Dataset slices = Dataset::FromTensorSlices(e);
  Dataset cached = slices.Cache(dir.File("strings"));
  auto expected = testing::CollectOrDie(slices);
  CheckDataset(cached, expected);
  auto got =
      testing::CollectOrDie(Dataset::FromTensorSlices(e).Cache(dir.File("strings")));
  ASSERT_EQ(got.size(), 3u);
  ASSERT_TRUE(got[0].names());
  EXPECT_EQ((*got[0].names())[1], "f");
  int n = 0;
  CheckTransform(
      [&dir, &n](Dataset in) { return in.Cache(dir.File("t" + std::to_string(n++))); });
}

TEST(CacheTest, WriteModeCheckpointAbandonsThePass) {
  for (bool file : {false, true}) {
    SCOPED_TRACE(file ? "file" : "memory");
    testing::TempDir dir;
    const std::string base = file ? dir.File("w") : "";
    auto calls = Counter();
    Dataset ds = Dataset::Range(5).Map(CountingSquare(calls)).Cache(base);
    std::string ckpt;
    {
      auto a = MakeIteratorAsBuilt(ds, {});
      ASSERT_TRUE(a.ok());
      ReadN(a->get(), 2);
      auto c = (*a)->Save();
      ASSERT_TRUE(c.ok()) << c.status();
      ckpt = *c;
      EXPECT_LT(ckpt.size(), 200u);
    }  // destroyed: the pass is not committed
    EXPECT_TRUE(ListDir(dir.path()).empty());
    auto b = MakeIteratorAsBuilt(ds, {});
    ASSERT_TRUE(b.ok());
    ASSERT_TRUE((*b)->Restore(ckpt).ok());
    EXPECT_EQ(IntsOf(ReadN(b->get(), 10)), (std::vector<int64_t>{4, 9, 16}));
    // The restored pass did not populate the cache: the next pass reads the input.
    EXPECT_TRUE(ListDir(dir.path()).empty());
    int64_t before = calls->load();
    EXPECT_EQ(IntsOf(testing::CollectOrDie(ds)), kSquares);
    EXPECT_EQ(calls->load(), before + 5);
    EXPECT_EQ(IntsOf(testing::CollectOrDie(ds)), kSquares);
    EXPECT_EQ(calls->load(), before + 5);
  }
}

TEST(CacheTest, ReadModeCheckpointRestoresWithoutTheCache) {
  // A read-mode checkpoint restored where the cache is gone (a new Dataset object for a
  // memory cache, a deleted file) replays the input to the same position.
  for (bool file : {false, true}) {
    SCOPED_TRACE(file ? "file" : "memory");
    testing::TempDir dir;
    const std::string base = file ? dir.File("r") : "";
    Dataset ds = Dataset::Range(5).Map(CountingSquare(Counter())).Cache(base);
    testing::CollectOrDie(ds);
    auto a = MakeIteratorAsBuilt(ds, {});
    ASSERT_TRUE(a.ok());
    ReadN(a->get(), 2);
    auto ckpt = (*a)->Save();
    ASSERT_TRUE(ckpt.ok());
    if (file) std::filesystem::remove(base + ".sluice-cache");
    auto calls = Counter();
    Dataset fresh = Dataset::Range(5).Map(CountingSquare(calls)).Cache(base);
    auto b = MakeIteratorAsBuilt(fresh, {});
    ASSERT_TRUE(b.ok());
    ASSERT_TRUE((*b)->Restore(*ckpt).ok());
    EXPECT_EQ(IntsOf(ReadN(b->get(), 10)), (std::vector<int64_t>{4, 9, 16}));
  }
  // With the file present, a new Dataset object restores into the file.
  testing::TempDir dir;
  const std::string base = dir.File("r");
  Dataset ds = Dataset::Range(5).Map(CountingSquare(Counter())).Cache(base);
  testing::CollectOrDie(ds);
  auto a = MakeIteratorAsBuilt(ds, {});
  ASSERT_TRUE(a.ok());
  ReadN(a->get(), 3);
  auto ckpt = (*a)->Save();
  ASSERT_TRUE(ckpt.ok());
  auto calls = Counter();
  auto b =
      MakeIteratorAsBuilt(Dataset::Range(5).Map(CountingSquare(calls)).Cache(base), {});
  ASSERT_TRUE(b.ok());
  ASSERT_TRUE((*b)->Restore(*ckpt).ok());
  EXPECT_EQ(IntsOf(ReadN(b->get(), 10)), (std::vector<int64_t>{9, 16}));
  EXPECT_EQ(calls->load(), 0);
}

TEST(CacheTest, CheckpointsHoldPositionsNotData) {
  Dataset big = Dataset::Range(4).Map(
      Function::Map("big", [](Element e, FunctionContext&) -> Result<Element> {
        return Element{Tensor::Zeros(DType::kFloat32, Shape{4096})};
      }));
  testing::TempDir dir;
  for (const std::string& base : {std::string(), dir.File("big")}) {
    Dataset ds = big.Cache(base);
    testing::CollectOrDie(ds);
    auto it = MakeIteratorAsBuilt(ds, {});
    ASSERT_TRUE(it.ok());
    ReadN(it->get(), 2);
    auto ckpt = (*it)->Save();
    ASSERT_TRUE(ckpt.ok());
    EXPECT_LT(ckpt->size(), 300u);
  }
}

TEST(CacheTest, UnwritableLocationFailsClearly) {
  Dataset ds = Dataset::Range(3).Cache("/nonexistent-dir/sub/cache");
  auto it = MakeIteratorAsBuilt(ds, {});
  ASSERT_TRUE(it.ok());
  auto e = (*it)->GetNext();
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("/nonexistent-dir/sub/cache"), std::string::npos)
      << e.status();
  // The pass goes on, uncached.
  EXPECT_EQ(IntsOf(ReadN(it->get(), 10)), (std::vector<int64_t>{0, 1, 2}));
}

}  // namespace
}  // namespace sluice
