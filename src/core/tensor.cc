#include "sluice/tensor.h"

#include <atomic>
#include <cstdlib>
#include <new>
#include <utility>
#include <vector>
#include <sstream>

#include "core/mutex.h"
#include "core/sanitizers.h"
#include "core/small_blocks.h"

namespace sluice {

// ---- DType ----

std::string_view DTypeName(DType d) {
  switch (d) {
    case DType::kInvalid: return "invalid";
    case DType::kBool: return "bool";
    case DType::kUInt8: return "uint8";
    case DType::kInt8: return "int8";
    case DType::kInt16: return "int16";
    case DType::kInt32: return "int32";
    case DType::kInt64: return "int64";
    case DType::kFloat16: return "float16";
    case DType::kBFloat16: return "bfloat16";
    case DType::kFloat32: return "float32";
    case DType::kFloat64: return "float64";
    case DType::kString: return "string";
  }
  return "invalid";
}

Result<DType> DTypeFromName(std::string_view name) {
  for (int i = 1; i <= static_cast<int>(DType::kString); ++i) {
    if (DTypeName(static_cast<DType>(i)) == name) return static_cast<DType>(i);
  }
  if (name == "float" ) return DType::kFloat32;
  if (name == "double") return DType::kFloat64;
  if (name == "half") return DType::kFloat16;
  if (name == "bytes" || name == "str") return DType::kString;
  return InvalidArgumentError("unknown dtype '" + std::string(name) + "'");
}

size_t DTypeSize(DType d) {
  switch (d) {
    case DType::kBool: case DType::kUInt8: case DType::kInt8: return 1;
    case DType::kInt16: case DType::kFloat16: case DType::kBFloat16: return 2;
    case DType::kInt32: case DType::kFloat32: return 4;
    case DType::kInt64: case DType::kFloat64: return 8;
    case DType::kString: return sizeof(std::string);
    case DType::kInvalid: return 0;
  }
  return 0;
}

bool DTypeIsValid(DType d) {
  return static_cast<int>(d) >= 1 && static_cast<int>(d) <= static_cast<int>(DType::kString);
}

Half Half::FromFloat(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t mant = x & 0x7fffffu;
  int32_t exp = static_cast<int32_t>((x >> 23) & 0xff);
  Half h;
  if (exp == 0xff) {  // inf / nan
    h.bits = static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0));
    return h;
  }
  int32_t e = exp - 127 + 15;
  if (e >= 0x1f) {  // overflow
    h.bits = static_cast<uint16_t>(sign | 0x7c00u);
    return h;
  }
  if (e <= 0) {  // subnormal or zero
    if (e < -10) {
      h.bits = static_cast<uint16_t>(sign);
      return h;
    }
    mant |= 0x800000u;
    uint32_t shift = static_cast<uint32_t>(14 - e);
    uint32_t half_mant = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (half_mant & 1))) ++half_mant;
    h.bits = static_cast<uint16_t>(sign | half_mant);
    return h;
  }
  uint32_t half_mant = mant >> 13;
  uint32_t rem = mant & 0x1fffu;
  uint32_t bits = sign | (static_cast<uint32_t>(e) << 10) | half_mant;
  if (rem > 0x1000u || (rem == 0x1000u && (half_mant & 1))) ++bits;  // may carry into exp
  h.bits = static_cast<uint16_t>(bits);
  return h;
}

