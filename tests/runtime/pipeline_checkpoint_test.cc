// A long pipeline (Range, Map, Shuffle, Interleave over inner shuffles, Filter, a random
// Map, Batch, Unbatch, Enumerate, Repeat, Shard, Zip, Skip, Take) checkpointed at many
// random positions: every restore must continue exactly like the uninterrupted run.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "testing/conformance.h"

namespace sluice {
namespace {

int64_t I(const Tensor& t) { return t.scalar<int64_t>(); }

// Builds the pipeline; every seed is fixed, so two builds are the same pipeline.
Dataset BuildPipeline() {
  SetGlobalSeed(1234);  // seeds of random functions derive from it, in creation order
  Function scale =
      Function::Map("scale",
                    [](Element e, FunctionContext&) -> Result<Element> {
                      return Element{Tensor::Scalar<int64_t>(I(e[0]) * 3 + 1)};
                    },
                    {.skippable = true});
  Function fan = Function::DatasetFunction(
      "fan", [](Element e, FunctionContext&) -> Result<Dataset> {
        const int64_t x = I(e[0]);
        return Dataset::Range(x % 4 + 1)
            .Map(Function::Map("tag",
                               [x](Element y, FunctionContext&) -> Result<Element> {
                                 return Element{
                                     Tensor::Scalar<int64_t>(x * 10 + I(y[0]))};
                               }))
            .Shuffle(4, /*seed=*/21);
      });
  Function keep =
      Function::Predicate("keep", [](const Element& e, FunctionContext&) -> Result<bool> {
        return I(e[0]) % 5 != 2;
      });
  Function noisy = Function::Map(
      "noisy",
      [](Element e, FunctionContext& ctx) -> Result<Element> {
        return Element{Tensor::Scalar<int64_t>(
            I(e[0]) * 1000 + static_cast<int64_t>(ctx.rng().UniformInt(1000)))};
      },
      {.is_random = true});
  Dataset main = Dataset::Range(80)
                     .Map(scale)
                     .Shuffle(16, /*seed=*/11)
                     .Interleave(fan, /*cycle_length=*/3, /*block_length=*/2)
                     .Filter(keep)
                     .Map(noisy)
                     .Batch(4)
                     .Unbatch()
                     .Enumerate()
                     .Repeat(3)
                     .Shard(2, 1);
  Dataset side = Dataset::Range(100000).Shuffle(50, /*seed=*/13);
  Dataset ds = Dataset::Zip({main, side}).Skip(7).Take(1000);
  SetGlobalSeed(std::nullopt);
  return ds;
}

std::vector<Element> ReadN(Iterator* it, int64_t n) {
  std::vector<Element> out;
  while (n < 0 || static_cast<int64_t>(out.size()) < n) {
    auto e = it->GetNext();
    EXPECT_TRUE(e.ok()) << e.status();
    if (!e.ok() || !*e) break;
    out.push_back(std::move(**e));
  }
  return out;
}

bool Same(const std::vector<Element>& a, const std::vector<Element>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!a[i].ContentEquals(b[i])) return false;
  }
  return true;
}

std::unique_ptr<Iterator> Restored(const Dataset& ds, const std::string& ckpt) {
  auto it = ds.MakeIterator();
  EXPECT_TRUE(it.ok()) << it.status();
  if (!it.ok()) return nullptr;
  Status s = (*it)->Restore(ckpt);
  EXPECT_TRUE(s.ok()) << s;
  return std::move(it).value();
}

class PipelineCheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ds_ = BuildPipeline();
    ASSERT_TRUE(ds_.ok()) << ds_.status();
    auto a = ds_.MakeIterator();
    ASSERT_TRUE(a.ok()) << a.status();
    auto c = (*a)->Save();
    ASSERT_TRUE(c.ok()) << c.status();
    start_ = *c;
    full_ = ReadN(a->get(), -1);
    ASSERT_GT(full_.size(), 150u);
    std::mt19937 gen(20240611);
    std::uniform_int_distribution<int64_t> pos(0, static_cast<int64_t>(full_.size()));
    for (int i = 0; i < 35; ++i) positions_.push_back(pos(gen));
  }

  Dataset ds_;
  std::string start_;          // checkpoint of the uninterrupted iterator at position 0
  std::vector<Element> full_;  // its uninterrupted run
  std::vector<int64_t> positions_;
};

TEST_F(PipelineCheckpointTest, RunIsNontrivial) {
  // Elements are (index, value, side); reshuffling makes a second iterator differ.
  ASSERT_EQ(full_[0].size(), 3u);
  auto b = ds_.MakeIterator();
  ASSERT_TRUE(b.ok());
  EXPECT_FALSE(Same(ReadN(b->get(), -1), full_));
  // Restoring the position-0 checkpoint reproduces the first iterator's run.
  auto r = Restored(ds_, start_);
  ASSERT_NE(r, nullptr);
  EXPECT_TRUE(Same(ReadN(r.get(), -1), full_));
}

TEST_F(PipelineCheckpointTest, RestoreAtRandomPositions) {
  for (int64_t k : positions_) {
    SCOPED_TRACE("position " + std::to_string(k));
    auto x = Restored(ds_, start_);
    ASSERT_NE(x, nullptr);
    std::vector<Element> got = ReadN(x.get(), k);
    auto ckpt = x->Save();
    ASSERT_TRUE(ckpt.ok()) << ckpt.status();
    auto y = Restored(ds_, *ckpt);
    ASSERT_NE(y, nullptr);
    std::vector<Element> rest = ReadN(y.get(), -1);
    got.insert(got.end(), rest.begin(), rest.end());
    EXPECT_TRUE(Same(got, full_))
        << "got " << got.size() << " elements, want " << full_.size();
  }
}

TEST_F(PipelineCheckpointTest, ChainOfRestores) {
  // One run hopping to a freshly restored iterator at each random position.
  std::vector<int64_t> stops = positions_;
  std::sort(stops.begin(), stops.end());
  auto it = Restored(ds_, start_);
  ASSERT_NE(it, nullptr);
  std::vector<Element> got;
  for (int64_t k : stops) {
    std::vector<Element> part = ReadN(it.get(), k - static_cast<int64_t>(got.size()));
    got.insert(got.end(), part.begin(), part.end());
    auto ckpt = it->Save();
    ASSERT_TRUE(ckpt.ok()) << ckpt.status();
    it = Restored(ds_, *ckpt);
    ASSERT_NE(it, nullptr);
  }
  std::vector<Element> rest = ReadN(it.get(), -1);
  got.insert(got.end(), rest.begin(), rest.end());
  EXPECT_TRUE(Same(got, full_));
}

TEST_F(PipelineCheckpointTest, RestoreIntoARebuiltPipeline) {
  Dataset rebuilt = BuildPipeline();
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status();
  for (size_t i = 0; i < 10; ++i) {
    int64_t k = positions_[i];
    SCOPED_TRACE("position " + std::to_string(k));
    auto x = Restored(ds_, start_);
    ASSERT_NE(x, nullptr);
    ReadN(x.get(), k);
    auto ckpt = x->Save();
    ASSERT_TRUE(ckpt.ok()) << ckpt.status();
    auto y = Restored(rebuilt, *ckpt);
    ASSERT_NE(y, nullptr);
    std::vector<Element> want(full_.begin() + k, full_.end());
    EXPECT_TRUE(Same(ReadN(y.get(), -1), want));
  }
}

}  // namespace
}  // namespace sluice
