// Conformance and semantics of Filter, Interleave/FlatMap, Repeat, Take, Skip, Shard,
// Zip, Concatenate and Enumerate. (Shuffle: shuffle_test.cc.)
#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <thread>

#include "testing/conformance.h"

namespace sluice {
namespace {

using testing::CheckDataset;
using testing::CheckTransform;
using testing::CollectOrDie;
using testing::Ints;
using testing::IntsOf;

int64_t I(const Tensor& t) { return t.scalar<int64_t>(); }

Function Pred(std::string name, std::function<bool(int64_t)> f) {
  return Function::Predicate(
      std::move(name),
      [f](const Element& e, FunctionContext&) -> Result<bool> { return f(I(e[0])); });
}

Function MapInt(std::string name, std::function<int64_t(int64_t)> f,
                bool skippable = false) {
  return Function::Map(std::move(name),
                       [f](Element e, FunctionContext&) -> Result<Element> {
                         return Element{Tensor::Scalar<int64_t>(f(I(e[0])))};
                       },
                       {.skippable = skippable});
}

// x -> Range(100 * x, 100 * x + len(x)).
Function RangeFn(std::function<int64_t(int64_t)> len) {
  return Function::DatasetFunction("range_fn",
                                   [len](Element e, FunctionContext&) -> Result<Dataset> {
                                     int64_t x = I(e[0]);
                                     return Dataset::Range(100 * x, 100 * x + len(x));
                                   });
}

std::vector<int64_t> Iota(int64_t begin, int64_t end, int64_t step = 1) {
  std::vector<int64_t> v;
  for (int64_t i = begin; i < end; i += step) v.push_back(i);
  return v;
}

// Reads everything, recording errors instead of stopping: the values (as ints) and, for
// each error, the position in the stream where it occurred (-1-marked in `out`).
struct Stream {
  std::vector<int64_t> values;
  std::vector<std::string> errors;
  std::vector<int64_t> trace;  // values, with -1 where an error came
};
Stream ReadAll(const Dataset& ds, int max_calls = 1000) {
  Stream s;
  auto it = ds.MakeIterator();
  EXPECT_TRUE(it.ok()) << it.status();
  if (!it.ok()) return s;
  for (int i = 0; i < max_calls; ++i) {
    auto e = (*it)->GetNext();
    if (!e.ok()) {
      s.errors.push_back(e.status().message());
      s.trace.push_back(-1);
      continue;
    }
    if (!*e) return s;
    s.values.push_back(I((**e)[0]));
    s.trace.push_back(s.values.back());
  }
  ADD_FAILURE() << "the iterator did not end within " << max_calls << " calls";
  return s;
}

// ---------------------------------------------------------------------------------------
// Filter

// The first `n` GetNext results of two-int64-component elements, as "a,b", "error" or "end".
std::vector<std::string> TracePairs(Iterator* it, int n) {
  std::vector<std::string> trace;
  for (int i = 0; i < n; ++i) {
    auto e = it->GetNext();
    if (!e.ok())
      trace.push_back("error");
    else if (!*e)
      trace.push_back("end");
    else
      trace.push_back(std::to_string(I((**e)[0])) + "," + std::to_string(I((**e)[1])));
  }
  return trace;
}

TEST(FilterTest, Conformance) {
  CheckDataset(
      Dataset::Range(10).Filter(Pred("even", [](int64_t x) { return x % 2 == 0; })),
      Ints({0, 2, 4, 6, 8}));
  CheckDataset(Dataset::Range(10).Filter(Pred("none", [](int64_t) { return false; })),
               {});
  CheckTransform(
      [](Dataset in) { return in.Filter(Pred("all", [](int64_t) { return true; })); });
}

TEST(FilterTest, CardinalityAndSpec) {
  Dataset f = Dataset::Range(10).Filter(Pred("p", [](int64_t) { return true; }));
  EXPECT_EQ(f.Cardinality(), kUnknownCardinality);
  EXPECT_EQ(
      Dataset::Range(0).Filter(Pred("p", [](int64_t) { return true; })).Cardinality(), 0);
  EXPECT_EQ(Dataset::Range(3)
                .Repeat()
                .Filter(Pred("p", [](int64_t) { return true; }))
                .Cardinality(),
            kUnknownCardinality);
  EXPECT_EQ(f.element_spec(), Dataset::Range(10).element_spec());
}

TEST(FilterTest, ElementFunctionReturningBoolIsAPredicate) {
  Function f = Function::Map("gt3", [](Element e, FunctionContext&) -> Result<Element> {
    return Element{Tensor::Scalar<bool>(I(e[0]) > 3)};
  });
  EXPECT_EQ(IntsOf(CollectOrDie(Dataset::Range(6).Filter(f))),
            (std::vector<int64_t>{4, 5}));
  // An element function returning something else is an error at run time.
  auto r =
      Dataset::Range(3).Filter(MapInt("not_bool", [](int64_t x) { return x; })).Collect();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("bool"), std::string::npos) << r.status();
}

TEST(FilterTest, RejectsDatasetFunctions) {
  Dataset d = Dataset::Range(3).Filter(RangeFn([](int64_t) { return 1; }));
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("Filter"), std::string::npos) << d.status();
}