float Half::ToFloat() const {
  uint32_t sign = (bits & 0x8000u) << 16;
  uint32_t exp = (bits >> 10) & 0x1f;
  uint32_t mant = bits & 0x3ffu;
  uint32_t x;
  if (exp == 0) {
    if (mant == 0) {
      x = sign;
    } else {  // subnormal: normalize
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      x = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else if (exp == 0x1f) {
    x = sign | 0x7f800000u | (mant << 13);
  } else {
    x = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  memcpy(&f, &x, 4);
  return f;
}

BFloat16 BFloat16::FromFloat(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  BFloat16 b;
  if ((x & 0x7fffffffu) > 0x7f800000u) {  // NaN stays NaN
    b.bits = static_cast<uint16_t>((x >> 16) | 0x40u);
    return b;
  }
  uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  b.bits = static_cast<uint16_t>((x + rounding) >> 16);
  return b;
}

float BFloat16::ToFloat() const {
  uint32_t x = static_cast<uint32_t>(bits) << 16;
  float f;
  memcpy(&f, &x, 4);
  return f;
}

// ---- Shape ----

Shape::Shape(std::initializer_list<int64_t> dims) { Assign(dims.begin(), static_cast<int>(dims.size())); }
Shape::Shape(std::span<const int64_t> dims) { Assign(dims.data(), static_cast<int>(dims.size())); }
void Shape::Assign(const int64_t* d, int n) {
  rank_ = n;
  if (n > kInline) heap_ = new int64_t[n];
  if (n > 0) memcpy(mutable_data(), d, sizeof(int64_t) * n);
}

void Shape::AddDim(int64_t d) { InsertDim(rank_, d); }

void Shape::InsertDim(int pos, int64_t d) {
  if (rank_ < kInline) {  // stays inline: shift in place
    for (int i = rank_; i > pos; --i) inline_[i] = inline_[i - 1];
    inline_[pos] = d;
    ++rank_;
    return;
  }
  std::vector<int64_t> v = ToVector();
  v.insert(v.begin() + pos, d);
  *this = Shape(v);
}

void Shape::RemoveDim(int pos) {
  if (rank_ <= kInline) {
    for (int i = pos; i + 1 < rank_; ++i) inline_[i] = inline_[i + 1];
    --rank_;
    return;
  }
  std::vector<int64_t> v = ToVector();
  v.erase(v.begin() + pos);
  *this = Shape(v);
}

bool Shape::operator==(const Shape& o) const {
  return rank_ == o.rank_ && (rank_ == 0 || memcmp(data(), o.data(), sizeof(int64_t) * rank_) == 0);
}

std::string Shape::ToString() const {
  std::string s = "[";
  for (int i = 0; i < rank_; ++i) {
    if (i) s += ", ";
    s += std::to_string(dim(i));
  }
  return s + "]";
}

// ---- PartialShape ----

bool PartialShape::fully_defined() const {
  if (!dims_) return false;
  for (int64_t d : *dims_) {
    if (d < 0) return false;
  }
  return true;
}

bool PartialShape::IsCompatibleWith(const Shape& s) const {
  if (!dims_) return true;
  if (static_cast<int>(dims_->size()) != s.rank()) return false;
  for (int i = 0; i < s.rank(); ++i) {
    if ((*dims_)[i] >= 0 && (*dims_)[i] != s.dim(i)) return false;
  }
  return true;
}

PartialShape PartialShape::MostSpecificCompatible(const PartialShape& o) const {
  if (!dims_ || !o.dims_ || dims_->size() != o.dims_->size()) return PartialShape::UnknownRank();
  std::vector<int64_t> d(dims_->size());
  for (size_t i = 0; i < d.size(); ++i) {
    d[i] = (*dims_)[i] == (*o.dims_)[i] ? (*dims_)[i] : kUnknownDim;
  }
  return PartialShape(std::move(d));
}

PartialShape PartialShape::WithLeadingDim(int64_t d) const {
  if (!dims_) return PartialShape::UnknownRank();
  std::vector<int64_t> v;
  v.reserve(dims_->size() + 1);
  v.push_back(d);
  v.insert(v.end(), dims_->begin(), dims_->end());
  return PartialShape(std::move(v));
}

PartialShape PartialShape::WithoutLeadingDim() const {
  if (!dims_ || dims_->empty()) return PartialShape::UnknownRank();
  return PartialShape(std::vector<int64_t>(dims_->begin() + 1, dims_->end()));
}

std::string PartialShape::ToString() const {
  if (!dims_) return "<unknown>";
  std::string s = "[";
  for (size_t i = 0; i < dims_->size(); ++i) {
    if (i) s += ", ";
    s += (*dims_)[i] < 0 ? "?" : std::to_string((*dims_)[i]);
  }
  return s + "]";
}

// ---- Buffer ----

namespace {

constexpr bool kCacheAllowed = !kAddressSanitizer;

// Rounds a large block size up to its class: 8 classes per power of two.
size_t LargeClass(size_t bytes) {
  const int top = 63 - __builtin_clzll(bytes);
  const size_t step = size_t{1} << (top - 3);
  return (bytes + step - 1) & ~(step - 1);
}

// Free large blocks by size class, oldest first; a linear scan is fine: at most
// kMaxBlocks entries, and each allocation it serves is >= 256 KiB.
class LargeBlockCache {
 public:
  static LargeBlockCache& Get() {
    static auto* cache = new LargeBlockCache();  // never destroyed: frees may come late
    return *cache;
  }
  void* Take(size_t block_bytes) {
    MutexLock l(&mu_);
    for (size_t i = 0; i < blocks_.size(); ++i) {
      if (blocks_[i].bytes == block_bytes) {
        void* p = blocks_[i].mem;
        bytes_ -= block_bytes;
        blocks_.erase(blocks_.begin() + i);
        return p;
      }
    }
    return nullptr;
  }
  // Keeps `mem` for reuse, or frees it (and older blocks) to stay within the capacity.
  void Put(void* mem, size_t block_bytes) {
    std::vector<void*> drop;
    {
      MutexLock l(&mu_);
      if (block_bytes > capacity()) {
        drop.push_back(mem);
      } else {
        while (!blocks_.empty() &&
               (bytes_ + block_bytes > capacity() || blocks_.size() >= kMaxBlocks)) {
          drop.push_back(blocks_.front().mem);
          bytes_ -= blocks_.front().bytes;
          blocks_.erase(blocks_.begin());
        }
        blocks_.push_back({mem, block_bytes});
        bytes_ += block_bytes;
      }
    }
    for (void* p : drop) std::free(p);
  }
  void SetCapacity(size_t bytes) {
    std::vector<void*> drop;
    {
      MutexLock l(&mu_);
      capacity_.store(bytes, std::memory_order_relaxed);
      while (!blocks_.empty() && bytes_ > bytes) {
        drop.push_back(blocks_.front().mem);
        bytes_ -= blocks_.front().bytes;
        blocks_.erase(blocks_.begin());
      }
    }
    for (void* p : drop) std::free(p);
  }
  // Unlocked: Allocate asks before every large block; a stale answer only skips or
  // tries the cache once.
  size_t capacity() const { return capacity_.load(std::memory_order_relaxed); }
  size_t bytes() {
    MutexLock l(&mu_);
    return bytes_;
  }

 private:
  static constexpr size_t kMaxBlocks = 256;
  LargeBlockCache() {
    size_t capacity = kCacheAllowed ? size_t{256} << 20 : 0;
    if (const char* env = std::getenv("SLUICE_BUFFER_CACHE_MB"); env != nullptr && kCacheAllowed) {
      capacity = static_cast<size_t>(std::strtoull(env, nullptr, 10)) << 20;
    }
    capacity_.store(capacity, std::memory_order_relaxed);
  }
  struct Block {
    void* mem;
    size_t bytes;
  };
  Mutex mu_;
  std::vector<Block> blocks_ GUARDED_BY(mu_);
  size_t bytes_ GUARDED_BY(mu_) = 0;
  std::atomic<size_t> capacity_{0};
};

}  // namespace

void Buffer::SetCacheCapacity(size_t bytes) {
  LargeBlockCache::Get().SetCapacity(kCacheAllowed ? bytes : 0);
}

size_t Buffer::CachedBytes() { return LargeBlockCache::Get().bytes(); }

// The Buffer header and its data share one malloc block (malloc's per-thread caches are much
// faster than aligned_alloc): the data starts at the first 64-byte boundary after the header.
BufferPtr Buffer::Allocate(size_t bytes) {
  size_t total = sizeof(Buffer) + kAlignment + bytes;
  void* mem = nullptr;
  size_t block_bytes = 0;
  if (total >= kLargeBlockBytes && LargeBlockCache::Get().capacity() > 0) {
    block_bytes = LargeClass(total);
    mem = LargeBlockCache::Get().Take(block_bytes);
    total = block_bytes;
  }
  int small_class = -1;
  if (mem == nullptr) {
    small_class = small_blocks::ClassOf(total);
    mem = small_class >= 0 ? small_blocks::Take(small_class) : std::malloc(total);
  }
  if (mem == nullptr) throw std::bad_alloc();
  Buffer* b = new (mem) Buffer();
  b->small_class_ = static_cast<int8_t>(small_class);
  auto addr = reinterpret_cast<uintptr_t>(mem) + sizeof(Buffer);
  addr = (addr + kAlignment - 1) & ~static_cast<uintptr_t>(kAlignment - 1);
  b->data_ = reinterpret_cast<void*>(addr);
  b->size_ = bytes;
  b->block_bytes_ = block_bytes;
  return BufferPtr(b);
}

BufferPtr Buffer::AllocateZeroed(size_t bytes) {
  BufferPtr p = Allocate(bytes);
  memset(p->data(), 0, bytes);
  return p;
}

BufferPtr Buffer::AllocateStrings(size_t n) {
  BufferPtr p = Allocate(n * sizeof(std::string));
  auto* s = static_cast<std::string*>(p->data());
  for (size_t i = 0; i < n; ++i) new (s + i) std::string();
  p->num_strings_ = n;
  return p;
}

BufferPtr Buffer::Wrap(void* data, size_t bytes, std::function<void()> release) {
  void* mem = std::malloc(sizeof(Buffer));
  if (mem == nullptr) throw std::bad_alloc();
  Buffer* b = new (mem) Buffer();
  b->data_ = data;
  b->size_ = bytes;
  b->release_ = new std::function<void()>(std::move(release));
  return BufferPtr(b);
}

void Buffer::Free() {
  if (num_strings_ > 0) {
    auto* s = static_cast<std::string*>(data_);
    for (size_t i = 0; i < num_strings_; ++i) s[i].~basic_string();
  }
  if (release_ != nullptr) {
    if (*release_) (*release_)();
    delete release_;
  }
  const size_t block_bytes = block_bytes_;
  const int small_class = small_class_;
  this->~Buffer();
  if (block_bytes > 0) {
    LargeBlockCache::Get().Put(this, block_bytes);
  } else if (small_class >= 0) {
    small_blocks::Put(this, small_class);
  } else {
    std::free(this);
  }
}

// ---- Tensor ----

Tensor::Tensor(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {
  size_t n = static_cast<size_t>(shape_.num_elements());
  if (dtype == DType::kString) {
    buffer_ = Buffer::AllocateStrings(n);
  } else if (n * DTypeSize(dtype) <= kInlineBytes && dtype != DType::kInvalid) {
    inline_ = true;  // small_ is zeroed (offset_'s initializer)
  } else {
    buffer_ = Buffer::Allocate(n * DTypeSize(dtype));
  }
}

Tensor Tensor::Inline(DType dtype, Shape shape, const void* bytes, size_t n) {
  Tensor t;
  t.dtype_ = dtype;
  t.inline_ = true;
  t.shape_ = std::move(shape);
  if (n > 0) memcpy(t.small_, bytes, n);
  return t;
}

Tensor Tensor::SharedBuffer() const {
  if (!inline_) return *this;
  const size_t n = nbytes();
  BufferPtr b = Buffer::Allocate(n);
  if (n > 0) memcpy(b->data(), small_, n);
  return Tensor(dtype_, shape_, std::move(b), 0);
}

Tensor::Tensor(DType dtype, Shape shape, BufferPtr buffer, size_t byte_offset)
    : dtype_(dtype), shape_(std::move(shape)), buffer_(std::move(buffer)), offset_(byte_offset) {}

Result<Tensor> Tensor::Allocate(DType dtype, Shape shape) {
  if (!DTypeIsValid(dtype)) return InvalidArgumentError("invalid dtype");
  // Bound the size: 2^40 bytes is far past any single element a pipeline should build.
  constexpr uint64_t kMaxBytes = uint64_t{1} << 40;
  uint64_t n = 1;
  for (int64_t d : shape.dims()) {
    if (d < 0) return InvalidArgumentError("negative dimension in shape " + shape.ToString());
    if (d != 0 && n > kMaxBytes / static_cast<uint64_t>(d)) {
      return ResourceExhaustedError("tensor shape " + shape.ToString() + " is too large");
    }
    n *= static_cast<uint64_t>(d);
  }
  if (n * DTypeSize(dtype) > kMaxBytes) {
    return ResourceExhaustedError("tensor shape " + shape.ToString() + " is too large");
  }
  try {
    return Tensor(dtype, shape);
  } catch (const std::bad_alloc&) {
    return ResourceExhaustedError(
        "cannot allocate " + std::to_string(n * DTypeSize(dtype)) + " bytes for a " +
        std::string(DTypeName(dtype)) + " tensor of shape " + shape.ToString());
  }
}

Tensor Tensor::Zeros(DType dtype, Shape shape) {
  if (dtype == DType::kString) return Tensor(dtype, std::move(shape));
  size_t bytes = static_cast<size_t>(shape.num_elements()) * DTypeSize(dtype);
  if (bytes <= kInlineBytes) return Tensor(dtype, std::move(shape));  // inline, zeroed
  return Tensor(dtype, std::move(shape), Buffer::AllocateZeroed(bytes));
}

size_t Tensor::nbytes() const {
  if (dtype_ != DType::kString) return static_cast<size_t>(num_elements()) * DTypeSize(dtype_);
  size_t n = 0;
  for (const std::string& s : flat<std::string>()) n += s.size();
  return n;
}

Tensor Tensor::Slice(int64_t begin, int64_t end) const {
  Shape s = shape_;
  s.set_dim(0, end - begin);
  int64_t row = shape_.num_elements() / (shape_.dim(0) == 0 ? 1 : shape_.dim(0));
  if (shape_.dim(0) == 0) row = 0;
  size_t row_bytes = static_cast<size_t>(row) * DTypeSize(dtype_);
  const size_t start = static_cast<size_t>(begin) * row_bytes;
  if (inline_) {
    return Inline(dtype_, std::move(s), small_ + start, static_cast<size_t>(end - begin) * row_bytes);
  }
  return Tensor(dtype_, std::move(s), buffer_, offset_ + start);
}

// A row small enough to be inline is copied out (its bytes, not a reference on the
// buffer: no refcount traffic, and the batch's buffer is not held by its rows).
Tensor Tensor::SubTensor(int64_t i) const& {
  Shape s = shape_;
  s.RemoveDim(0);
  size_t row_bytes = static_cast<size_t>(s.num_elements()) * DTypeSize(dtype_);
  if (dtype_ != DType::kString && row_bytes <= kInlineBytes) {
    return Inline(dtype_, std::move(s), static_cast<const char*>(raw_data()) + i * row_bytes,
                  row_bytes);
  }
  return Tensor(dtype_, std::move(s), buffer_, offset_ + static_cast<size_t>(i) * row_bytes);
}

Tensor Tensor::SubTensor(int64_t i) && {
  Shape s = shape_;
  s.RemoveDim(0);
  size_t row_bytes = static_cast<size_t>(s.num_elements()) * DTypeSize(dtype_);
  if (dtype_ != DType::kString && row_bytes <= kInlineBytes) {
    Tensor out = std::as_const(*this).SubTensor(i);  // copied out inline, as there
    *this = Tensor();
    return out;
  }
  Tensor out(dtype_, std::move(s), std::move(buffer_),
             offset_ + static_cast<size_t>(i) * row_bytes);
  *this = Tensor();
  return out;
}

Result<Tensor> Tensor::Reshape(Shape shape) const& {
  if (shape.num_elements() != num_elements()) {
    return InvalidArgumentError("cannot reshape " + shape_.ToString() + " to " + shape.ToString());
  }
  if (inline_) return Inline(dtype_, std::move(shape), small_, nbytes());
  return Tensor(dtype_, std::move(shape), buffer_, offset_);
}

Result<Tensor> Tensor::Reshape(Shape shape) && {
  if (shape.num_elements() != num_elements()) {
    return InvalidArgumentError("cannot reshape " + shape_.ToString() + " to " + shape.ToString());
  }
  if (inline_) {
    Tensor out = Inline(dtype_, std::move(shape), small_, nbytes());
    *this = Tensor();
    return out;
  }
  Tensor out(dtype_, std::move(shape), std::move(buffer_), offset_);
  *this = Tensor();
  return out;
}

Tensor Tensor::Clone() const {
  if (!valid()) return Tensor();
  Tensor t(dtype_, shape_);
  if (dtype_ == DType::kString) {
    auto src = flat<std::string>();
    std::string* dst = t.mutable_data<std::string>();
    for (size_t i = 0; i < src.size(); ++i) dst[i] = src[i];
  } else if (num_elements() > 0) {
    memcpy(t.mutable_data<char>(), raw_data(), nbytes());
  }
  return t;
}

bool Tensor::ContentEquals(const Tensor& o) const {
  if (dtype_ != o.dtype_ || shape_ != o.shape_) return false;
  if (!valid()) return true;
  if (dtype_ == DType::kString) {
    auto a = flat<std::string>();
    auto b = o.flat<std::string>();
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i] != b[i]) return false;
    }
    return true;
  }
  size_t n = nbytes();
  return n == 0 || memcmp(raw_data(), o.raw_data(), n) == 0;
}

namespace {
template <typename T>
void AppendValues(std::ostringstream& os, const Tensor& t, int64_t n) {
  const T* d = t.data<T>();
  for (int64_t i = 0; i < n; ++i) {
    if (i) os << ", ";
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      os << d[i].ToFloat();
    } else if constexpr (std::is_same_v<T, std::string>) {
      os << '"' << (d[i].size() > 32 ? d[i].substr(0, 32) + "..." : d[i]) << '"';
    } else if constexpr (sizeof(T) == 1) {
      os << static_cast<int>(d[i]);
    } else {
      os << d[i];
    }
  }
}
}  // namespace

