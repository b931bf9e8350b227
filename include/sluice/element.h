// Element and ElementSpec.
//
// An Element is one item of a dataset: a tuple of tensors, optionally with component names
// (e.g. {"image", "label"}). Names are shared (refcounted, immutable) so copying an element
// costs one refcount bump per tensor.
//
// An ElementSpec is the static type of a dataset's elements: for each component its dtype
// and a PartialShape (unknown dims where they vary).
//
// Thread-safety: values; see Tensor.
#ifndef SLUICE_ELEMENT_H_
#define SLUICE_ELEMENT_H_

#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/status.h"
#include "sluice/tensor.h"

namespace sluice {

using Names = std::shared_ptr<const std::vector<std::string>>;

namespace internal {
// Memory for an element's tensor list: small lists come from per-thread recycled blocks
// (src/core/small_blocks.h), since an element is usually made on one thread and freed on
// another; larger ones from operator new.
void* AllocateTensorList(size_t bytes);
void FreeTensorList(void* p, size_t bytes);
template <typename T>
struct TensorListAllocator {
  using value_type = T;
  TensorListAllocator() = default;
  template <typename U>
  TensorListAllocator(const TensorListAllocator<U>&) {}  // NOLINT: rebinding
  T* allocate(size_t n) { return static_cast<T*>(AllocateTensorList(n * sizeof(T))); }
  void deallocate(T* p, size_t n) { FreeTensorList(p, n * sizeof(T)); }
  friend bool operator==(const TensorListAllocator&, const TensorListAllocator&) {
    return true;
  }
};
}  // namespace internal

// An element's tensors: a std::vector with its own allocator (see internal above).
using TensorVector = std::vector<Tensor, internal::TensorListAllocator<Tensor>>;

class Element {
 public:
  Element() = default;
  explicit Element(TensorVector tensors, Names names = nullptr)
      : tensors_(std::move(tensors)), names_(std::move(names)) {}
  explicit Element(std::vector<Tensor> tensors, Names names = nullptr)
      : tensors_(std::make_move_iterator(tensors.begin()),
                 std::make_move_iterator(tensors.end())),
        names_(std::move(names)) {}
  Element(std::initializer_list<Tensor> tensors, Names names = nullptr)
      : tensors_(tensors), names_(std::move(names)) {}

  size_t size() const { return tensors_.size(); }
  bool empty() const { return tensors_.empty(); }
  Tensor& operator[](size_t i) { return tensors_[i]; }
  const Tensor& operator[](size_t i) const { return tensors_[i]; }
  TensorVector& tensors() { return tensors_; }
  const TensorVector& tensors() const { return tensors_; }
  // A copy as a plain std::vector (attribute values, APIs that take one).
  std::vector<Tensor> ToVector() const { return {tensors_.begin(), tensors_.end()}; }
  void push_back(Tensor t) { tensors_.push_back(std::move(t)); }

  // Component names, or null when the components are positional.
  const Names& names() const { return names_; }
  void set_names(Names n) { names_ = std::move(n); }
  // The component called `name`; NotFound when absent.
  Result<Tensor> Get(std::string_view name) const;

  // Component-wise Tensor::ContentEquals (names are not compared).
  bool ContentEquals(const Element& o) const;
  // Sum of the tensors' nbytes().
  size_t nbytes() const;
  std::string DebugString(int max_values = 8) const;

 private:
  TensorVector tensors_;
  Names names_;
};

Names MakeNames(std::vector<std::string> names);

struct TensorSpec {
  DType dtype = DType::kInvalid;
  PartialShape shape;

  bool IsCompatibleWith(const Tensor& t) const {
    return t.dtype() == dtype && shape.IsCompatibleWith(t.shape());
  }
  bool operator==(const TensorSpec& o) const { return dtype == o.dtype && shape == o.shape; }
  std::string ToString() const;  // "int64[?, 3]"
};

struct ElementSpec {
  std::vector<TensorSpec> components;
  Names names;  // null when positional
  // True when the structure is not known statically (e.g. the output of a C++ lambda that
  // declared no spec); components is then empty and Check() accepts anything.
  bool unknown = false;

  static ElementSpec Unknown() {
    ElementSpec s;
    s.unknown = true;
    return s;
  }

  size_t size() const { return components.size(); }
  const TensorSpec& operator[](size_t i) const { return components[i]; }
  // OK when `e` matches this spec; otherwise InvalidArgument describing the mismatch.
  Status Check(const Element& e) const;
  // Index of the component called `name`.
  Result<size_t> IndexOf(std::string_view name) const;
  // The spec of a concrete element.
  static ElementSpec Of(const Element& e);
  bool operator==(const ElementSpec& o) const;
  std::string ToString() const;  // "(image: uint8[?, ?, 3], label: int64[])"
};

}  // namespace sluice

#endif  // SLUICE_ELEMENT_H_
