// Graph serialization (include/sluice/serialize.h): every registered op and kernel
// round-trips through the binary and JSON GraphDef with identical elements, options
// round-trip, the fingerprint's contract, and the deserializer's errors on bad input.
#include "sluice/serialize.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <map>
#include <set>

#include "api/builtins.h"
#include "api/dataset_internal.h"
#include "formats/idx.h"
#include "formats/image_codec.h"
#include "formats/proto/example.pb.h"
#include "formats/tfrecord.h"
#include "graph/proto/graph.pb.h"
#include "graph/registry.h"
#include "testing/conformance.h"
#include "testing/op_cases.h"

namespace sluice {
namespace {

using namespace testing;  // NOLINT: the shared op cases and helpers
using testing::WriteFile;

const GraphFormat kFormats[] = {GraphFormat::kBinary, GraphFormat::kJson};

const char* Name(GraphFormat f) { return f == GraphFormat::kBinary ? "binary" : "json"; }

// Serializes in both formats, deserializes, and checks: the same elements (exactly), the
// same graph (re-serialized bytes equal), fingerprint and element spec.
void ExpectRoundTrip(const Dataset& ds) {
  ASSERT_TRUE(ds.ok()) << ds.status();
  const std::vector<Element> expected = Collect(ds);
  auto fp = DatasetFingerprint(ds);
  ASSERT_TRUE(fp.ok()) << fp.status();
  for (GraphFormat f : kFormats) {
    SCOPED_TRACE(Name(f));
    auto bytes = SerializeDataset(ds, f);
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    auto back = DeserializeDataset(*bytes, f);
    ASSERT_TRUE(back.ok()) << back.status();
    auto again = SerializeDataset(*back, f);
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(*again, *bytes);
    EXPECT_EQ(*DatasetFingerprint(*back), *fp);
    EXPECT_EQ(back->element_spec(), ds.element_spec());
    EXPECT_EQ(back->Cardinality(), ds.Cardinality());
    ExpectSameElements(expected, Collect(*back));
  }
}

TEST(SerializeTest, EveryRegisteredOpRoundTrips) {
  Files files;
  std::vector<std::string> missing;
  for (const std::string& op : BuiltinRegistry().OpNames()) {
    auto it = OpCases().find(op);
    if (it == OpCases().end()) {
      missing.push_back(op);
      continue;
    }
    SCOPED_TRACE("op " + op);
    Dataset ds = it->second(files);
    ASSERT_TRUE(ds.ok()) << ds.status();
    EXPECT_TRUE(GraphHasOp(NodeOf(ds), op)) << "the case does not use " << op;
    ExpectRoundTrip(ds);
  }
  std::string list;
  for (const std::string& m : missing) list += " " + m;
  EXPECT_TRUE(missing.empty()) << "registered ops without a round-trip case in "
                                  "tests/framework/serialize_test.cc:"
                               << list;
}

TEST(SerializeTest, EveryRegisteredKernelRoundTrips) {
  Files files;
  std::vector<std::string> missing;
  for (const std::string& kernel : BuiltinRegistry().KernelNames()) {
    auto it = KernelCases().find(kernel);
    if (it == KernelCases().end()) {
      missing.push_back(kernel);
      continue;
    }
    SCOPED_TRACE("kernel " + kernel);
    Dataset ds = it->second(files);
    ASSERT_TRUE(ds.ok()) << ds.status();
    EXPECT_TRUE(GraphHasKernel(NodeOf(ds), kernel)) << "the case does not use " << kernel;
    EXPECT_FALSE(Collect(ds).empty()) << "the case yields nothing";
    ExpectRoundTrip(ds);
  }
  std::string list;
  for (const std::string& m : missing) list += " " + m;
  EXPECT_TRUE(missing.empty()) << "registered kernels without a round-trip case in "
                                  "tests/framework/serialize_test.cc:"
                               << list;
}

TEST(SerializeTest, SharedNodeIsStoredOnce) {
  Dataset r = Dataset::Range(3).Map(K("identity"));
  Dataset ds = Dataset::Zip({r, r.Skip(1), r});
  auto bytes = SerializeDataset(ds, GraphFormat::kBinary);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  graph::GraphDef def;
  ASSERT_TRUE(def.ParseFromString(*bytes));
  ASSERT_EQ(def.node_size(), 4);  // Range, Map, Skip, Zip
  EXPECT_EQ(def.node(3).op(), "Zip");
  EXPECT_EQ(def.node(3).input(0), def.node(3).input(2));
  auto back = DeserializeDataset(*bytes, GraphFormat::kBinary);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(NodeOf(*back)->input(0), NodeOf(*back)->input(2));  // still one node
  ExpectSameElements(Collect(ds), Collect(*back));
}

TEST(SerializeTest, OptionsRoundTrip) {
  Options o;
  o.deterministic = false;
  o.autotune.enabled = true;
  o.autotune.cpu_budget = 3;
  o.autotune.ram_budget = 123456789;
  o.autotune.initial_parallelism = 2;
  o.optimization.apply_default_optimizations = false;
  o.optimization.Set("map_fusion", true).Set("inject_prefetch", false);
  o.threading.private_threadpool_size = 2;
  o.inline_execution = true;
  Dataset ds = Dataset::Range(5).Batch(2).WithOptions(o);
  for (GraphFormat f : kFormats) {
    SCOPED_TRACE(Name(f));
    auto back = DeserializeDataset(*SerializeDataset(ds, f), f);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->options().DebugLines(), o.DebugLines());
    ExpectSameElements(Collect(ds), Collect(*back));
  }
  // Unset options stay unset.
  auto plain = DeserializeDataset(*SerializeDataset(Dataset::Range(2), GraphFormat::kBinary),
                                  GraphFormat::kBinary);
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE(plain->options().DebugLines().empty());
}

TEST(SerializeTest, LocalCallableIsRefusedWithAClearError) {
  Function local = Function::Map("add_channel", [](Element e, FunctionContext&) -> Result<Element> {
    return e;
  });
  Dataset ds = Dataset::Range(3).Map(local).Batch(2);
  for (GraphFormat f : kFormats) {
    auto r = SerializeDataset(ds, f);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(r.status().message().find(
                  "Map: function 'add_channel' is a local C++ callable and cannot be "
                  "serialized; use a registered kernel (sluice kernels: "),
              std::string::npos)
        << r.status();
    EXPECT_NE(r.status().message().find("expand_dims"), std::string::npos);
  }
  auto fp = DatasetFingerprint(ds);
  ASSERT_FALSE(fp.ok());
  EXPECT_NE(fp.status().message().find("add_channel"), std::string::npos);
  // An invalid dataset reports its own error.
  EXPECT_FALSE(SerializeDataset(Dataset::Range(3).Batch(0), GraphFormat::kBinary).ok());
}

TEST(SerializeTest, NonUtf8StringAttributeIsRefused) {
  auto r = SerializeDataset(Dataset::TextLine({"bad\xff\xfe"}), GraphFormat::kBinary);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("filenames"), std::string::npos) << r.status();
}