std::string Tensor::DebugString(int max_values) const {
  if (!valid()) return "<invalid tensor>";
  std::ostringstream os;
  os << DTypeName(dtype_) << shape_.ToString() << "{";
  int64_t n = std::min<int64_t>(num_elements(), max_values);
  switch (dtype_) {
    case DType::kBool: AppendValues<bool>(os, *this, n); break;
    case DType::kUInt8: AppendValues<uint8_t>(os, *this, n); break;
    case DType::kInt8: AppendValues<int8_t>(os, *this, n); break;
    case DType::kInt16: AppendValues<int16_t>(os, *this, n); break;
    case DType::kInt32: AppendValues<int32_t>(os, *this, n); break;
    case DType::kInt64: AppendValues<int64_t>(os, *this, n); break;
    case DType::kFloat16: AppendValues<Half>(os, *this, n); break;
    case DType::kBFloat16: AppendValues<BFloat16>(os, *this, n); break;
    case DType::kFloat32: AppendValues<float>(os, *this, n); break;
    case DType::kFloat64: AppendValues<double>(os, *this, n); break;
    case DType::kString: AppendValues<std::string>(os, *this, n); break;
    case DType::kInvalid: break;
  }
  if (num_elements() > n) os << ", ...";
  os << "}";
  return os.str();
}

