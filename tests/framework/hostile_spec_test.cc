// Hostile graphs: deeply nested JSON in every part of a spec is refused before anything
// recurses over it, error messages quote bounded snippets, and a small graph of shared
// nodes (each level using the one below it twice) loads, fingerprints and serializes in
// time linear in its size, while an iterator over it is refused when it would need more
// iterators than fit.
#include <gtest/gtest.h>

#include <string>

#include "api/dataset_internal.h"
#include "sluice/serialize.h"
#include "testing/conformance.h"

namespace sluice {
namespace {

constexpr int kDeep = 60000;

std::string Nested(int depth, const std::string& leaf = "1") {
  return std::string(depth, '[') + leaf + std::string(depth, ']');
}

const std::string kRange =
    R"({"op": "Range", "attrs": {"start": 0, "stop": 3, "step": 1}})";

// `needle`: a part of the expected message.
void ExpectRefused(const std::string& text, const std::string& what,
                   const std::string& needle = "") {
  SCOPED_TRACE(what);
  auto r = ParsePipelineSpec(text, "hostile.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("hostile.json"), std::string::npos) << r.status();
  EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status();
  EXPECT_LT(r.status().message().size(), 5000u) << "the message echoes the input";
}

TEST(HostileSpecTest, DeeplyNestedBracketsAnywhereAreRefused) {
  const std::string deep = Nested(kDeep);
  ExpectRefused(R"({"dataset": {"op": "Range", "attrs": {"stop": )" + deep + "}}}",
                "attribute value", "nests deeper");
  ExpectRefused(R"({"dataset": {"op": "Range", "attrs": )" + deep + "}}", "attrs",
                "nests deeper");
  ExpectRefused(R"({"version": )" + deep + R"(, "dataset": )" + kRange + "}", "version",
                "nests deeper");
  ExpectRefused(R"({"options": )" + deep + R"(, "dataset": )" + kRange + "}", "options",
                "nests deeper");
  ExpectRefused(R"({"dataset": {"op": "Map", "function": )" + deep + R"(, "input": )" +
                    kRange + "}}",
                "function", "nests deeper");
  ExpectRefused(R"({"node": [{"id": 0, "op": "Range", "attr": {"stop": {"i": )" + deep +
                    "}}}], \"output\": 0}",
                "GraphDef attribute", "nests deeper");
  ExpectRefused(R"({"dataset": )" + std::string(kDeep, '{'), "unclosed objects",
                "nests deeper");
  ExpectRefused(R"({"dataset": [)" + kRange + ", " + deep + "]}", "chain stage",
                "nests deeper");
  // Brackets inside strings do not count.
  auto ok = ParsePipelineSpec(R"({"description": ")" + std::string(kDeep, '[') +
                              R"(", "dataset": )" + kRange + "}");
  EXPECT_TRUE(ok.ok()) << ok.status();
}

TEST(HostileSpecTest, NestingWithinTheLimitGetsShortMessages) {
  // Deep enough to be slow to print whole, shallow enough to be parsed: the messages
  // quote a clipped snippet.
  const std::string deep = Nested(1500);
  ExpectRefused(R"({"dataset": {"op": "Range", "attrs": {"stop": )" + deep + "}}}",
                "attribute value");
  ExpectRefused(R"({"version": )" + deep + R"(, "dataset": )" + kRange + "}", "version");
  ExpectRefused(R"({"dataset": {"op": "Map", "function": )" + deep + R"(, "input": )" +
                    kRange + "}}",
                "function");
  const std::string huge(200000, 'x');
  ExpectRefused(R"({"dataset": {"op": "Range", ")" + huge + R"(": 1}})", "unknown field");
  ExpectRefused(R"({"dataset": {"op": ")" + huge + R"("}})", "unknown op");
  ExpectRefused(R"({"dataset": {"op": "Range", "attrs": {"stop": ")" + huge + R"("}}})",
                "string attribute");
  ExpectRefused(R"({"dataset": )" + kRange + R"(, "options": {")" + huge + R"(": 1}})",
                "unknown option");
  ExpectRefused(R"({"dataset": {"op": "Range", "stop": )" + huge, "truncated JSON");
  // A node 1,000 inputs deep with a bad field: the JSON path alone is 6 KB, so the
  // message is cut.
  std::string chain = R"({"op": "Range", "bad": 1})";
  for (int i = 0; i < 999; ++i) {
    chain = R"({"op": "Take", "attrs": {"count": 1}, "input": )" + chain + "}";
  }
  ExpectRefused(R"({"dataset": )" + chain + "}", "deep path", "more characters");
}

TEST(HostileSpecTest, DeeplyNestedGraphDefJsonIsAnError) {
  auto r = DeserializeDataset(
      R"({"node": [{"id": 0, "op": "Range", "attr": {"stop": )" + std::string(kDeep, '{'),
      GraphFormat::kJson);
  EXPECT_FALSE(r.ok());
}

// Level 0 is Range(3) named n0; level k is select(Zip(level k-1, ref n(k-1))) named nk:
// each level uses the one below twice (select keeps one component, so elements stay
// small).
std::string SharedDag(int depth, bool select) {
  std::string node =
      R"({"op": "Range", "attrs": {"start": 0, "stop": 3, "step": 1}, "name": "n0"})";
  for (int k = 1; k <= depth; ++k) {
    const std::string prev = "n" + std::to_string(k - 1);
    const std::string name = "n" + std::to_string(k);
    std::string zip =
        R"({"op": "Zip", "inputs": [)" + node + R"(, {"ref": ")" + prev + R"("}])";
    if (select) {
      node =
          R"({"op": "Map", "function": {"kernel": "select", "attrs": {"indices": [0]}}, )"
          R"("name": ")" +
          name + R"(", "input": )" + zip + "}}";
    } else {
      node = zip + R"(, "name": ")" + name + R"("})";
    }
  }
  return R"({"version": 1, "dataset": )" + node + "}";
}