// ---- fingerprint ----

Dataset FingerprintPipeline(const std::string& file, int64_t batch,
                            std::optional<int64_t> seed) {
  return Dataset::TFRecord({file})
      .Shuffle(100, seed)
      .Map(K("decode_jpeg"))
      .Map(K("random_flip_left_right"))  // a random kernel: its op draws a seed
      .Batch(batch)
      .Prefetch(2);
}

TEST(FingerprintTest, Contract) {
  auto a = DatasetFingerprint(FingerprintPipeline("/data/a.tfrecord", 32, std::nullopt));
  auto b = DatasetFingerprint(FingerprintPipeline("/data/a.tfrecord", 32, std::nullopt));
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(a->size(), 32u);
  EXPECT_EQ(*a, *b);  // seeds drawn at random differ; the fingerprint does not
  EXPECT_EQ(*a, *DatasetFingerprint(FingerprintPipeline("/data/a.tfrecord", 32, 7)));
  EXPECT_NE(*a, *DatasetFingerprint(FingerprintPipeline("/data/b.tfrecord", 32, std::nullopt)));
  EXPECT_NE(*a, *DatasetFingerprint(FingerprintPipeline("/data/a.tfrecord", 64, std::nullopt)));
  // Function attributes count; options do not.
  Dataset x = Dataset::Range(4).Map(K("cast", {{"dtype", DType::kFloat32}}));
  Dataset y = Dataset::Range(4).Map(K("cast", {{"dtype", DType::kFloat64}}));
  EXPECT_NE(*DatasetFingerprint(x), *DatasetFingerprint(y));
  Options o;
  o.autotune.cpu_budget = 2;
  EXPECT_EQ(*DatasetFingerprint(x), *DatasetFingerprint(x.WithOptions(o)));
  // Types count: int 1 and float 1.0 differ.
  EXPECT_NE(*DatasetFingerprint(Dataset::FromOp("Range", {{"stop", int64_t{3}}})),
            *DatasetFingerprint(Dataset::FromOp("Range", {{"stop", int64_t{3}}, {"step", int64_t{1}}})));
  // A shared node hashes like two equal copies.
  Dataset r = Dataset::Range(3);
  EXPECT_EQ(*DatasetFingerprint(r.Concatenate(r)),
            *DatasetFingerprint(Dataset::Range(3).Concatenate(Dataset::Range(3))));
  // The input order counts.
  EXPECT_NE(*DatasetFingerprint(Dataset::Range(3).Concatenate(Dataset::Range(4))),
            *DatasetFingerprint(Dataset::Range(4).Concatenate(Dataset::Range(3))));
}

