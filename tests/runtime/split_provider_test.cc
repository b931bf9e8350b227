// Split providers: the local providers on their own, and every splittable source under
// several pipeline shapes with 1, 2 and 3 iterators sharing one provider (round-robin,
// from threads, and across a checkpoint of all of them): together they produce exactly
// the unsharded run's multiset.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "api/dataset_internal.h"
#include "formats/idx.h"
#include "formats/tfrecord.h"
#include "runtime/split_provider.h"
#include "testing/conformance.h"

namespace sluice {
namespace {

using testing::TempDir;
using testing::WriteFile;

// ---- the providers ----

std::vector<int64_t> Drain(SplitProvider& p) {
  std::vector<int64_t> out;
  while (true) {
    auto s = p.GetNext();
    EXPECT_TRUE(s.ok()) << s.status();
    if (!s.ok() || !*s) break;
    out.push_back((*s)->scalar<int64_t>());
  }
  return out;
}

TEST(SplitProviderTest, IndexExhaustsThenStaysExhaustedUntilReset) {
  IndexSplitProvider p(4);
  EXPECT_EQ(p.Cardinality(), 4);
  EXPECT_EQ(Drain(p), (std::vector<int64_t>{0, 1, 2, 3}));
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(p.GetNext()->has_value());
  ASSERT_TRUE(p.Reset().ok());
  EXPECT_EQ(Drain(p), (std::vector<int64_t>{0, 1, 2, 3}));
  IndexSplitProvider empty(-3);
  EXPECT_EQ(empty.Cardinality(), 0);
  EXPECT_FALSE(empty.GetNext()->has_value());
}

TEST(SplitProviderTest, ListHandsOutNamesInOrder) {
  ListSplitProvider p({"b", "a", "c"});
  EXPECT_EQ(p.Cardinality(), 3);
  std::vector<std::string> got;
  while (auto s = *p.GetNext()) got.push_back(s->scalar<std::string>());
  EXPECT_EQ(got, (std::vector<std::string>{"b", "a", "c"}));
  ASSERT_TRUE(p.Reset().ok());
  EXPECT_EQ((*p.GetNext())->scalar<std::string>(), "b");
}

TEST(SplitProviderTest, SaveRestoreContinuesAtThePosition) {
  IndexSplitProvider p(10);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(p.GetNext().ok());
  auto ckpt = SaveSplitProvider(p);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status();
  EXPECT_LT(ckpt->size(), 64u);  // a position, not a list
  IndexSplitProvider q(10);
  ASSERT_TRUE(RestoreSplitProvider(&q, *ckpt).ok());
  EXPECT_EQ(Drain(q), (std::vector<int64_t>{4, 5, 6, 7, 8, 9}));

  ListSplitProvider l({"x", "y", "z"});
  ASSERT_TRUE(l.GetNext().ok());
  auto lc = SaveSplitProvider(l);
  ListSplitProvider l2({"x", "y", "z"});
  ASSERT_TRUE(RestoreSplitProvider(&l2, *lc).ok());
  EXPECT_EQ((*l2.GetNext())->scalar<std::string>(), "y");
}

TEST(SplitProviderTest, RestoreRejectsAPositionPastTheEnd) {
  IndexSplitProvider p(10);
  Drain(p);
  auto ckpt = SaveSplitProvider(p);
  IndexSplitProvider smaller(5);
  Status s = RestoreSplitProvider(&smaller, *ckpt);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s;
  EXPECT_NE(s.message().find("IndexSplitProvider"), std::string::npos) << s;
  EXPECT_FALSE(RestoreSplitProvider(&smaller, "garbage").ok());
}

TEST(SplitProviderTest, ConcurrentGetNextHandsOutEverySplitOnce) {
  constexpr int64_t kN = 20000;
  IndexSplitProvider p(kN);
  std::vector<std::vector<int64_t>> got(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&p, &got, t] {
      while (auto s = *p.GetNext()) got[t].push_back(s->scalar<int64_t>());
    });
  }
  for (auto& t : threads) t.join();
  std::vector<int64_t> all;
  for (const auto& g : got) all.insert(all.end(), g.begin(), g.end());
  std::sort(all.begin(), all.end());
  ASSERT_EQ(static_cast<int64_t>(all.size()), kN);
  for (int64_t i = 0; i < kN; ++i) ASSERT_EQ(all[i], i);
}

