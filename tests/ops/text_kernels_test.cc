// Text kernels (split, byte_tokenize, vocab_lookup, tokenize, truncate, pad,
// sequence_length) and the text corpus generator. Expected values come from Python
// (bytes.split, a dict, FNV-1a; tests/reference/text_*.py), from published FNV-1a test
// vectors and from the tf.data bucket_by_sequence_length documentation example.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "datagen/text_corpus.h"
#include "formats/tfrecord.h"
#include "testing/conformance.h"
#include "testing/python_reference.h"

namespace sluice {
namespace {

using testing::CheckDataset;
using testing::CollectOrDie;
using testing::TempDir;
using testing::WriteFile;

Function K(std::string_view name, AttrMap attrs = {}) {
  auto f = Function::Kernel(name, std::move(attrs));
  EXPECT_TRUE(f.ok()) << f.status();
  return f.ok() ? *f : Function();
}

Result<Element> Apply(const Function& f, Element e) {
  FunctionContext ctx(0, 0);
  return f(std::move(e), ctx);
}

Element Str(std::string s) { return Element{Tensor::Scalar(std::move(s))}; }

std::vector<std::string> StringsOf(const Tensor& t) {
  EXPECT_EQ(t.dtype(), DType::kString);
  EXPECT_EQ(t.rank(), 1);
  auto s = t.flat<std::string>();
  return {s.begin(), s.end()};
}

template <typename T>
std::vector<T> ValuesOf(const Tensor& t) {
  EXPECT_EQ(t.dtype(), DTypeOf<T>::value);
  auto s = t.flat<T>();
  return {s.begin(), s.end()};
}

std::vector<std::string> Split(const std::string& s) {
  auto r = Apply(K("split"), Str(s));
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? StringsOf((*r)[0]) : std::vector<std::string>{};
}

bool Contains(const Status& s, std::string_view what) {
  return s.message().find(what) != std::string::npos;
}

// ---- split ----

TEST(SplitTest, PythonSplitSemantics) {
  using V = std::vector<std::string>;
  EXPECT_EQ(Split(""), V{});
  EXPECT_EQ(Split(" \t\n\r\v\f "), V{});
  EXPECT_EQ(Split("one"), V{"one"});
  EXPECT_EQ(Split("  lead and trail  "), (V{"lead", "and", "trail"}));
  EXPECT_EQ(Split("a\tb\nc\rd\ve\ff  g"), (V{"a", "b", "c", "d", "e", "f", "g"}));
  // Non-ASCII UTF-8 stays inside tokens; only ASCII whitespace separates.
  EXPECT_EQ(Split("caf\xc3\xa9 \xe2\x80\x94 na\xc3\xafve"),
            (V{"caf\xc3\xa9", "\xe2\x80\x94", "na\xc3\xafve"}));
  // The documented difference from str.split(): U+00A0 and \x1c are not separators here
  // ('nbsp\xa0in \x1cx'.split() == ['nbsp', 'in', 'x'] for a Python str).
  EXPECT_EQ(Split("nbsp\xc2\xa0in \x1cx"), (V{"nbsp\xc2\xa0in", "\x1cx"}));
  EXPECT_EQ(Split(std::string("\0a \0", 4)),
            (V{std::string("\0a", 2), std::string("\0", 1)}));
}

TEST(SplitTest, MatchesPythonBytesSplit) {
  std::vector<std::string> inputs = {"",
                                     " ",
                                     "x",
                                     "  hello   world  ",
                                     "\t\ttabs\tand\nnewlines\n",
                                     "\r\n crlf\r\n",
                                     "\v\fvt ff\v",
                                     "\xff\xfe invalid utf8 \x80",
                                     "\xc2\xa0 nbsp\xc2\xa0kept",
                                     "\x1c\x1d\x1e\x1f sep chars",
                                     std::string("nul\0 in", 7)};
  std::string big;
  for (int i = 0; i < 5000; ++i)
    big += std::string(i % 3 + 1, " \t\n"[i % 3]) + "w" + std::to_string(i);
  inputs.push_back(big);
  TempDir dir;
  std::string in;
  for (const std::string& s : inputs) {
    uint32_t n = static_cast<uint32_t>(s.size());
    in.append(reinterpret_cast<const char*>(&n), 4);
    in += s;
  }
  WriteFile(dir.File("in.bin"), in);
  ASSERT_TRUE(testing::RunReferenceScript("text_split.py",
                                          {dir.File("in.bin"), dir.File("out.bin")}));
  const std::string out = testing::ReadFile(dir.File("out.bin"));
  size_t pos = 0;
  auto u32 = [&]() {
    uint32_t v = 0;
    EXPECT_LE(pos + 4, out.size());
    if (pos + 4 <= out.size()) std::memcpy(&v, out.data() + pos, 4);
    pos += 4;
    return v;
  };
  for (const std::string& s : inputs) {
    std::vector<std::string> expected(u32());
    for (std::string& t : expected) {
      uint32_t n = u32();
      t = out.substr(pos, n);
      pos += n;
    }
    EXPECT_EQ(Split(s), expected) << "input of " << s.size() << " bytes";
  }
  EXPECT_EQ(pos, out.size());
}

TEST(SplitTest, ComponentNamesSpecAndErrors) {
  Element e({Tensor::Scalar<int64_t>(7), Tensor::Scalar(std::string("a b"))},
            MakeNames({"id", "text"}));
  auto r = Apply(K("split", {{"component", int64_t{1}}}), e);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0].scalar<int64_t>(), 7);
  EXPECT_EQ(StringsOf((*r)[1]), (std::vector<std::string>{"a", "b"}));
  ASSERT_TRUE(r->names());
  EXPECT_EQ((*r->names())[1], "text");