TEST(FingerprintTest, IsStableAcrossProcessesAndBuilds) {
  // A golden value: the digest depends only on the graph's contents, so it must not change
  // between runs, processes or builds. Update it only with a deliberate format change.
  auto fp = DatasetFingerprint(
      Dataset::TextLine({"/data/x.txt"}).Map(K("split")).Batch(3, true).Shuffle(10, 1));
  ASSERT_TRUE(fp.ok()) << fp.status();
  EXPECT_EQ(*fp, "8bca8b4d3b5a04d40163b14419bdfe2b");
}

// ---- deserialization errors ----

graph::GraphDef ValidDef() {
  auto bytes = SerializeDataset(Dataset::Range(10).Batch(3), GraphFormat::kBinary);
  EXPECT_TRUE(bytes.ok());
  graph::GraphDef def;
  EXPECT_TRUE(def.ParseFromString(*bytes));
  return def;
}

Status Load(const graph::GraphDef& def) {
  return DeserializeDataset(def.SerializeAsString(), GraphFormat::kBinary).status();
}

void ExpectError(const Status& s, StatusCode code, const std::vector<std::string>& parts) {
  EXPECT_EQ(s.code(), code) << s;
  for (const std::string& p : parts) {
    EXPECT_NE(s.message().find(p), std::string::npos) << "'" << p << "' not in: " << s;
  }
}

TEST(DeserializeTest, CorruptBytes) {
  ExpectError(DeserializeDataset("\xff\xff\xff garbage", GraphFormat::kBinary).status(),
              StatusCode::kDataLoss, {"does not parse"});
  ExpectError(DeserializeDataset("{\"node\": [", GraphFormat::kJson).status(),
              StatusCode::kDataLoss, {"JSON"});
  ExpectError(DeserializeDataset("", GraphFormat::kBinary).status(),
              StatusCode::kInvalidArgument, {"version"});
  // Every truncation of a valid graph fails cleanly or (rarely) parses to a valid graph.
  std::string bytes = *SerializeDataset(
      Dataset::FromTensors(Element{Tensor::FromVector<int64_t>({1, 2, 3})}).Batch(1),
      GraphFormat::kBinary);
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto r = DeserializeDataset(bytes.substr(0, n), GraphFormat::kBinary);
    if (r.ok()) EXPECT_TRUE(r->ok());
  }
}

TEST(DeserializeTest, WrongAttributeTypeNamesNodeAndAttribute) {
  graph::GraphDef def = ValidDef();
  (*def.mutable_node(1)->mutable_attr())["batch_size"].set_s("many");
  ExpectError(Load(def), StatusCode::kInvalidArgument, {"node 1 (Batch)", "batch_size", "int"});
  graph::GraphDef empty = ValidDef();
  (*empty.mutable_node(1)->mutable_attr())["batch_size"].Clear();
  ExpectError(Load(empty), StatusCode::kInvalidArgument, {"node 1 (Batch)", "batch_size", "no value"});
}

TEST(DeserializeTest, UnknownOpAndKernelAreNotFound) {
  graph::GraphDef def = ValidDef();
  def.mutable_node(1)->set_op("NoSuchOp");
  ExpectError(Load(def), StatusCode::kNotFound, {"node 1 (NoSuchOp)", "unknown op 'NoSuchOp'"});

  auto bytes = SerializeDataset(Dataset::Range(3).Map(K("identity")), GraphFormat::kBinary);
  graph::GraphDef fdef;
  ASSERT_TRUE(fdef.ParseFromString(*bytes));
  fdef.mutable_node(1)->mutable_function(0)->set_kernel("no_such_kernel");
  ExpectError(Load(fdef), StatusCode::kNotFound,
              {"node 1 (Map)", "no_such_kernel", "unknown kernel"});
  // A kernel with a bad attribute names the node, the kernel and the attribute.
  graph::GraphDef adef;
  ASSERT_TRUE(adef.ParseFromString(
      *SerializeDataset(Dataset::Range(3).Map(K("cast", {{"dtype", DType::kInt8}})),
                        GraphFormat::kBinary)));
  (*adef.mutable_node(1)->mutable_function(0)->mutable_attr())["dtype"].set_i(3);
  ExpectError(Load(adef), StatusCode::kInvalidArgument, {"node 1 (Map)", "cast", "dtype"});
}

