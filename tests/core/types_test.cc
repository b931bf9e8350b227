// Core types: Status/Result, Tensor, Element, RNG, coding, checkpoints.
#include <gtest/gtest.h>

#include "core/coding.h"
#include "core/crc32c.h"
#include "runtime/checkpoint.h"
#include "sluice/dataset.h"

namespace sluice {
namespace {

Result<int> Half(int x) {
  if (x % 2) return InvalidArgumentError("odd");
  return x / 2;
}
Result<int> Quarter(int x) {
  SLUICE_ASSIGN_OR_RETURN(int h, Half(x));
  SLUICE_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

TEST(StatusTest, PropagatesAndCarriesContext) {
  EXPECT_TRUE(Status::OK().ok());
  EXPECT_EQ(*Quarter(8), 2);
  Result<int> r = Quarter(6);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  Status s = DataLossError("bad crc").WithContext("file a.tfrecord");
  EXPECT_EQ(s.ToString(), "DataLoss: file a.tfrecord: bad crc");
  Status copy = s;
  EXPECT_EQ(copy, s);
}

// Result holds its value in a union beside the Status: every way of making, copying,
// moving and assigning one constructs and destroys the value exactly once each, a
// moved-from error is still an error, and reading an error's value throws.
struct Counted {
  static inline int live = 0;
  int v;
  explicit Counted(int x) : v(x) { ++live; }
  Counted(const Counted& o) : v(o.v) { ++live; }
  Counted(Counted&& o) noexcept : v(o.v) { ++live; o.v = -1; }
  Counted& operator=(const Counted&) = default;
  Counted& operator=(Counted&& o) noexcept {
    v = o.v;
    o.v = -1;
    return *this;
  }
  ~Counted() { --live; }
};

TEST(StatusTest, ResultValueLifetimes) {
  {
    Result<Counted> a = Counted(1);
    Result<Counted> e = InvalidArgumentError("e");
    EXPECT_EQ(Counted::live, 1);
    Result<Counted> b = a;  // copy of a value
    Result<Counted> c = std::move(a);  // move of a value: a keeps a moved-from value
    EXPECT_TRUE(a.ok());
    EXPECT_EQ(a->v, -1);
    EXPECT_EQ(c->v, 1);
    EXPECT_EQ(Counted::live, 3);
    Result<Counted> d = std::move(e);  // move of an error: both are errors
    EXPECT_FALSE(e.ok());
    EXPECT_FALSE(d.ok());
    EXPECT_EQ(e.status().message(), "e");
    EXPECT_EQ(d.status().message(), "e");
    b = d;  // value <- error: the value is destroyed
    EXPECT_FALSE(b.ok());
    EXPECT_EQ(Counted::live, 2);
    d = c;  // error <- value: one made
    EXPECT_EQ(d->v, 1);
    EXPECT_EQ(Counted::live, 3);
    d = std::move(b);  // value <- error (move)
    EXPECT_FALSE(d.ok());
    EXPECT_FALSE(b.ok());
    EXPECT_EQ(Counted::live, 2);
    b = std::move(c);  // error <- value (move)
    EXPECT_EQ(b->v, 1);
    EXPECT_EQ(Counted::live, 3);
    a = std::move(b);  // value <- value
    EXPECT_EQ(a->v, 1);
    EXPECT_EQ(b->v, -1);
    EXPECT_EQ(Counted::live, 3);
    a = a;  // self-assignment keeps the value
    EXPECT_EQ(a->v, 1);
    EXPECT_EQ(Counted::live, 3);
    EXPECT_THROW((void)d.value(), std::logic_error);
    EXPECT_EQ(std::move(a).ValueOr(Counted(7)).v, 1);
    EXPECT_EQ(d.ValueOr(Counted(7)).v, 7);
  }
  EXPECT_EQ(Counted::live, 0) << "a Result leaked or destroyed a value twice";
  // The value of an error read inside a user function is that function's error.
  Dataset ds = Dataset::Range(3).Map(
      Function::Map("reads_an_error", [](Element e, FunctionContext&) -> Result<Element> {
        Result<int> r = NotFoundError("no such thing");
        return Element({Tensor::Scalar<int64_t>(*r)});
      }));
  auto it = ds.MakeIterator();
  ASSERT_TRUE(it.ok());
  auto e = (*it)->GetNext();
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("no such thing"), std::string::npos)
      << e.status().ToString();
}

TEST(TensorTest, AlignedRefcountedZeroCopySlices) {
  Tensor t(DType::kFloat32, Shape{4, 3});
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % 64, 0u);
  for (int i = 0; i < 12; ++i) t.mutable_data<float>()[i] = static_cast<float>(i);
  Tensor rows = t.Slice(1, 3);
  EXPECT_EQ(rows.shape(), (Shape{2, 3}));
  EXPECT_EQ(rows.data<float>()[0], 3.0f);
  EXPECT_EQ(rows.buffer().get(), t.buffer().get());  // shared, not copied
  EXPECT_EQ(t.buffer()->use_count(), 2);
  Tensor row = t.SubTensor(3);
  EXPECT_EQ(row.shape(), (Shape{3}));
  EXPECT_EQ(row.data<float>()[2], 11.0f);
  Tensor c = t.Clone();
  EXPECT_NE(c.buffer().get(), t.buffer().get());
  EXPECT_TRUE(c.ContentEquals(t));
  c.mutable_data<float>()[0] = 42;
  EXPECT_FALSE(c.ContentEquals(t));
}

TEST(TensorTest, SmallTensorsHoldTheirDataInline) {
  // At most kInlineBytes of non-string data: no buffer, the bytes inside the object.
  Tensor s = Tensor::Scalar<int64_t>(7);
  EXPECT_TRUE(s.is_inline());
  EXPECT_EQ(s.buffer().get(), nullptr);
  EXPECT_EQ(s.byte_offset(), 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(s.raw_data()) % alignof(int64_t), 0u);
  EXPECT_EQ(s.scalar<int64_t>(), 7);
  EXPECT_TRUE(Tensor(DType::kFloat32, Shape{2}).is_inline());
  EXPECT_TRUE(Tensor(DType::kUInt8, Shape{0, 5}).is_inline());
  EXPECT_FALSE(Tensor(DType::kFloat32, Shape{3}).is_inline());  // 12 bytes
  EXPECT_FALSE(Tensor::Scalar<std::string>("ab").is_inline());  // strings: never
  EXPECT_FALSE(Tensor().is_inline());
  Tensor z = Tensor::Zeros(DType::kInt32, Shape{2});
  EXPECT_TRUE(z.is_inline());
  EXPECT_EQ(z.flat<int32_t>()[0], 0);
  EXPECT_EQ(z.flat<int32_t>()[1], 0);

  // A copy is a copy of the bytes: writing one leaves the other as it was.
  Tensor c = s;
  EXPECT_NE(c.raw_data(), s.raw_data());
  *c.mutable_data<int64_t>() = 8;
  EXPECT_EQ(s.scalar<int64_t>(), 7);
  EXPECT_EQ(c.scalar<int64_t>(), 8);
  // The data moves with the object.
  Tensor m = std::move(c);
  EXPECT_EQ(m.scalar<int64_t>(), 8);

  // Slicing, row access and reshaping keep values (copies of the inline bytes).
  Tensor v = Tensor::FromVector<int16_t>({1, 2, 3, 4});
  ASSERT_TRUE(v.is_inline());
  Tensor mid = v.Slice(1, 3);
  EXPECT_TRUE(mid.is_inline());
  EXPECT_EQ(mid.shape(), Shape({2}));
  EXPECT_EQ(mid.flat<int16_t>()[0], 2);
  EXPECT_EQ(mid.flat<int16_t>()[1], 3);
  EXPECT_EQ(v.SubTensor(3).scalar<int16_t>(), 4);
  auto sq = v.Reshape(Shape{2, 2});
  ASSERT_TRUE(sq.ok());
  EXPECT_EQ(sq->SubTensor(1).flat<int16_t>()[0], 3);
  EXPECT_TRUE(sq->ContentEquals(Tensor::FromVector<int16_t>({1, 2, 3, 4}, Shape{2, 2})));
  EXPECT_TRUE(v.Clone().ContentEquals(v));
  auto stacked = Stack(std::vector<Tensor>{s, Tensor::Scalar<int64_t>(9)});
  ASSERT_TRUE(stacked.ok());
  EXPECT_FALSE(stacked->is_inline());  // 16 bytes
  EXPECT_EQ(stacked->flat<int64_t>()[1], 9);

  // SharedBuffer: a buffered copy for memory that must outlive the object.
  Tensor shared = s.SharedBuffer();
  EXPECT_FALSE(shared.is_inline());
  ASSERT_NE(shared.buffer().get(), nullptr);
  EXPECT_EQ(shared.scalar<int64_t>(), 7);
  EXPECT_TRUE(shared.ContentEquals(s));
  Tensor big(DType::kFloat32, Shape{4});
  EXPECT_EQ(big.SharedBuffer().buffer().get(), big.buffer().get());
}

TEST(TensorTest, RowsOfABufferedTensorUpToKInlineBytesAreCopiedOut) {
  Tensor t(DType::kInt64, Shape{4});
  for (int i = 0; i < 4; ++i) t.mutable_data<int64_t>()[i] = 10 + i;
  Tensor row = t.SubTensor(2);
  EXPECT_TRUE(row.is_inline());
  EXPECT_EQ(row.scalar<int64_t>(), 12);
  EXPECT_EQ(t.buffer()->use_count(), 1);  // the row holds no reference
  Tensor pairs(DType::kInt64, Shape{2, 2});
  EXPECT_EQ(pairs.SubTensor(1).buffer().get(), pairs.buffer().get());  // 16 bytes: a view
}

TEST(TensorTest, AllDTypes) {
  for (DType d : {DType::kBool, DType::kUInt8, DType::kInt8, DType::kInt16, DType::kInt32,
                  DType::kInt64, DType::kFloat16, DType::kBFloat16, DType::kFloat32,
                  DType::kFloat64, DType::kString}) {
    Tensor t = Tensor::Zeros(d, Shape{2, 2});
    EXPECT_EQ(t.dtype(), d);
    EXPECT_EQ(t.num_elements(), 4);
    auto back = DTypeFromName(DTypeName(d));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, d);
  }
  EXPECT_FALSE(DTypeFromName("complex64").ok());
}

