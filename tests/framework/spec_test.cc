// JSON pipeline specs (docs/spec.md): the example specs in examples/specs load and run on
// small generated data, the nested, chain and GraphDef forms agree, attribute types are
// inferred from the op, and errors name the place.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "api/dataset_internal.h"
#include "datagen/imagenet_like.h"
#include "datagen/text_corpus.h"
#include "formats/idx.h"
#include "graph/dataset_node.h"
#include "sluice/serialize.h"
#include "testing/conformance.h"

namespace sluice {
namespace {

using testing::ReadFile;
using testing::SourceDir;
using testing::TempDir;
using testing::WriteFile;

void ReplaceAll(std::string* s, const std::string& from, const std::string& to) {
  for (size_t p = s->find(from); p != std::string::npos; p = s->find(from, p + to.size())) {
    s->replace(p, from.size(), to);
  }
}

std::string ExampleSpec(const std::string& name) {
  return ReadFile(SourceDir() + "/examples/specs/" + name);
}

// The first `n` elements (the example specs repeat forever).
std::vector<Element> Take(const Dataset& ds, int n) {
  auto it = ds.MakeIterator();
  EXPECT_TRUE(it.ok()) << it.status();
  std::vector<Element> out;
  if (!it.ok()) return out;
  for (int i = 0; i < n; ++i) {
    auto e = (*it)->GetNext();
    EXPECT_TRUE(e.ok()) << e.status();
    if (!e.ok() || !*e) break;
    out.push_back(std::move(**e));
  }
  return out;
}

TEST(SpecTest, EveryExampleSpecHasATest) {
  std::set<std::string> tested = {"fashion_mnist.json", "imagenet.json", "text.json"};
  for (const auto& entry :
       std::filesystem::directory_iterator(SourceDir() + "/examples/specs")) {
    EXPECT_TRUE(tested.count(entry.path().filename().string()))
        << entry.path() << " has no test in tests/framework/spec_test.cc";
  }
}

TEST(SpecTest, FashionMnistSpecRuns) {
  TempDir dir;
  // 300 rows of IDX, uncompressed under the .gz names (the reader detects gzip by magic).
  Tensor images(DType::kUInt8, Shape{300, 28, 28});
  for (int64_t i = 0; i < images.num_elements(); ++i) {
    images.mutable_data<uint8_t>()[i] = static_cast<uint8_t>(i % 251);
  }
  Tensor labels(DType::kUInt8, Shape{300});
  for (int i = 0; i < 300; ++i) labels.mutable_data<uint8_t>()[i] = static_cast<uint8_t>(i % 10);
  WriteFile(dir.File("train-images-idx3-ubyte.gz"), *EncodeIdx(images));
  WriteFile(dir.File("train-labels-idx1-ubyte.gz"), *EncodeIdx(labels));
  std::string spec = ExampleSpec("fashion_mnist.json");
  ReplaceAll(&spec, "/usr/share/datasets/fashion-mnist", dir.path());
  auto ds = ParsePipelineSpec(spec, "fashion_mnist.json");
  ASSERT_TRUE(ds.ok()) << ds.status();
  EXPECT_EQ(ds->options().autotune.enabled, true);
  std::vector<Element> batches = Take(*ds, 3);
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(batches[0][0].dtype(), DType::kFloat32);
  EXPECT_EQ(batches[0][0].shape(), (Shape{256, 1, 28, 28}));
  EXPECT_EQ(batches[0][1].dtype(), DType::kInt64);
  EXPECT_EQ(batches[1][0].dim(0), 44);  // 300 = 256 + 44
  ASSERT_TRUE(SerializeDataset(*ds, GraphFormat::kBinary).ok());
}

TEST(SpecTest, ImagenetSpecRuns) {
  TempDir dir;
  ImagenetLikeOptions o;
  o.num_images = 6;
  o.num_classes = 3;
  o.jpeg_folder = false;
  o.tfrecord_shards = 2;
  o.threads = 1;
  ASSERT_TRUE(GenerateImagenetLike(dir.path(), o).ok());
  std::string spec = ExampleSpec("imagenet.json");
  ReplaceAll(&spec, "data/imagenet", dir.path());
  ReplaceAll(&spec, "\"batch_size\": 128", "\"batch_size\": 4");
  ReplaceAll(&spec, "[224, 224]", "[32, 32]");
  auto ds = ParsePipelineSpec(spec, "imagenet.json");
  ASSERT_TRUE(ds.ok()) << ds.status();
  std::vector<Element> batches = Take(*ds, 2);
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[0][0].dtype(), DType::kFloat32);
  EXPECT_EQ(batches[0][0].shape(), (Shape{4, 3, 32, 32}));
  EXPECT_EQ(batches[0][1].shape(), (Shape{4}));
  for (int64_t l : batches[0][1].flat<int64_t>()) {
    EXPECT_GE(l, 0);
    EXPECT_LT(l, 3);
  }
}

TEST(SpecTest, TextSpecRuns) {
  TempDir dir;
  TextCorpusOptions o;
  o.num_sentences = 300;
  o.num_shards = 2;
  o.vocab_size = 50;
  ASSERT_TRUE(GenerateTextCorpus(dir.path(), o).ok());
  std::string spec = ExampleSpec("text.json");
  ReplaceAll(&spec, "data/text", dir.path());
  ReplaceAll(&spec, "128, 128, 128, 128, 128", "8, 8, 8, 8, 8");
  auto ds = ParsePipelineSpec(spec, "text.json");
  ASSERT_TRUE(ds.ok()) << ds.status();
  std::vector<Element> batches = Take(*ds, 3);
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(batches[0][0].dtype(), DType::kInt64);
  EXPECT_EQ(batches[0][0].rank(), 2);
  EXPECT_LE(batches[0][0].dim(0), 8);
}

TEST(SpecTest, LoadPipelineSpecReadsAFile) {
  TempDir dir;
  WriteFile(dir.File("s.json"), R"({"dataset": {"op": "Range", "attrs": {"stop": 3}}})");
  auto ds = LoadPipelineSpec(dir.File("s.json"));
  ASSERT_TRUE(ds.ok()) << ds.status();
  EXPECT_EQ(testing::IntsOf(testing::CollectOrDie(*ds)), (std::vector<int64_t>{0, 1, 2}));
  auto missing = LoadPipelineSpec(dir.File("nope.json"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("nope.json"), std::string::npos);
}

TEST(SpecTest, ChainNestedAndGraphDefFormsAgree) {
  const std::string chain = R"({"dataset": [
      {"op": "Range", "attrs": {"stop": 10}},
      {"op": "Map", "function": {"kernel": "cast", "attrs": {"dtype": "float32"}}},
      {"op": "Batch", "attrs": {"batch_size": 4, "drop_remainder": true}}]})";
  const std::string nested = R"({"dataset":
      {"op": "Batch", "attrs": {"batch_size": 4, "drop_remainder": true},
       "input": {"op": "Map", "function": {"kernel": "cast", "attrs": {"dtype": {"dtype": "float32"}}},
                 "input": {"op": "Range", "attrs": {"stop": 10}}}}})";
  auto a = ParsePipelineSpec(chain);
  auto b = ParsePipelineSpec(nested);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(*DatasetFingerprint(*a), *DatasetFingerprint(*b));
  Dataset api = Dataset::FromOp("Range", {{"stop", int64_t{10}}})
                    .Map(*Function::Kernel("cast", {{"dtype", DType::kFloat32}}))
                    .Batch(4, true);
  EXPECT_EQ(*DatasetFingerprint(*a), *DatasetFingerprint(api));
  // The GraphDef JSON that `sluice spec export` prints loads as a spec too.
  auto json = SerializeDataset(*a, GraphFormat::kJson);
  ASSERT_TRUE(json.ok());
  auto c = ParsePipelineSpec(*json);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(*DatasetFingerprint(*c), *DatasetFingerprint(*a));
  std::vector<Element> got = testing::CollectOrDie(*c);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(got[1][0].ContentEquals(Tensor::FromVector<float>({4, 5, 6, 7})));
}