TEST(HostileSpecTest, SharedNodesStayShared) {
  const std::string spec = SharedDag(60, /*select=*/true);
  EXPECT_LT(spec.size(), 10000u);
  auto ds = ParsePipelineSpec(spec);
  ASSERT_TRUE(ds.ok()) << ds.status();
  // Every walk visits a shared node once: cardinality, fingerprint, serializer, debug
  // string.
  EXPECT_EQ(ds->Cardinality(), 3);
  auto fp = DatasetFingerprint(*ds);
  ASSERT_TRUE(fp.ok()) << fp.status();
  auto bytes = SerializeDataset(*ds, GraphFormat::kBinary);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_LT(bytes->size(), 20000u);  // 121 nodes, not 2^60
  auto back = DeserializeDataset(*bytes, GraphFormat::kBinary);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*DatasetFingerprint(*back), *fp);
  EXPECT_LT(DatasetGraphDebugString(*ds).size(), 100000u);
  // An iterator gives each use of a node its own iterator: 2^60 of them do not fit. The
  // optimizer's passes and verifier run first (MakeIterator()), over the shared graph.
  for (bool optimized : {false, true}) {
    auto it = optimized ? ds->MakeIterator() : MakeIteratorAsBuilt(*ds, {});
    ASSERT_FALSE(it.ok());
    EXPECT_EQ(it.status().code(), StatusCode::kResourceExhausted) << it.status();
    EXPECT_NE(it.status().message().find("iterators"), std::string::npos) << it.status();
  }
}

TEST(HostileSpecTest, SmallSharedGraphsStillRun) {
  auto ds = ParsePipelineSpec(SharedDag(8, /*select=*/true));
  ASSERT_TRUE(ds.ok()) << ds.status();
  EXPECT_EQ(testing::IntsOf(testing::CollectOrDie(*ds)), (std::vector<int64_t>{0, 1, 2}));
}

TEST(HostileSpecTest, ZipsOfThemselvesAreRefusedByTheirSize) {
  // Without select each level doubles the element: 2^60 components would not fit.
  auto ds = ParsePipelineSpec(SharedDag(60, /*select=*/false));
  ASSERT_FALSE(ds.ok());
  EXPECT_NE(ds.status().message().find("components"), std::string::npos) << ds.status();
}

TEST(HostileSpecTest, HugeCardinalitiesDoNotOverflow) {
  Dataset d = Dataset::Range(int64_t{1} << 62);
  d = d.Concatenate(d).Concatenate(d);
  EXPECT_EQ(d.Cardinality(), kUnknownCardinality);
  EXPECT_EQ(Dataset::Range(int64_t{1} << 62).Repeat(8).Cardinality(),
            kUnknownCardinality);
}

}  // namespace
}  // namespace sluice
