// tf.train.Example / SequenceExample parsing: the parse_example and
// parse_sequence_example kernels, wire compatibility with TensorFlow's schema, and
// conformance through Map.
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <gtest/gtest.h>

#include <random>

#include "formats/example_parser.h"
#include "formats/proto/example.pb.h"
#include "testing/conformance.h"

namespace sluice {
namespace {

using testing::CheckDataset;

tensorflow::Feature Int64s(std::vector<int64_t> v) {
  tensorflow::Feature f;
  for (int64_t x : v) f.mutable_int64_list()->add_value(x);
  if (v.empty()) f.mutable_int64_list();
  return f;
}
tensorflow::Feature Floats(std::vector<float> v) {
  tensorflow::Feature f;
  for (float x : v) f.mutable_float_list()->add_value(x);
  if (v.empty()) f.mutable_float_list();
  return f;
}
tensorflow::Feature Bytes(std::vector<std::string> v) {
  tensorflow::Feature f;
  for (const std::string& x : v) f.mutable_bytes_list()->add_value(x);
  if (v.empty()) f.mutable_bytes_list();
  return f;
}

// Deterministic serialization (map entries sorted by key).
template <typename Message>
std::string Serialize(const Message& m) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream s(&out);
    google::protobuf::io::CodedOutputStream c(&s);
    c.SetSerializationDeterministic(true);
    EXPECT_TRUE(m.SerializeToCodedStream(&c));
  }
  return out;
}

std::string MakeExample(
    std::vector<std::pair<std::string, tensorflow::Feature>> features) {
  tensorflow::Example ex;
  auto* map = ex.mutable_features()->mutable_feature();
  for (auto& [k, f] : features) (*map)[k] = f;
  return Serialize(ex);
}

std::string Raw(std::initializer_list<int> v) {
  std::string s;
  for (int b : v) s.push_back(static_cast<char>(b));
  return s;
}

Function Kernel(std::string_view name, AttrMap attrs) {
  auto f = Function::Kernel(name, std::move(attrs));
  EXPECT_TRUE(f.ok()) << f.status();
  return f.ok() ? *f : Function();
}

Result<Element> Apply(const Function& f, Tensor serialized) {
  FunctionContext ctx(0, 0);
  return f(Element{std::move(serialized)}, ctx);
}

// a: var int64, f: fixed float32[1], s: fixed string[].
AttrMap SmallSpec() {
  return {{"keys", std::vector<std::string>{"a", "f", "s"}},
          {"kinds", std::vector<std::string>{"var", "fixed", "fixed"}},
          {"dtypes", std::vector<DType>{DType::kInt64, DType::kFloat32, DType::kString}},
          {"shapes",
           std::vector<PartialShape>{PartialShape{}, PartialShape{1}, PartialShape{}}}};
}

// Example{features{a: int64_list[1, 300], f: float_list[1.5], s: bytes_list["hi"]}}
// encoded by hand from the protobuf wire format (tag = field << 3 | wire type; 2 =
// length-delimited).
TEST(ExampleWireTest, HandEncodedBytesMatchTheSchema) {
  const std::string entry_a =
      Raw({0x0A, 0x01, 'a',                 // key: field 1, "a"
           0x12, 0x07,                      // value: field 2, 7 bytes
           0x1A, 0x05,                      // Feature.int64_list (3)
           0x0A, 0x03, 0x01, 0xAC, 0x02});  // packed: 1, 300 (varints)
  const std::string entry_f =
      Raw({0x0A, 0x01, 'f', 0x12, 0x08, 0x12, 0x06,  // float_list (2)
           0x0A, 0x04, 0x00, 0x00, 0xC0, 0x3F});     // packed 1.5f (LE)
  const std::string entry_s =
      Raw({0x0A, 0x01, 's', 0x12, 0x06, 0x0A, 0x04,  // bytes_list (1)
           0x0A, 0x02, 'h', 'i'});                   // value: "hi"
  const std::string features = Raw({0x0A, 0x0C}) + entry_a + Raw({0x0A, 0x0D}) + entry_f +
                               Raw({0x0A, 0x0B}) + entry_s;
  ASSERT_EQ(features.size(), 42u);
  const std::string example = Raw({0x0A, 0x2A}) + features;  // Example.features (1)

  // protobuf's own (deterministic) encoding of the same Example is byte-identical.
  EXPECT_EQ(
      MakeExample({{"a", Int64s({1, 300})}, {"f", Floats({1.5f})}, {"s", Bytes({"hi"})}}),
      example);

  Function parse = Kernel("parse_example", SmallSpec());
  auto out = Apply(parse, Tensor::Scalar(example));
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 3u);
  EXPECT_TRUE((*out)[0].ContentEquals(Tensor::FromVector<int64_t>({1, 300})));
  EXPECT_TRUE((*out)[1].ContentEquals(Tensor::FromVector<float>({1.5f})));
  EXPECT_TRUE((*out)[2].ContentEquals(Tensor::Scalar("hi")));
  EXPECT_EQ(*out->names(), (std::vector<std::string>{"a", "f", "s"}));

  // Unpacked repeated int64 (older writers) is accepted too: 08 01 08 AC 02.
  const std::string unpacked = Raw({0x0A, 0x0E, 0x0A, 0x0C, 0x0A, 0x01, 'a', 0x12, 0x07,
                                    0x1A, 0x05, 0x08, 0x01, 0x08, 0xAC, 0x02});
  Function only_a =
      Kernel("parse_example", {{"keys", std::vector<std::string>{"a"}},
                               {"kinds", std::vector<std::string>{"var"}},
                               {"dtypes", std::vector<DType>{DType::kInt64}},
                               {"shapes", std::vector<PartialShape>{{}}}});
  auto u = Apply(only_a, Tensor::Scalar(unpacked));
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_TRUE((*u)[0].ContentEquals(Tensor::FromVector<int64_t>({1, 300})));
}