TEST(FilterTest, PredicateErrorsAreReportedAndSkipped) {
  Function p = Function::Predicate(
      "fails_at_2", [](const Element& e, FunctionContext&) -> Result<bool> {
        if (I(e[0]) == 2) return InvalidArgumentError("bad element 2");
        return true;
      });
  // Under a Take, the error's iterator path names the Filter ("Root/Filter[0]").
  Stream s = ReadAll(Dataset::Range(5).Filter(p).Take(-1));
  EXPECT_EQ(s.trace, (std::vector<int64_t>{0, 1, -1, 3, 4}));
  ASSERT_EQ(s.errors.size(), 1u);
  EXPECT_NE(s.errors[0].find("fails_at_2"), std::string::npos) << s.errors[0];
  EXPECT_NE(s.errors[0].find("Filter"), std::string::npos) << s.errors[0];
}

TEST(FilterTest, RandomPredicateIsKeyedByPosition) {
  Function coin =
      Function::Predicate("coin",
                          [](const Element&, FunctionContext& ctx) -> Result<bool> {
                            return ctx.rng().UniformInt(2) == 0;
                          },
                          {.is_random = true});
  Dataset ds = Dataset::Range(200).Filter(coin);
  auto a = CollectOrDie(ds);
  EXPECT_EQ(IntsOf(a), IntsOf(CollectOrDie(ds)));
  EXPECT_GT(a.size(), 50u);
  EXPECT_LT(a.size(), 150u);
  CheckDataset(ds, a, {.save_restore_stride = 13});
}

// ---------------------------------------------------------------------------------------
// Interleave / FlatMap

// tf.data's interleave algorithm over precomputed inner sequences (the reference).
std::vector<int64_t> RefInterleave(const std::vector<std::vector<int64_t>>& inners,
                                   int64_t cycle, int64_t block) {
  std::vector<std::optional<std::pair<size_t, size_t>>> slots(cycle);
  size_t next_input = 0;
  int64_t ci = 0, bi = 0, open = 0;
  std::vector<int64_t> out;
  auto advance = [&] {
    bi = 0;
    ci = (ci + 1) % cycle;
  };
  while (next_input < inners.size() || open > 0) {
    auto& s = slots[ci];
    if (s) {
      if (s->second < inners[s->first].size()) {
        out.push_back(inners[s->first][s->second++]);
        if (++bi == block) advance();
      } else {
        s.reset();
        --open;
        advance();
      }
    } else if (next_input < inners.size()) {
      s = std::make_pair(next_input++, size_t{0});
      ++open;
    } else {
      advance();
    }
  }
  return out;
}

TEST(InterleaveTest, TfDataDocExample) {
  // From the tf.data documentation of Dataset.interleave.
  Function fn = Function::DatasetFunction(
      "rep6", [](Element e, FunctionContext&) -> Result<Dataset> {
        return Dataset::FromTensors(e).Repeat(6);
      });
  Dataset ds =
      Dataset::Range(1, 6).Interleave(fn, /*cycle_length=*/2, /*block_length=*/4);
  CheckDataset(ds, Ints({1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 2, 2, 3, 3, 3,
                         3, 4, 4, 4, 4, 3, 3, 4, 4, 5, 5, 5, 5, 5, 5}));
  EXPECT_EQ(ds.Cardinality(), kUnknownCardinality);
}

TEST(InterleaveTest, MatchesReferenceForManyShapes) {
  auto len = [](int64_t x) { return (x * 7 + 3) % 5; };  // includes empty inner datasets
  for (int64_t n : {0, 1, 5, 9}) {
    std::vector<std::vector<int64_t>> inners;
    for (int64_t x = 0; x < n; ++x) inners.push_back(Iota(100 * x, 100 * x + len(x)));
    for (int64_t cycle : {1, 2, 3, 7, 20}) {
      for (int64_t block : {1, 2, 5}) {
        SCOPED_TRACE("n=" + std::to_string(n) + " cycle=" + std::to_string(cycle) +
                     " block=" + std::to_string(block));
        Dataset ds = Dataset::Range(n).Interleave(RangeFn(len), cycle, block);
        CheckDataset(ds, Ints(RefInterleave(inners, cycle, block)),
                     {.save_restore_stride = n > 5 ? 3 : 1});
      }
    }
  }
}

