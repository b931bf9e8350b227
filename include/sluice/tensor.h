// Tensor: a typed, shaped view over a 64-byte aligned, reference-counted buffer.
//
// * DType covers bool, u8, i8, i16, i32, i64, f16, bf16, f32, f64 and string.
// * Copying a Tensor copies the view and bumps the buffer's refcount; data is never copied
//   implicitly. Slicing along dimension 0 (Slice, SubTensor) is zero-copy.
// * Small tensors hold their data inline: a non-string tensor allocated with at most
//   kInlineBytes bytes of data (an int64 or float64 scalar, a label, a length, a pair of
//   float32) keeps it inside the Tensor object, with no Buffer. Copying one copies those
//   bytes (no refcount), and slicing or reshaping one copies too. Such a tensor's data
//   moves with the object: a pointer from data()/mutable_data() is valid only while that
//   Tensor object lives unmoved (write it before handing the tensor on, as above). Its
//   buffer() is null; SharedBuffer() gives a buffered copy where a caller needs memory
//   that outlives the object (zero-copy exports). An element of small tensors is then
//   its tensor list alone: nothing else to allocate, free or fetch from another core.
// * Buffers are mutable through `mutable_data<T>()`; the convention is that a tensor is
//   written only by the code that allocated it, before it is handed on. After that, every
//   holder treats it as immutable.
// * A Buffer can wrap foreign memory (mmap'd files, numpy arrays) with a release callback.
// * String tensors hold std::string objects in the buffer; they are constructed and
//   destroyed by the buffer.
//
// Thread-safety: a Tensor value is not synchronized, but distinct Tensor objects sharing one
// buffer may be used from different threads (the refcount is atomic).
#ifndef SLUICE_TENSOR_H_
#define SLUICE_TENSOR_H_

#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/status.h"

namespace sluice {

enum class DType : uint8_t {
  kInvalid = 0,
  kBool = 1,
  kUInt8 = 2,
  kInt8 = 3,
  kInt16 = 4,
  kInt32 = 5,
  kInt64 = 6,
  kFloat16 = 7,
  kBFloat16 = 8,
  kFloat32 = 9,
  kFloat64 = 10,
  kString = 11,
};

// "int64", "float32", ... (numpy names).
std::string_view DTypeName(DType d);
Result<DType> DTypeFromName(std::string_view name);
// Bytes per element; sizeof(std::string) for kString.
size_t DTypeSize(DType d);
bool DTypeIsValid(DType d);

// IEEE half precision, stored as bits. Conversions round to nearest even.
struct Half {
  uint16_t bits = 0;
  static Half FromFloat(float f);
  float ToFloat() const;
};
// bfloat16 (the upper half of a float32), round to nearest even.
struct BFloat16 {
  uint16_t bits = 0;
  static BFloat16 FromFloat(float f);
  float ToFloat() const;
};

// Maps a C++ type to its DType.
template <typename T>
struct DTypeOf;
#define SLUICE_DTYPE_OF_(T, D) \
  template <>                  \
  struct DTypeOf<T> {          \
    static constexpr DType value = D; \
  }
SLUICE_DTYPE_OF_(bool, DType::kBool);
SLUICE_DTYPE_OF_(uint8_t, DType::kUInt8);
SLUICE_DTYPE_OF_(int8_t, DType::kInt8);
SLUICE_DTYPE_OF_(int16_t, DType::kInt16);
SLUICE_DTYPE_OF_(int32_t, DType::kInt32);
SLUICE_DTYPE_OF_(int64_t, DType::kInt64);
SLUICE_DTYPE_OF_(Half, DType::kFloat16);
SLUICE_DTYPE_OF_(BFloat16, DType::kBFloat16);
SLUICE_DTYPE_OF_(float, DType::kFloat32);
SLUICE_DTYPE_OF_(double, DType::kFloat64);
SLUICE_DTYPE_OF_(std::string, DType::kString);
#undef SLUICE_DTYPE_OF_

// A concrete shape: up to 4 dimensions stored inline, more on the heap.
class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims);
  explicit Shape(std::span<const int64_t> dims);
  explicit Shape(const std::vector<int64_t>& dims) : Shape(std::span<const int64_t>(dims)) {}
  // Copies and moves are inline: shapes travel with every tensor on the hot path.
  Shape(const Shape& o) {
    if (o.rank_ <= kInline) {
      rank_ = o.rank_;
      memcpy(inline_, o.inline_, sizeof(inline_));
    } else {
      Assign(o.heap_, o.rank_);
    }
  }
  Shape& operator=(const Shape& o) {
    if (this != &o) {
      Free();
      if (o.rank_ <= kInline) {
        rank_ = o.rank_;
        memcpy(inline_, o.inline_, sizeof(inline_));
      } else {
        Assign(o.heap_, o.rank_);
      }
    }
    return *this;
  }
  Shape(Shape&& o) noexcept : rank_(o.rank_) {
    memcpy(inline_, o.inline_, sizeof(inline_));  // also carries heap_ when rank > kInline
    o.rank_ = 0;
  }
  Shape& operator=(Shape&& o) noexcept {
    if (this != &o) {
      Free();
      rank_ = o.rank_;
      memcpy(inline_, o.inline_, sizeof(inline_));
      o.rank_ = 0;
    }
    return *this;
  }
  ~Shape() { Free(); }

  int rank() const { return rank_; }
  int64_t dim(int i) const { return data()[i]; }
  int64_t operator[](int i) const { return data()[i]; }
  void set_dim(int i, int64_t v) { mutable_data()[i] = v; }
  int64_t num_elements() const {
    int64_t n = 1;
    for (int i = 0; i < rank_; ++i) n *= data()[i];
    return n;
  }
  std::span<const int64_t> dims() const { return {data(), static_cast<size_t>(rank_)}; }
  std::vector<int64_t> ToVector() const { return {data(), data() + rank_}; }

  void AddDim(int64_t d);
  void InsertDim(int pos, int64_t d);
  void RemoveDim(int pos);

  bool operator==(const Shape& o) const;
  bool operator!=(const Shape& o) const { return !(*this == o); }
  std::string ToString() const;  // "[2, 3]"

 private:
  static constexpr int kInline = 4;
  const int64_t* data() const { return rank_ <= kInline ? inline_ : heap_; }
  int64_t* mutable_data() { return rank_ <= kInline ? inline_ : heap_; }
  void Assign(const int64_t* d, int n);
  void Free() {
    if (rank_ > kInline) delete[] heap_;
    rank_ = 0;
  }

  int rank_ = 0;
  union {
    int64_t inline_[kInline];
    int64_t* heap_;
  };
};