TEST(ParseExampleTest, FixedFeaturesDefaultsAndRequired) {
  AttrMap attrs = {
      {"keys", std::vector<std::string>{"img", "label", "name", "w"}},
      {"kinds", std::vector<std::string>{"fixed", "fixed", "fixed", "fixed"}},
      {"dtypes",
       std::vector<DType>{DType::kInt64, DType::kInt64, DType::kString, DType::kFloat32}},
      {"shapes", std::vector<PartialShape>{PartialShape{2, 2}, PartialShape{},
                                           PartialShape{}, PartialShape{3}}},
      {"defaults",
       std::vector<Tensor>{Tensor(), Tensor::Scalar<int64_t>(-1), Tensor::Scalar("anon"),
                           Tensor::FromVector<float>({0.5f, 0.25f, 0.125f})}}};
  Function parse = Kernel("parse_example", attrs);

  auto full = Apply(parse, Tensor::Scalar(MakeExample({{"img", Int64s({1, 2, 3, 4})},
                                                       {"label", Int64s({7})},
                                                       {"name", Bytes({"bob"})},
                                                       {"w", Floats({1, 2, 3})},
                                                       {"unused", Floats({9})}})));
  ASSERT_TRUE(full.ok()) << full.status();
  EXPECT_TRUE(
      (*full)[0].ContentEquals(Tensor::FromVector<int64_t>({1, 2, 3, 4}, Shape{2, 2})));
  EXPECT_TRUE((*full)[1].ContentEquals(Tensor::Scalar<int64_t>(7)));
  EXPECT_TRUE((*full)[2].ContentEquals(Tensor::Scalar("bob")));
  EXPECT_TRUE((*full)[3].ContentEquals(Tensor::FromVector<float>({1, 2, 3})));

  // Missing features with defaults take them.
  auto defaults =
      Apply(parse, Tensor::Scalar(MakeExample({{"img", Int64s({5, 6, 7, 8})}})));
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  EXPECT_TRUE((*defaults)[1].ContentEquals(Tensor::Scalar<int64_t>(-1)));
  EXPECT_TRUE((*defaults)[2].ContentEquals(Tensor::Scalar("anon")));
  EXPECT_TRUE(
      (*defaults)[3].ContentEquals(Tensor::FromVector<float>({0.5f, 0.25f, 0.125f})));

  // Missing and required.
  auto required = Apply(parse, Tensor::Scalar(MakeExample({{"label", Int64s({1})}})));
  ASSERT_FALSE(required.ok());
  EXPECT_EQ(required.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(required.status().message().find("parse_example"), std::string::npos);
  EXPECT_NE(required.status().message().find("key 'img' is required"), std::string::npos)
      << required.status();

  // Wrong count: no default fills in for a present feature.
  auto count = Apply(parse, Tensor::Scalar(MakeExample(
                                {{"img", Int64s({1, 2, 3, 4})}, {"w", Floats({1, 2})}})));
  ASSERT_FALSE(count.ok());
  EXPECT_NE(count.status().message().find("key 'w' has 2 values but shape [3] needs 3"),
            std::string::npos)
      << count.status();

  // Wrong list type.
  auto type = Apply(parse, Tensor::Scalar(MakeExample({{"img", Floats({1, 2, 3, 4})}})));
  ASSERT_FALSE(type.ok());
  EXPECT_NE(type.status().message().find(
                "key 'img' has float_list but dtype int64 needs int64_list"),
            std::string::npos)
      << type.status();

  // An empty Feature (no list set) is an empty list of any type.
  tensorflow::Feature empty;
  Function var = Kernel("parse_example",
                        {{"keys", std::vector<std::string>{"v", "z"}},
                         {"kinds", std::vector<std::string>{"var", "fixed"}},
                         {"dtypes", std::vector<DType>{DType::kString, DType::kFloat32}},
                         {"shapes", std::vector<PartialShape>{{}, PartialShape{0}}}});
  auto e = Apply(var, Tensor::Scalar(MakeExample({{"v", empty}, {"z", empty}})));
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ((*e)[0].shape(), Shape{0});
  EXPECT_EQ((*e)[1].shape(), Shape{0});
  // Missing var feature: empty.
  auto none = Apply(var, Tensor::Scalar(MakeExample({{"z", Floats({})}})));
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ((*none)[0].shape(), Shape{0});
}

TEST(ParseExampleTest, BatchesPadVarFeatures) {
  AttrMap attrs = {
      {"keys", std::vector<std::string>{"ids", "tags", "y"}},
      {"kinds", std::vector<std::string>{"var", "var", "fixed"}},
      {"dtypes", std::vector<DType>{DType::kInt64, DType::kString, DType::kFloat32}},
      {"shapes", std::vector<PartialShape>{{}, {}, PartialShape{2}}},
      {"defaults",
       std::vector<Tensor>{Tensor(), Tensor(), Tensor::FromVector<float>({-1, -2})}}};
  Function parse = Kernel("parse_example", attrs);
  Tensor batch = Tensor::FromStrings(
      {MakeExample(
           {{"ids", Int64s({1, 2, 3})}, {"tags", Bytes({"x"})}, {"y", Floats({1, 2})}}),
       MakeExample({{"tags", Bytes({"p", "q"})}}),
       MakeExample({{"ids", Int64s({4})}, {"y", Floats({3, 4})}})});
  auto out = Apply(parse, batch);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE((*out)[0].ContentEquals(
      Tensor::FromVector<int64_t>({1, 2, 3, 0, 0, 0, 4, 0, 0}, Shape{3, 3})))
      << (*out)[0].DebugString(20);
  EXPECT_TRUE((*out)[1].ContentEquals(
      Tensor::FromStrings({"x", "", "p", "q", "", ""}, Shape{3, 2})))
      << (*out)[1].DebugString(20);
  EXPECT_TRUE((*out)[2].ContentEquals(
      Tensor::FromVector<float>({1, 2, -1, -2, 3, 4}, Shape{3, 2})));

  // All var features empty: [B, 0].
  auto empty = Apply(parse, Tensor::FromStrings({MakeExample({}), MakeExample({})}));
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ((*empty)[0].shape(), (Shape{2, 0}));
  // An empty batch.
  auto zero = Apply(parse, Tensor::FromStrings({}));
  ASSERT_TRUE(zero.ok()) << zero.status();
  EXPECT_EQ((*zero)[2].shape(), (Shape{0, 2}));

  // Errors name the example in the batch.
  Tensor bad = Tensor::FromStrings(
      {MakeExample({}), MakeExample({}), MakeExample({{"y", Floats({1})}})});
  auto r = Apply(parse, bad);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("example 2 of the batch"), std::string::npos)
      << r.status();
  Tensor garbage = Tensor::FromStrings({MakeExample({}), Raw({0x0A, 0x05, 0x01})});
  r = Apply(parse, garbage);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("parse_example: could not parse"),
            std::string::npos)
      << r.status();
  EXPECT_NE(r.status().message().find("example 1 of the batch"), std::string::npos)
      << r.status();
}