  ElementSpec in{{{DType::kInt64, PartialShape{}}, {DType::kString, PartialShape{}}}};
  auto spec = K("split", {{"component", int64_t{1}}}).OutputSpec(in);
  ASSERT_TRUE(spec && spec->ok());
  EXPECT_EQ((*spec)->ToString(), "(int64[], string[?])");
  auto bad_spec = K("split").OutputSpec(in);
  ASSERT_TRUE(bad_spec);
  EXPECT_FALSE(bad_spec->ok());

  auto wrong = Apply(K("split"), Element{Tensor::FromStrings({"a", "b"})});
  ASSERT_FALSE(wrong.ok());
  EXPECT_TRUE(Contains(wrong.status(), "split: component 0 must be a string scalar"))
      << wrong.status();
  auto missing = Apply(K("split", {{"component", int64_t{3}}}), Str("a"));
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(Contains(missing.status(), "component 3 does not exist"))
      << missing.status();
  EXPECT_FALSE(Function::Kernel("split", {{"component", int64_t{-1}}}).ok());
  EXPECT_FALSE(Function::Kernel("split", {{"component", std::string("0")}}).ok());
}

// ---- byte_tokenize ----

TEST(ByteTokenizeTest, BytesAsUnsignedPlusOffset) {
  auto r = Apply(K("byte_tokenize"), Str("h\xc3\xa9!\xff"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(ValuesOf<int32_t>((*r)[0]), (std::vector<int32_t>{104, 195, 169, 33, 255}));
  r = Apply(K("byte_tokenize", {{"offset", int64_t{3}}}), Str("ab"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(ValuesOf<int32_t>((*r)[0]), (std::vector<int32_t>{100, 101}));
  r = Apply(K("byte_tokenize"), Str(""));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].shape(), (Shape{0}));
  EXPECT_FALSE(Function::Kernel("byte_tokenize", {{"offset", int64_t{1} << 31}}).ok());
  EXPECT_FALSE(Apply(K("byte_tokenize"), Element{Tensor::Scalar<int64_t>(1)}).ok());
}

// ---- vocabularies ----

class VocabTest : public ::testing::Test {
 protected:
  std::string Vocab(const std::string& contents, const std::string& name = "vocab.txt") {
    WriteFile(dir_.File(name), contents);
    return dir_.File(name);
  }
  Result<Function> Lookup(const std::string& file, AttrMap extra = {}) {
    extra["vocab_file"] = file;
    return Function::Kernel("vocab_lookup", std::move(extra));
  }
  std::vector<int64_t> Ids(const Function& f, const std::vector<std::string>& tokens) {
    auto r = Apply(f, Element{Tensor::FromStrings(tokens)});
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? ValuesOf<int64_t>((*r)[0]) : std::vector<int64_t>{};
  }
  TempDir dir_;
};

TEST_F(VocabTest, IdsAreLineNumbersAndOovGetsTheDefault) {
  std::string f = Vocab("the\nof\ncaf\xc3\xa9\nhas space\n");
  auto lookup = Lookup(f);
  ASSERT_TRUE(lookup.ok()) << lookup.status();
  EXPECT_EQ(Ids(*lookup, {"of", "the", "caf\xc3\xa9", "cafe", "has space", "", "The"}),
            (std::vector<int64_t>{1, 0, 2, -1, 3, -1, -1}));
  EXPECT_EQ(Ids(*Lookup(f, {{"default_value", int64_t{99}}}), {"zzz", "of"}),
            (std::vector<int64_t>{99, 1}));
  // Any rank: the shape is kept.
  auto r =
      Apply(*lookup, Element{Tensor::FromStrings({"the", "x", "of", "of"}, Shape{2, 2})});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].shape(), (Shape{2, 2}));
  EXPECT_EQ(ValuesOf<int64_t>((*r)[0]), (std::vector<int64_t>{0, -1, 1, 1}));
  auto spec = lookup->OutputSpec(ElementSpec{{{DType::kString, PartialShape{-1}}}});
  ASSERT_TRUE(spec && spec->ok());
  EXPECT_EQ((*spec)->ToString(), "(int64[?])");
}

