// Graph serialization (include/sluice/serialize.h): every registered op and kernel
// round-trips through the binary and JSON GraphDef with identical elements, options
// round-trip, the fingerprint's contract, and the deserializer's errors on bad input.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <map>
#include <set>

#include "formats/idx.h"
#include "formats/image_codec.h"
#include "formats/proto/example.pb.h"
#include "formats/tfrecord.h"
#include "graph/proto/graph.pb.h"
#include "graph/registry.h"
#include "sluice/serialize.h"
#include "testing/conformance.h"

namespace sluice {
namespace {

using testing::TempDir;
using testing::WriteFile;

const GraphFormat kFormats[] = {GraphFormat::kBinary, GraphFormat::kJson};

const char* Name(GraphFormat f) { return f == GraphFormat::kBinary ? "binary" : "json"; }

Function K(std::string_view name, AttrMap attrs = {}) {
  auto f = Function::Kernel(name, std::move(attrs));
  EXPECT_TRUE(f.ok()) << f.status();
  return f.ok() ? *f : Function();
}

std::vector<Element> Collect(const Dataset& ds) {
  auto r = ds.Collect();
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : std::vector<Element>{};
}

void ExpectSameElements(const std::vector<Element>& a, const std::vector<Element>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(a[i].ContentEquals(b[i]))
        << "element " << i << ": " << a[i].DebugString() << " vs " << b[i].DebugString();
    EXPECT_EQ(a[i].names() == nullptr, b[i].names() == nullptr) << "element " << i;
    if (a[i].names() && b[i].names()) EXPECT_EQ(*a[i].names(), *b[i].names());
  }
}

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

bool GraphHasOp(const DatasetPtr& n, std::string_view op) {
  if (n->op() == op) return true;
  for (const DatasetPtr& in : n->inputs()) {
    if (GraphHasOp(in, op)) return true;
  }
  return false;
}

bool GraphHasKernel(const DatasetPtr& n, std::string_view kernel) {
  for (const Function& f : n->functions()) {
    if (f.name() == kernel) return true;
  }
  for (const DatasetPtr& in : n->inputs()) {
    if (GraphHasKernel(in, kernel)) return true;
  }
  return false;
}

// Small files every case may use, written once per test.
class Files {
 public:
  Files() {
    WriteFile(dir_.File("lines.txt"), "a b\nc\nd e f\n");
    WriteFile(dir_.File("other.txt"), "x\n");
    std::string records;
    for (const char* r : {"r0", "record1", "r2"}) AppendTFRecord(&records, r);
    WriteFile(dir_.File("recs.tfrecord"), records);
    WriteFile(dir_.File("fixed.bin"), "HH0123456789abF");  // header 2, 3 x 4, footer 1
    Tensor rows(DType::kUInt8, Shape{3, 2, 2});
    for (int i = 0; i < 12; ++i) rows.mutable_data<uint8_t>()[i] = static_cast<uint8_t>(i * 7);
    WriteFile(dir_.File("rows.idx"), *EncodeIdx(rows));
    WriteFile(dir_.File("vocab.txt"), "<pad>\n<unk>\na\nb\nc\n");
    std::filesystem::create_directories(dir_.File("images/cat"));
    std::filesystem::create_directories(dir_.File("images/dog"));
    Tensor img = Image();
    png_ = *EncodePng(img);
    jpeg_ = *EncodeJpeg(img, 90);
    WriteFile(dir_.File("images/cat/0.png"), png_);
    WriteFile(dir_.File("images/dog/1.png"), png_);
  }
  std::string File(const std::string& name) const { return dir_.File(name); }
  const std::string& png() const { return png_; }
  const std::string& jpeg() const { return jpeg_; }

  // A 12x16 RGB gradient.
  static Tensor Image() {
    Tensor img(DType::kUInt8, Shape{12, 16, 3});
    uint8_t* p = img.mutable_data<uint8_t>();
    for (int i = 0; i < 12 * 16 * 3; ++i) p[i] = static_cast<uint8_t>((i * 37) % 251);
    return img;
  }