TEST(ParseExampleTest, MalformedInputsAreErrorsNotCrashes) {
  Function parse = Kernel("parse_example", SmallSpec());
  for (const std::string& bad :
       {Raw({0xFF}), Raw({0x0A, 0x7F}), Raw({0x0A, 0x02, 0x0A, 0x05}), Raw({0x0B}),
        std::string(100, '\xAA')}) {
    auto r = Apply(parse, Tensor::Scalar(bad));
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("parse_example"), std::string::npos)
        << r.status();
  }
  // Not a string, or a matrix.
  EXPECT_FALSE(Apply(parse, Tensor::Scalar<int64_t>(1)).ok());
  EXPECT_FALSE(Apply(parse, Tensor::FromStrings({"", ""}, Shape{1, 2})).ok());
  // The component attr picks the input.
  AttrMap attrs = SmallSpec();
  attrs["component"] = int64_t{1};
  Function second = Kernel("parse_example", attrs);
  FunctionContext ctx(0, 0);
  auto r = second(
      Element{Tensor::Scalar<int64_t>(0),
              Tensor::Scalar(MakeExample({{"f", Floats({2})}, {"s", Bytes({"x"})}}))},
      ctx);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE((*r)[1].ContentEquals(Tensor::FromVector<float>({2})));
  EXPECT_FALSE(second(Element{Tensor::Scalar("x")}, ctx).ok());
}

TEST(ParseExampleTest, BadSpecsAreRejectedWhenBuilt) {
  auto with = [](const char* attr, AttrValue v) {
    AttrMap a = SmallSpec();
    a[attr] = std::move(v);
    return Function::Kernel("parse_example", a);
  };
  std::vector<std::pair<Result<Function>, std::string>> cases;
  cases.emplace_back(with("kinds", std::vector<std::string>{"var", "fixed"}),
                     "same length");
  cases.emplace_back(with("kinds", std::vector<std::string>{"var", "fixed", "sparse"}),
                     "'sparse'");
  cases.emplace_back(
      with("dtypes", std::vector<DType>{DType::kInt32, DType::kFloat32, DType::kString}),
      "int32");
  cases.emplace_back(with("shapes", std::vector<PartialShape>{{}, PartialShape{-1}, {}}),
                     "fully defined");
  cases.emplace_back(
      with("defaults",
           std::vector<Tensor>{Tensor::FromVector<int64_t>({1}), Tensor(), Tensor()}),
      "var feature");
  cases.emplace_back(
      with("defaults",
           std::vector<Tensor>{Tensor(), Tensor::FromVector<double>({1}), Tensor()}),
      "float64");
  cases.emplace_back(
      with("defaults",
           std::vector<Tensor>{Tensor(), Tensor::FromVector<float>({1, 2}), Tensor()}),
      "shape [2]");
  cases.emplace_back(with("keys", std::vector<std::string>{"a", "f", "a"}),
                     "duplicate key 'a'");
  cases.emplace_back(with("component", std::string("x")), "component");
  for (auto& [r, words] : cases) {
    SCOPED_TRACE(words);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("parse_example"), std::string::npos)
        << r.status();
    EXPECT_NE(r.status().message().find(words), std::string::npos) << r.status();
  }
  AttrMap no_keys = SmallSpec();
  no_keys.erase("keys");
  EXPECT_FALSE(Function::Kernel("parse_example", no_keys).ok());
}