TEST(InterleaveTest, AutotuneCycleLengthIsTheCoreCount) {
  auto len = [](int64_t x) { return x % 3 + 1; };
  std::vector<std::vector<int64_t>> inners;
  for (int64_t x = 0; x < 40; ++x) inners.push_back(Iota(100 * x, 100 * x + len(x)));
  int64_t cores = std::max<int64_t>(1, std::thread::hardware_concurrency());
  Dataset ds = Dataset::Range(40).Interleave(RangeFn(len), kAutotune, 2);
  ASSERT_TRUE(ds.ok()) << ds.status();
  EXPECT_EQ(IntsOf(CollectOrDie(ds)), RefInterleave(inners, cores, 2));
}

TEST(InterleaveTest, FlatMap) {
  Dataset ds = Dataset::Range(5).FlatMap(RangeFn([](int64_t x) { return x; }));
  CheckDataset(ds, Ints({100, 200, 201, 300, 301, 302, 400, 401, 402, 403}));
  EXPECT_EQ(ds.Cardinality(), kUnknownCardinality);
  EXPECT_EQ(Dataset::Range(0).FlatMap(RangeFn([](int64_t x) { return x; })).Cardinality(),
            0);
  // Nested flat_maps, each level checkpointed.
  Dataset nested = Dataset::Range(3).FlatMap(Function::DatasetFunction(
      "nested", [](Element e, FunctionContext&) -> Result<Dataset> {
        return Dataset::Range(I(e[0]) + 1).FlatMap(RangeFn([](int64_t x) { return 2; }));
      }));
  CheckDataset(nested, Ints({0, 1, 0, 1, 100, 101, 0, 1, 100, 101, 200, 201}));
}

TEST(InterleaveTest, Transform) {
  Function id = Function::DatasetFunction(
      "from_tensors", [](Element e, FunctionContext&) -> Result<Dataset> {
        return Dataset::FromTensors(std::move(e));
      });
  CheckTransform([id](Dataset in) { return in.Interleave(id, 3, 2); });
  CheckTransform([id](Dataset in) { return in.FlatMap(id); });
}

TEST(InterleaveTest, InvalidArguments) {
  auto fn = RangeFn([](int64_t) { return 1; });
  EXPECT_FALSE(Dataset::Range(3).Interleave(fn, 0).ok());
  EXPECT_FALSE(Dataset::Range(3).Interleave(fn, -3).ok());
  EXPECT_FALSE(Dataset::Range(3).Interleave(fn, 2, 0).ok());
  Dataset bad = Dataset::Range(3).Interleave(MapInt("m", [](int64_t x) { return x; }), 2);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("Interleave"), std::string::npos) << bad.status();
  EXPECT_FALSE(Dataset::Range(3).FlatMap(MapInt("m", [](int64_t x) { return x; })).ok());
}

TEST(InterleaveTest, FunctionAndInnerErrorsPropagateAndMoveOn) {
  Function fn = Function::DatasetFunction(
      "fails_on_2", [](Element e, FunctionContext&) -> Result<Dataset> {
        int64_t x = I(e[0]);
        if (x == 2) return InvalidArgumentError("no dataset for 2");
        if (x == 3)
          return testing::FailingAt(3, 1).Map(
              MapInt("plus300", [](int64_t v) { return v + 300; }));
        return Dataset::Range(100 * x, 100 * x + 2);
      });
  Stream s = ReadAll(Dataset::Range(5).FlatMap(fn).Take(-1));
  // 0: 0,1; 1: 100,101; 2: error; 3: 300, error, 302; 4: 400, 401.
  EXPECT_EQ(s.trace, (std::vector<int64_t>{0, 1, 100, 101, -1, 300, -1, 302, 400, 401}));
  ASSERT_EQ(s.errors.size(), 2u);
  EXPECT_NE(s.errors[0].find("no dataset for 2"), std::string::npos) << s.errors[0];
  EXPECT_NE(s.errors[0].find("FlatMap"), std::string::npos) << s.errors[0];
  EXPECT_NE(s.errors[1].find("injected failure at 1"), std::string::npos) << s.errors[1];
}

