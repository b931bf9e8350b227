// Hardening: input that used to wrap silently, abort the process or hang now gives the
// right data or a clear error naming the op and the size.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <limits>
#include <new>
#include <stdexcept>

#include "api/dataset_internal.h"
#include "sluice/serialize.h"
#include "testing/conformance.h"

namespace sluice {
namespace {

using testing::CollectOrDie;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

std::vector<int64_t> Ints(const std::vector<Element>& es) {
  std::vector<int64_t> out;
  for (const Element& e : es) out.push_back(e[0].scalar<int64_t>());
  return out;
}

// ---- Range near the ends of int64 ----

TEST(RangeOverflow, StepPastInt64MaxEnds) {
  Dataset ds = Dataset::Range(0, kMax, int64_t{1} << 62);
  EXPECT_EQ(ds.Cardinality(), 2);
  EXPECT_EQ(Ints(CollectOrDie(ds.Take(10))), (std::vector<int64_t>{0, int64_t{1} << 62}));
}

TEST(RangeOverflow, NegativeStepPastInt64MinEnds) {
  Dataset ds = Dataset::Range(0, kMin, -(int64_t{1} << 62));
  EXPECT_EQ(ds.Cardinality(), 2);
  EXPECT_EQ(Ints(CollectOrDie(ds.Take(10))),
            (std::vector<int64_t>{0, -(int64_t{1} << 62)}));
}

TEST(RangeOverflow, FullSpanCardinalityAndSkip) {
  // stop - start overflows int64; Python: len(range(-2**63, 2**63 - 1, 2**62)) == 4.
  Dataset ds = Dataset::Range(kMin, kMax, int64_t{1} << 62);
  EXPECT_EQ(ds.Cardinality(), 4);
  EXPECT_EQ(Ints(CollectOrDie(ds.Take(10))),
            (std::vector<int64_t>{kMin, kMin / 2, 0, int64_t{1} << 62}));
  EXPECT_EQ(Ints(CollectOrDie(ds.Skip(3))), (std::vector<int64_t>{int64_t{1} << 62}));
  EXPECT_TRUE(CollectOrDie(ds.Skip(4).Take(10)).empty());
  EXPECT_EQ(Dataset::Range(kMax - 1, kMax, 5).Cardinality(), 1);
  EXPECT_EQ(Ints(CollectOrDie(Dataset::Range(kMax - 1, kMax, 5).Take(10))),
            (std::vector<int64_t>{kMax - 1}));
}

// ---- sizes from attributes: an error, never an abort ----

TEST(HugeSizes, BatchLargerThanItsInputIsOneBatch) {
  // Used to die in vector::reserve (std::length_error); tf.data gives one batch of 10.
  std::vector<Element> got = CollectOrDie(Dataset::Range(10).Batch(int64_t{1} << 60));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0][0].num_elements(), 10);
}

TEST(HugeSizes, EndlessBatchTooLargeForMemoryIsResourceExhausted) {
  // Used to die of std::bad_alloc; sequential, parallel, padded and map-and-batch alike.
  Function id = Function::Map("id", [](Element&& e, FunctionContext&) -> Result<Element> {
    return std::move(e);
  });
  // About 250 TB of rows: more than any test machine has, so the check always fires.
  const int64_t bs = 1000000000000;
  std::vector<Dataset> cases = {
      Dataset::Range(10).Repeat().Batch(bs),
      Dataset::Range(10).Repeat().Batch(bs, false, 2),
      Dataset::Range(10).Repeat().PaddedBatch(bs, {}, {}, false),
      Dataset::Range(10).Repeat().MapAndBatch(id, bs, 2, false),
      // A batch that gathers its rows (runtime/random_access.h) checks before it takes any.
      Dataset::Range(int64_t{1} << 62).Batch(bs),
      Dataset::Range(int64_t{1} << 62).GlobalShuffle(1).Batch(bs)};
  for (Dataset& ds : cases) {
    auto it = MakeIteratorAsBuilt(ds, {});
    ASSERT_TRUE(it.ok()) << it.status();
    auto r = (*it)->GetNext();
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted) << r.status();
    EXPECT_NE(r.status().message().find("a batch of 1000000000000 elements"),
              std::string::npos)
        << r.status();
    EXPECT_NE(r.status().message().find("Batch"), std::string::npos) << r.status();
  }
}

TEST(HugeSizes, EndlessShuffleOrWindowTooLargeForMemoryIsResourceExhausted) {
  struct Case {
    Dataset ds;
    std::string text;
  };
  std::vector<Case> cases = {
      {Dataset::Range(10).Repeat().Shuffle(int64_t{1} << 40, 1), "a shuffle buffer of"},
      {Dataset::Range(10).Repeat().Window(4000000000, 1, 1, false), "a window of"}};
  for (Case& c : cases) {
    auto it = MakeIteratorAsBuilt(c.ds, {});
    ASSERT_TRUE(it.ok()) << it.status();
    auto r = (*it)->GetNext();
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted) << r.status();
    EXPECT_NE(r.status().message().find(c.text), std::string::npos) << r.status();
  }
  // Sizes past a finite input are fine, as in tf.data.
  EXPECT_EQ(CollectOrDie(Dataset::Range(10).Shuffle(int64_t{1} << 60, 1)).size(), 10u);
  EXPECT_EQ(CollectOrDie(Dataset::Range(10).Window(1000000000, 1, 1, false)).size(), 10u);
}