// ---- SequenceExample ----

std::string MakeSequenceExample(
    std::vector<std::pair<std::string, tensorflow::Feature>> context,
    std::vector<std::pair<std::string, std::vector<tensorflow::Feature>>> lists) {
  tensorflow::SequenceExample ex;
  for (auto& [k, f] : context) (*ex.mutable_context()->mutable_feature())[k] = f;
  for (auto& [k, steps] : lists) {
    auto& list = (*ex.mutable_feature_lists()->mutable_feature_list())[k];
    for (auto& f : steps) *list.add_feature() = f;
  }
  return Serialize(ex);
}

AttrMap SequenceSpec() {
  return {{"context_keys", std::vector<std::string>{"length", "tags"}},
          {"context_kinds", std::vector<std::string>{"fixed", "var"}},
          {"context_dtypes", std::vector<DType>{DType::kInt64, DType::kString}},
          {"context_shapes", std::vector<PartialShape>{{}, {}}},
          {"sequence_keys", std::vector<std::string>{"tokens", "frames"}},
          {"sequence_dtypes", std::vector<DType>{DType::kInt64, DType::kFloat32}},
          {"sequence_shapes", std::vector<PartialShape>{{}, PartialShape{2}}}};
}

TEST(ParseSequenceExampleTest, ContextAndFeatureLists) {
  Function parse = Kernel("parse_sequence_example", SequenceSpec());
  std::string s =
      MakeSequenceExample({{"length", Int64s({3})}, {"tags", Bytes({"a", "b"})}},
                          {{"tokens", {Int64s({10}), Int64s({11}), Int64s({12})}},
                           {"frames", {Floats({1, 2}), Floats({3, 4}), Floats({5, 6})}}});
  auto out = Apply(parse, Tensor::Scalar(s));
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 4u);
  EXPECT_EQ(*out->names(),
            (std::vector<std::string>{"length", "tags", "tokens", "frames"}));
  EXPECT_TRUE((*out)[0].ContentEquals(Tensor::Scalar<int64_t>(3)));
  EXPECT_TRUE((*out)[1].ContentEquals(Tensor::FromStrings({"a", "b"})));
  EXPECT_TRUE((*out)[2].ContentEquals(Tensor::FromVector<int64_t>({10, 11, 12})));
  EXPECT_TRUE((*out)[3].ContentEquals(
      Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, Shape{3, 2})));

  // Zero steps.
  auto empty =
      Apply(parse, Tensor::Scalar(MakeSequenceExample({{"length", Int64s({0})}},
                                                      {{"tokens", {}}, {"frames", {}}})));
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ((*empty)[3].shape(), (Shape{0, 2}));

  // A missing feature list is an error unless allowed.
  std::string no_frames =
      MakeSequenceExample({{"length", Int64s({1})}}, {{"tokens", {Int64s({1})}}});
  auto missing = Apply(parse, Tensor::Scalar(no_frames));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("feature list 'frames' is required"),
            std::string::npos)
      << missing.status();
  AttrMap allow = SequenceSpec();
  allow["sequence_allow_missing"] = std::vector<std::string>{"frames"};
  auto allowed =
      Apply(Kernel("parse_sequence_example", allow), Tensor::Scalar(no_frames));
  ASSERT_TRUE(allowed.ok()) << allowed.status();
  EXPECT_EQ((*allowed)[3].shape(), (Shape{0, 2}));

  // Wrong count at one step names the step.
  auto bad =
      Apply(parse,
            Tensor::Scalar(MakeSequenceExample(
                {{"length", Int64s({2})}}, {{"tokens", {Int64s({1}), Int64s({2})}},
                                            {"frames", {Floats({1, 2}), Floats({3})}}})));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(
                "feature list 'frames' has 1 values but shape [2] needs 2 (step 1)"),
            std::string::npos)
      << bad.status();
  // Wrong type in a list.
  auto type =
      Apply(parse, Tensor::Scalar(MakeSequenceExample(
                       {{"length", Int64s({1})}},
                       {{"tokens", {Bytes({"x"})}}, {"frames", {Floats({1, 2})}}})));
  ASSERT_FALSE(type.ok());
  EXPECT_NE(type.status().message().find("bytes_list"), std::string::npos)
      << type.status();
  // Context errors too.
  auto ctx = Apply(
      parse, Tensor::Scalar(MakeSequenceExample({}, {{"tokens", {}}, {"frames", {}}})));
  ASSERT_FALSE(ctx.ok());
  EXPECT_NE(ctx.status().message().find("key 'length' is required"), std::string::npos);
  // Garbage, and batches (scalar input only).
  auto garbage = Apply(parse, Tensor::Scalar(Raw({0x12, 0x09, 0x0A})));
  ASSERT_FALSE(garbage.ok());
  EXPECT_NE(garbage.status().message().find("parse_sequence_example"), std::string::npos);
  EXPECT_FALSE(Apply(parse, Tensor::FromStrings({s})).ok());
  // Bad specs.
  AttrMap dup = SequenceSpec();
  dup["sequence_keys"] = std::vector<std::string>{"tokens", "length"};
  EXPECT_FALSE(Function::Kernel("parse_sequence_example", dup).ok());
  AttrMap unknown_allow = SequenceSpec();
  unknown_allow["sequence_allow_missing"] = std::vector<std::string>{"nope"};
  EXPECT_FALSE(Function::Kernel("parse_sequence_example", unknown_allow).ok());
  EXPECT_FALSE(Function::Kernel("parse_sequence_example", {}).ok());
}