TEST(SplitProviderTest, ShardingTakesEveryKthSplit) {
  auto s = ShardingSplitProvider::Make(3, 1, std::make_shared<IndexSplitProvider>(10));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ((*s)->Cardinality(), 3);
  EXPECT_EQ((*s)->GetNext()->value().scalar<int64_t>(), 1);
  auto ckpt = SaveSplitProvider(**s);
  auto t = ShardingSplitProvider::Make(3, 1, std::make_shared<IndexSplitProvider>(10));
  ASSERT_TRUE(RestoreSplitProvider(t->get(), *ckpt).ok());
  EXPECT_EQ(Drain(**t), (std::vector<int64_t>{4, 7}));
  EXPECT_EQ(Drain(**s), (std::vector<int64_t>{4, 7}));
  EXPECT_FALSE(
      ShardingSplitProvider::Make(3, 3, std::make_shared<IndexSplitProvider>(1)).ok());
  EXPECT_FALSE(
      ShardingSplitProvider::Make(0, 0, std::make_shared<IndexSplitProvider>(1)).ok());
  EXPECT_FALSE(ShardingSplitProvider::Make(2, 0, nullptr).ok());
}

TEST(SplitProviderTest, SplitsTakenAfterAConsumersCheckpointAreHandedOutAgain) {
  auto shared = std::make_shared<IndexSplitProvider>(10);
  SplitConsumer a(shared), b(shared);
  ASSERT_EQ((*a.GetNext())->scalar<int64_t>(), 0);  // before any checkpoint: not logged
  a.MarkCheckpoint();
  b.MarkCheckpoint();
  ASSERT_EQ((*a.GetNext())->scalar<int64_t>(), 1);  // after a's checkpoint
  ASSERT_EQ((*b.GetNext())->scalar<int64_t>(), 2);
  b.MarkCheckpoint();  // b's checkpoint now includes split 2
  auto ckpt = SaveSplitProvider(*shared);
  ASSERT_TRUE(ckpt.ok());
  auto fresh = std::make_shared<IndexSplitProvider>(10);
  ASSERT_TRUE(RestoreSplitProvider(fresh.get(), *ckpt).ok());
  EXPECT_EQ(Drain(*fresh), (std::vector<int64_t>{1, 3, 4, 5, 6, 7, 8, 9}));
}

// ---- sources and pipelines ----

// The last two components of a path ("cat/0.png"), so that a key does not depend on
// the random temporary directory.
std::string Tail(const std::string& s) {
  const size_t last = s.rfind('/');
  if (last == std::string::npos || last == 0) return s;
  const size_t before = s.rfind('/', last - 1);
  return before == std::string::npos ? s : s.substr(before + 1);
}

// A canonical text form of one element (or, for batched pipelines, of each row).
// Strings are written in full (DebugString cuts them at 32 characters, which would
// make every file under the temporary directory the same key); `stable` keeps only
// their last two path components, for a filter whose choice must not depend on where
// the test's files are.
std::string Key(const Element& e, bool stable = false) {
  std::string k;
  for (size_t i = 0; i < e.size(); ++i) {
    const Tensor& t = e[i];
    if (t.dtype() != DType::kString) {
      k += t.DebugString(1000) + "|";
      continue;
    }
    k += "string" + t.shape().ToString() + "{";
    for (int64_t j = 0; j < t.num_elements(); ++j) {
      const std::string& v = t.data<std::string>()[j];
      k += (stable ? Tail(v) : v) + ",";
    }
    k += "}|";
  }
  return k;
}

struct Shape {
  std::string name;
  std::function<Dataset(Dataset)> apply;
  bool batched = false;
};

Function Identity() {
  return Function::Map("identity",
                       [](Element e, FunctionContext&) -> Result<Element> { return e; },
                       {.skippable = true});
}