TEST_F(VocabTest, LineEndings) {
  // No final newline, CRLF, and a final newline all read the same three tokens.
  for (const std::string& contents :
       {std::string("a\nb\nc"), std::string("a\r\nb\r\nc\r\n"),
        std::string("a\nb\nc\n")}) {
    auto lookup = Lookup(Vocab(contents));
    ASSERT_TRUE(lookup.ok()) << lookup.status();
    EXPECT_EQ(Ids(*lookup, {"a", "b", "c", "c\r", ""}),
              (std::vector<int64_t>{0, 1, 2, -1, -1}));
    // With one bucket every OOV token lands on id 3 = vocab size: there are 3 tokens.
    EXPECT_EQ(Ids(*Lookup(Vocab(contents), {{"num_oov_buckets", int64_t{1}}}), {"zz"}),
              (std::vector<int64_t>{3}));
  }
}

TEST_F(VocabTest, OovBucketsUseFnv1a64) {
  auto lookup = Lookup(Vocab("x\ny\n"), {{"num_oov_buckets", int64_t{1000}}});
  ASSERT_TRUE(lookup.ok());
  // Published FNV-1a 64 vectors: "" -> 0xcbf29ce484222325, "a" -> 0xaf63dc4c8601ec8c,
  // "foobar" -> 0x85944171f73967e8.
  EXPECT_EQ(
      Ids(*lookup, {"", "a", "foobar", "y"}),
      (std::vector<int64_t>{2 + static_cast<int64_t>(0xcbf29ce484222325ULL % 1000),
                            2 + static_cast<int64_t>(0xaf63dc4c8601ec8cULL % 1000),
                            2 + static_cast<int64_t>(0x85944171f73967e8ULL % 1000), 1}));
  // Stable: a second kernel over a second copy of the file agrees, and 2000 distinct OOV
  // tokens in 10 buckets use every bucket and no other id.
  auto again = Lookup(Vocab("x\ny\n", "copy.txt"), {{"num_oov_buckets", int64_t{10}}});
  auto first = Lookup(Vocab("x\ny\n", "first.txt"), {{"num_oov_buckets", int64_t{10}}});
  ASSERT_TRUE(again.ok() && first.ok());
  std::vector<std::string> toks;
  for (int i = 0; i < 2000; ++i) toks.push_back("oov" + std::to_string(i));
  std::vector<int64_t> a = Ids(*first, toks), b = Ids(*again, toks);
  EXPECT_EQ(a, b);
  std::map<int64_t, int> counts;
  for (int64_t id : a) ++counts[id];
  ASSERT_EQ(counts.size(), 10u);
  EXPECT_EQ(counts.begin()->first, 2);
  EXPECT_EQ(counts.rbegin()->first, 11);
  for (auto [id, n] : counts) EXPECT_GT(n, 100) << "bucket " << id;
}