// ---- Through the pipeline ----

std::vector<std::string> SomeExamples(int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) {
    std::vector<int64_t> ids(i % 4);
    for (int j = 0; j < i % 4; ++j) ids[j] = i * 10 + j;
    std::vector<std::pair<std::string, tensorflow::Feature>> f = {
        {"ids", Int64s(ids)}, {"x", Floats({i * 0.5f, -i * 1.0f})}};
    if (i % 3 != 0) f.push_back({"name", Bytes({"n" + std::to_string(i)})});
    out.push_back(MakeExample(f));
  }
  return out;
}

AttrMap PipelineSpec() {
  return {{"keys", std::vector<std::string>{"ids", "x", "name"}},
          {"kinds", std::vector<std::string>{"var", "fixed", "fixed"}},
          {"dtypes", std::vector<DType>{DType::kInt64, DType::kFloat32, DType::kString}},
          {"shapes", std::vector<PartialShape>{{}, PartialShape{2}, {}}},
          {"defaults", std::vector<Tensor>{Tensor(), Tensor(), Tensor::Scalar("?")}}};
}

Element Expected(int i) {
  std::vector<int64_t> ids(i % 4);
  for (int j = 0; j < i % 4; ++j) ids[j] = i * 10 + j;
  return Element(
      {Tensor::FromVector<int64_t>(ids), Tensor::FromVector<float>({i * 0.5f, -i * 1.0f}),
       Tensor::Scalar(i % 3 != 0 ? "n" + std::to_string(i) : std::string("?"))},
      MakeNames({"ids", "x", "name"}));
}

TEST(ParseExampleTest, ConformanceThroughMap) {
  Function parse = Kernel("parse_example", PipelineSpec());
  const int n = 9;
  Dataset ds =
      Dataset::FromTensorSlices(Element{Tensor::FromStrings(SomeExamples(n))}).Map(parse);
  ASSERT_TRUE(ds.ok()) << ds.status();
  EXPECT_EQ(ds.element_spec().ToString(),
            "(ids: int64[?], x: float32[2], name: string[])");
  EXPECT_EQ(ds.Cardinality(), n);
  std::vector<Element> want;
  for (int i = 0; i < n; ++i) want.push_back(Expected(i));
  CheckDataset(ds, want);

  // Batched before parsing: var features padded per batch.
  Dataset batched =
      Dataset::FromTensorSlices(Element{Tensor::FromStrings(SomeExamples(n))})
          .Batch(4)
          .Map(parse);
  ASSERT_TRUE(batched.ok()) << batched.status();
  EXPECT_EQ(batched.element_spec().ToString(),
            "(ids: int64[?, ?], x: float32[?, 2], name: string[?])");
  auto got = testing::CollectOrDie(batched);
  ASSERT_EQ(got.size(), 3u);
  // Batch 1 holds examples 4..7 with 0, 1, 2, 3 ids: padded to 3.
  EXPECT_TRUE(got[1][0].ContentEquals(Tensor::FromVector<int64_t>(
      {0, 0, 0, 50, 0, 0, 60, 61, 0, 70, 71, 72}, Shape{4, 3})))
      << got[1][0].DebugString(20);
  EXPECT_TRUE(got[2][2].ContentEquals(Tensor::FromStrings({"n8"})));
  CheckDataset(batched, got);

  // A static batch size flows into the spec.
  Dataset fixed =
      Dataset::FromTensors(Element{Tensor::FromStrings(SomeExamples(3))}).Map(parse);
  EXPECT_EQ(fixed.element_spec().ToString(),
            "(ids: int64[3, ?], x: float32[3, 2], name: string[3])");

  // Mistyped input is caught when the pipeline is built.
  EXPECT_FALSE(Dataset::Range(3).Map(parse).ok());

  // Errors propagate through the parse (inputs made of examples built from Range).
  Function to_example =
      Function::Map("to_example", [](Element e, FunctionContext&) -> Result<Element> {
        return Element{Tensor::Scalar(MakeExample(
            {{"x", Floats({static_cast<float>(e[0].scalar<int64_t>()), 0})}}))};
      });
  testing::CheckTransform([&](Dataset in) { return in.Map(to_example).Map(parse); });

  // A corrupt record in the middle fails that element only.
  std::vector<std::string> records = SomeExamples(4);
  records[2] = Raw({0x0A, 0x09});
  Dataset corrupt =
      Dataset::FromTensorSlices(Element{Tensor::FromStrings(records)}).Map(parse);
  auto it = corrupt.MakeIterator();
  ASSERT_TRUE(it.ok());
  for (int i = 0; i < 4; ++i) {
    auto e = (*it)->GetNext();
    if (i == 2) {
      ASSERT_FALSE(e.ok());
      EXPECT_NE(e.status().message().find("could not parse"), std::string::npos)
          << e.status();
    } else {
      ASSERT_TRUE(e.ok() && e->has_value()) << e.status();
      EXPECT_TRUE((**e).ContentEquals(Expected(i)));
    }
  }
}

