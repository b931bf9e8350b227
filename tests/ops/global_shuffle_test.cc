// GlobalShuffle and random access: the index permutation is a bijection; positions are
// uniform over many seeds (chi-square); determinism by seed and reshuffling per epoch;
// exact resume mid-epoch; a checkpoint of at most 64 bytes; rows served by index through
// Map, Zip and Idx equal the rows read in order; a clear error naming the op that cannot
// serve rows; the conformance fixture; and the global_shuffle pass fires only when the
// buffer covers a random-access input.
#include <gtest/gtest.h>

#include <atomic>
#include <limits>
#include <map>
#include <string_view>
#include <set>

#include "api/dataset_internal.h"
#include "formats/idx.h"
#include "graph/random_access.h"
#include "ops/index_permutation.h"
#include "optimizer/optimizer.h"
#include "runtime/checkpoint.h"
#include "runtime/iterator_base.h"
#include "testing/conformance.h"
#include "testing/op_cases.h"

namespace sluice {
namespace {

using testing::CheckDataset;
using testing::CollectOrDie;
using testing::ConformanceOptions;
using testing::IntsOf;
using testing::K;

std::vector<int64_t> Order(const Dataset& ds) { return IntsOf(CollectOrDie(ds)); }

std::vector<int64_t> Iota(int64_t n) {
  std::vector<int64_t> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = i;
  return v;
}

std::vector<int64_t> Sorted(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST(IndexPermutationTest, IsABijectionForEverySize) {
  for (int64_t n : {0, 1, 2, 3, 4, 5, 7, 8, 9, 31, 33, 100, 255, 256, 257, 1000, 60000}) {
    for (uint64_t seed : {0ULL, 1ULL, 42ULL, 0xdeadbeefULL}) {
      IndexPermutation p(n, seed);
      std::vector<char> seen(n, 0);
      for (int64_t i = 0; i < n; ++i) {
        const int64_t j = p.Apply(i);
        ASSERT_GE(j, 0);
        ASSERT_LT(j, n);
        ASSERT_FALSE(seen[j]) << "n " << n << " seed " << seed << ": " << j << " twice";
        seen[j] = 1;
      }
    }
  }
}

TEST(IndexPermutationTest, LargeDomainsStayInRange) {
  IndexPermutation p(int64_t{1} << 40, 7);
  std::set<int64_t> seen;
  for (int64_t i = 0; i < 1000; ++i) {
    const int64_t j = p.Apply(i * 1000003);
    ASSERT_GE(j, 0);
    ASSERT_LT(j, int64_t{1} << 40);
    seen.insert(j);
  }
  EXPECT_EQ(seen.size(), 1000u);
}

// Pearson's chi-square of the n x n table (element, position) over `seeds` shuffles of
// Range(n) built by `shuffle`; uniform placement expects seeds / n in every cell.
double PositionChiSquare(int64_t n, int seeds,
                         const std::function<Dataset(Dataset, int64_t)>& shuffle) {
  std::vector<int64_t> counts(n * n, 0);
  for (int s = 0; s < seeds; ++s) {
    std::vector<int64_t> order = Order(shuffle(Dataset::Range(n), 1000 + s));
    EXPECT_EQ(static_cast<int64_t>(order.size()), n);
    for (int64_t pos = 0; pos < n && pos < static_cast<int64_t>(order.size()); ++pos) {
      ++counts[order[pos] * n + pos];
    }
  }
  const double expected = static_cast<double>(seeds) / n;
  double chi2 = 0;
  for (int64_t c : counts) chi2 += (c - expected) * (c - expected) / expected;
  return chi2;
}

// 8 elements, 4000 seeds: (8 - 1)^2 = 49 degrees of freedom, whose 0.001 critical value
// is 85.35. The seeds are fixed, so the test is deterministic.
constexpr double kChi2Critical49 = 85.35;

TEST(GlobalShuffleTest, PositionsAreUniformOverSeeds) {
  const double chi2 = PositionChiSquare(8, 4000, [](Dataset d, int64_t seed) {
    return d.GlobalShuffle(seed);
  });
  EXPECT_LT(chi2, kChi2Critical49);
}

TEST(GlobalShuffleTest, ChiSquareDetectsABiasedShuffle) {
  // A windowed shuffle (buffer 2) keeps elements near their place: the same statistic
  // must reject it, so the test above can fail.
  const double chi2 = PositionChiSquare(8, 4000, [](Dataset d, int64_t seed) {
    return d.Shuffle(2, seed);
  });
  EXPECT_GT(chi2, kChi2Critical49);
}

TEST(GlobalShuffleTest, DeterministicBySeed) {
  const Dataset a = Dataset::Range(1000).GlobalShuffle(5);
  const std::vector<int64_t> first = Order(a);
  EXPECT_EQ(Sorted(first), Iota(1000));
  EXPECT_NE(first, Iota(1000));
  EXPECT_EQ(Order(Dataset::Range(1000).GlobalShuffle(5)), first);
  EXPECT_NE(Order(Dataset::Range(1000).GlobalShuffle(6)), first);
}

TEST(GlobalShuffleTest, ReshufflesEachEpochUnlessAskedNot) {
  std::vector<int64_t> two = Order(Dataset::Range(100).GlobalShuffle(9).Repeat(2));
  ASSERT_EQ(two.size(), 200u);
  std::vector<int64_t> e0(two.begin(), two.begin() + 100), e1(two.begin() + 100, two.end());
  EXPECT_EQ(Sorted(e0), Iota(100));
  EXPECT_EQ(Sorted(e1), Iota(100));
  EXPECT_NE(e0, e1);

  two = Order(Dataset::Range(100).GlobalShuffle(9, /*reshuffle_each_iteration=*/false).Repeat(2));
  ASSERT_EQ(two.size(), 200u);
  EXPECT_EQ(std::vector<int64_t>(two.begin(), two.begin() + 100),
            std::vector<int64_t>(two.begin() + 100, two.end()));
}

std::vector<int64_t> Rest(Iterator* it) {
  std::vector<int64_t> out;
  while (true) {
    auto e = it->GetNext();
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    if (!e.ok() || !*e) break;
    out.push_back(testing::IntOf(**e));
  }
  return out;
}

// An iterator of `ds` moved `cut` elements on (*saved), and a fresh one restored from its
// checkpoint (*restored).
void SavedAndRestored(const Dataset& ds, int64_t cut, std::unique_ptr<Iterator>* saved,
                      std::unique_ptr<Iterator>* restored) {
  auto it = ds.MakeIterator();
  ASSERT_TRUE(it.ok()) << it.status().ToString();
  for (int64_t i = 0; i < cut; ++i) ASSERT_TRUE((*it)->GetNext().ok());
  auto ckpt = (*it)->Save();
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().ToString();
  auto fresh = ds.MakeIterator();
  ASSERT_TRUE(fresh.ok());
  ASSERT_TRUE((*fresh)->Restore(*ckpt).ok());
  *saved = std::move(*it);
  *restored = std::move(*fresh);
}

TEST(GlobalShuffleTest, ResumesExactlyMidEpoch) {
  // Three epochs over a map; checkpoints at epoch edges and inside the second epoch: the
  // restored iterator goes on exactly as the saved one does.
  const Dataset ds = Dataset::Range(1000).Map(K("identity")).GlobalShuffle(3).Repeat(3);
  for (int64_t cut : {0, 1, 999, 1000, 1337, 2999}) {
    std::unique_ptr<Iterator> it, fresh;
    ASSERT_NO_FATAL_FAILURE(SavedAndRestored(ds, cut, &it, &fresh));
    const std::vector<int64_t> expected = Rest(it.get());
    EXPECT_EQ(static_cast<int64_t>(expected.size()), 3000 - cut);
    EXPECT_EQ(Rest(fresh.get()), expected) << "cut " << cut;
  }
}

TEST(GlobalShuffleTest, CheckpointIsAtMost64Bytes) {
  // The op's own checkpoint (its input serves rows and saves nothing), serialized with the
  // format's framing, mid-epoch over 2^40 rows. The iterator is named "G": keys carry the
  // iterator's place in the tree, which grows with the pipeline; the state is two ints.
  const Dataset ds = Dataset::Range(int64_t{1} << 40).GlobalShuffle(int64_t{1} << 62);
  auto it = NodeOf(ds)->MakeIterator(IteratorContext{}, "G");
  ASSERT_TRUE(it.ok()) << it.status().ToString();
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE((*it)->GetNext().ok());
  CheckpointWriter w;
  ASSERT_TRUE((*it)->Save(&w).ok());
  const std::string bytes = w.Serialize();
  EXPECT_LE(bytes.size(), 64u) << bytes.size();
  // And the restored position is exact.
  auto r = CheckpointReader::Parse(bytes);
  ASSERT_TRUE(r.ok());
  auto fresh = NodeOf(ds)->MakeIterator(IteratorContext{}, "G");
  ASSERT_TRUE(fresh.ok());
  ASSERT_TRUE((*fresh)->Restore(*r).ok());
  auto a = (*it)->GetNext();
  auto b = (*fresh)->GetNext();
  ASSERT_TRUE(a.ok() && b.ok() && *a && *b);
  EXPECT_EQ(testing::IntOf(**a), testing::IntOf(**b));
}

TEST(GlobalShuffleTest, Conformance) {
  ConformanceOptions o;
  o.ordered = false;
  o.same_each_iteration = false;
  CheckDataset(Dataset::Range(40).GlobalShuffle(11), testing::Ints(Iota(40)), o);
  o.same_each_iteration = true;
  CheckDataset(Dataset::Range(40).GlobalShuffle(11, false), testing::Ints(Iota(40)), o);
  CheckDataset(Dataset::Range(0).GlobalShuffle(11, false), {}, o);
}

TEST(GlobalShuffleTest, RowsByIndexEqualRowsInOrder) {
  // Zip(Range, Range.Map(x + x via a kernel)) and FromTensorSlices: every shuffled element
  // is one of the in-order elements, each exactly once.
  testing::Files files;
  const Dataset zipped = Dataset::Zip(
      {Dataset::Range(50), Dataset::Range(100, 150).Map(K("identity")),
       Dataset::Idx(files.File("rows.idx")).Repeat(17).Take(50).Map(K("identity"))});
  // Repeat/Take do not serve rows: the zip is not random access.
  EXPECT_FALSE(IsRandomAccess(NodeOf(zipped)));
  const Dataset ok = Dataset::Zip({Dataset::Range(3), Dataset::Idx(files.File("rows.idx")),
                                   Dataset::FromTensorSlices(Element{
                                       Tensor::FromVector<int64_t>({7, 8, 9})})});
  ASSERT_TRUE(IsRandomAccess(NodeOf(ok)));
  std::vector<Element> in_order = CollectOrDie(ok);
  std::vector<Element> shuffled = CollectOrDie(ok.GlobalShuffle(1));
  ASSERT_EQ(shuffled.size(), in_order.size());
  for (const Element& e : shuffled) {
    const int64_t i = testing::IntOf(Element{e[0]});
    ASSERT_TRUE(e.ContentEquals(in_order[i])) << e.DebugString();
  }
}

TEST(GlobalShuffleTest, ParallelMapsServeRowsAsTheirMaps) {
  // A parallel map below the shuffle (written so, or made by map_parallelization) serves
  // rows as its sequential map: same elements as the map's rows, each once.
  const Dataset par = Dataset::Range(200).Map(K("identity"), kAutotune);
  ASSERT_TRUE(IsRandomAccess(NodeOf(par)));
  std::vector<int64_t> v = Order(par.GlobalShuffle(2));
  EXPECT_EQ(Sorted(v), Iota(200));
  EXPECT_EQ(v, Order(Dataset::Range(200).Map(K("identity")).GlobalShuffle(2)));
}

TEST(GlobalShuffleTest, UnderASplitProviderFallsBackToABufferedShuffle) {
  // With a split provider (distribute) the source reads the rows it is handed, not any
  // row: the op shuffles the rows it gets with a whole-input buffer instead.
  const Dataset ds = Dataset::Range(100).Map(K("identity")).GlobalShuffle(5);
  auto p = ds.MakeSplitProvider();
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  auto it = ds.MakeIterator(*p);
  ASSERT_TRUE(it.ok()) << it.status().ToString();
  std::vector<int64_t> got = Rest(it->get());
  EXPECT_EQ(Sorted(got), Iota(100));
  EXPECT_NE(got, Iota(100));
}

TEST(GlobalShuffleTest, AMemoryCacheFillsByRowsOnceAndServesThemAfter) {
  auto calls = std::make_shared<std::atomic<int64_t>>(0);
  Function counted = Function::Map("counted", [calls](Element e, FunctionContext&) {
    calls->fetch_add(1);
    return Result<Element>(std::move(e));
  });
  const Dataset ds = Dataset::Range(100).Map(counted).Cache().GlobalShuffle(4).Repeat(3);
  std::vector<int64_t> v = Order(ds);
  ASSERT_EQ(v.size(), 300u);
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(Sorted(std::vector<int64_t>(v.begin() + 100 * k, v.begin() + 100 * (k + 1))),
              Iota(100));
  }
  EXPECT_EQ(calls->load(), 100);  // the first epoch filled the cache; the others read it
  // A file cache does not serve rows.
  testing::TempDir dir;
  Dataset file = Dataset::Range(10).Cache(dir.File("c")).GlobalShuffle(1);
  ASSERT_FALSE(file.status().ok());
  EXPECT_NE(file.status().message().find("'Cache'"), std::string::npos);
}

TEST(GlobalShuffleTest, InputThatCannotServeRowsIsAnErrorNamingTheOp) {
  const Dataset filtered = Dataset::Range(10).Filter(K("compare", {{"op", std::string("not_equal")}, {"value", 3.0}}));
  Dataset bad = filtered.GlobalShuffle(1);
  ASSERT_FALSE(bad.status().ok());
  EXPECT_NE(bad.status().message().find("GlobalShuffle"), std::string::npos);
  EXPECT_NE(bad.status().message().find("'Filter'"), std::string::npos)
      << bad.status().ToString();
  Dataset infinite = Dataset::Range(10).Repeat().GlobalShuffle(1);
  ASSERT_FALSE(infinite.status().ok());
  EXPECT_NE(infinite.status().message().find("'Repeat'"), std::string::npos);
}

// ---- the global_shuffle pass ----

Options OnlyGlobalShuffle() {
  Options o;
  o.optimization.apply_default_optimizations = false;
  o.optimization.Set("global_shuffle", true);
  return o;
}

std::string RootOp(const Dataset& ds, const Options& o, int64_t* changes,
                   std::string_view pass = "global_shuffle") {
  OptimizeReport report;
  auto r = OptimizeGraph(NodeOf(ds), o, &report);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  for (const auto& p : report.passes) {
    if (p.name == pass) *changes = p.changes;
  }
  return r.ok() ? (*r)->op() : "";
}

TEST(GlobalShufflePassTest, FiresOnlyWhenTheBufferCoversARandomAccessInput) {
  const Dataset rows = Dataset::Range(100).Map(K("identity"));
  int64_t changes = -1;
  EXPECT_EQ(RootOp(rows.Shuffle(100, 1), OnlyGlobalShuffle(), &changes), "GlobalShuffle");
  EXPECT_EQ(changes, 1);
  EXPECT_EQ(RootOp(rows.Shuffle(1 << 20, 1), OnlyGlobalShuffle(), &changes),
            "GlobalShuffle");
  // A smaller buffer keeps its windowed meaning.
  EXPECT_EQ(RootOp(rows.Shuffle(99, 1), OnlyGlobalShuffle(), &changes), "Shuffle");
  EXPECT_EQ(changes, 0);
  // Inputs that cannot serve rows.
  const Dataset filtered = Dataset::Range(100).Filter(K("compare", {{"op", std::string("not_equal")}, {"value", 3.0}}));
  EXPECT_EQ(RootOp(filtered.Shuffle(1000, 1), OnlyGlobalShuffle(), &changes), "Shuffle");
  EXPECT_EQ(RootOp(Dataset::Range(100).Repeat().Shuffle(1000, 1), OnlyGlobalShuffle(),
                   &changes),
            "Shuffle");
  // Disabled: nothing changes.
  Options off = OnlyGlobalShuffle();
  off.optimization.Set("global_shuffle", false);
  EXPECT_EQ(RootOp(rows.Shuffle(100, 1), off, &changes), "Shuffle");
}

TEST(GlobalShufflePassTest, RewrittenPipelineIsAUniformPermutationEachEpoch) {
  // With default options, shuffle(len) over a random-access input reads as a permutation
  // every epoch and keeps its seed semantics.
  const Dataset ds = Dataset::Range(500).Shuffle(500, 4).Repeat(2);
  std::vector<int64_t> v = Order(ds);
  ASSERT_EQ(v.size(), 1000u);
  std::vector<int64_t> e0(v.begin(), v.begin() + 500), e1(v.begin() + 500, v.end());
  EXPECT_EQ(Sorted(e0), Iota(500));
  EXPECT_EQ(Sorted(e1), Iota(500));
  EXPECT_NE(e0, e1);
  EXPECT_EQ(Order(Dataset::Range(500).Shuffle(500, 4).Repeat(2)), v);
  EXPECT_EQ(v, Order(Dataset::Range(500).GlobalShuffle(4).Repeat(2)));
}

// ---- Gathering a batch (runtime/random_access.h) ----

// 100 rows in memory: an IDX file of uint8 [5, 3] images, one of uint8 labels (one-byte
// rows), and named from_tensor_slices of int64 ids and float32 pairs.
class GatherTest : public ::testing::Test {
 protected:
  static constexpr int64_t kRows = 100;
  void SetUp() override {
    auto images = Tensor::Allocate(DType::kUInt8, Shape({kRows, 5, 3}));
    auto labels = Tensor::Allocate(DType::kUInt8, Shape({kRows}));
    ASSERT_TRUE(images.ok() && labels.ok());
    for (int64_t i = 0; i < kRows * 15; ++i) images->mutable_data<uint8_t>()[i] = i % 251;
    for (int64_t i = 0; i < kRows; ++i) labels->mutable_data<uint8_t>()[i] = i % 10;
    testing::WriteFile(files_.File("images.idx"), *EncodeIdx(*images));
    testing::WriteFile(files_.File("labels.idx"), *EncodeIdx(*labels));
    std::vector<int64_t> ids(kRows);
    std::vector<float> pairs(2 * kRows);
    for (int64_t i = 0; i < kRows; ++i) {
      ids[i] = 1000 + i;
      pairs[2 * i] = 0.5f * i;
      pairs[2 * i + 1] = -1.0f * i;
    }
    slices_ = Dataset::FromTensorSlices(
        Element({Tensor::FromVector(ids), Tensor::FromVector(pairs, Shape({kRows, 2}))},
                MakeNames({"id", "pair"})));
    rows_ = Dataset::Zip({Dataset::Idx(files_.File("images.idx")),
                          Dataset::Idx(files_.File("labels.idx")), slices_});
  }

