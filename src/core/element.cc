#include "sluice/element.h"

#include "core/small_blocks.h"

namespace sluice {

namespace internal {
void* AllocateTensorList(size_t bytes) {
  const int c = small_blocks::ClassOf(bytes);
  return c >= 0 ? small_blocks::Take(c) : ::operator new(bytes);
}
void FreeTensorList(void* p, size_t bytes) {
  const int c = small_blocks::ClassOf(bytes);
  if (c >= 0) {
    small_blocks::Put(p, c);
  } else {
    ::operator delete(p);
  }
}
}  // namespace internal

Names MakeNames(std::vector<std::string> names) {
  return std::make_shared<const std::vector<std::string>>(std::move(names));
}

Result<Tensor> Element::Get(std::string_view name) const {
  if (names_) {
    for (size_t i = 0; i < names_->size() && i < tensors_.size(); ++i) {
      if ((*names_)[i] == name) return tensors_[i];
    }
  }
  return NotFoundError("element has no component named '" + std::string(name) + "'");
}

bool Element::ContentEquals(const Element& o) const {
  if (tensors_.size() != o.tensors_.size()) return false;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    if (!tensors_[i].ContentEquals(o.tensors_[i])) return false;
  }
  return true;
}

size_t Element::nbytes() const {
  size_t n = 0;
  for (const Tensor& t : tensors_) n += t.nbytes();
  return n;
}

std::string Element::DebugString(int max_values) const {
  std::string s = "(";
  for (size_t i = 0; i < tensors_.size(); ++i) {
    if (i) s += ", ";
    if (names_ && i < names_->size()) s += (*names_)[i] + ": ";
    s += tensors_[i].DebugString(max_values);
  }
  return s + ")";
}

std::string TensorSpec::ToString() const {
  return std::string(DTypeName(dtype)) + shape.ToString();
}

Status ElementSpec::Check(const Element& e) const {
  if (unknown) return Status::OK();
  if (e.size() != components.size()) {
    return InvalidArgumentError("element has " + std::to_string(e.size()) +
                                " components, expected " + std::to_string(components.size()) +
                                " " + ToString());
  }
  for (size_t i = 0; i < e.size(); ++i) {
    if (!components[i].IsCompatibleWith(e[i])) {
      return InvalidArgumentError("component " + std::to_string(i) + " is " +
                                  std::string(DTypeName(e[i].dtype())) +
                                  e[i].shape().ToString() + ", expected " +
                                  components[i].ToString());
    }
  }
  return Status::OK();
}

Result<size_t> ElementSpec::IndexOf(std::string_view name) const {
  if (names) {
    for (size_t i = 0; i < names->size(); ++i) {
      if ((*names)[i] == name) return i;
    }
  }
  return NotFoundError("no component named '" + std::string(name) + "' in " + ToString());
}

ElementSpec ElementSpec::Of(const Element& e) {
  ElementSpec s;
  for (const Tensor& t : e.tensors()) s.components.push_back({t.dtype(), PartialShape(t.shape())});
  s.names = e.names();
  return s;
}

bool ElementSpec::operator==(const ElementSpec& o) const {
  if (unknown != o.unknown) return false;
  if (components != o.components) return false;
  if ((names == nullptr) != (o.names == nullptr)) return false;
  return names == nullptr || *names == *o.names;
}

std::string ElementSpec::ToString() const {
  if (unknown) return "<unknown structure>";
  std::string s = "(";
  for (size_t i = 0; i < components.size(); ++i) {
    if (i) s += ", ";
    if (names && i < names->size()) s += (*names)[i] + ": ";
    s += components[i].ToString();
  }
  return s + ")";
}

}  // namespace sluice