TEST(ParseSequenceExampleTest, ConformanceThroughMap) {
  Function parse = Kernel("parse_sequence_example", SequenceSpec());
  std::vector<std::string> records;
  std::vector<Element> want;
  for (int i = 0; i < 5; ++i) {
    std::vector<tensorflow::Feature> tokens, frames;
    std::vector<int64_t> tok;
    std::vector<float> fr;
    for (int t = 0; t < i; ++t) {
      tokens.push_back(Int64s({i * 100 + t}));
      frames.push_back(Floats({static_cast<float>(t), static_cast<float>(-t)}));
      tok.push_back(i * 100 + t);
      fr.push_back(static_cast<float>(t));
      fr.push_back(static_cast<float>(-t));
    }
    records.push_back(MakeSequenceExample({{"length", Int64s({i})}, {"tags", Bytes({})}},
                                          {{"tokens", tokens}, {"frames", frames}}));
    want.push_back(Element({Tensor::Scalar<int64_t>(i), Tensor::FromStrings({}),
                            Tensor::FromVector<int64_t>(tok),
                            Tensor::FromVector<float>(fr, Shape{i, 2})}));
  }
  Dataset ds =
      Dataset::FromTensorSlices(Element{Tensor::FromStrings(records)}).Map(parse);
  ASSERT_TRUE(ds.ok()) << ds.status();
  EXPECT_EQ(
      ds.element_spec().ToString(),
      "(length: int64[], tags: string[?], tokens: int64[?], frames: float32[?, 2])");
  CheckDataset(ds, want);
}

// ---- The wire scanner against protobuf ----