// A shape that may be partly unknown: unknown rank, or known rank with unknown dims (-1).
class PartialShape {
 public:
  static constexpr int64_t kUnknownDim = -1;
  PartialShape() : dims_(std::vector<int64_t>{}) {}  // a scalar (rank 0), like `{}`
  PartialShape(std::initializer_list<int64_t> dims) : dims_(std::vector<int64_t>(dims)) {}
  explicit PartialShape(std::vector<int64_t> dims) : dims_(std::move(dims)) {}
  PartialShape(const Shape& s) : dims_(s.ToVector()) {}  // NOLINT
  static PartialShape UnknownRank() {
    PartialShape p;
    p.dims_.reset();
    return p;
  }

  bool rank_known() const { return dims_.has_value(); }
  int rank() const { return dims_ ? static_cast<int>(dims_->size()) : -1; }
  int64_t dim(int i) const { return (*dims_)[i]; }
  const std::vector<int64_t>& dims() const { return *dims_; }
  bool fully_defined() const;
  // True when `s` is a possible concrete value of this shape.
  bool IsCompatibleWith(const Shape& s) const;
  // The most specific shape compatible with both (unknown where they differ).
  PartialShape MostSpecificCompatible(const PartialShape& o) const;
  PartialShape WithLeadingDim(int64_t d) const;  // prepends a dim (batching)
  PartialShape WithoutLeadingDim() const;        // drops dim 0 (unbatching)

  bool operator==(const PartialShape& o) const { return dims_ == o.dims_; }
  std::string ToString() const;  // "[?, 3]" or "<unknown>"

 private:
  std::optional<std::vector<int64_t>> dims_;
};

class Buffer;

// Intrusive reference-counted pointer to a Buffer.
class BufferPtr {
 public:
  BufferPtr() = default;
  explicit BufferPtr(Buffer* b) : b_(b) {}  // adopts one reference
  inline BufferPtr(const BufferPtr& o);
  BufferPtr(BufferPtr&& o) noexcept : b_(o.b_) { o.b_ = nullptr; }
  inline BufferPtr& operator=(const BufferPtr& o);
  inline BufferPtr& operator=(BufferPtr&& o) noexcept;
  inline ~BufferPtr();
  Buffer* get() const { return b_; }
  Buffer* operator->() const { return b_; }
  explicit operator bool() const { return b_ != nullptr; }

