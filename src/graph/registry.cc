#include "graph/registry.h"

#include <mutex>

namespace sluice {

Registry& Registry::Global() {
  static Registry* registry = [] {
    auto* r = new Registry();
    RegisterBuiltins(r);
    return r;
  }();
  return *registry;
}

Status Registry::RegisterOp(std::string name, OpFactory factory) {
  if (ops_.count(name)) return AlreadyExistsError("op '" + name + "' is already registered");
  ops_.emplace(std::move(name), std::move(factory));
  return Status::OK();
}

Status Registry::RegisterKernel(std::string name, KernelFactory factory) {
  if (kernels_.count(name)) {
    return AlreadyExistsError("kernel '" + name + "' is already registered");
  }
  kernels_.emplace(std::move(name), std::move(factory));
  return Status::OK();
}

namespace {
template <typename Map>
std::string KnownNames(const Map& m) {
  std::string s;
  for (const auto& [k, v] : m) {
    if (!s.empty()) s += ", ";
    s += k;
  }
  return s;
}
}  // namespace

Result<DatasetPtr> Registry::CreateOp(std::string_view name, OpArgs args) const {
  auto it = ops_.find(name);
  if (it == ops_.end()) {
    return NotFoundError("unknown op '" + std::string(name) + "'; known ops: " + KnownNames(ops_));
  }
  auto r = it->second(std::move(args));
  if (!r.ok()) {
    if (r.status().message().rfind(std::string(name), 0) == 0) return r.status();
    return r.status().WithContext(std::string(name));
  }
  return r;
}

Result<Function> Registry::CreateKernel(std::string_view name, const AttrMap& attrs) const {
  auto it = kernels_.find(name);
  if (it == kernels_.end()) {
    return NotFoundError("unknown kernel '" + std::string(name) +
                         "'; known kernels: " + KnownNames(kernels_));
  }
  auto r = it->second(attrs);
  if (!r.ok()) return r.status().WithContext("kernel " + std::string(name));
  return r;
}

std::vector<std::string> Registry::OpNames() const {
  std::vector<std::string> v;
  for (const auto& [k, f] : ops_) v.push_back(k);
  return v;
}

std::vector<std::string> Registry::KernelNames() const {
  std::vector<std::string> v;
  for (const auto& [k, f] : kernels_) v.push_back(k);
  return v;
}

}  // namespace sluice