TEST(InterleaveTest, InnerRandomnessDiffersPerElementAndRestores) {
  // Each inner dataset shuffles with the same op seed; the per-element context makes the
  // orders differ, deterministically for a given iterator.
  Function fn = Function::DatasetFunction(
      "shuffled", [](Element e, FunctionContext&) -> Result<Dataset> {
        return Dataset::Range(20).Shuffle(20, /*seed=*/5);
      });
  Dataset ds = Dataset::Range(4).FlatMap(fn);
  auto it = ds.MakeIterator();
  ASSERT_TRUE(it.ok());
  std::vector<std::vector<int64_t>> orders(4);
  for (int i = 0; i < 80; ++i) {
    auto e = (*it)->GetNext();
    ASSERT_TRUE(e.ok() && e->has_value());
    orders[i / 20].push_back(I((**e)[0]));
  }
  for (int i = 0; i < 4; ++i) {
    std::vector<int64_t> sorted = orders[i];
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, Iota(0, 20));
  }
  EXPECT_NE(orders[0], orders[1]);
  EXPECT_NE(orders[1], orders[2]);
  // Different iterators reshuffle (reshuffle_each_iteration), checkpoints restore
  // exactly.
  std::vector<Element> first;
  for (const auto& o : orders) {
    for (int64_t v : o) first.push_back(Element{Tensor::Scalar<int64_t>(v)});
  }
  CheckDataset(ds, first, {.ordered = true, .same_each_iteration = false});
}

TEST(InterleaveTest, CheckpointFromOtherCycleLengthIsRejected) {
  auto fn = RangeFn([](int64_t) { return 3; });
  auto a = Dataset::Range(10).Interleave(fn, 2).MakeIterator();
  ASSERT_TRUE(a.ok());
  for (int i = 0; i < 4; ++i) ASSERT_TRUE((*a)->GetNext().ok());
  auto ckpt = (*a)->Save();
  ASSERT_TRUE(ckpt.ok());
  auto b = Dataset::Range(10).Interleave(fn, 3).MakeIterator();
  ASSERT_TRUE(b.ok());
  Status s = (*b)->Restore(*ckpt);
  EXPECT_FALSE(s.ok());
  // The checkpoint's pipeline fingerprint differs (the op's own cycle_length check
  // guards checkpoints of format version 1, which carry none).
  EXPECT_NE(s.message().find("different pipeline"), std::string::npos) << s;
}

TEST(InterleaveTest, HugeCycleLengthCostsNothingUpFront) {
  auto fn = RangeFn([](int64_t) { return 2; });
  Dataset ds = Dataset::Range(3).Interleave(fn, int64_t{1} << 40);
  EXPECT_EQ(IntsOf(CollectOrDie(ds)), (std::vector<int64_t>{0, 100, 200, 1, 101, 201}));
}

// ---------------------------------------------------------------------------------------
// Repeat

TEST(RepeatTest, Conformance) {
  CheckDataset(Dataset::Range(3).Repeat(3), Ints({0, 1, 2, 0, 1, 2, 0, 1, 2}));
  CheckDataset(Dataset::Range(3).Repeat(0), {});
  CheckDataset(Dataset::Range(0).Repeat(5), {});
  CheckDataset(Dataset::Range(4).Repeat().Take(10), Ints({0, 1, 2, 3, 0, 1, 2, 3, 0, 1}));
  CheckTransform([](Dataset in) { return in.Repeat(2); });
  CheckTransform([](Dataset in) { return in.Repeat(); });
}

TEST(RepeatTest, Cardinality) {
  EXPECT_EQ(Dataset::Range(3).Repeat(4).Cardinality(), 12);
  EXPECT_EQ(Dataset::Range(3).Repeat(0).Cardinality(), 0);
  EXPECT_EQ(Dataset::Range(3).Repeat().Cardinality(), kInfiniteCardinality);
  EXPECT_EQ(Dataset::Range(0).Repeat().Cardinality(), 0);
  Dataset unknown = Dataset::Range(3).Filter(Pred("p", [](int64_t) { return true; }));
  EXPECT_EQ(unknown.Repeat(2).Cardinality(), kUnknownCardinality);
  EXPECT_EQ(unknown.Repeat(0).Cardinality(), 0);
}

TEST(RepeatTest, EmptyEpochEndsTheRepeat) {
  EXPECT_TRUE(CollectOrDie(Dataset::Range(0).Repeat()).empty());
  // Unknown cardinality, so Collect does not refuse it: it must terminate by itself.
  Dataset none = Dataset::Range(5).Filter(Pred("none", [](int64_t) { return false; }));
  EXPECT_TRUE(CollectOrDie(none.Repeat()).empty());
  auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(CollectOrDie(none.Repeat(int64_t{1} << 60)).empty());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  // An input that always fails ends as well (errors are not elements).
  Stream s = ReadAll(testing::FailingAt(1, 0).Repeat());
  EXPECT_TRUE(s.values.empty());
  EXPECT_EQ(s.errors.size(), 1u);
}