TEST_F(VocabTest, BadFilesAreClearErrors) {
  auto missing = Lookup(dir_.File("nope.txt"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(Contains(missing.status(), "vocab_lookup")) << missing.status();
  EXPECT_TRUE(Contains(missing.status(), "nope.txt")) << missing.status();

  auto dup = Lookup(Vocab("a\nb\nc\nb\n"));
  ASSERT_FALSE(dup.ok());
  EXPECT_TRUE(Contains(dup.status(), "line 4 (id 3): duplicate token (first on line 2)"))
      << dup.status();
  EXPECT_TRUE(Contains(dup.status(), "vocab.txt")) << dup.status();

  auto empty_line = Lookup(Vocab("a\n\nb\n"));
  ASSERT_FALSE(empty_line.ok());
  EXPECT_TRUE(Contains(empty_line.status(), "line 2 (id 1): empty line"))
      << empty_line.status();
  EXPECT_FALSE(Lookup(Vocab("a\nb\n\n")).ok());  // a blank last line is an empty line too
  EXPECT_FALSE(Lookup(Vocab("a\n\r\nb")).ok());  // CRLF blank line

  auto empty = Lookup(Vocab(""));
  ASSERT_FALSE(empty.ok());
  EXPECT_TRUE(Contains(empty.status(), "holds no tokens")) << empty.status();

  // A directory, and a (sparse) file over the size limit, are refused without reading it.
  std::filesystem::create_directory(dir_.File("adir"));
  EXPECT_FALSE(Lookup(dir_.File("adir")).ok());
  std::string huge = Vocab("a\n", "huge.txt");
  std::filesystem::resize_file(huge, (int64_t{256} << 20) + 1);
  auto too_big = Lookup(huge);
  ASSERT_FALSE(too_big.ok());
  EXPECT_TRUE(Contains(too_big.status(), "over the limit")) << too_big.status();

  // Bad attributes.
  EXPECT_FALSE(Function::Kernel("vocab_lookup", {}).ok());
  EXPECT_FALSE(Lookup(Vocab("a\n"), {{"num_oov_buckets", int64_t{-1}}}).ok());
  auto tok = Function::Kernel("tokenize", {{"vocab_file", dir_.File("nope.txt")}});
  ASSERT_FALSE(tok.ok());
  EXPECT_TRUE(Contains(tok.status(), "tokenize")) << tok.status();
}

// ---- tokenize ----

TEST_F(VocabTest, TokenizeAndLowercase) {
  std::string f = Vocab("hello\nworld\n\xc3\x89t\xc3\xa9\n");
  Function plain = K("tokenize", {{"vocab_file", f}});
  Function lower = K("tokenize", {{"vocab_file", f}, {"lowercase", true}});
  auto ids = [](const Function& fn, const std::string& s) {
    auto r = Apply(fn, Str(s));
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? ValuesOf<int64_t>((*r)[0]) : std::vector<int64_t>{};
  };
  EXPECT_EQ(ids(plain, "  hello\tWorld world\n"), (std::vector<int64_t>{0, -1, 1}));
  EXPECT_EQ(ids(lower, "  HELLO\tWorld world\n"), (std::vector<int64_t>{0, 1, 1}));
  // Only ASCII letters are lowered: "ÉTÉ" lowers to "\xc3\x89t\xc3\x89", not "été".
  EXPECT_EQ(ids(lower, "\xc3\x89T\xc3\xa9 \xc3\x89t\xc3\xa9"),
            (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(ids(plain, ""), (std::vector<int64_t>{}));
  auto spec = plain.OutputSpec(ElementSpec{{{DType::kString, PartialShape{}}}});
  ASSERT_TRUE(spec && spec->ok());
  EXPECT_EQ((*spec)->ToString(), "(int64[?])");
  EXPECT_FALSE(Apply(plain, Element{Tensor::FromStrings({"a"})}).ok());
}

// ---- truncate, pad, sequence_length ----

TEST(TruncateTest, KeepsLeadingRows) {
  Tensor m = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6, 7, 8}, Shape{4, 2});
  auto r = Apply(K("truncate", {{"max_length", int64_t{3}}}),
                 Element{m, Tensor::Scalar<int64_t>(5)});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0].shape(), (Shape{3, 2}));
  EXPECT_EQ(ValuesOf<float>((*r)[0]), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ((*r)[1].scalar<int64_t>(), 5);
  r = Apply(K("truncate", {{"max_length", int64_t{10}}}), Element{m});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].shape(), (Shape{4, 2}));
  r = Apply(K("truncate", {{"max_length", int64_t{0}}}),
            Element{Tensor::FromStrings({"a", "b"})});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].shape(), (Shape{0}));
  r = Apply(K("truncate", {{"max_length", int64_t{1}}, {"component", int64_t{1}}}),
            Element{Tensor::Scalar<int64_t>(1), Tensor::FromStrings({"a", "b"})});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(StringsOf((*r)[1]), (std::vector<std::string>{"a"}));

  auto scalar = Apply(K("truncate", {{"max_length", int64_t{1}}}), Str("a"));
  ASSERT_FALSE(scalar.ok());
  EXPECT_TRUE(Contains(scalar.status(), "rank >= 1")) << scalar.status();
  EXPECT_FALSE(Function::Kernel("truncate", {}).ok());
  EXPECT_FALSE(Function::Kernel("truncate", {{"max_length", int64_t{-1}}}).ok());

  Function t3 = K("truncate", {{"max_length", int64_t{3}}});
  auto spec = t3.OutputSpec(ElementSpec{{{DType::kInt64, PartialShape{-1, 2}}}});
  ASSERT_TRUE(spec && spec->ok());
  EXPECT_EQ((*spec)->ToString(), "(int64[?, 2])");
  spec = t3.OutputSpec(ElementSpec{{{DType::kInt64, PartialShape{8}}}});
  EXPECT_EQ((*spec)->ToString(), "(int64[3])");
  spec = t3.OutputSpec(ElementSpec{{{DType::kInt64, PartialShape{2}}}});
  EXPECT_EQ((*spec)->ToString(), "(int64[2])");
  spec = t3.OutputSpec(ElementSpec{{{DType::kInt64, PartialShape{}}}});
  EXPECT_FALSE(spec->ok());
}