std::vector<Shape> Shapes() {
  return {
      {"plain", [](Dataset d) { return d; }},
      {"map", [](Dataset d) { return d.Map(Identity()); }},
      {"filter",
       [](Dataset d) {
         return d.Filter(Function::Predicate(
             "half", [](const Element& e, FunctionContext&) -> Result<bool> {
               return std::hash<std::string>()(Key(e, /*stable=*/true)) % 3 != 0;
             }));
       }},
      {"batch", [](Dataset d) { return d.Batch(3); }, true},
      {"shuffle", [](Dataset d) { return d.Shuffle(5, 7); }},
      {"prefetch_parallel_map",
       [](Dataset d) { return d.Map(Identity(), 3).Prefetch(2); }},
      {"take", [](Dataset d) { return d.Take(1000000); }},
      {"map_batch_prefetch",
       [](Dataset d) { return d.Map(Identity()).Batch(2).Prefetch(3); }, true},
  };
}

// The multiset of keys of `elements` (rows of batches when batched).
std::multiset<std::string> Keys(const std::vector<Element>& elements, bool batched) {
  std::multiset<std::string> out;
  for (const Element& e : elements) {
    if (!batched) {
      out.insert(Key(e));
      continue;
    }
    for (int64_t r = 0; r < e[0].dim(0); ++r) {
      Element row;
      for (size_t i = 0; i < e.size(); ++i) row.push_back(e[i].SubTensor(r));
      out.insert(Key(row));
    }
  }
  return out;
}

class SourceFiles {
 public:
  SourceFiles() {
    // Record files of different lengths, one empty.
    const std::vector<int> lines = {3, 0, 5, 1, 4};
    for (size_t f = 0; f < lines.size(); ++f) {
      std::string text;
      for (int l = 0; l < lines[f]; ++l)
        text += "f" + std::to_string(f) + "l" + std::to_string(l) + "\n";
      text_.push_back(dir_.File("t" + std::to_string(f) + ".txt"));
      WriteFile(text_.back(), text);

      tfrecord_.push_back(dir_.File("r" + std::to_string(f) + ".tfrecord"));
      auto w = TFRecordWriter::Open(tfrecord_.back());
      EXPECT_TRUE(w.ok());
      for (int l = 0; l < lines[f]; ++l) {
        EXPECT_TRUE(
            (*w)->Write("rec" + std::to_string(f) + "." + std::to_string(l)).ok());
      }
      EXPECT_TRUE((*w)->Close().ok());

      std::string fixed = "HH";  // header 2, records of 4, footer 1
      for (int l = 0; l < lines[f]; ++l)
        fixed += "x" + std::to_string(f) + std::to_string(l) + "y";
      fixed += "F";
      fixed_.push_back(dir_.File("x" + std::to_string(f) + ".bin"));
      WriteFile(fixed_.back(), fixed);
    }
    Tensor rows(DType::kUInt8, sluice::Shape{11, 2, 3});
    for (int i = 0; i < 66; ++i)
      rows.mutable_data<uint8_t>()[i] = static_cast<uint8_t>(i * 3);
    WriteFile(dir_.File("rows.idx"), *EncodeIdx(rows));
    for (const char* cls : {"cat", "dog", "eel"}) {
      std::filesystem::create_directories(dir_.File(std::string("images/") + cls));
      for (int i = 0; i < 4; ++i) {
        WriteFile(
            dir_.File(std::string("images/") + cls + "/" + std::to_string(i) + ".png"),
            "");
      }
    }
  }
  std::string File(const std::string& n) const { return dir_.File(n); }
  const std::vector<std::string>& text() const { return text_; }
  const std::vector<std::string>& tfrecord() const { return tfrecord_; }
  const std::vector<std::string>& fixed() const { return fixed_; }

 private:
  TempDir dir_;
  std::vector<std::string> text_, tfrecord_, fixed_;
};