  // Every element of `ds` with the optimizer off (the pipeline as written).
  static std::vector<Element> AsWritten(const Dataset& ds) {
    Options o;
    o.optimization.apply_default_optimizations = false;
    return CollectOrDie(ds.WithOptions(o));
  }

  static void ExpectSameBatches(const std::vector<Element>& got,
                                const std::vector<Element>& want, const std::string& what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_TRUE(got[i].ContentEquals(want[i]))
          << what << ", batch " << i << ": " << got[i].DebugString() << " vs "
          << want[i].DebugString();
      EXPECT_EQ(got[i].names() == nullptr, want[i].names() == nullptr) << what;
      if (got[i].names() && want[i].names()) EXPECT_EQ(*got[i].names(), *want[i].names());
    }
  }

  testing::Files files_;
  Dataset slices_, rows_;
};

TEST_F(GatherTest, TheRowsGatherFromMemory) {
  // The iterators say so: a GlobalShuffle over the zip, and a source in its own order (an
  // Idx file once its first row has loaded it).
  auto shuffled = NodeOf(rows_.GlobalShuffle(3))->MakeIterator(IteratorContext{}, "G");
  ASSERT_TRUE(shuffled.ok()) << shuffled.status().ToString();
  ASSERT_NE((*shuffled)->AsRowStream(), nullptr);
  auto slices = NodeOf(slices_)->MakeIterator(IteratorContext{}, "S");
  ASSERT_TRUE(slices.ok());
  ASSERT_NE((*slices)->AsRowStream(), nullptr);
  EXPECT_TRUE((*slices)->AsRowStream()->StreamRows()->GathersFromMemory());
  auto idx = NodeOf(Dataset::Idx(files_.File("labels.idx")))->MakeIterator(IteratorContext{}, "I");
  ASSERT_TRUE(idx.ok());
  EXPECT_FALSE((*idx)->AsRowStream()->StreamRows()->GathersFromMemory());  // not loaded yet
  ASSERT_TRUE((*idx)->GetNext().ok());
  EXPECT_TRUE((*idx)->AsRowStream()->StreamRows()->GathersFromMemory());
  // Strings are not rows of a numeric tensor: they go through GetNext.
  auto strings = NodeOf(Dataset::FromTensorSlices(Element{
                            Tensor::FromVector<std::string>({"a", "b"})}))
                     ->MakeIterator(IteratorContext{}, "T");
  ASSERT_TRUE(strings.ok());
  EXPECT_FALSE((*strings)->AsRowStream()->StreamRows()->GathersFromMemory());
}

TEST_F(GatherTest, GatheredBatchesEqualBatchesOfElements) {
  // The batch gathered from memory is the one Batch stacks from the elements (an identity
  // map in between reads them one by one): dtypes, shapes, names, the last partial batch,
  // drop_remainder; shuffled (the same seed, so the same order) and in order.
  for (int64_t bs : {1, 7, 100, 256}) {
    for (bool drop : {false, true}) {
      const std::string what = "batch " + std::to_string(bs) + (drop ? " drop" : "");
      ExpectSameBatches(AsWritten(rows_.GlobalShuffle(5, false).Batch(bs, drop)),
                        AsWritten(rows_.GlobalShuffle(5, false).Map(K("identity")).Batch(bs, drop)),
                        "shuffled zip, " + what);
      ExpectSameBatches(AsWritten(slices_.Batch(bs, drop)),
                        AsWritten(slices_.Map(K("identity")).Batch(bs, drop)), "slices, " + what);
      ExpectSameBatches(AsWritten(Dataset::Idx(files_.File("images.idx")).Batch(bs, drop)),
                        AsWritten(Dataset::Idx(files_.File("images.idx"))
                                      .Map(K("identity")).Batch(bs, drop)),
                        "idx, " + what);
    }
  }
}

TEST_F(GatherTest, RangesComputeTheirRowsIntoTheBatch) {
  // A range's rows are computed into the batch: in order, shuffled, zipped with slices,
  // with a negative step and near the ends of int64 (the values in 128 bits).
  const std::vector<Dataset> ranges = {
      Dataset::Range(0, 103, 1), Dataset::Range(50, -47, -3),
      Dataset::Range(std::numeric_limits<int64_t>::max() - 40,
                     std::numeric_limits<int64_t>::max(), 3),
      Dataset::Range(std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(),
                     std::numeric_limits<int64_t>::max() / 8)};
  for (const Dataset& r : ranges) {
    ExpectSameBatches(AsWritten(r.Batch(8)), AsWritten(r.Map(K("identity")).Batch(8)),
                      "range in order");
    ExpectSameBatches(AsWritten(r.GlobalShuffle(6, false).Batch(8, true)),
                      AsWritten(r.GlobalShuffle(6, false).Map(K("identity")).Batch(8, true)),
                      "shuffled range");
  }
  const Dataset zipped = Dataset::Zip({Dataset::Range(kRows), slices_});
  ExpectSameBatches(AsWritten(zipped.GlobalShuffle(2, false).Batch(9)),
                    AsWritten(zipped.GlobalShuffle(2, false).Map(K("identity")).Batch(9)),
                    "zip of a range and slices");
  ConformanceOptions o;
  CheckDataset(Dataset::Range(3, 40, 2).Batch(4),
               AsWritten(Dataset::Range(3, 40, 2).Map(K("identity")).Batch(4)), o);
}

TEST_F(GatherTest, ConformanceAndExactResume) {
  // The conformance fixture (save/restore at every batch, skip, cancel, repeated
  // iterators) on gathered batches, shuffled and in order.
  ConformanceOptions o;
  CheckDataset(rows_.GlobalShuffle(9, false).Batch(16),
               AsWritten(rows_.GlobalShuffle(9, false).Map(K("identity")).Batch(16)), o);
  CheckDataset(slices_.Batch(30, true), AsWritten(slices_.Map(K("identity")).Batch(30, true)),
               o);
  // Reshuffled each epoch: resume mid-epoch continues the saved iterator exactly.
  const Dataset ds = rows_.GlobalShuffle(4).Batch(8).Repeat(2);
  for (int cut : {0, 3, 13, 14, 20}) {
    std::unique_ptr<Iterator> it, fresh;
    ASSERT_NO_FATAL_FAILURE(SavedAndRestored(ds, cut, &it, &fresh));
    for (;;) {
      auto a = it->GetNext();
      auto b = fresh->GetNext();
      ASSERT_TRUE(a.ok() && b.ok());
      ASSERT_EQ(a->has_value(), b->has_value()) << "cut " << cut;
      if (!*a) break;
      EXPECT_TRUE((**a).ContentEquals(**b)) << "cut " << cut;
    }
  }
}

TEST_F(GatherTest, StatsCountTheGatheredRows) {
  // The shuffle hands out every row once and each source serves each row once, as their
  // GetNext and GetRow would count them.
  auto it = rows_.GlobalShuffle(2).Batch(32).MakeIterator();
  ASSERT_TRUE(it.ok());
  int64_t batches = 0;
  for (;;) {
    auto e = (*it)->GetNext();
    ASSERT_TRUE(e.ok());
    if (!*e) break;
    ++batches;
  }
  EXPECT_EQ(batches, 4);
  std::map<std::string, int64_t> produced;
  for (const IteratorStats& s : (*it)->Stats()) produced[s.name] += s.elements_produced;
  EXPECT_EQ(produced["Batch"], 4);
  EXPECT_EQ(produced["GlobalShuffle"], kRows);
  EXPECT_EQ(produced["Zip"], kRows);
  EXPECT_EQ(produced["Idx"], 2 * kRows);
  EXPECT_EQ(produced["FromTensorSlices"], kRows);
}

TEST_F(GatherTest, ParallelBatchPassLeavesAGatheringBatchSequential) {
  // With the cost model the pass keeps a Batch that gathers (and makes a user's
  // ParallelBatch over such rows one); without it, it parallelizes as tf.data does.
  Options only;
  only.optimization.apply_default_optimizations = false;
  only.optimization.Set("parallel_batch", true);
  int64_t changes = -1;
  EXPECT_EQ(RootOp(rows_.GlobalShuffle(1).Batch(16), only, &changes, "parallel_batch"), "Batch");
  EXPECT_EQ(changes, 0);
  EXPECT_EQ(RootOp(slices_.Batch(16), only, &changes, "parallel_batch"), "Batch");
  EXPECT_EQ(RootOp(rows_.GlobalShuffle(1).Batch(16, false, kAutotune), only, &changes, "parallel_batch"),
            "Batch");
  EXPECT_EQ(changes, 1);
  // Rows a map makes (8 KiB each) are not gathered: the usual decision.
  const Dataset big =
      Dataset::FromTensorSlices(Element{Tensor::Zeros(DType::kFloat64, Shape({128, 1024}))});
  EXPECT_EQ(RootOp(big.Batch(64), only, &changes, "parallel_batch"), "Batch");
  EXPECT_EQ(RootOp(big.Map(K("cast", {{"dtype", DType::kFloat32}})).Batch(64), only, &changes,
                   "parallel_batch"),
            "ParallelBatch");
  only.optimization.Set("cost_model", false);
  EXPECT_EQ(RootOp(rows_.GlobalShuffle(1).Batch(16), only, &changes, "parallel_batch"), "ParallelBatch");
}

}  // namespace
}  // namespace sluice