TEST(RepeatTest, SkipAcrossEpochsIsCheap) {
  auto start = std::chrono::steady_clock::now();
  const int64_t big = 1'000'000'000'000'000;  // 1e15
  Dataset ds = Dataset::Range(7).Repeat().Skip(big).Take(3);
  EXPECT_EQ(IntsOf(CollectOrDie(ds)),
            (std::vector<int64_t>{big % 7, (big + 1) % 7, (big + 2) % 7}));
  EXPECT_EQ(IntsOf(CollectOrDie(Dataset::Range(5).Repeat(1000).Skip(4998))),
            (std::vector<int64_t>{3, 4}));
  EXPECT_TRUE(CollectOrDie(Dataset::Range(5).Repeat(3).Skip(15)).empty());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  // Skipping inside an epoch whose size is not known.
  Dataset odd =
      Dataset::Range(6).Filter(Pred("odd", [](int64_t x) { return x % 2 == 1; }));
  EXPECT_EQ(IntsOf(CollectOrDie(odd.Repeat(3).Skip(4))),
            (std::vector<int64_t>{3, 5, 1, 3, 5}));
}

TEST(RepeatTest, ErrorsInEveryEpochSurface) {
  Stream s = ReadAll(testing::FailingAt(4, 2).Repeat(2));
  EXPECT_EQ(s.trace, (std::vector<int64_t>{0, 1, -1, 3, 0, 1, -1, 3}));
}

// ---------------------------------------------------------------------------------------
// Take / Skip

TEST(TakeTest, Conformance) {
  CheckDataset(Dataset::Range(10).Take(3), Ints({0, 1, 2}));
  CheckDataset(Dataset::Range(10).Take(0), {});
  CheckDataset(Dataset::Range(4).Take(-1), Ints({0, 1, 2, 3}));
  CheckDataset(Dataset::Range(4).Take(20), Ints({0, 1, 2, 3}));
  CheckTransform([](Dataset in) { return in.Take(5); });
  CheckTransform([](Dataset in) { return in.Take(-1); });
}

TEST(TakeTest, Cardinality) {
  EXPECT_EQ(Dataset::Range(10).Take(3).Cardinality(), 3);
  EXPECT_EQ(Dataset::Range(10).Take(30).Cardinality(), 10);
  EXPECT_EQ(Dataset::Range(10).Take(-1).Cardinality(), 10);
  EXPECT_EQ(Dataset::Range(3).Repeat().Take(7).Cardinality(), 7);
  EXPECT_EQ(Dataset::Range(3).Repeat().Take(-1).Cardinality(), kInfiniteCardinality);
  Dataset unknown = Dataset::Range(3).Filter(Pred("p", [](int64_t) { return true; }));
  EXPECT_EQ(unknown.Take(2).Cardinality(), kUnknownCardinality);
  EXPECT_EQ(unknown.Take(0).Cardinality(), 0);
}

TEST(TakeTest, SkipWithinTake) {
  EXPECT_EQ(IntsOf(CollectOrDie(Dataset::Range(10).Take(5).Skip(3))),
            (std::vector<int64_t>{3, 4}));
  EXPECT_TRUE(CollectOrDie(Dataset::Range(10).Take(5).Skip(7)).empty());
  EXPECT_TRUE(CollectOrDie(Dataset::Range(3).Take(5).Skip(3)).empty());
  // Take then a Repeat: each epoch takes again.
  EXPECT_EQ(IntsOf(CollectOrDie(Dataset::Range(10).Take(2).Repeat(2))),
            (std::vector<int64_t>{0, 1, 0, 1}));
}

TEST(SkipTest, Conformance) {
  CheckDataset(Dataset::Range(10).Skip(7), Ints({7, 8, 9}));
  CheckDataset(Dataset::Range(10).Skip(0), Ints(Iota(0, 10)));
  CheckDataset(Dataset::Range(10).Skip(-1), {});
  CheckDataset(Dataset::Range(10).Skip(20), {});
  CheckDataset(Dataset::Range(3).Repeat().Skip(4).Take(4), Ints({1, 2, 0, 1}));
  CheckTransform([](Dataset in) { return in.Skip(2); });
  CheckTransform([](Dataset in) { return in.Skip(-1); });
}

TEST(SkipTest, Cardinality) {
  EXPECT_EQ(Dataset::Range(10).Skip(3).Cardinality(), 7);
  EXPECT_EQ(Dataset::Range(10).Skip(30).Cardinality(), 0);
  EXPECT_EQ(Dataset::Range(10).Skip(-1).Cardinality(), 0);
  EXPECT_EQ(Dataset::Range(3).Repeat().Skip(5).Cardinality(), kInfiniteCardinality);
  Dataset unknown = Dataset::Range(3).Filter(Pred("p", [](int64_t) { return true; }));
  EXPECT_EQ(unknown.Skip(1).Cardinality(), kUnknownCardinality);
}