TEST(TensorTest, HalfAndBFloat16RoundTrip) {
  for (float f : {0.0f, 1.0f, -2.5f, 65504.0f, 6.1035156e-05f, 5.9604645e-08f, 0.333251953125f}) {
    EXPECT_EQ(Half::FromFloat(f).ToFloat(), f) << f;
  }
  EXPECT_EQ(Half::FromFloat(1e6f).ToFloat(), std::numeric_limits<float>::infinity());
  EXPECT_EQ(Half::FromFloat(1.0f).bits, 0x3c00);
  EXPECT_EQ(BFloat16::FromFloat(1.0f).bits, 0x3f80);
  EXPECT_EQ(BFloat16::FromFloat(3.140625f).ToFloat(), 3.140625f);
}

TEST(TensorTest, StringTensorsAndLargeRanks) {
  Tensor s = Tensor::FromStrings({"a", "bb", "ccc"});
  EXPECT_EQ(s.nbytes(), 6u);
  EXPECT_EQ(s.SubTensor(1).scalar<std::string>(), "bb");
  Tensor big = Tensor::Zeros(DType::kUInt8, Shape{1, 2, 1, 2, 1, 2});  // heap-stored shape
  EXPECT_EQ(big.rank(), 6);
  EXPECT_EQ(big.num_elements(), 8);
  EXPECT_FALSE(Tensor::Allocate(DType::kFloat32, Shape{1 << 30, 1 << 30}).ok());
}