TEST(SpecTest, AttributeTypesAreInferredFromTheOp) {
  // dtypes written as strings, shapes as lists, padding values as numbers.
  auto ds = ParsePipelineSpec(R"({"dataset": [
      {"op": "FromTensorSlices", "attrs": {"components": {"tensors": [
          {"dtype": "int32", "shape": [3, 2], "values": [1, 2, 3, 4, 5, 6]}]}}},
      {"op": "Map", "function": {"kernel": "cast", "attrs": {"dtype": "int64"}}},
      {"op": "PaddedBatch", "attrs": {"batch_size": 2, "padded_shapes": [[3]],
                                      "padding_values": [-1]}}]})");
  ASSERT_TRUE(ds.ok()) << ds.status();
  std::vector<Element> got = testing::CollectOrDie(*ds);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(got[0][0].ContentEquals(
      Tensor::FromVector<int64_t>({1, 2, -1, 3, 4, -1}, Shape{2, 3})))
      << got[0][0].DebugString();
  // Floats written as ints, an explicit tensor.
  auto norm = ParsePipelineSpec(R"({"dataset": [
      {"op": "FromTensors", "attrs": {"components": [
          {"dtype": "float32", "shape": [1, 3, 1], "values": [0.5, 2, 1]}]}},
      {"op": "Map", "function": {"kernel": "normalize",
          "attrs": {"mean": [0], "std": [2], "layout": "HWC", "scale": 1}}}]})");
  ASSERT_TRUE(norm.ok()) << norm.status();
  got = testing::CollectOrDie(*norm);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(got[0][0].ContentEquals(Tensor::FromVector<float>({0.25f, 1, 0.5f}, Shape{1, 3, 1})))
      << got[0][0].DebugString();
}