TEST(SkipTest, UsesTheInputsCheapSkip) {
  auto start = std::chrono::steady_clock::now();
  const int64_t big = 1'000'000'000'000'000;
  EXPECT_EQ(IntsOf(CollectOrDie(Dataset::Range(big).Skip(big - 2))),
            (std::vector<int64_t>{big - 2, big - 1}));
  // Skippable maps pass skips through.
  Dataset m = Dataset::Range(big).Map(MapInt(
      "neg", [](int64_t x) { return -x; }, true));
  EXPECT_EQ(IntsOf(CollectOrDie(m.Skip(big - 1))), (std::vector<int64_t>{1 - big}));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  // Nested skips.
  EXPECT_EQ(IntsOf(CollectOrDie(Dataset::Range(100).Skip(10).Skip(10).Take(3))),
            (std::vector<int64_t>{20, 21, 22}));
}

// ---------------------------------------------------------------------------------------
// Shard

TEST(ShardTest, Conformance) {
  CheckDataset(Dataset::Range(10).Shard(3, 0), Ints({0, 3, 6, 9}));
  CheckDataset(Dataset::Range(10).Shard(3, 1), Ints({1, 4, 7}));
  CheckDataset(Dataset::Range(10).Shard(3, 2), Ints({2, 5, 8}));
  CheckDataset(Dataset::Range(10).Shard(1, 0), Ints(Iota(0, 10)));
  CheckDataset(Dataset::Range(2).Shard(5, 4), {});
  CheckTransform([](Dataset in) { return in.Shard(2, 1); });
}

TEST(ShardTest, Cardinality) {
  for (int64_t n : {0, 1, 9, 10, 11, 12}) {
    for (int64_t i = 0; i < 3; ++i) {
      EXPECT_EQ(Dataset::Range(n).Shard(3, i).Cardinality(),
                static_cast<int64_t>(Iota(i, n, 3).size()))
          << n << " " << i;
    }
  }
  EXPECT_EQ(Dataset::Range(3).Repeat().Shard(2, 0).Cardinality(), kInfiniteCardinality);
  Dataset unknown = Dataset::Range(3).Filter(Pred("p", [](int64_t) { return true; }));
  EXPECT_EQ(unknown.Shard(2, 0).Cardinality(), kUnknownCardinality);
}

TEST(ShardTest, InvalidArguments) {
  EXPECT_FALSE(Dataset::Range(3).Shard(0, 0).ok());
  EXPECT_FALSE(Dataset::Range(3).Shard(3, 3).ok());
  EXPECT_FALSE(Dataset::Range(3).Shard(3, -1).ok());
  EXPECT_NE(Dataset::Range(3).Shard(3, 3).status().message().find("index"),
            std::string::npos);
}

TEST(ShardTest, SkipMatchesReference) {
  for (int64_t shards : {1, 2, 7}) {
    for (int64_t index = 0; index < shards; ++index) {
      std::vector<int64_t> ref = Iota(index, 100, shards);
      for (int64_t k : {0, 1, 3, 14, 200}) {
        Dataset ds = Dataset::Range(100).Shard(shards, index).Skip(k);
        std::vector<int64_t> want(ref.begin() + std::min<size_t>(k, ref.size()),
                                  ref.end());
        EXPECT_EQ(IntsOf(CollectOrDie(ds)), want) << shards << " " << index << " " << k;
      }
    }
  }
  // An input without cheap skips (a filter) gives the same answer.
  Dataset all = Dataset::Range(50).Filter(Pred("all", [](int64_t) { return true; }));
  EXPECT_EQ(IntsOf(CollectOrDie(all.Shard(4, 3).Skip(2))), Iota(11, 50, 4));
}

TEST(ShardTest, StaysAlignedAfterAnError) {
  Stream s = ReadAll(testing::FailingAt(10, 3).Shard(2, 1));
  EXPECT_EQ(s.trace, (std::vector<int64_t>{1, -1, 5, 7, 9}));
}

// ---------------------------------------------------------------------------------------
// Zip

Dataset Named(std::vector<std::string> names, int64_t n, int64_t offset) {
  std::vector<Tensor> comps;
  for (size_t i = 0; i < names.size(); ++i) {
    std::vector<int64_t> v = Iota(offset + 1000 * static_cast<int64_t>(i),
                                  offset + 1000 * static_cast<int64_t>(i) + n);
    comps.push_back(Tensor::FromVector<int64_t>(v));
  }
  return Dataset::FromTensorSlices(Element(comps, MakeNames(std::move(names))));
}