TEST(TensorTest, WrapsForeignMemory) {
  static int released = 0;
  std::vector<int32_t> data = {1, 2, 3};
  {
    Tensor t(DType::kInt32, Shape{3},
             Buffer::Wrap(data.data(), 12, [] { ++released; }));
    EXPECT_EQ(t.data<int32_t>()[2], 3);
  }
  EXPECT_EQ(released, 1);
}

TEST(TensorTest, StackChecksShapes) {
  std::vector<Tensor> ts = {Tensor::FromVector<int32_t>({1, 2}), Tensor::FromVector<int32_t>({3, 4})};
  auto s = Stack(ts);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->shape(), (Shape{2, 2}));
  EXPECT_EQ(s->data<int32_t>()[3], 4);
  ts.push_back(Tensor::FromVector<int32_t>({5}));
  EXPECT_FALSE(Stack(ts).ok());
}

TEST(ElementSpecTest, ChecksStructure) {
  ElementSpec spec{{{DType::kUInt8, PartialShape{-1, -1, 3}}, {DType::kInt64, PartialShape{}}},
                   MakeNames({"image", "label"})};
  Element ok{Tensor::Zeros(DType::kUInt8, Shape{4, 5, 3}), Tensor::Scalar<int64_t>(1)};
  EXPECT_TRUE(spec.Check(ok).ok());
  Element bad{Tensor::Zeros(DType::kUInt8, Shape{4, 5, 1}), Tensor::Scalar<int64_t>(1)};
  EXPECT_FALSE(spec.Check(bad).ok());
  EXPECT_EQ(spec.ToString(), "(image: uint8[?, ?, 3], label: int64[])");
  EXPECT_EQ(*spec.IndexOf("label"), 1u);
}