std::map<std::string, std::function<Dataset(const SourceFiles&)>> Sources() {
  return {
      {"Range", [](const SourceFiles&) { return Dataset::Range(3, 60, 2); }},
      {"FromTensorSlices",
       [](const SourceFiles&) {
         std::vector<int64_t> v(23);
         std::vector<std::string> s(23);
         for (int i = 0; i < 23; ++i) {
           v[i] = i * i;
           s[i] = "s" + std::to_string(i);
         }
         return Dataset::FromTensorSlices(
             Element{Tensor::FromVector(v), Tensor::FromVector(s)});
       }},
      {"ImageFolder",
       [](const SourceFiles& f) { return Dataset::ImageFolder(f.File("images")); }},
      {"Idx", [](const SourceFiles& f) { return Dataset::Idx(f.File("rows.idx")); }},
      {"ListFiles",
       [](const SourceFiles& f) {
         return Dataset::ListFiles({f.File("images/*/*.png"), f.File("*.txt")}, true, 3);
       }},
      {"TextLine", [](const SourceFiles& f) { return Dataset::TextLine(f.text()); }},
      {"TFRecord", [](const SourceFiles& f) { return Dataset::TFRecord(f.tfrecord()); }},
      {"FixedLengthRecord",
       [](const SourceFiles& f) {
         return Dataset::FixedLengthRecord(f.fixed(), 4, 2, 1);
       }},
  };
}

Options Small() {
  Options o;
  o.autotune.cpu_budget = 2;
  o.autotune.enabled = false;
  return o;
}

std::vector<Element> CollectAll(const Dataset& ds) {
  auto it = MakeIteratorAsBuilt(ds, Small());
  EXPECT_TRUE(it.ok()) << it.status();
  std::vector<Element> out;
  while (true) {
    auto e = (*it)->GetNext();
    EXPECT_TRUE(e.ok()) << e.status();
    if (!e.ok() || !*e) break;
    out.push_back(std::move(**e));
  }
  return out;
}

using Iterators = std::vector<std::unique_ptr<Iterator>>;

Iterators MakeIterators(const Dataset& ds, int n,
                        const std::shared_ptr<SplitProvider>& p) {
  Iterators its;
  for (int i = 0; i < n; ++i) {
    auto it = MakeIteratorAsBuilt(ds, Small(), p);
    EXPECT_TRUE(it.ok()) << it.status();
    if (it.ok()) its.push_back(std::move(it).value());
  }
  return its;
}

// Pulls round-robin until every iterator ended or `limit` elements were taken.
void RoundRobin(Iterators& its, std::vector<Element>* out, int64_t limit = -1) {
  std::vector<bool> done(its.size(), false);
  size_t live = its.size();
  while (live > 0 && (limit < 0 || static_cast<int64_t>(out->size()) < limit)) {
    for (size_t i = 0; i < its.size(); ++i) {
      if (done[i]) continue;
      auto e = its[i]->GetNext();
      ASSERT_TRUE(e.ok()) << e.status();
      if (!*e) {
        done[i] = true;
        --live;
      } else {
        out->push_back(std::move(**e));
      }
    }
  }
}

void FromThreads(Iterators& its, std::vector<Element>* out) {
  std::mutex mu;
  std::vector<std::thread> threads;
  for (auto& it : its) {
    threads.emplace_back([&mu, out, it = it.get()] {
      while (true) {
        auto e = it->GetNext();
        EXPECT_TRUE(e.ok()) << e.status();
        if (!e.ok() || !*e) return;
        std::lock_guard<std::mutex> l(mu);
        out->push_back(std::move(**e));
      }
    });
  }
  for (auto& t : threads) t.join();
}

class SplitSourceTest : public ::testing::TestWithParam<std::string> {
 protected:
  SourceFiles files_;
};