TEST(DeserializeTest, CyclesAndForwardReferencesAreRefused) {
  graph::GraphDef self = ValidDef();
  self.mutable_node(1)->set_input(0, 1);
  ExpectError(Load(self), StatusCode::kInvalidArgument, {"node 1 (Batch)", "not an earlier node"});
  graph::GraphDef forward = ValidDef();
  forward.mutable_node(0)->add_input(1);
  ExpectError(Load(forward), StatusCode::kInvalidArgument, {"node 0 (Range)", "refers to node 1"});
  graph::GraphDef negative = ValidDef();
  negative.mutable_node(1)->set_input(0, -5);
  ExpectError(Load(negative), StatusCode::kInvalidArgument, {"node 1 (Batch)", "-5"});
  graph::GraphDef ids = ValidDef();
  ids.mutable_node(1)->set_id(7);
  ExpectError(Load(ids), StatusCode::kInvalidArgument, {"node 1 (Batch)", "position"});
  graph::GraphDef output = ValidDef();
  output.set_output(2);
  ExpectError(Load(output), StatusCode::kInvalidArgument, {"output 2"});
  graph::GraphDef version = ValidDef();
  version.set_version(99);
  ExpectError(Load(version), StatusCode::kInvalidArgument, {"version 99"});
}

TEST(DeserializeTest, SizesAreBounded) {
  graph::GraphDef def;
  def.set_version(kGraphFormatVersion);
  for (int64_t i = 0; i <= kMaxGraphNodes; ++i) {
    auto* n = def.add_node();
    n->set_id(i);
    n->set_op("Range");
  }
  ExpectError(Load(def), StatusCode::kInvalidArgument, {"nodes"});

  graph::GraphDef deep;
  deep.set_version(kGraphFormatVersion);
  for (int64_t i = 0; i <= kMaxGraphDepth + 1; ++i) {
    auto* n = deep.add_node();
    n->set_id(i);
    if (i == 0) {
      n->set_op("Range");
      (*n->mutable_attr())["stop"].set_i(3);
    } else {
      n->set_op("Take");
      (*n->mutable_attr())["count"].set_i(1);
      n->add_input(i - 1);
    }
  }
  ExpectError(Load(deep), StatusCode::kInvalidArgument, {"deeper than"});
}

TEST(DeserializeTest, TensorContentsAreCheckedAgainstShapeAndDtype) {
  auto bytes = SerializeDataset(
      Dataset::FromTensors(Element{Tensor::FromVector<int32_t>({1, 2})}), GraphFormat::kBinary);
  graph::GraphDef base;
  ASSERT_TRUE(base.ParseFromString(*bytes));
  auto tensor = [](graph::GraphDef* d) {
    return d->mutable_node(0)->mutable_attr()->at("components").mutable_tensor_list()->mutable_value(0);
  };
  {  // an oversized claim: 2^40 x 2^40 elements, 8 bytes present
    graph::GraphDef d = base;
    tensor(&d)->clear_shape();
    tensor(&d)->add_shape(int64_t{1} << 40);
    tensor(&d)->add_shape(int64_t{1} << 40);
    ExpectError(Load(d), StatusCode::kInvalidArgument,
                {"node 0 (FromTensors)", "components", "needs more bytes"});
  }
  {  // one byte short
    graph::GraphDef d = base;
    tensor(&d)->mutable_content()->pop_back();
    ExpectError(Load(d), StatusCode::kInvalidArgument, {"needs 8 bytes", "got 7"});
  }
  {  // negative dim, bad dtype, too many dims
    graph::GraphDef d = base;
    tensor(&d)->set_shape(0, -2);
    ExpectError(Load(d), StatusCode::kInvalidArgument, {"dim -2"});
    d = base;
    tensor(&d)->set_dtype(static_cast<graph::DataType>(77));
    ExpectError(Load(d), StatusCode::kInvalidArgument, {"dtype"});
    d = base;
    for (int i = 0; i < 40; ++i) tensor(&d)->add_shape(1);
    ExpectError(Load(d), StatusCode::kInvalidArgument, {"rank"});
  }
  {  // string count mismatch, bool bytes
    graph::GraphDef d = base;
    tensor(&d)->set_dtype(graph::DT_STRING);
    tensor(&d)->clear_content();
    tensor(&d)->add_string_val("only one");
    ExpectError(Load(d), StatusCode::kInvalidArgument, {"string values"});
    d = base;
    tensor(&d)->set_dtype(graph::DT_BOOL);
    tensor(&d)->set_content(std::string("\x01\x02", 2));
    ExpectError(Load(d), StatusCode::kInvalidArgument, {"bool"});
  }
}

}  // namespace
}  // namespace sluice