Status CopyIntoRow(const Tensor& src, Tensor* dst, int64_t row) {
  if (src.dtype() != dst->dtype()) {
    return InvalidArgumentError("dtype mismatch: " + std::string(DTypeName(src.dtype())) +
                                " vs " + std::string(DTypeName(dst->dtype())));
  }
  int64_t n = src.num_elements();
  if (dst->rank() != src.rank() + 1 || dst->num_elements() != n * dst->dim(0) ||
      row >= dst->dim(0)) {
    return InvalidArgumentError("shape mismatch: cannot put " + src.shape().ToString() +
                                " into row " + std::to_string(row) + " of " +
                                dst->shape().ToString());
  }
  for (int i = 0; i < src.rank(); ++i) {
    if (src.dim(i) != dst->dim(i + 1)) {
      return InvalidArgumentError("shape mismatch: cannot put " + src.shape().ToString() +
                                  " into a batch of " + dst->shape().ToString());
    }
  }
  if (src.dtype() == DType::kString) {
    const std::string* s = src.data<std::string>();
    std::string* d = dst->mutable_data<std::string>() + row * n;
    for (int64_t i = 0; i < n; ++i) d[i] = s[i];
  } else {
    size_t bytes = static_cast<size_t>(n) * DTypeSize(src.dtype());
    if (bytes) memcpy(dst->mutable_data<char>() + row * bytes, src.raw_data(), bytes);
  }
  return Status::OK();
}