TEST(PadTest, PadsTruncatesAndChecksTheValue) {
  auto pad = [](AttrMap attrs, Tensor t) {
    return Apply(K("pad", std::move(attrs)), Element{t});
  };
  auto r = pad({{"length", int64_t{4}}, {"value", int64_t{9}}},
               Tensor::FromVector<int64_t>({1, 2}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(ValuesOf<int64_t>((*r)[0]), (std::vector<int64_t>{1, 2, 9, 9}));
  r = pad({{"length", int64_t{3}}}, Tensor::FromVector<int32_t>({-5}));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(ValuesOf<int32_t>((*r)[0]), (std::vector<int32_t>{-5, 0, 0}));
  r = pad({{"length", int64_t{3}}, {"value", int64_t{-2}}},
          Tensor::FromVector<int8_t>({}));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(ValuesOf<int8_t>((*r)[0]), (std::vector<int8_t>{-2, -2, -2}));
  r = pad({{"length", int64_t{3}}}, Tensor::FromStrings({"a"}));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(StringsOf((*r)[0]), (std::vector<std::string>{"a", "", ""}));
  r = pad({{"length", int64_t{2}}, {"value", std::string("<pad>")}},
          Tensor::FromStrings({"a"}));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(StringsOf((*r)[0]), (std::vector<std::string>{"a", "<pad>"}));
  r = pad({{"length", int64_t{3}}, {"value", 0.5}},
          Tensor::FromVector<float>({1, 2, 3, 4}, Shape{1, 4}));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].shape(), (Shape{3, 4}));
  EXPECT_EQ(ValuesOf<float>((*r)[0]),
            (std::vector<float>{1, 2, 3, 4, .5, .5, .5, .5, .5, .5, .5, .5}));
  r = pad({{"length", int64_t{2}}, {"value", Tensor::Scalar<int64_t>(7)}},
          Tensor::FromVector<double>({1}));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(ValuesOf<double>((*r)[0]), (std::vector<double>{1, 7}));
  // Equal length: unchanged. Longer: an error, or cut with truncate=true.
  r = pad({{"length", int64_t{2}}}, Tensor::FromVector<int64_t>({1, 2}));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(ValuesOf<int64_t>((*r)[0]), (std::vector<int64_t>{1, 2}));
  r = pad({{"length", int64_t{2}}}, Tensor::FromVector<int64_t>({1, 2, 3}));
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Contains(r.status(), "3 rows, more than length 2")) << r.status();
  r = pad({{"length", int64_t{2}}, {"truncate", true}},
          Tensor::FromVector<int64_t>({1, 2, 3}));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(ValuesOf<int64_t>((*r)[0]), (std::vector<int64_t>{1, 2}));
  // Values the dtype cannot hold.
  EXPECT_FALSE(pad({{"length", int64_t{2}}, {"value", int64_t{300}}},
                   Tensor::FromVector<uint8_t>({1}))
                   .ok());
  EXPECT_FALSE(pad({{"length", int64_t{2}}, {"value", int64_t{-1}}},
                   Tensor::FromVector<uint8_t>({1}))
                   .ok());
  EXPECT_FALSE(pad({{"length", int64_t{2}}, {"value", std::string("x")}},
                   Tensor::FromVector<int64_t>({1}))
                   .ok());
  EXPECT_FALSE(
      pad({{"length", int64_t{2}}, {"value", int64_t{1}}}, Tensor::FromStrings({"a"}))
          .ok());
  EXPECT_FALSE(
      pad({{"length", int64_t{2}}, {"value", 0.5}}, Tensor::FromVector<int64_t>({1}))
          .ok());
  EXPECT_FALSE(pad({{"length", int64_t{2}}}, Tensor::Scalar<int64_t>(1)).ok());
  EXPECT_FALSE(Function::Kernel(
                   "pad", {{"length", int64_t{2}}, {"value", std::vector<int64_t>{1}}})
                   .ok());
  // Spec: dimension 0 becomes length; a value the dtype cannot hold fails at build time.
  Function p5 = K("pad", {{"length", int64_t{5}}});
  auto spec = p5.OutputSpec(ElementSpec{{{DType::kInt64, PartialShape{-1, 3}}}});
  ASSERT_TRUE(spec && spec->ok());
  EXPECT_EQ((*spec)->ToString(), "(int64[5, 3])");
  EXPECT_FALSE(p5.OutputSpec(ElementSpec{{{DType::kInt64, PartialShape{6}}}})->ok());
  EXPECT_FALSE(K("pad", {{"length", int64_t{5}}, {"value", std::string("x")}})
                   .OutputSpec(ElementSpec{{{DType::kInt64, PartialShape{-1}}}})
                   ->ok());
  EXPECT_FALSE(Dataset::FromTensors(Element{Tensor::FromVector<int64_t>({1})})
                   .Map(K("pad", {{"length", int64_t{5}}, {"value", std::string("x")}}))
                   .ok());
}