TEST(SpecTest, OptionsNamesRefsAndSeeds) {
  auto ds = ParsePipelineSpec(R"({
      "options": {"deterministic": false, "autotune": {"cpu_budget": 2, "ram_budget": 1000000},
                  "optimization": {"passes": {"map_fusion": false}},
                  "threading": {"private_threadpool_size": 2}},
      "dataset": {"op": "Zip", "inputs": [
          {"op": "Range", "attrs": {"stop": 3}, "name": "r"},
          {"ref": "r"},
          {"op": "Shuffle", "attrs": {"buffer_size": 3, "seed": null}, "input": {"ref": "r"}}]}})");
  ASSERT_TRUE(ds.ok()) << ds.status();
  EXPECT_EQ(ds->options().deterministic, false);
  EXPECT_EQ(ds->options().autotune.cpu_budget, 2);
  EXPECT_EQ(ds->options().autotune.ram_budget, 1000000);
  EXPECT_FALSE(ds->options().optimization.Enabled("map_fusion", true));
  EXPECT_EQ(ds->options().threading.private_threadpool_size, 2);
  EXPECT_EQ(NodeOf(*ds)->input(0), NodeOf(*ds)->input(1));  // one node, referred to twice
  EXPECT_EQ(NodeOf(*ds)->input(0), NodeOf(*ds)->input(2)->input(0));
  EXPECT_EQ(testing::CollectOrDie(*ds).size(), 3u);
}

void ExpectSpecError(const std::string& json, StatusCode code,
                     const std::vector<std::string>& parts) {
  auto r = ParsePipelineSpec(json, "my.json");
  ASSERT_FALSE(r.ok()) << json;
  EXPECT_EQ(r.status().code(), code) << r.status();
  for (const std::string& p : parts) {
    EXPECT_NE(r.status().message().find(p), std::string::npos)
        << "'" << p << "' not in: " << r.status();
  }
}