 private:
  TempDir dir_;
  std::string png_, jpeg_;
};

Dataset Pairs() {  // (key, value): keys 0 1 0 1 0, values 10..14
  return Dataset::FromTensorSlices(Element{Tensor::FromVector<int64_t>({0, 1, 0, 1, 0}),
                                           Tensor::FromVector<int64_t>({10, 11, 12, 13, 14})});
}

Dataset Matrix() {  // [1, 2], [3, 4], [5, 6]
  return Dataset::FromTensorSlices(
      Element{Tensor::FromVector<int64_t>({1, 2, 3, 4, 5, 6}, Shape{3, 2})});
}

Dataset Words(const Files& f) { return Dataset::TextLine({f.File("lines.txt")}).Map(K("split")); }

using Case = std::function<Dataset(const Files&)>;

// One small pipeline per registered op. A new op must add a case here.
const std::map<std::string, Case>& OpCases() {
  static const auto* cases = new std::map<std::string, Case>{
      {"Range", [](const Files&) { return Dataset::Range(2, 11, 3); }},
      {"FromTensors",
       [](const Files&) {
         return Dataset::FromTensors(Element({Tensor::FromVector<int64_t>({1, 2, 3}),
                                              Tensor::Scalar(std::string("a\0b", 3))},
                                             MakeNames({"x", "y"})));
       }},
      {"FromTensorSlices",
       [](const Files&) {
         return Dataset::FromTensorSlices(
             Element{Tensor::FromVector<float>({1.5f, -2.5f}), Tensor::FromVector<bool>({true, false}),
                     Tensor::FromVector<double>({1e300, -0.0})});
       }},
      {"ListFiles",
       [](const Files& f) { return Dataset::ListFiles({f.File("*.txt")}, true, 7); }},
      {"TextLine", [](const Files& f) { return Dataset::TextLine({f.File("lines.txt")}); }},
      {"TFRecord", [](const Files& f) { return Dataset::TFRecord({f.File("recs.tfrecord")}); }},
      {"FixedLengthRecord",
       [](const Files& f) { return Dataset::FixedLengthRecord({f.File("fixed.bin")}, 4, 2, 1); }},
      {"Idx", [](const Files& f) { return Dataset::Idx(f.File("rows.idx")); }},
      {"ImageFolder",
       [](const Files& f) { return Dataset::ImageFolder(f.File("images"), {".png"}); }},
      {"Map", [](const Files&) { return Dataset::Range(4).Map(K("cast", {{"dtype", DType::kFloat32}})); }},
      {"Filter",
       [](const Files&) {
         return Dataset::Range(10).Filter(K("compare", {{"op", std::string("less")}, {"value", 4.0}}));
       }},
      {"FlatMap", [](const Files&) { return Matrix().FlatMap(K("from_tensor_slices")); }},
      {"Interleave", [](const Files&) { return Matrix().Interleave(K("from_tensor_slices"), 2, 1); }},
      {"ParallelInterleave",
       [](const Files&) { return Matrix().Interleave(K("from_tensor_slices"), 2, 1, 2, true); }},
      {"Batch", [](const Files&) { return Dataset::Range(7).Batch(3); }},
      {"ParallelBatch", [](const Files&) { return Dataset::Range(7).Batch(3, true, 2); }},
      {"PaddedBatch",
       [](const Files& f) {
         return Words(f).PaddedBatch(2, {PartialShape{4}}, {Tensor::Scalar(std::string("-"))});
       }},
      {"Unbatch", [](const Files&) { return Dataset::Range(6).Batch(4).Unbatch(); }},
      {"Shuffle", [](const Files&) { return Dataset::Range(20).Shuffle(5, 3); }},
      {"Repeat", [](const Files&) { return Dataset::Range(3).Repeat(2); }},
      {"Take", [](const Files&) { return Dataset::Range(10).Take(3); }},
      {"Skip", [](const Files&) { return Dataset::Range(10).Skip(7); }},
      {"Shard", [](const Files&) { return Dataset::Range(10).Shard(3, 1); }},
      {"Zip",
       [](const Files&) {
         return Dataset::Zip({Dataset::Range(3), Dataset::Range(3).Map(K("cast", {{"dtype", DType::kInt8}}))});
       }},
      {"Concatenate",
       [](const Files&) {
         Dataset r = Dataset::Range(3);
         return r.Concatenate(r.Skip(1));
       }},
      {"Enumerate", [](const Files&) { return Dataset::Range(3).Enumerate(5); }},
      {"Cache", [](const Files&) { return Dataset::Range(4).Cache(); }},
      {"Scan",
       [](const Files&) {
         return Dataset::Range(4).Scan(Element{Tensor::Scalar<int64_t>(0)},
                                       K("select", {{"indices", std::vector<int64_t>{1, 0}}}));
       }},
      {"Window", [](const Files&) { return Dataset::Range(7).Window(3, 2, 1, false); }},
      {"GroupByWindow",
       [](const Files&) {
         return Pairs().GroupByWindow(K("select", {{"indices", std::vector<int64_t>{0}}}),
                                      K("window_batch", {{"batch_size", int64_t{2}}}), 2);
       }},
      {"BucketBySequenceLength",
       [](const Files& f) {
         return Words(f).BucketBySequenceLength(K("sequence_length"), {2}, {2, 2});
       }},
      {"IgnoreErrors",
       [](const Files& f) {
         return Dataset::FromTensorSlices(
                    Element{Tensor::FromStrings({f.File("lines.txt"), f.File("missing")})})
             .Map(K("read_file"))
             .IgnoreErrors();
       }},
      {"Prefetch", [](const Files&) { return Dataset::Range(5).Prefetch(2); }},
      {"ParallelMap",
       [](const Files&) { return Dataset::Range(5).Map(K("cast", {{"dtype", DType::kFloat64}}), 2); }},
      {"ParallelFilter",
       [](const Files&) {
         return Dataset::Range(10).Filter(
             K("compare", {{"op", std::string("greater_equal")}, {"value", int64_t{6}}}), 2);
       }},
      {"MapAndBatch",
       [](const Files&) {
         return Dataset::Range(7).MapAndBatch(K("cast", {{"dtype", DType::kInt32}}), 3, 2);
       }},
      {"ShuffleAndRepeat",
       [](const Files&) {
         return Dataset::FromOp("ShuffleAndRepeat",
                                {{"buffer_size", int64_t{4}}, {"seed", int64_t{3}},
                                 {"reshuffle_each_iteration", true}, {"count", int64_t{2}}},
                                {Dataset::Range(6)});
       }},
      {"MapAndFilter",
       [](const Files&) {
         return Dataset::FromOp(
             "MapAndFilter", {{"map_seed", int64_t{1}}, {"filter_seed", int64_t{2}}},
             {Dataset::Range(10)},
             {K("cast", {{"dtype", DType::kInt32}}),
              K("compare", {{"op", std::string("less")}, {"value", int64_t{5}}})});
       }},
      {"ParallelMapAndFilter",
       [](const Files&) {
         return Dataset::FromOp(
             "ParallelMapAndFilter",
             {{"map_seed", int64_t{1}}, {"filter_seed", int64_t{2}},
              {"num_parallel_calls", int64_t{2}}, {"deterministic", int64_t{1}}},
             {Dataset::Range(10)},
             {K("cast", {{"dtype", DType::kInt32}}),
              K("compare", {{"op", std::string("greater")}, {"value", int64_t{5}}})});
       }},
      {"_Elements",
       [](const Files&) {
         return Dataset::FromOp(
             "_Elements", {{"components", std::vector<Tensor>{Tensor::Scalar<int64_t>(4),
                                                              Tensor::Scalar<int64_t>(9)}},
                           {"num_components", int64_t{1}}});
       }},
  };
  return *cases;
}

TEST(SerializeTest, EveryRegisteredOpRoundTrips) {
  Files files;
  std::vector<std::string> missing;
  for (const std::string& op : Registry::Global().OpNames()) {
    auto it = OpCases().find(op);
    if (it == OpCases().end()) {
      missing.push_back(op);
      continue;
    }
    SCOPED_TRACE("op " + op);
    Dataset ds = it->second(files);
    ASSERT_TRUE(ds.ok()) << ds.status();
    EXPECT_TRUE(GraphHasOp(ds.node(), op)) << "the case does not use " << op;
    ExpectRoundTrip(ds);
  }
  std::string list;
  for (const std::string& m : missing) list += " " + m;
  EXPECT_TRUE(missing.empty()) << "registered ops without a round-trip case in "
                                  "tests/serialize_test.cc:"
                               << list;
}

std::string ExampleBytes() {
  tensorflow::Example ex;
  auto& feature = (*ex.mutable_features()->mutable_feature())["x"];
  feature.mutable_int64_list()->add_value(3);
  feature.mutable_int64_list()->add_value(-4);
  (*ex.mutable_features()->mutable_feature())["s"].mutable_bytes_list()->add_value("hi");
  return ex.SerializeAsString();
}

std::string SequenceExampleBytes() {
  tensorflow::SequenceExample ex;
  (*ex.mutable_context()->mutable_feature())["length"].mutable_int64_list()->add_value(2);
  auto& list = (*ex.mutable_feature_lists()->mutable_feature_list())["tokens"];
  list.add_feature()->mutable_int64_list()->add_value(10);
  list.add_feature()->mutable_int64_list()->add_value(11);
  return ex.SerializeAsString();
}

Dataset One(Tensor t) { return Dataset::FromTensors(Element{std::move(t)}); }
Dataset Img() { return One(Files::Image()); }

// One pipeline per registered kernel. A new kernel must add a case here.
const std::map<std::string, Case>& KernelCases() {
  static const auto* cases = new std::map<std::string, Case>{
      {"identity", [](const Files&) { return Dataset::Range(3).Map(K("identity")); }},
      {"select",
       [](const Files&) {
         return Pairs().Map(K("select", {{"indices", std::vector<int64_t>{1, 0, 1}}}));
       }},
      {"cast",
       [](const Files&) {
         return Dataset::Range(3).Map(K("cast", {{"dtype", DType::kFloat16}}));
       }},
      {"read_file",
       [](const Files& f) { return One(Tensor::Scalar(f.File("lines.txt"))).Map(K("read_file")); }},
      {"parse_example",
       [](const Files&) {
         return One(Tensor::Scalar(ExampleBytes()))
             .Map(K("parse_example",
                    {{"keys", std::vector<std::string>{"x", "s"}},
                     {"kinds", std::vector<std::string>{"fixed", "var"}},
                     {"dtypes", std::vector<DType>{DType::kInt64, DType::kString}},
                     {"shapes", std::vector<PartialShape>{PartialShape{2}, PartialShape{}}}}));
       }},
      {"parse_sequence_example",
       [](const Files&) {
         return One(Tensor::Scalar(SequenceExampleBytes()))
             .Map(K("parse_sequence_example",
                    {{"context_keys", std::vector<std::string>{"length"}},
                     {"context_kinds", std::vector<std::string>{"fixed"}},
                     {"context_dtypes", std::vector<DType>{DType::kInt64}},
                     {"context_shapes", std::vector<PartialShape>{{}}},
                     {"sequence_keys", std::vector<std::string>{"tokens"}},
                     {"sequence_dtypes", std::vector<DType>{DType::kInt64}},
                     {"sequence_shapes", std::vector<PartialShape>{{}}}}));
       }},
      {"decode_jpeg",
       [](const Files& f) { return One(Tensor::Scalar(f.jpeg())).Map(K("decode_jpeg")); }},
      {"decode_png",
       [](const Files& f) { return One(Tensor::Scalar(f.png())).Map(K("decode_png")); }},
      {"decode_image",
       [](const Files& f) {
         return Dataset::FromTensorSlices(Element{Tensor::FromStrings({f.png(), f.jpeg()})})
             .Map(K("decode_image", {{"channels", int64_t{1}}}));
       }},
      {"decode_and_random_crop",
       [](const Files& f) {
         return One(Tensor::Scalar(f.jpeg()))
             .Repeat(3)
             .Map(K("decode_and_random_crop", {{"size", std::vector<int64_t>{8, 8}}}));
       }},
      {"random_resized_crop",
       [](const Files&) {
         return Img().Repeat(3).Map(K("random_resized_crop", {{"size", std::vector<int64_t>{5, 7}}}));
       }},
      {"resize",
       [](const Files&) { return Img().Map(K("resize", {{"size", std::vector<int64_t>{5, 9}}})); }},
      {"center_crop",
       [](const Files&) { return Img().Map(K("center_crop", {{"size", std::vector<int64_t>{6, 6}}})); }},
      {"flip_left_right", [](const Files&) { return Img().Map(K("flip_left_right")); }},
      {"random_flip_left_right",
       [](const Files&) { return Img().Repeat(4).Map(K("random_flip_left_right")); }},
      {"normalize",
       [](const Files&) {
         return Img().Map(K("normalize", {{"mean", std::vector<double>{0.5, 0.4, 0.3}},
                                          {"std", std::vector<double>{0.2}},
                                          {"layout", std::string("HWC")}}));
       }},
      {"to_float", [](const Files&) { return Img().Map(K("to_float")); }},
      {"split", [](const Files& f) { return Words(f); }},
      {"byte_tokenize",
       [](const Files& f) { return Dataset::TextLine({f.File("lines.txt")}).Map(K("byte_tokenize")); }},
      {"vocab_lookup",
       [](const Files& f) {
         return Words(f).Map(K("vocab_lookup", {{"vocab_file", f.File("vocab.txt")},
                                                {"num_oov_buckets", int64_t{2}}}));
       }},
      {"tokenize",
       [](const Files& f) {
         return Dataset::TextLine({f.File("lines.txt")})
             .Map(K("tokenize", {{"vocab_file", f.File("vocab.txt")}, {"default_value", int64_t{1}}}));
       }},
      {"truncate",
       [](const Files& f) { return Words(f).Map(K("truncate", {{"max_length", int64_t{2}}})); }},
      {"pad",
       [](const Files& f) {
         return Dataset::TextLine({f.File("lines.txt")})
             .Map(K("tokenize", {{"vocab_file", f.File("vocab.txt")}}))
             .Map(K("pad", {{"length", int64_t{4}}}));
       }},
      {"sequence_length", [](const Files& f) { return Words(f).Map(K("sequence_length")); }},
      {"expand_dims",
       [](const Files&) { return Matrix().Map(K("expand_dims", {{"axis", int64_t{0}}})); }},
      {"reshape",
       [](const Files&) {
         return Matrix().Batch(3).Map(K("reshape", {{"shape", std::vector<int64_t>{-1, 3}}}));
       }},
      {"compare",
       [](const Files&) {
         return Dataset::Range(6).Filter(K("compare", {{"op", std::string("not_equal")}, {"value", 2.0}}));
       }},
      {"tfrecord_dataset",
       [](const Files& f) {
         return One(Tensor::Scalar(f.File("recs.tfrecord"))).FlatMap(K("tfrecord_dataset"));
       }},
      {"text_line_dataset",
       [](const Files& f) {
         return Dataset::FromTensorSlices(
                    Element{Tensor::FromStrings({f.File("lines.txt"), f.File("other.txt")})})
             .Interleave(K("text_line_dataset"), 2, 1);
       }},
      {"fixed_length_record_dataset",
       [](const Files& f) {
         return One(Tensor::Scalar(f.File("fixed.bin")))
             .FlatMap(K("fixed_length_record_dataset", {{"record_bytes", int64_t{4}},
                                                        {"header_bytes", int64_t{2}},
                                                        {"footer_bytes", int64_t{1}}}));
       }},
      {"from_tensor_slices", [](const Files&) { return Matrix().FlatMap(K("from_tensor_slices")); }},
      {"window_batch",
       [](const Files&) {
         return Pairs().GroupByWindow(K("select", {{"indices", std::vector<int64_t>{0}}}),
                                      K("window_batch", {{"batch_size", int64_t{3}},
                                                         {"drop_remainder", true}}),
                                      3);
       }},
  };
  return *cases;
}

TEST(SerializeTest, EveryRegisteredKernelRoundTrips) {
  Files files;
  std::vector<std::string> missing;
  for (const std::string& kernel : Registry::Global().KernelNames()) {
    auto it = KernelCases().find(kernel);
    if (it == KernelCases().end()) {
      missing.push_back(kernel);
      continue;
    }
    SCOPED_TRACE("kernel " + kernel);
    Dataset ds = it->second(files);
    ASSERT_TRUE(ds.ok()) << ds.status();
    EXPECT_TRUE(GraphHasKernel(ds.node(), kernel)) << "the case does not use " << kernel;
    EXPECT_FALSE(Collect(ds).empty()) << "the case yields nothing";
    ExpectRoundTrip(ds);
  }
  std::string list;
  for (const std::string& m : missing) list += " " + m;
  EXPECT_TRUE(missing.empty()) << "registered kernels without a round-trip case in "
                                  "tests/serialize_test.cc:"
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
  EXPECT_EQ(back->node()->input(0), back->node()->input(2));  // still one node
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