 private:
  Buffer* b_ = nullptr;
};

// A 64-byte aligned block of memory with an atomic reference count.
class Buffer {
 public:
  static constexpr size_t kAlignment = 64;

  // Uninitialized memory of `bytes` bytes (zero bytes is allowed).
  static BufferPtr Allocate(size_t bytes);
  // Zero-filled memory.
  static BufferPtr AllocateZeroed(size_t bytes);
  // `n` default-constructed std::string objects.
  static BufferPtr AllocateStrings(size_t n);
  // Wraps memory owned elsewhere; `release` runs when the last reference goes.
  static BufferPtr Wrap(void* data, size_t bytes, std::function<void()> release);

  // Large blocks (>= kLargeBlockBytes) are recycled: a freed one goes to a process-wide
  // cache and the next allocation of the same size class reuses it, instead of mmap'ing
  // fresh pages that the kernel must fault in and zero (for image batches that is a
  // quarter of the CPU time). Size classes are 1/8-power-of-two steps, so a block is at
  // most 12.5% larger than asked. The cache holds at most `bytes` (default 256 MiB;
  // environment SLUICE_BUFFER_CACHE_MB overrides it at start-up; 0 disables it) and drops
  // its oldest blocks beyond that. Disabled under AddressSanitizer, so that a use after
  // free of a large block is still caught. Thread-safe.
  static constexpr size_t kLargeBlockBytes = size_t{256} << 10;
  static void SetCacheCapacity(size_t bytes);
  // Bytes held by the cache now (free blocks awaiting reuse).
  static size_t CachedBytes();

  void* data() const { return data_; }
  size_t size() const { return size_; }
  int64_t use_count() const { return refs_.load(std::memory_order_relaxed); }

  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

 private:
  friend class BufferPtr;
  Buffer() = default;
  void Ref() { refs_.fetch_add(1, std::memory_order_relaxed); }
  // Sole owner: nobody else can add a reference (that needs one), so skip the locked
  // decrement. Otherwise decrement, and free if it was the last reference.
  void Unref() {
    if (refs_.load(std::memory_order_acquire) == 1 ||
        refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      Free();
    }
  }
  void Free();

  std::atomic<int64_t> refs_{1};
  void* data_ = nullptr;
  size_t size_ = 0;
  size_t num_strings_ = 0;                   // > 0: data_ holds std::string objects
  std::function<void()>* release_ = nullptr;  // set for wrapped memory
  size_t block_bytes_ = 0;                   // > 0: a recyclable large block of this size
  int8_t small_class_ = -1;                  // >= 0: a recycled small block of this class
};

inline BufferPtr::BufferPtr(const BufferPtr& o) : b_(o.b_) {
  if (b_) b_->Ref();
}
inline BufferPtr& BufferPtr::operator=(const BufferPtr& o) {
  if (o.b_) o.b_->Ref();
  if (b_) b_->Unref();
  b_ = o.b_;
  return *this;
}
inline BufferPtr& BufferPtr::operator=(BufferPtr&& o) noexcept {
  if (this != &o) {
    if (b_) b_->Unref();
    b_ = o.b_;
    o.b_ = nullptr;
  }
  return *this;
}
inline BufferPtr::~BufferPtr() {
  if (b_) b_->Unref();
}

class Tensor {
 public:
  Tensor() = default;  // an invalid (dtype kInvalid) tensor
  // Allocates a tensor; POD contents are uninitialized, strings are empty.
  Tensor(DType dtype, Shape shape);
  // A view over `buffer` starting at `byte_offset`; the caller guarantees it fits.
  Tensor(DType dtype, Shape shape, BufferPtr buffer, size_t byte_offset = 0);

  // Checked construction for sizes that come from data (files, the network).
  static Result<Tensor> Allocate(DType dtype, Shape shape);
  static Tensor Zeros(DType dtype, Shape shape);

  template <typename T>
  static Tensor Scalar(T v) {
    Tensor t(DTypeOf<T>::value, Shape{});
    *t.mutable_data<T>() = std::move(v);
    return t;
  }
  static Tensor Scalar(const char* s) { return Scalar(std::string(s)); }
  static Tensor Scalar(std::string_view s) { return Scalar(std::string(s)); }
  // A vector (rank 1), or reshaped to `shape` when given.
  template <typename T>
  static Tensor FromVector(const std::vector<T>& v, std::optional<Shape> shape = {}) {
    Tensor t(DTypeOf<T>::value, shape ? *shape : Shape{static_cast<int64_t>(v.size())});
    T* d = t.mutable_data<T>();
    for (size_t i = 0; i < v.size() && i < static_cast<size_t>(t.num_elements()); ++i) {
      d[i] = v[i];
    }
    return t;
  }
  static Tensor FromStrings(const std::vector<std::string>& v, std::optional<Shape> shape = {}) {
    return FromVector<std::string>(v, std::move(shape));
  }