TEST(HugeSizes, PadToAbsurdLengthIsRefusedBySpecAndKernel) {
  auto pad = Function::Kernel("pad", {{"length", int64_t{1000000000000}}});
  ASSERT_TRUE(pad.ok()) << pad.status();
  Dataset ds =
      Dataset::FromTensors(Element{Tensor::FromVector<int64_t>({1, 2})}).Map(*pad);
  EXPECT_EQ(ds.status().code(), StatusCode::kResourceExhausted) << ds.status();
  EXPECT_NE(ds.status().message().find("length 1000000000000"), std::string::npos)
      << ds.status();
  FunctionContext ctx(0, 0);
  auto r = (*pad)(Element{Tensor::FromVector<int64_t>({1, 2})}, ctx);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted) << r.status();
}

TEST(HugeSizes, TextLineWithoutNewlineStopsAtTheLineLimit) {
  // A 65 MiB file of zero bytes (sparse: no disk used) has no newline.
  testing::TempDir dir;
  const std::string path = dir.File("no_newline.txt");
  {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(ftruncate(fileno(f), int64_t{65} << 20), 0);
    std::fclose(f);
  }
  auto it = Dataset::TextLine({path}).MakeIterator();
  ASSERT_TRUE(it.ok()) << it.status();
  auto r = (*it)->GetNext();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted) << r.status();
  EXPECT_NE(r.status().message().find("TextLine"), std::string::npos) << r.status();
  EXPECT_NE(r.status().message().find(path + " at uncompressed offset 0"), std::string::npos)
      << r.status();
  // The file is given up; the iterator ends instead of reading on.
  auto end = (*it)->GetNext();
  ASSERT_TRUE(end.ok()) << end.status();
  EXPECT_FALSE(end->has_value());
  // A device such as /dev/zero is refused before anything is read.
  auto dev = Dataset::TextLine({"/dev/zero"}).Collect();
  ASSERT_FALSE(dev.ok());
  EXPECT_NE(dev.status().message().find("character device"), std::string::npos) << dev.status();
}

// ---- exceptions from functions: a Status, on any thread ----

TEST(Exceptions, ThrowingFunctionsFailTheElementNotTheProcess) {
  Function oom =
      Function::Map("oom", [](Element&& e, FunctionContext&) -> Result<Element> {
        if (e[0].scalar<int64_t>() == 3) throw std::bad_alloc();
        return std::move(e);
      });
  Function bug =
      Function::Map("bug", [](Element&& e, FunctionContext&) -> Result<Element> {
        if (e[0].scalar<int64_t>() == 3) throw std::length_error("vector::reserve");
        return std::move(e);
      });
  Function pred =
      Function::Predicate("pred", [](const Element&, FunctionContext&) -> Result<bool> {
        throw std::runtime_error("predicate bug");
      });
  struct Case {
    Dataset ds;
    StatusCode code;
    std::string text;
  };
  std::vector<Case> cases = {
      {Dataset::Range(10).Map(oom), StatusCode::kResourceExhausted,
       "'oom': out of memory"},
      {Dataset::Range(10).Map(oom, 4), StatusCode::kResourceExhausted, "out of memory"},
      {Dataset::Range(10).Map(bug, 4), StatusCode::kInternal, "vector::reserve"},
      {Dataset::Range(10).MapAndBatch(bug, 4, 2, false), StatusCode::kInternal,
       "vector::reserve"},
      {Dataset::Range(10).Filter(pred, 2), StatusCode::kInternal, "predicate bug"},
  };
  for (Case& c : cases) {
    auto it = MakeIteratorAsBuilt(c.ds, {});
    ASSERT_TRUE(it.ok()) << it.status();
    Status s;
    for (int i = 0; i < 20 && s.ok(); ++i) {
      auto r = (*it)->GetNext();
      if (!r.ok())
        s = r.status();
      else if (!r->has_value())
        break;
    }
    EXPECT_EQ(s.code(), c.code) << s;
    EXPECT_NE(s.message().find(c.text), std::string::npos) << s;
  }
}

// ---- tensor literals out of their dtype's range ----

Status SpecLiteralStatus(const std::string& dtype, const std::string& values) {
  auto ds = ParsePipelineSpec(R"({"dataset": [{"op": "FromTensorSlices", "attrs": {
      "components": {"tensors": [{"dtype": ")" +
                              dtype + R"(", "values": )" + values + "}]}}}]}");
  return ds.status();
}

TEST(TensorLiteral, OutOfRangeValueIsAnError) {
  Status s = SpecLiteralStatus("uint8", "[300, -1]");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("300"), std::string::npos) << s;
  EXPECT_NE(s.message().find("uint8"), std::string::npos) << s;
  s = SpecLiteralStatus("uint8", "[1, -1]");
  EXPECT_NE(s.message().find("-1 is out of range for dtype uint8"), std::string::npos)
      << s;
  s = SpecLiteralStatus("int8", "[128]");
  EXPECT_NE(s.message().find("128 is out of range for dtype int8"), std::string::npos)
      << s;
  s = SpecLiteralStatus("int32", "[2147483648]");
  EXPECT_NE(s.message().find("out of range for dtype int32"), std::string::npos) << s;
  // The ends of each range are fine.
  EXPECT_TRUE(SpecLiteralStatus("uint8", "[0, 255]").ok());
  EXPECT_TRUE(SpecLiteralStatus("int8", "[-128, 127]").ok());
  EXPECT_TRUE(SpecLiteralStatus("int16", "[-32768, 32767]").ok());
  EXPECT_TRUE(SpecLiteralStatus("int32", "[-2147483648, 2147483647]").ok());
}

}  // namespace
}  // namespace sluice
