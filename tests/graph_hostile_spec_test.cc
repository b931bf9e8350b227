// Hostile specs: deeply nested JSON in every part of a spec is refused before anything
// recurses over it, and error messages quote bounded snippets.
#include <gtest/gtest.h>

#include <string>

#include "sluice/serialize.h"

namespace sluice {
namespace {

constexpr int kDeep = 60000;

std::string Nested(int depth, const std::string& leaf = "1") {
  return std::string(depth, '[') + leaf + std::string(depth, ']');
}

const std::string kRange = R"({"op": "Range", "attrs": {"start": 0, "stop": 3, "step": 1}})";

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
  ExpectRefused(R"({"dataset": {"op": "Range", "attrs": )" + deep + "}}", "attrs", "nests deeper");
  ExpectRefused(R"({"version": )" + deep + R"(, "dataset": )" + kRange + "}", "version", "nests deeper");
  ExpectRefused(R"({"options": )" + deep + R"(, "dataset": )" + kRange + "}", "options", "nests deeper");
  ExpectRefused(R"({"dataset": {"op": "Map", "function": )" + deep + R"(, "input": )" +
                    kRange + "}}",
                "function", "nests deeper");
  ExpectRefused(R"({"node": [{"id": 0, "op": "Range", "attr": {"stop": {"i": )" + deep +
                    "}}}], \"output\": 0}",
                "GraphDef attribute", "nests deeper");
  ExpectRefused(R"({"dataset": )" + std::string(kDeep, '{'), "unclosed objects", "nests deeper");
  ExpectRefused(R"({"dataset": [)" + kRange + ", " + deep + "]}", "chain stage", "nests deeper");
  // Brackets inside strings do not count.
  auto ok = ParsePipelineSpec(R"({"description": ")" + std::string(kDeep, '[') +
                              R"(", "dataset": )" + kRange + "}");
  EXPECT_TRUE(ok.ok()) << ok.status();
}

TEST(HostileSpecTest, NestingWithinTheLimitGetsShortMessages) {
  // Deep enough to be slow to print whole, shallow enough to be parsed: the messages quote
  // a clipped snippet.
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
}

TEST(HostileSpecTest, DeeplyNestedGraphDefJsonIsAnError) {
  auto r = DeserializeDataset(R"({"node": [{"id": 0, "op": "Range", "attr": {"stop": )" +
                                  std::string(kDeep, '{'),
                              GraphFormat::kJson);
  EXPECT_FALSE(r.ok());
}

}  // namespace
}  // namespace sluice