TEST(RngTest, CounterBasedAndReproducible) {
  // Philox4x32-10 known-answer test (Random123 kat_vectors: zero counter and key).
  auto b = Philox4x32({0, 0, 0, 0}, {0, 0});
  EXPECT_EQ(b[0], 0x6627e8d5u);
  EXPECT_EQ(b[1], 0xe169c58du);
  EXPECT_EQ(b[2], 0xbc57ac4cu);
  EXPECT_EQ(b[3], 0x9b00dbd8u);
  b = Philox4x32({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, {0xffffffffu, 0xffffffffu});
  EXPECT_EQ(b, (std::array<uint32_t, 4>{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}));
  b = Philox4x32({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, {0xa4093822u, 0x299f31d0u});
  EXPECT_EQ(b, (std::array<uint32_t, 4>{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}));
  Rng a(42, 7), c(42, 7), d(42, 8);
  uint64_t x = a.Next64();
  EXPECT_EQ(x, c.Next64());
  EXPECT_NE(x, d.Next64());
  // State round trip mid-block.
  a.Next32();
  Rng restored = Rng::FromState(a.state());
  for (int i = 0; i < 10; ++i) EXPECT_EQ(a.Next32(), restored.Next32());
  // Uniform ints are in range and cover it.
  std::vector<int> hist(10);
  for (int i = 0; i < 10000; ++i) hist[a.UniformInt(10)]++;
  for (int h : hist) EXPECT_GT(h, 800);
}

TEST(SeedTest, GlobalAndOpSeeds) {
  SetGlobalSeed(1);
  uint64_t a = ResolveSeed(5), b = ResolveSeed(std::nullopt), c = ResolveSeed(std::nullopt);
  SetGlobalSeed(1);
  EXPECT_EQ(a, ResolveSeed(5));
  EXPECT_EQ(b, ResolveSeed(std::nullopt));
  EXPECT_EQ(c, ResolveSeed(std::nullopt));
  EXPECT_NE(b, c);
  SetGlobalSeed(2);
  EXPECT_NE(a, ResolveSeed(5));
  SetGlobalSeed(std::nullopt);
}

TEST(Crc32cTest, KnownValues) {
  // RFC 3720 B.4 test vectors.
  std::string zeros(32, '\0');
  EXPECT_EQ(crc32c::Value(zeros.data(), 32), 0x8a9136aau);
  std::string ones(32, '\xff');
  EXPECT_EQ(crc32c::Value(ones.data(), 32), 0x62a8ab43u);
  std::string inc(32, 0);
  for (int i = 0; i < 32; ++i) inc[i] = static_cast<char>(i);
  EXPECT_EQ(crc32c::Value(inc.data(), 32), 0x46dd794eu);
  EXPECT_EQ(crc32c::Value("123456789", 9), 0xe3069283u);
  EXPECT_EQ(crc32c::Unmask(crc32c::Mask(0x12345678u)), 0x12345678u);
  EXPECT_EQ(crc32c::Extend(crc32c::Value("1234", 4), "56789", 5), 0xe3069283u);
}

// Against the definition, one bit at a time, on lengths around every path's edges (the
// three-stream blocks of 3 x 256 and 3 x 8192 bytes, the 8-byte tail), at odd offsets,
// and chained through Extend at random split points.
TEST(Crc32cTest, LongInputsMatchBitwiseDefinition) {
  auto bitwise = [](const uint8_t* p, size_t n) {
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; ++i) {
      c ^= p[i];
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
    }
    return ~c;
  };
  Rng rng(3);
  std::vector<uint8_t> data(3 * 3 * 8192 + 4096);
  for (uint8_t& b : data) b = static_cast<uint8_t>(rng.Next32());
  std::vector<size_t> lengths = {0,
                                 7,
                                 8,
                                 767,
                                 768,
                                 769,
                                 3 * 256 + 8,
                                 24575,
                                 24576,
                                 24577,
                                 2 * 24576 + 3 * 256 + 13,
                                 data.size() - 5};
  for (int i = 0; i < 30; ++i) lengths.push_back(rng.UniformInt(data.size() - 5));
  for (size_t n : lengths) {
    const size_t off = n % 5;
    const uint8_t* p = data.data() + off;
    const uint32_t want = bitwise(p, n);
    EXPECT_EQ(crc32c::Value(p, n), want) << n << " bytes at offset " << off;
    const size_t cut = n == 0 ? 0 : rng.UniformInt(n + 1);
    EXPECT_EQ(crc32c::Extend(crc32c::Value(p, cut), p + cut, n - cut), want)
        << n << " bytes cut at " << cut;
  }
}

TEST(CodingTest, ElementRoundTripAndCorruption) {
  Element e({Tensor::FromVector<float>({1.5f, 2.5f}), Tensor::FromStrings({"x", "yz"}),
             Tensor::Scalar<int64_t>(-7)},
            MakeNames({"f", "s", "i"}));
  std::string buf;
  EncodeElement(e, &buf);
  std::string_view in = buf;
  auto d = DecodeElement(&in);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_TRUE(d->ContentEquals(e));
  EXPECT_EQ((*d->names())[1], "s");
  EXPECT_TRUE(in.empty());
  // Every truncation fails cleanly.
  for (size_t n = 0; n < buf.size(); ++n) {
    std::string_view t(buf.data(), n);
    EXPECT_FALSE(DecodeElement(&t).ok()) << n;
  }
  // Absurd dimensions are rejected without allocating.
  std::string absurd;
  absurd.push_back(static_cast<char>(DType::kFloat32));
  PutVarint64(&absurd, 2);
  PutVarint64(&absurd, 1ull << 40);
  PutVarint64(&absurd, 1ull << 40);
  std::string_view a = absurd;
  EXPECT_FALSE(DecodeTensor(&a).ok());
  // ... also when a zero dimension makes the tensor empty: their product must fit int64.
  std::string absurd_empty;
  absurd_empty.push_back(static_cast<char>(DType::kFloat32));
  PutVarint64(&absurd_empty, 3);
  PutVarint64(&absurd_empty, 1ull << 40);
  PutVarint64(&absurd_empty, 1ull << 40);
  PutVarint64(&absurd_empty, 0);
  PutLengthPrefixed(&absurd_empty, "");
  std::string_view ae = absurd_empty;
  EXPECT_FALSE(DecodeTensor(&ae).ok());
}

// Empty tensors with large other dimensions (an IDX file of rows [2050, 0], found by
// idx_fuzzer through a prefetch checkpoint) round-trip.
TEST(CodingTest, EmptyTensorsWithLargeDimensionsRoundTrip) {
  for (const Tensor& t : {Tensor(DType::kFloat32, Shape{2050, 0}),
                          Tensor(DType::kUInt8, Shape{0, 100000, 3}),
                          Tensor(DType::kString, Shape{7, 0})}) {
    std::string buf;
    EncodeTensor(t, &buf);
    std::string_view in = buf;
    auto d = DecodeTensor(&in);
    ASSERT_TRUE(d.ok()) << t.shape().ToString() << ": " << d.status();
    EXPECT_EQ(d->shape(), t.shape());
    EXPECT_EQ(d->dtype(), t.dtype());
    EXPECT_TRUE(in.empty());
  }
}

TEST(CheckpointTest, RoundTripAndRejectsCorruption) {
  CheckpointWriter w;
  w.WriteInt("Root/Map[0]", "position", 12345678901);
  w.WriteString("Root", "op", "Batch");
  w.WriteElement("Root/Shuffle[0]", "buf_0", Element{Tensor::Scalar<int64_t>(3)});
  std::string bytes = w.Serialize();
  auto r = CheckpointReader::Parse(bytes);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r->ReadInt("Root/Map[0]", "position"), 12345678901);
  EXPECT_EQ(*r->ReadString("Root", "op"), "Batch");
  EXPECT_EQ(r->ReadElement("Root/Shuffle[0]", "buf_0")->operator[](0).scalar<int64_t>(), 3);
  auto missing = r->ReadInt("Root/Other[0]", "x");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("Root/Other[0]:x"), std::string::npos);
  EXPECT_FALSE(r->ReadString("Root/Map[0]", "position").ok());  // wrong type
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string bad = bytes;
    bad[i] ^= 1;
    EXPECT_FALSE(CheckpointReader::Parse(bad).ok()) << "flipped byte " << i;
  }
}