TEST(SequenceLengthTest, DimZeroAsInt64) {
  auto r = Apply(
      K("sequence_length", {{"component", int64_t{1}}}),
      Element{Tensor::Scalar<int64_t>(1), Tensor::Zeros(DType::kFloat32, Shape{7, 3})});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].dtype(), DType::kInt64);
  EXPECT_EQ((*r)[0].rank(), 0);
  EXPECT_EQ((*r)[0].scalar<int64_t>(), 7);
  r = Apply(K("sequence_length"), Element{Tensor::FromStrings({})});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].scalar<int64_t>(), 0);
  EXPECT_FALSE(Apply(K("sequence_length"), Element{Tensor::Scalar<int64_t>(1)}).ok());
  auto spec =
      K("sequence_length").OutputSpec(ElementSpec{{{DType::kString, PartialShape{-1}}}});
  ASSERT_TRUE(spec && spec->ok());
  EXPECT_EQ((*spec)->ToString(), "(int64[])");
}

// The tf.data bucket_by_sequence_length example, with sentences tokenized into the
// example's sequences: token "tN" has id N. Expected batches are tf.data's documented
// output.
TEST_F(VocabTest, BucketBySequenceLengthOverTokenizedSentences) {
  std::string vocab;
  for (int i = 0; i <= 22; ++i) vocab += "t" + std::to_string(i) + "\n";
  std::string f = Vocab(vocab);
  Dataset sentences = Dataset::FromTensorSlices(Element{
      Tensor::FromStrings({"t0", "t1 t2 t3 t4", " t5  t6\tt7 ", "t7 t8 t9 t10 t11",
                           "t13 t14 t15 t16 t19 t20", "t21\nt22"})});
  Dataset ds = sentences.Map(K("tokenize", {{"vocab_file", f}}))
                   .BucketBySequenceLength(K("sequence_length"), {3, 5}, {2, 2, 2});
  ASSERT_TRUE(ds.ok()) << ds.status();
  EXPECT_EQ(ds.element_spec().ToString(), "(int64[?, ?])");
  auto m = [](std::vector<int64_t> v, Shape s) {
    return Element{Tensor::FromVector<int64_t>(v, s)};
  };
  CheckDataset(ds, {m({1, 2, 3, 4, 5, 6, 7, 0}, Shape{2, 4}),
                    m({7, 8, 9, 10, 11, 0, 13, 14, 15, 16, 19, 20}, Shape{2, 6}),
                    m({0, 0, 21, 22}, Shape{2, 2})});
  // The same through split + vocab_lookup, and with truncate/pad in the map chain.
  Dataset two_step =
      sentences.Map(K("split")).Map(K("vocab_lookup", {{"vocab_file", f}}));
  Dataset fused = sentences.Map(K("tokenize", {{"vocab_file", f}}));
  auto a = CollectOrDie(two_step), b = CollectOrDie(fused);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(a[i].ContentEquals(b[i])) << i;
  Dataset fixed = fused.Map(K("truncate", {{"max_length", int64_t{3}}}))
                      .Map(K("pad", {{"length", int64_t{3}}, {"value", int64_t{-1}}}))
                      .Batch(6);
  EXPECT_EQ(fixed.element_spec().ToString(), "(int64[?, 3])");
  CheckDataset(fixed, {m({0, -1, -1, 1, 2, 3, 5, 6, 7, 7, 8, 9, 13, 14, 15, 21, 22, -1},
                         Shape{6, 3})});
}