Element E(std::vector<int64_t> v) {
  std::vector<Tensor> t;
  for (int64_t x : v) t.push_back(Tensor::Scalar<int64_t>(x));
  return Element(std::move(t));
}

TEST(ZipTest, Conformance) {
  Dataset z = Dataset::Zip({Dataset::Range(5), Dataset::Range(10, 13)});
  CheckDataset(z, {E({0, 10}), E({1, 11}), E({2, 12})});
  EXPECT_EQ(z.Cardinality(), 3);
  EXPECT_EQ(z.element_spec().ToString(), "(int64[], int64[])");
  CheckDataset(Dataset::Zip({Dataset::Range(3)}), Ints({0, 1, 2}));
  CheckDataset(Dataset::Zip({Dataset::Range(3), Dataset::Range(0)}), {});
  CheckDataset(Dataset::Zip({Dataset::Range(4), Dataset::Range(2).Repeat(),
                             Dataset::Range(7, 20)}),
               {E({0, 0, 7}), E({1, 1, 8}), E({2, 0, 9}), E({3, 1, 10})});
  CheckTransform([](Dataset in) { return Dataset::Zip({in, Dataset::Range(100)}); });
  CheckTransform([](Dataset in) { return Dataset::Zip({Dataset::Range(100), in}); });
}

TEST(ZipTest, Cardinality) {
  EXPECT_EQ(Dataset::Zip({Dataset::Range(3), Dataset::Range(5).Repeat()}).Cardinality(),
            3);
  EXPECT_EQ(Dataset::Zip({Dataset::Range(3).Repeat(), Dataset::Range(5).Repeat()})
                .Cardinality(),
            kInfiniteCardinality);
  Dataset unknown = Dataset::Range(3).Filter(Pred("p", [](int64_t) { return true; }));
  EXPECT_EQ(Dataset::Zip({Dataset::Range(3), unknown}).Cardinality(),
            kUnknownCardinality);
}