// Large blocks are recycled through the buffer cache (disabled under ASan, where the test
// checks that nothing is cached instead).
TEST(BufferCacheTest, ReusesFreedLargeBlocksWithinItsCapacity) {
#if defined(__SANITIZE_ADDRESS__)
  constexpr bool kEnabled = false;
#else
  constexpr bool kEnabled = true;
#endif
  Buffer::SetCacheCapacity(0);  // start empty
  Buffer::SetCacheCapacity(size_t{64} << 20);
  const size_t n = size_t{1} << 20;
  const void* first;
  {
    BufferPtr a = Buffer::Allocate(n);
    first = a->data();
    static_cast<char*>(a->data())[n - 1] = 7;  // the whole block is usable
  }
  if (!kEnabled) {
    EXPECT_EQ(Buffer::CachedBytes(), 0u);
    return;
  }
  EXPECT_GE(Buffer::CachedBytes(), n);
  {
    BufferPtr b = Buffer::Allocate(n + 1000);  // the same size class (n + n/8)
    EXPECT_EQ(b->data(), first);
    EXPECT_EQ(b->size(), n + 1000);
    EXPECT_EQ(Buffer::CachedBytes(), 0u);
  }
  // Small blocks never enter the cache.
  Buffer::SetCacheCapacity(0);
  Buffer::SetCacheCapacity(size_t{3} << 20);
  { BufferPtr small = Buffer::Allocate(1000); }
  EXPECT_EQ(Buffer::CachedBytes(), 0u);
  // Beyond the capacity the oldest blocks are freed.
  {
    std::vector<BufferPtr> bufs;
    for (int i = 0; i < 5; ++i) bufs.push_back(Buffer::Allocate(n));
  }
  EXPECT_LE(Buffer::CachedBytes(), size_t{3} << 20);
  EXPECT_GE(Buffer::CachedBytes(), 2 * n);
  Buffer::SetCacheCapacity(0);
  EXPECT_EQ(Buffer::CachedBytes(), 0u);
  Buffer::SetCacheCapacity(size_t{256} << 20);
}

}  // namespace
}  // namespace sluice