TEST_P(SplitSourceTest, SharedProviderYieldsExactlyTheUnshardedMultiset) {
  const Dataset source = Sources().at(GetParam())(files_);
  for (const Shape& shape : Shapes()) {
    const Dataset ds = shape.apply(source);
    const std::multiset<std::string> want = Keys(CollectAll(ds), shape.batched);
    ASSERT_GE(want.size(), 4u) << shape.name;
    for (int n : {1, 2, 3}) {
      SCOPED_TRACE(shape.name + " with " + std::to_string(n) + " iterators");
      {
        auto p = ds.MakeSplitProvider();
        ASSERT_TRUE(p.ok()) << p.status();
        Iterators its = MakeIterators(ds, n, *p);
        std::vector<Element> got;
        RoundRobin(its, &got);
        EXPECT_EQ(Keys(got, shape.batched), want) << "round-robin";
      }
      {
        auto p = ds.MakeSplitProvider();
        Iterators its = MakeIterators(ds, n, *p);
        std::vector<Element> got;
        FromThreads(its, &got);
        EXPECT_EQ(Keys(got, shape.batched), want) << "threads";
      }
      // Checkpoint all iterators and the provider at several points, resume in fresh
      // ones.
      for (int64_t at : {int64_t{1}, static_cast<int64_t>(want.size() / 3)}) {
        SCOPED_TRACE("checkpoint after " + std::to_string(at) + " elements");
        auto p = ds.MakeSplitProvider();
        Iterators its = MakeIterators(ds, n, *p);
        std::vector<Element> got;
        RoundRobin(its, &got, at);
        std::vector<std::string> ckpts;
        for (auto& it : its) {
          auto c = it->Save();
          ASSERT_TRUE(c.ok()) << c.status();
          ckpts.push_back(*c);
        }
        auto pc = SaveSplitProvider(**p);
        ASSERT_TRUE(pc.ok()) << pc.status();
        its.clear();
        auto q = ds.MakeSplitProvider();
        ASSERT_TRUE(RestoreSplitProvider(q->get(), *pc).ok());
        Iterators fresh = MakeIterators(ds, n, *q);
        for (int i = 0; i < n; ++i) {
          Status s = fresh[i]->Restore(ckpts[i]);
          ASSERT_TRUE(s.ok()) << s;
        }
        RoundRobin(fresh, &got);
        EXPECT_EQ(Keys(got, shape.batched), want);
      }
    }
  }
}

TEST_P(SplitSourceTest, OptimizedIteratorsShareAProvider) {
  // MakeIterator(provider): the dataset's options and static rewrites (map fusion,
  // parallelization, injected prefetch) with autotuning on.
  const Dataset ds =
      Sources().at(GetParam())(files_).Map(Identity()).Map(Identity()).Batch(2);
  const std::multiset<std::string> want = Keys(CollectAll(ds), true);
  auto p = ds.MakeSplitProvider();
  ASSERT_TRUE(p.ok()) << p.status();
  Iterators its;
  for (int i = 0; i < 2; ++i) its.push_back(std::move(ds.MakeIterator(*p)).value());
  std::vector<Element> got;
  FromThreads(its, &got);
  EXPECT_EQ(Keys(got, true), want);
}

INSTANTIATE_TEST_SUITE_P(Sources, SplitSourceTest,
                         ::testing::Values("Range", "FromTensorSlices", "ImageFolder",
                                           "Idx", "ListFiles", "TextLine", "TFRecord",
                                           "FixedLengthRecord"),
                         [](const auto& info) { return info.param; });

// ---- what a provider applies to, and what is refused ----

TEST(SplitPipelineTest, InterleaveGivesTheProviderToTheOuterInputOnly) {
  SourceFiles files;
  const Dataset names =
      Dataset::FromTensorSlices(Element{Tensor::FromVector(files.text())});
  const Function read = Function::DatasetFunction(
      "read", [](Element e, FunctionContext&) -> Result<Dataset> {
        return Dataset::TextLine({e[0].scalar<std::string>()});
      });
  for (const Dataset& ds : {names.Interleave(read, 2), names.FlatMap(read),
                            names.Interleave(read, 2, 1, 2)}) {
    const std::multiset<std::string> want = Keys(CollectAll(ds), false);
    ASSERT_EQ(want.size(), 13u);
    for (int n : {1, 3}) {
      auto p = ds.MakeSplitProvider();
      ASSERT_TRUE(p.ok()) << p.status();
      EXPECT_EQ((*p)->Cardinality(), 5);  // the outer input's rows
      Iterators its = MakeIterators(ds, n, *p);
      std::vector<Element> got;
      RoundRobin(its, &got);
      EXPECT_EQ(Keys(got, false), want);
    }
  }
}