TEST(ZipTest, Names) {
  Dataset z = Dataset::Zip({Named({"a", "b"}, 3, 0), Named({"c"}, 3, 10)});
  EXPECT_EQ(z.element_spec().ToString(), "(a: int64[], b: int64[], c: int64[])");
  auto got = CollectOrDie(z);
  ASSERT_EQ(got.size(), 3u);
  ASSERT_TRUE(got[1].names());
  EXPECT_EQ(*got[1].names(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(I(*got[1].Get("c")), 11);
  EXPECT_EQ(I(*got[1].Get("b")), 1001);
  // A positional input makes the whole tuple positional; so do duplicate names.
  Dataset mixed = Dataset::Zip({Named({"a"}, 3, 0), Dataset::Range(3)});
  EXPECT_EQ(mixed.element_spec().ToString(), "(int64[], int64[])");
  EXPECT_EQ(CollectOrDie(mixed)[0].names(), nullptr);
  Dataset dup = Dataset::Zip({Named({"a"}, 3, 0), Named({"a"}, 3, 5)});
  EXPECT_EQ(dup.element_spec().names, nullptr);
}

TEST(ZipTest, NeedsAnInput) {
  Dataset z = Dataset::Zip({});
  ASSERT_FALSE(z.ok());
  EXPECT_NE(z.status().message().find("Zip"), std::string::npos) << z.status();
}

TEST(ZipTest, SkipAndAlignmentAfterErrors) {
  Dataset z = Dataset::Zip({Dataset::Range(10), Dataset::Range(100, 106)});
  auto got = CollectOrDie(z.Skip(4));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(got[0].ContentEquals(E({4, 104})));
  EXPECT_TRUE(CollectOrDie(z.Skip(6)).empty());
  // An error in one input still advances the others: the pairs stay aligned.
  auto it = Dataset::Zip({testing::FailingAt(5, 2), Dataset::Range(5)}).MakeIterator();
  ASSERT_TRUE(it.ok());
  std::vector<std::string> trace = TracePairs(it->get(), 6);
  EXPECT_EQ(trace,
            (std::vector<std::string>{"0,0", "1,1", "error", "3,3", "4,4", "end"}));
}

// ---------------------------------------------------------------------------------------
// Concatenate

TEST(ConcatenateTest, Conformance) {
  Dataset c = Dataset::Range(3).Concatenate(Dataset::Range(10, 12));
  CheckDataset(c, Ints({0, 1, 2, 10, 11}));
  EXPECT_EQ(c.Cardinality(), 5);
  CheckDataset(Dataset::Range(0).Concatenate(Dataset::Range(2)), Ints({0, 1}));
  CheckDataset(Dataset::Range(2).Concatenate(Dataset::Range(0)), Ints({0, 1}));
  CheckTransform([](Dataset in) { return in.Concatenate(Dataset::Range(2)); },
                 Ints({0, 1}));
  CheckTransform([](Dataset in) { return Dataset::Range(2).Concatenate(in); },
                 Ints({0, 1}));
}

TEST(ConcatenateTest, Skip) {
  Dataset c = Dataset::Range(3).Concatenate(Dataset::Range(10, 15));
  EXPECT_EQ(IntsOf(CollectOrDie(c.Skip(4))), (std::vector<int64_t>{11, 12, 13, 14}));
  EXPECT_EQ(IntsOf(CollectOrDie(c.Skip(1).Take(3))), (std::vector<int64_t>{1, 2, 10}));
  EXPECT_TRUE(CollectOrDie(c.Skip(8)).empty());
}

TEST(ConcatenateTest, Cardinality) {
  EXPECT_EQ(Dataset::Range(3).Concatenate(Dataset::Range(2).Repeat()).Cardinality(),
            kInfiniteCardinality);
  Dataset unknown = Dataset::Range(3).Filter(Pred("p", [](int64_t) { return true; }));
  EXPECT_EQ(Dataset::Range(3).Concatenate(unknown).Cardinality(), kUnknownCardinality);
}

TEST(ConcatenateTest, SpecsAreMergedOrRejected) {
  Dataset a = Dataset::FromTensors(Element{Tensor::Zeros(DType::kFloat32, Shape{2, 3})});
  Dataset b = Dataset::FromTensors(Element{Tensor::Zeros(DType::kFloat32, Shape{2, 4})});
  Dataset ab = a.Concatenate(b);
  ASSERT_TRUE(ab.ok()) << ab.status();
  EXPECT_EQ(ab.element_spec().ToString(), "(float32[2, ?])");
  CheckDataset(ab, {Element{Tensor::Zeros(DType::kFloat32, Shape{2, 3})},
                    Element{Tensor::Zeros(DType::kFloat32, Shape{2, 4})}});
  Dataset rank = a.Concatenate(
      Dataset::FromTensors(Element{Tensor::Zeros(DType::kFloat32, Shape{2})}));
  ASSERT_TRUE(rank.ok());
  EXPECT_FALSE(rank.element_spec()[0].shape.rank_known());

  Dataset dtype = Dataset::Range(3).Concatenate(
      Dataset::FromTensors(Element{Tensor::Scalar<float>(1.0f)}));
  ASSERT_FALSE(dtype.ok());
  EXPECT_NE(dtype.status().message().find("int64[]"), std::string::npos)
      << dtype.status();
  EXPECT_NE(dtype.status().message().find("float32[]"), std::string::npos)
      << dtype.status();
  EXPECT_FALSE(Dataset::Range(3)
                   .Concatenate(Dataset::Zip({Dataset::Range(2), Dataset::Range(2)}))
                   .ok());
  EXPECT_FALSE(Named({"a"}, 2, 0).Concatenate(Named({"b"}, 2, 0)).ok());
  Dataset same = Named({"a"}, 2, 0).Concatenate(Named({"a"}, 2, 5));
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same.element_spec().ToString(), "(a: int64[])");
}

// ---------------------------------------------------------------------------------------
// Enumerate

TEST(EnumerateTest, Conformance) {
  Dataset e = Dataset::Range(10, 13).Enumerate(5);
  CheckDataset(e, {E({5, 10}), E({6, 11}), E({7, 12})});
  EXPECT_EQ(e.Cardinality(), 3);
  EXPECT_EQ(e.element_spec().ToString(), "(int64[], int64[])");
  EXPECT_EQ(Dataset::Range(3).Repeat().Enumerate().Cardinality(), kInfiniteCardinality);
  CheckTransform([](Dataset in) { return in.Enumerate(); });
}

TEST(EnumerateTest, NamesAndSkip) {
  Dataset e = Named({"x", "y"}, 4, 0).Enumerate();
  EXPECT_EQ(e.element_spec().ToString(), "(index: int64[], x: int64[], y: int64[])");
  auto got = CollectOrDie(e.Skip(2));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(I(*got[0].Get("index")), 2);
  EXPECT_EQ(I(*got[0].Get("x")), 2);
  EXPECT_EQ(I(*got[1].Get("y")), 1003);
}

TEST(EnumerateTest, AnErrorConsumesAnIndex) {
  auto it = testing::FailingAt(5, 2).Enumerate().MakeIterator();
  ASSERT_TRUE(it.ok());
  std::vector<std::string> trace = TracePairs(it->get(), 6);
  EXPECT_EQ(trace,
            (std::vector<std::string>{"0,0", "1,1", "error", "3,3", "4,4", "end"}));
}

}  // namespace
}  // namespace sluice