TEST(SpecTest, ErrorsNameTheFileAndThePlace) {
  ExpectSpecError("{not json", StatusCode::kInvalidArgument, {"my.json", "not valid JSON"});
  ExpectSpecError(R"({"dataset": [{"op": "Range", "attrs": {"stop": 3}}, {"op": "Nope"}]})",
                  StatusCode::kNotFound, {"my.json", "dataset[1]", "unknown op 'Nope'"});
  ExpectSpecError(
      R"({"dataset": {"op": "Batch", "attrs": {"batch_size": "x"},
                      "input": {"op": "Range", "attrs": {"stop": 3}}}})",
      StatusCode::kInvalidArgument, {"at dataset:", "batch_size"});
  ExpectSpecError(
      R"({"dataset": {"op": "Batch", "attrs": {"batch_size": 2},
                      "input": {"op": "Range", "attrs": {"stop": 3, "oops": {"x": 1}}}}})",
      StatusCode::kInvalidArgument, {"dataset.input", "oops", "one key naming its type"});
  ExpectSpecError(R"({"dataset": [{"op": "Range", "attrs": {"stop": 3}},
                                  {"op": "Map", "function": "no_such_kernel"}]})",
                  StatusCode::kNotFound, {"dataset[1]", "no_such_kernel"});
  ExpectSpecError(R"({"dataset": [{"op": "Range", "attrs": {"stop": 3}},
                                  {"op": "Map", "function": {"kernel": "cast",
                                                             "attrs": {"dtype": "int65"}}}]})",
                  StatusCode::kInvalidArgument, {"dataset[1]", "dtype", "int65"});
  ExpectSpecError(R"({"dataset": {"op": "Range", "atrs": {}}})", StatusCode::kInvalidArgument,
                  {"unknown field 'atrs'"});
  ExpectSpecError(R"({"dataset": {"ref": "x"}})", StatusCode::kNotFound, {"'x'"});
  ExpectSpecError(R"({"datasets": {}})", StatusCode::kInvalidArgument, {"datasets"});
  ExpectSpecError(R"({"options": {"autotune": {"cpu": 1}}, "dataset": {"op": "Range", "attrs": {"stop": 1}}})",
                  StatusCode::kInvalidArgument, {"autotune.cpu"});
  ExpectSpecError(R"({"dataset": {"op": "Range", "attrs": {"stop": 3}, "input": {"op": "Range"}}})",
                  StatusCode::kInvalidArgument, {"Range"});
}

// A typo is never ignored: attributes the op or kernel does not declare are errors naming
// the closest valid name (the registry's OpDefs, src/graph/op_def.h).
TEST(SpecTest, MisspelledAttributesAreErrorsNamingTheValidName) {
  ExpectSpecError(R"({"dataset": [{"op": "Range", "attrs": {"stop": 10}},
                                  {"op": "Batch", "attrs": {"batch_size": 3,
                                                            "drop_reminder": true}}]})",
                  StatusCode::kInvalidArgument,
                  {"dataset[1]", "Batch: unknown attribute 'drop_reminder'",
                   "did you mean 'drop_remainder'?"});
  // Repeat with "cont" ran forever before.
  ExpectSpecError(R"({"dataset": [{"op": "Range", "attrs": {"stop": 10}},
                                  {"op": "Repeat", "attrs": {"cont": 2}}]})",
                  StatusCode::kInvalidArgument, {"unknown attribute 'cont'", "'count'"});
  ExpectSpecError(R"({"dataset": [{"op": "Range", "attrs": {"stop": 3}},
                                  {"op": "Map", "function": {"kernel": "normalize",
                                      "attrs": {"mean": 0, "std": 1, "layuot": "HWC"}}}]})",
                  StatusCode::kInvalidArgument,
                  {"kernel normalize: unknown attribute 'layuot'", "did you mean 'layout'?"});
}

// Range errors say what is wrong with the value (they read "unknown attribute type 'an'" and
// "'finite'" when the loader guessed types from error messages).
TEST(SpecTest, AttributeValueErrorsSayWhatIsWrong) {
  ExpectSpecError(R"({"dataset": [{"op": "FromTensors", "attrs": {"components": [
                                      {"dtype": "uint8", "shape": [1, 1, 3], "values": [0, 0, 0]}]}},
                                  {"op": "Map", "function": {"kernel": "resize",
                                      "attrs": {"size": [0, 5]}}}]})",
                  StatusCode::kInvalidArgument,
                  {"attribute 'size' must be an int or [height, width]", "got [0, 5]"});
  ExpectSpecError(R"({"dataset": [{"op": "Range", "attrs": {"stop": 3}},
                                  {"op": "Map", "function": {"kernel": "normalize",
                                      "attrs": {"mean": 0, "std": 1, "scale": "x"}}}]})",
                  StatusCode::kInvalidArgument,
                  {"normalize", "attribute 'scale' (float)", "expected a number"});
  ExpectSpecError(R"({"dataset": [{"op": "Range", "attrs": {"stop": 3}},
                                  {"op": "Batch", "attrs": {"batch_size": [2]}}]})",
                  StatusCode::kInvalidArgument, {"attribute 'batch_size' (int)", "expected an integer"});
}

}  // namespace
}  // namespace sluice