// ---- the corpus generator ----

// FNV-1a over every file of a corpus, in name order.
uint64_t HashCorpus(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  uint64_t h = 0xcbf29ce484222325ULL;
  for (const std::string& n : names) {
    for (unsigned char c : n + "\n" + testing::ReadFile(dir + "/" + n)) {
      h = (h ^ c) * 0x100000001b3ULL;
    }
  }
  return h;
}

std::vector<std::string> Shards(const std::string& dir, int64_t n) {
  std::vector<std::string> files;
  for (int64_t i = 0; i < n; ++i) files.push_back(TextShardPath(dir, i, n));
  return files;
}

TEST(TextCorpusTest, DeterministicLayoutAndReadable) {
  TempDir dir;
  TextCorpusOptions opts;
  opts.num_sentences = 1003;
  opts.num_shards = 4;
  opts.vocab_size = 3000;
  opts.seed = 11;
  ASSERT_TRUE(GenerateTextCorpus(dir.File("a"), opts).ok());
  ASSERT_TRUE(GenerateTextCorpus(dir.File("b"), opts).ok());
  EXPECT_EQ(HashCorpus(dir.File("a")), HashCorpus(dir.File("b")));
  TextCorpusOptions other = opts;
  other.seed = 12;
  ASSERT_TRUE(GenerateTextCorpus(dir.File("c"), other).ok());
  EXPECT_NE(HashCorpus(dir.File("a")), HashCorpus(dir.File("c")));

  // Files: vocab.txt and text-0000k-of-00004, holding 250, 251, 251, 251 records.
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir.File("a"))) {
    names.push_back(e.path().filename());
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"text-00000-of-00004", "text-00001-of-00004",
                                             "text-00002-of-00004", "text-00003-of-00004",
                                             "vocab.txt"}));
  std::vector<int64_t> counts;
  for (const std::string& f : Shards(dir.File("a"), 4)) {
    counts.push_back(
        Dataset::TFRecord({f})
            .Reduce(Element{Tensor::Scalar<int64_t>(0)},
                    Function::Map("count",
                                  [](Element e, FunctionContext&) -> Result<Element> {
                                    return Element{Tensor::Scalar<int64_t>(
                                        e[0].scalar<int64_t>() + 1)};
                                  }))
            ->
            operator[](0)
            .scalar<int64_t>());
  }
  EXPECT_EQ(counts, (std::vector<int64_t>{250, 251, 251, 251}));

  // The same sentences, in the same order, whatever the shard count.
  TextCorpusOptions one = opts;
  one.num_shards = 1;
  ASSERT_TRUE(GenerateTextCorpus(dir.File("d"), one).ok());
  auto four = CollectOrDie(Dataset::TFRecord(Shards(dir.File("a"), 4)));
  auto single = CollectOrDie(Dataset::TFRecord(Shards(dir.File("d"), 1)));
  ASSERT_EQ(four.size(), 1003u);
  ASSERT_EQ(single.size(), 1003u);
  for (size_t i = 0; i < four.size(); ++i)
    ASSERT_TRUE(four[i].ContentEquals(single[i])) << i;
  EXPECT_EQ(testing::ReadFile(dir.File("a/vocab.txt")),
            testing::ReadFile(dir.File("d/vocab.txt")));
}