std::string Tag(int field, int type) { return Raw({field << 3 | type}); }
std::string Varint(uint64_t v) {
  std::string s;
  while (v >= 0x80) {
    s.push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  s.push_back(static_cast<char>(v));
  return s;
}
std::string Len(int field, const std::string& body) {
  return Tag(field, 2) + Varint(body.size()) + body;
}

// Random Examples in the encodings writers produce and in odd ones that protobuf
// accepts with its own meaning (merged messages, duplicate keys, a Feature with two
// lists, unknown fields, unpacked and split packed lists, entries with the value first
// or without key or value, non-ASCII and invalid UTF-8 keys), sometimes damaged.
class OddExamples {
 public:
  explicit OddExamples(uint64_t seed) : rng_(seed) {}

  // Mostly the list the key's feature is declared with (a, i: int64; f: float; s: bytes).
  std::string Feature(const std::string& key) {
    std::string f;
    const int lists = Pick(8) == 0 ? 2 : Pick(6) == 0 ? 0 : 1;
    for (int l = 0; l < lists; ++l) {
      const int declared = key == "s" ? 1 : key == "f" ? 2 : 3;
      const int kind = l == 0 && Pick(6) != 0 ? declared : 1 + Pick(3);
      std::string body;
      for (int chunk = Pick(3); chunk >= 0; --chunk) {
        const int n = Pick(4);
        if (kind == 1) {
          for (int i = 0; i < n; ++i) body += Len(1, std::string(Pick(5), 'a' + Pick(26)));
        } else if (kind == 2) {
          std::string packed;
          for (int i = 0; i < n; ++i) {
            const float v = static_cast<float>(Pick(1000)) / 8;
            std::string bytes(4, '\0');
            std::memcpy(bytes.data(), &v, 4);
            if (Pick(3) == 0) {
              body += Tag(1, 5) + bytes;
            } else {
              packed += bytes;
            }
          }
          if (!packed.empty() || Pick(2) == 0) body += Len(1, packed);
        } else {
          std::string packed;
          for (int i = 0; i < n; ++i) {
            const uint64_t v = Pick(4) == 0 ? ~uint64_t{0} - Pick(5) : Pick(100000);
            if (Pick(3) == 0) {
              body += Tag(1, 0) + Varint(v);
            } else {
              packed += Varint(v);
            }
          }
          if (!packed.empty() || Pick(2) == 0) body += Len(1, packed);
        }
      }
      f += Len(kind, body);
    }
    if (Pick(12) == 0) f += Tag(4, 0) + Varint(Pick(300));  // unknown field
    return f;
  }

  // A map entry whose value value(key) makes.
  template <typename Value>
  std::string Entry(const Value& value_of) {
    static const char* const kKeys[] = {"a", "f", "s", "i", "\xC3\xA9", "\xFF"};
    const std::string key = Pick(20) == 0 ? kKeys[4 + Pick(2)] : kKeys[Pick(4)];
    const std::string value = value_of(key);
    switch (Pick(10)) {
      case 0: return Len(2, value) + Len(1, key);
      case 1: return Len(1, key);
      case 2: return Len(2, value);
      case 3: return Len(1, key) + Len(2, value) + Len(1, kKeys[Pick(4)]);
      default: return Len(1, key) + Len(2, value);
    }
  }

  std::string Example() {
    auto feature = [this](const std::string& key) { return Feature(key); };
    std::string out;
    for (int part = Pick(8) == 0 ? 2 : 1; part > 0; --part) {
      std::string features;
      for (int e = Pick(5); e > 0; --e) features += Len(1, Entry(feature));
      out += Len(1, features);
    }
    if (Pick(12) == 0) out += Tag(2, 0) + Varint(7);
    return Damage(out);
  }

  std::string SequenceExample() {
    auto feature = [this](const std::string& key) { return Feature(key); };
    auto steps = [this](const std::string& key) {
      std::string list;
      for (int t = Pick(4); t > 0; --t) list += Len(1, Feature(key));
      return list;
    };
    std::string context;
    for (int e = Pick(3); e > 0; --e) context += Len(1, Entry(feature));
    std::string lists;
    for (int e = Pick(3); e > 0; --e) lists += Len(1, Entry(steps));
    std::string out = Pick(5) == 0 ? "" : Len(1, context);
    if (Pick(5) != 0) out += Len(2, lists);
    return Damage(out);
  }

 private:
  int Pick(int n) { return static_cast<int>(rng_() % static_cast<uint64_t>(n)); }
  std::string Damage(std::string s) {
    if (s.empty() || Pick(6) != 0) return s;
    if (Pick(2) == 0) return s.substr(0, Pick(static_cast<int>(s.size())));
    s[Pick(static_cast<int>(s.size()))] ^= static_cast<char>(1 + Pick(255));
    return s;
  }
  std::mt19937_64 rng_;
};

template <typename Message>
std::optional<std::string> Canonical(const std::string& bytes) {
  Message m;
  if (!m.ParseFromString(bytes)) return std::nullopt;
  return m.SerializeAsString();
}

// The parse of `odd` must be protobuf's: an error when protobuf rejects the bytes, else
// exactly the parse of protobuf's own encoding of what it read.
void ExpectSameParse(const Function& parse, const Tensor& odd, const Tensor& canonical) {
  auto got = Apply(parse, odd);
  auto want = Apply(parse, canonical);
  ASSERT_EQ(got.ok(), want.ok()) << (got.ok() ? want.status() : got.status());
  if (!got.ok()) {
    EXPECT_EQ(got.status().ToString(), want.status().ToString());
    return;
  }
  ASSERT_EQ(got->size(), want->size());
  for (size_t c = 0; c < got->size(); ++c) {
    EXPECT_TRUE((*got)[c].ContentEquals((*want)[c]))
        << c << ": " << (*got)[c].DebugString(20) << " vs " << (*want)[c].DebugString(20);
  }
}

AttrMap OddSpec() {
  return {{"keys", std::vector<std::string>{"a", "f", "s", "i"}},
          {"kinds", std::vector<std::string>{"var", "var", "var", "fixed"}},
          {"dtypes", std::vector<DType>{DType::kInt64, DType::kFloat32, DType::kString,
                                        DType::kInt64}},
          {"shapes", std::vector<PartialShape>{{}, {}, {}, PartialShape{2}}},
          {"defaults", std::vector<Tensor>{Tensor(), Tensor(), Tensor(),
                                           Tensor::FromVector<int64_t>({-1, -2})}}};
}

TEST(ExampleScannerTest, AgreesWithProtobufOnOddEncodings) {
  google::protobuf::SetLogHandler(nullptr);  // invalid UTF-8 keys are logged otherwise
  Function parse = Kernel("parse_example", OddSpec());
  OddExamples gen(42);
  int parsed = 0, rejected = 0, scanned = 0;
  for (int i = 0; i < 4000; ++i) {
    SCOPED_TRACE(i);
    const std::string a = gen.Example(), b = gen.Example();
    const auto ca = Canonical<tensorflow::Example>(a), cb = Canonical<tensorflow::Example>(b);
    scanned += ScansExampleDirectly(a);
    if (!ca) {
      ++rejected;
      auto r = Apply(parse, Tensor::Scalar(a));
      ASSERT_FALSE(r.ok());
      EXPECT_NE(r.status().message().find("could not parse a serialized tf.train.Example"),
                std::string::npos)
          << r.status();
      continue;
    }
    ++parsed;
    if (!ScansExampleDirectly(*ca) && ca->find('\xC3') == std::string::npos) {
      std::string hex;
      for (unsigned char c : *ca) hex += " " + std::to_string(c);
      ADD_FAILURE() << "canonical not scanned:" << hex;
    }
    ExpectSameParse(parse, Tensor::Scalar(a), Tensor::Scalar(*ca));
    if (cb) {
      ExpectSameParse(parse, Tensor::FromStrings({a, b}), Tensor::FromStrings({*ca, *cb}));
    }
  }
  // Each path was exercised.
  EXPECT_GT(parsed, 1000);
  EXPECT_GT(rejected, 100);
  EXPECT_GT(scanned, 1000);
  EXPECT_LT(scanned, parsed);
}

TEST(ExampleScannerTest, SequenceExamplesAgreeWithProtobuf) {
  google::protobuf::SetLogHandler(nullptr);
  Function parse = Kernel(
      "parse_sequence_example",
      {{"context_keys", std::vector<std::string>{"a", "s"}},
       {"context_kinds", std::vector<std::string>{"var", "var"}},
       {"context_dtypes", std::vector<DType>{DType::kInt64, DType::kString}},
       {"context_shapes", std::vector<PartialShape>{{}, {}}},
       {"sequence_keys", std::vector<std::string>{"i", "f"}},
       {"sequence_dtypes", std::vector<DType>{DType::kInt64, DType::kFloat32}},
       {"sequence_shapes", std::vector<PartialShape>{{}, {}}},
       {"sequence_allow_missing", std::vector<std::string>{"i", "f"}}});
  OddExamples gen(7);
  int parsed = 0, rejected = 0, steps = 0;
  for (int i = 0; i < 4000; ++i) {
    SCOPED_TRACE(i);
    const std::string a = gen.SequenceExample();
    const auto ca = Canonical<tensorflow::SequenceExample>(a);
    if (!ca) {
      ++rejected;
      auto r = Apply(parse, Tensor::Scalar(a));
      ASSERT_FALSE(r.ok());
      EXPECT_NE(r.status().message().find("could not parse"), std::string::npos)
          << r.status();
      continue;
    }
    ++parsed;
    ExpectSameParse(parse, Tensor::Scalar(a), Tensor::Scalar(*ca));
    // Feature lists with steps were read (parsed, or failed at a step).
    auto r = Apply(parse, Tensor::Scalar(a));
    steps += r.ok() ? (*r)[2].dim(0) + (*r)[3].dim(0) > 0
                    : r.status().message().find("(step ") != std::string::npos;
  }
  EXPECT_GT(parsed, 1000);
  EXPECT_GT(rejected, 100);
  EXPECT_GT(steps, 500);
}

TEST(ExampleScannerTest, WhatTheScannerLeavesToProtobuf) {
  // What protobuf writes is scanned directly.
  const std::string plain =
      MakeExample({{"a", Int64s({1, 300})}, {"f", Floats({1.5f})}, {"s", Bytes({"hi"})}});
  EXPECT_TRUE(ScansExampleDirectly(plain));
  EXPECT_TRUE(ScansExampleDirectly(""));
  EXPECT_TRUE(ScansExampleDirectly(MakeExample({{"s", Bytes({})}})));
  // Duplicate keys: protobuf keeps the last entry.
  const std::string twice = Len(1, Len(1, Len(1, "s") + Len(2, Len(1, Len(1, "x")))) +
                                       Len(1, Len(1, "s") + Len(2, Len(1, Len(1, "y")))));
  EXPECT_FALSE(ScansExampleDirectly(twice));
  Function parse = Kernel("parse_example", OddSpec());
  auto r = Apply(parse, Tensor::Scalar(twice));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE((*r)[2].ContentEquals(Tensor::FromStrings({"y"}))) << (*r)[2].DebugString();
  // Two features fields: protobuf merges them.
  const std::string merged = Len(1, Len(1, Len(1, "s") + Len(2, Len(1, Len(1, "x"))))) +
                             Len(1, Len(1, Len(1, "a") + Len(2, Len(3, Tag(1, 0) + Varint(5)))));
  EXPECT_FALSE(ScansExampleDirectly(merged));
  r = Apply(parse, Tensor::Scalar(merged));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE((*r)[0].ContentEquals(Tensor::FromVector<int64_t>({5})));
  EXPECT_TRUE((*r)[2].ContentEquals(Tensor::FromStrings({"x"})));
  // A key that is not valid UTF-8 makes the Example invalid (proto3).
  google::protobuf::SetLogHandler(nullptr);
  const std::string bad_key = Len(1, Len(1, Len(1, "\xFF") + Len(2, "")));
  EXPECT_FALSE(ScansExampleDirectly(bad_key));
  EXPECT_FALSE(Apply(parse, Tensor::Scalar(bad_key)).ok());
  // A 10-byte varint with bits past 64, and a packed float list of 3 bytes: protobuf's.
  EXPECT_FALSE(ScansExampleDirectly(
      Len(1, Len(1, Len(1, "a") + Len(2, Len(3, Tag(1, 0) + std::string(9, '\xFF') + "\x7F"))))));
  EXPECT_FALSE(ScansExampleDirectly(Len(1, Len(1, Len(1, "f") + Len(2, Len(2, Len(1, "abc")))))));
}

}  // namespace
}  // namespace sluice
