// Typed access to AttrMaps with errors that name the op and attribute.
#ifndef SLUICE_GRAPH_ATTR_H_
#define SLUICE_GRAPH_ATTR_H_

#include <string>
#include <string_view>
#include <type_traits>

#include "sluice/dataset.h"

namespace sluice {

template <typename T>
constexpr std::string_view AttrTypeName() {
  if constexpr (std::is_same_v<T, bool>) return "bool";
  else if constexpr (std::is_same_v<T, int64_t>) return "int";
  else if constexpr (std::is_same_v<T, double>) return "float";
  else if constexpr (std::is_same_v<T, std::string>) return "string";
  else if constexpr (std::is_same_v<T, DType>) return "dtype";
  else if constexpr (std::is_same_v<T, PartialShape>) return "shape";
  else if constexpr (std::is_same_v<T, std::vector<int64_t>>) return "list(int)";
  else if constexpr (std::is_same_v<T, std::vector<double>>) return "list(float)";
  else if constexpr (std::is_same_v<T, std::vector<std::string>>) return "list(string)";
  else if constexpr (std::is_same_v<T, std::vector<DType>>) return "list(dtype)";
  else if constexpr (std::is_same_v<T, std::vector<PartialShape>>) return "list(shape)";
  else if constexpr (std::is_same_v<T, Tensor>) return "tensor";
  else if constexpr (std::is_same_v<T, std::vector<Tensor>>) return "list(tensor)";
  else return "?";
}

// The attribute `name` of type T; InvalidArgument naming `owner` when missing or mistyped.
template <typename T>
Result<T> GetAttr(const AttrMap& attrs, std::string_view owner, std::string_view name) {
  auto it = attrs.find(name);
  if (it == attrs.end()) {
    return InvalidArgumentError(std::string(owner) + ": missing attribute '" +
                                std::string(name) + "'");
  }
  if (const T* v = std::get_if<T>(&it->second)) return *v;
  // An int where a float is expected is fine.
  if constexpr (std::is_same_v<T, double>) {
    if (const int64_t* i = std::get_if<int64_t>(&it->second)) return static_cast<double>(*i);
  }
  return InvalidArgumentError(std::string(owner) + ": attribute '" + std::string(name) +
                              "' must be " + std::string(AttrTypeName<T>()) + ", got " +
                              AttrValueDebugString(it->second));
}

// Like GetAttr, with a default when the attribute is absent (a mistyped one is an error).
template <typename T>
Result<T> GetAttrOr(const AttrMap& attrs, std::string_view owner, std::string_view name,
                    T fallback) {
  if (attrs.find(name) == attrs.end()) return fallback;
  return GetAttr<T>(attrs, owner, name);
}

}  // namespace sluice

#endif  // SLUICE_GRAPH_ATTR_H_