TEST(TextCorpusTest, RealisticTextAndVocabulary) {
  TempDir dir;
  TextCorpusOptions opts;
  opts.num_sentences = 4000;
  opts.num_shards = 3;
  opts.vocab_size = 5000;
  opts.seed = 3;
  ASSERT_TRUE(GenerateTextCorpus(dir.path(), opts).ok());
  const std::string vocab = dir.File("vocab.txt");
  const std::string text = testing::ReadFile(vocab);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 5000);
  EXPECT_EQ(text.substr(0, 16), "<pad>\n<unk>\n.\n,\n");
  EXPECT_NE(text.find('\xc3'), std::string::npos);  // some words carry UTF-8 letters

  // Tokenize with OOV = -1 (the vocabulary loads: no duplicates or empty lines).
  Dataset ids = Dataset::TFRecord(Shards(dir.path(), 3))
                    .Map(K("tokenize", {{"vocab_file", vocab}}));
  std::vector<int64_t> freq(5000, 0);
  int64_t tokens = 0, oov = 0, words = 0, min_len = 1 << 30, max_len = 0;
  for (const Element& e : CollectOrDie(ids)) {
    const int64_t n = e[0].dim(0);
    min_len = std::min(min_len, n);
    max_len = std::max(max_len, n);
    tokens += n;
    for (int64_t id : ValuesOf<int64_t>(e[0])) {
      if (id == -1) ++oov;
      if (id == -1 || id >= 4) ++words;
      if (id >= 0) ++freq[id];
    }
  }
  const double mean = static_cast<double>(tokens) / 4000;
  EXPECT_GT(mean, 17);
  EXPECT_LT(mean, 26);
  EXPECT_GE(min_len, 1);
  EXPECT_LE(max_len, 200);
  EXPECT_GT(max_len, 60);  // the lognormal tail
  const double oov_rate = static_cast<double>(oov) / words;
  EXPECT_GT(oov_rate, 0.012);
  EXPECT_LT(oov_rate, 0.03);
  EXPECT_EQ(freq[0], 0);  // <pad> and <unk> never appear in text
  EXPECT_EQ(freq[1], 0);
  EXPECT_GT(freq[2], 3900);  // nearly every sentence ends with "."
  // Zipf-like: the top word is far more frequent than word 100, which beats word 3000.
  EXPECT_GT(freq[4], 5 * freq[104]);
  EXPECT_GT(freq[104] + freq[105] + freq[106], freq[3004] + freq[3005] + freq[3006]);

  TextCorpusOptions bad = opts;
  bad.vocab_size = 4;
  EXPECT_FALSE(GenerateTextCorpus(dir.File("x"), bad).ok());
  bad = opts;
  bad.num_shards = 0;
  EXPECT_FALSE(GenerateTextCorpus(dir.File("x"), bad).ok());
  bad = opts;
  bad.oov_fraction = 1.5;
  EXPECT_FALSE(GenerateTextCorpus(dir.File("x"), bad).ok());
}

// tokenize on a generated corpus equals split + vocab_lookup, and both equal Python's
// bytes.split + dict lookup + FNV-1a buckets (tests/reference/text_tokenize.py).
TEST(TextCorpusTest, TokenizeMatchesSplitLookupAndPython) {
  TempDir dir;
  TextCorpusOptions opts;
  opts.num_sentences = 1500;
  opts.num_shards = 2;
  opts.vocab_size = 2000;
  opts.seed = 5;
  opts.oov_fraction = 0.05;
  ASSERT_TRUE(GenerateTextCorpus(dir.path(), opts).ok());
  const std::string vocab = dir.File("vocab.txt");
  Dataset text = Dataset::TFRecord(Shards(dir.path(), 2));
  for (int64_t buckets : {int64_t{0}, int64_t{7}}) {
    AttrMap attrs = {{"vocab_file", vocab},
                     {"num_oov_buckets", buckets},
                     {"default_value", int64_t{1}}};
    auto fused = CollectOrDie(text.Map(K("tokenize", attrs)));
    auto two_step = CollectOrDie(text.Map(K("split")).Map(K("vocab_lookup", attrs)));
    ASSERT_EQ(fused.size(), 1500u);
    ASSERT_EQ(two_step.size(), 1500u);
    for (size_t i = 0; i < fused.size(); ++i) {
      ASSERT_TRUE(fused[i].ContentEquals(two_step[i])) << "sentence " << i;
    }
    ASSERT_TRUE(testing::RunReferenceScript("text_tokenize.py",
                                            {dir.path(), std::to_string(buckets), "1",
                                             dir.File("ids.npy"), dir.File("lens.npy")}));
    Tensor ids = testing::ReadNpy(dir.File("ids.npy"));
    Tensor lens = testing::ReadNpy(dir.File("lens.npy"));
    ASSERT_EQ(lens.num_elements(), 1500);
    std::vector<int64_t> mine, my_lens;
    for (const Element& e : fused) {
      my_lens.push_back(e[0].dim(0));
      for (int64_t id : ValuesOf<int64_t>(e[0])) mine.push_back(id);
    }
    EXPECT_EQ(my_lens, ValuesOf<int64_t>(lens));
    EXPECT_EQ(mine, ValuesOf<int64_t>(ids));
    // OOV tokens did occur and went where they should.
    int64_t oov = 0;
    for (int64_t id : mine) oov += buckets == 0 ? id == 1 : id >= 2000;
    EXPECT_GT(oov, 500);
  }
}

}  // namespace
}  // namespace sluice