TEST(SplitPipelineTest, RefusesPipelinesWithoutExactlyOneSplittableSource) {
  auto p = std::make_shared<IndexSplitProvider>(3);
  auto expect_refused = [&](const Dataset& ds, const std::string& words) {
    auto it = MakeIteratorAsBuilt(ds, Small(), p);
    ASSERT_FALSE(it.ok());
    EXPECT_EQ(it.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(it.status().message().find(words), std::string::npos) << it.status();
    auto made = ds.MakeSplitProvider();
    ASSERT_FALSE(made.ok());
    EXPECT_NE(made.status().message().find(words), std::string::npos) << made.status();
  };
  expect_refused(Dataset::Zip({Dataset::Range(3), Dataset::Range(3)}), "2 sources");
  expect_refused(Dataset::Range(3).Concatenate(Dataset::Range(2)), "2 sources");
  expect_refused(Dataset::FromTensors(Element{Tensor::Scalar<int64_t>(1)}),
                 "not splittable");
  expect_refused(Dataset::Range(3).Repeat(2), "Repeat");
  expect_refused(Dataset::Range(3).Cache(), "Cache");
  // Without a provider the same pipelines run.
  EXPECT_TRUE(MakeIteratorAsBuilt(Dataset::Range(3).Repeat(2), Small(), nullptr).ok());
}

// A provider handing out fixed splits.
class FixedSplits : public SplitProvider {
 public:
  explicit FixedSplits(std::vector<Tensor> splits) : splits_(std::move(splits)) {}
  int64_t Cardinality() const override { return static_cast<int64_t>(splits_.size()); }

 protected:
  Result<std::optional<Tensor>> GetNextLocked() override {
    if (next_ >= splits_.size()) return std::optional<Tensor>();
    return std::optional<Tensor>(splits_[next_++]);
  }
  Status ResetLocked() override { return Status::OK(); }
  Status SaveLocked(CheckpointWriter*, std::string_view) const override {
    return Status::OK();
  }
  Status RestoreLocked(const CheckpointReader&, std::string_view) override {
    return Status::OK();
  }
  std::string name() const override { return "FixedSplits"; }

 private:
  std::vector<Tensor> splits_;
  size_t next_ = 0;
};

TEST(SplitPipelineTest, ABadSplitIsAClearErrorAndIsSkipped) {
  {
    auto p = std::make_shared<FixedSplits>(
        std::vector<Tensor>{Tensor::Scalar<int64_t>(2), Tensor::Scalar<int64_t>(99),
                            Tensor::Scalar<int64_t>(0)});
    auto it = MakeIteratorAsBuilt(Dataset::Range(10, 20), Small(), p);
    ASSERT_TRUE(it.ok()) << it.status();
    EXPECT_EQ((**(*it)->GetNext())[0].scalar<int64_t>(), 12);
    auto bad = (*it)->GetNext();
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(bad.status().message().find("Range: split 99"), std::string::npos)
        << bad.status();
    EXPECT_EQ((**(*it)->GetNext())[0].scalar<int64_t>(), 10);
    EXPECT_FALSE((*it)->GetNext()->has_value());
  }
  {
    SourceFiles files;
    auto p = std::make_shared<FixedSplits>(
        std::vector<Tensor>{Tensor::Scalar(std::string("/no/such/listed.txt")),
                            Tensor::Scalar(files.text()[3])});
    auto it = MakeIteratorAsBuilt(Dataset::TextLine(files.text()), Small(), p);
    ASSERT_TRUE(it.ok()) << it.status();
    auto bad = (*it)->GetNext();
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.status().message().find("TextLine: split '/no/such/listed.txt'"),
              std::string::npos)
        << bad.status();
    EXPECT_EQ((**(*it)->GetNext())[0].scalar<std::string>(), "f3l0");
    EXPECT_FALSE((*it)->GetNext()->has_value());
  }
}

TEST(SplitPipelineTest, IteratorRestoreRejectsACheckpointTakenWithoutAProvider) {
  const Dataset ds =
      Dataset::FromTensorSlices(Element{Tensor::FromVector<int64_t>({1, 2, 3, 4})});
  auto plain = MakeIteratorAsBuilt(ds, Small());
  ASSERT_TRUE((*plain)->GetNext().ok());
  auto ckpt = (*plain)->Save();
  auto with = MakeIteratorAsBuilt(ds, Small(), std::make_shared<IndexSplitProvider>(4));
  Status s = (*with)->Restore(*ckpt);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s;
}

}  // namespace
}  // namespace sluice