Result<Tensor> Stack(std::span<const Tensor> tensors) {
  if (tensors.empty()) return InvalidArgumentError("cannot stack zero tensors");
  const Tensor& first = tensors[0];
  for (size_t i = 1; i < tensors.size(); ++i) {
    if (tensors[i].dtype() != first.dtype() || tensors[i].shape() != first.shape()) {
      return InvalidArgumentError(
          "cannot stack tensors of different shapes or dtypes: " +
          std::string(DTypeName(first.dtype())) + first.shape().ToString() + " and " +
          std::string(DTypeName(tensors[i].dtype())) + tensors[i].shape().ToString() +
          " (row " + std::to_string(i) + ")");
    }
  }
  Shape shape = first.shape();
  shape.InsertDim(0, static_cast<int64_t>(tensors.size()));
  SLUICE_ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(first.dtype(), std::move(shape)));
  const int64_t n = first.num_elements();
  if (first.dtype() == DType::kString) {
    std::string* d = out.mutable_data<std::string>();
    for (const Tensor& t : tensors) {
      const std::string* s = t.data<std::string>();
      for (int64_t i = 0; i < n; ++i) *d++ = s[i];
    }
  } else {
    const size_t row = static_cast<size_t>(n) * DTypeSize(first.dtype());
    char* d = out.mutable_data<char>();
    for (const Tensor& t : tensors) {
      memcpy(d, t.raw_data(), row);
      d += row;
    }
  }
  return out;
}

}  // namespace sluice