  // Data of at most this many bytes is held inline (see the top of this file).
  static constexpr size_t kInlineBytes = 8;

  bool valid() const { return dtype_ != DType::kInvalid; }
  DType dtype() const { return dtype_; }
  // True when the data is held inline (no buffer).
  bool is_inline() const { return inline_; }
  const Shape& shape() const { return shape_; }
  int rank() const { return shape_.rank(); }
  int64_t dim(int i) const { return shape_.dim(i); }
  int64_t num_elements() const { return shape_.num_elements(); }
  // Bytes of element data (num_elements * DTypeSize); for strings, the string payloads.
  size_t nbytes() const;
  // The buffer viewed and the view's start in it; null and 0 for an inline tensor.
  const BufferPtr& buffer() const { return buffer_; }
  size_t byte_offset() const { return inline_ ? 0 : offset_; }
  // This tensor with its data in a buffer: itself when it has one, else a buffered copy
  // of the inline data (for callers that export the memory beyond this object's life).
  Tensor SharedBuffer() const;

  template <typename T>
  const T* data() const {
    return reinterpret_cast<const T*>(raw_data());
  }
  template <typename T>
  T* mutable_data() {
    return reinterpret_cast<T*>(const_cast<void*>(raw_data()));
  }
  const void* raw_data() const {
    if (inline_) return small_;
    return buffer_ ? static_cast<const char*>(buffer_->data()) + offset_ : nullptr;
  }
  template <typename T>
  std::span<const T> flat() const {
    return {data<T>(), static_cast<size_t>(num_elements())};
  }
  template <typename T>
  const T& scalar() const {
    return *data<T>();
  }

  // Rows [begin, end) along dimension 0, sharing the buffer. Requires rank >= 1.
  Tensor Slice(int64_t begin, int64_t end) const;
  // Row i along dimension 0 with that dimension removed, sharing the buffer.
  Tensor SubTensor(int64_t i) const&;
  // The same, moving this tensor's buffer reference into the result (no reference count
  // traffic); this tensor is left invalid.
  Tensor SubTensor(int64_t i) &&;
  // Same buffer, new shape with the same number of elements.
  Result<Tensor> Reshape(Shape shape) const&;
  // The same, moving this tensor's buffer reference into the result; on success this
  // tensor is left invalid, on error it is unchanged.
  Result<Tensor> Reshape(Shape shape) &&;
  // In place, the same data: a dimension of size 1 inserted before dimension `axis`
  // (0..rank), or dimension `axis` removed, which must be of size 1 (a batch of one row
  // and its unbatching; Reshape without a new tensor).
  void InsertUnitDim(int axis) { shape_.InsertDim(axis, 1); }
  void RemoveUnitDim(int axis) { shape_.RemoveDim(axis); }
  // A deep copy with its own buffer.
  Tensor Clone() const;

  // Same dtype, shape and contents (bitwise for floats, so NaN == NaN).
  bool ContentEquals(const Tensor& o) const;
  // "int64[2,3]{1, 2, 3, 4, 5, 6}" truncated to `max_values` values.
  std::string DebugString(int max_values = 8) const;

 private:
  // A tensor of `shape` holding `bytes` (at most kInlineBytes) inline.
  static Tensor Inline(DType dtype, Shape shape, const void* bytes, size_t n);

  DType dtype_ = DType::kInvalid;
  bool inline_ = false;  // data in small_, buffer_ null
  Shape shape_;
  BufferPtr buffer_;
  union {
    size_t offset_ = 0;                        // buffered: the view's start in buffer_
    alignas(8) unsigned char small_[kInlineBytes];  // inline: the data
  };
};

// Stacks tensors of one dtype and shape along a new dimension 0 (copies).
Result<Tensor> Stack(std::span<const Tensor> tensors);
// Copies `src` into row `row` of `dst` (dst.dim(0) > row, dst row shape == src shape).
Status CopyIntoRow(const Tensor& src, Tensor* dst, int64_t row);

}  // namespace sluice

#endif  // SLUICE_TENSOR_H_
