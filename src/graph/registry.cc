#include "graph/registry.h"

#include <cstdio>
#include <mutex>

namespace sluice {

Registry& Registry::Global() {
  static Registry* registry = new Registry();
  return *registry;
}

void Registry::InstallGlobal(void (*fill)(Registry*)) {
  static std::once_flag once;
  std::call_once(once, [fill] {
    Registry& r = Global();
    fill(&r);
    if (!r.status().ok()) {
      std::fprintf(stderr, "sluice: registering the builtin ops failed: %s\n",
                   r.status().ToString().c_str());
    }
  });
}

Status Registry::status() const {
  MutexLock l(&mu_);
  return status_;
}

void Registry::RegisterOp(OpDef def, OpFactory factory) {
  std::string name = def.name();
  MutexLock l(&mu_);
  Status s = name.empty() ? InvalidArgumentError("an op is registered without a name")
             : ops_.count(name) || kernels_.count(name)
                 ? AlreadyExistsError("op '" + name + "' is already registered")
                 : Status::OK();
  if (!s.ok()) {
    if (status_.ok()) status_ = s;
    return;
  }
  ops_.emplace(std::move(name), OpEntry{std::move(def), std::move(factory)});
}

void Registry::RegisterKernel(KernelDef def, KernelFactory factory) {
  std::string name = def.name();
  MutexLock l(&mu_);
  Status s = name.empty() ? InvalidArgumentError("a kernel is registered without a name")
             : kernels_.count(name) || ops_.count(name)
                 ? AlreadyExistsError("kernel '" + name + "' is already registered")
                 : Status::OK();
  if (!s.ok()) {
    if (status_.ok()) status_ = s;
    return;
  }
  kernels_.emplace(std::move(name), KernelEntry{std::move(def), std::move(factory)});
}

namespace {
template <typename Map>
Status Unknown(std::string_view what, std::string_view name, const Map& m) {
  std::vector<std::string_view> names;
  for (const auto& [k, v] : m) names.push_back(k);
  std::string shown(name.substr(0, 64));
  if (name.size() > 64) shown += "...";
  std::string msg = "unknown " + std::string(what) + " '" + shown + "'";
  const std::string close = ClosestName(name, names);
  if (!close.empty()) {
    msg += "; did you mean '" + close + "'?";
  } else {
    msg += "; known " + std::string(what) + "s:";
    for (size_t i = 0; i < names.size(); ++i) msg += (i ? ", " : " ") + std::string(names[i]);
  }
  return NotFoundError(msg);
}
}  // namespace

const Registry::OpEntry* Registry::FindOpEntry(std::string_view name,
                                                Status* error) const {
  MutexLock l(&mu_);
  *error = status_;
  if (!error->ok()) return nullptr;
  auto it = ops_.find(name);
  if (it == ops_.end()) {
    *error = Unknown("op", name, ops_);
    return nullptr;
  }
  return &it->second;
}

const Registry::KernelEntry* Registry::FindKernelEntry(std::string_view name,
                                                        Status* error) const {
  MutexLock l(&mu_);
  *error = status_;
  if (!error->ok()) return nullptr;
  auto it = kernels_.find(name);
  if (it == kernels_.end()) {
    *error = Unknown("kernel", name, kernels_);
    return nullptr;
  }
  return &it->second;
}

// The factories run without the lock: they may build other nodes through the registry.
Result<DatasetPtr> Registry::CreateOp(std::string_view name, OpArgs args) const {
  Status error;
  const OpEntry* e = FindOpEntry(name, &error);
  if (e == nullptr) return error;
  SLUICE_RETURN_IF_ERROR(e->def.Validate(args));
  auto r = e->factory(std::move(args));
  if (!r.ok()) {
    if (r.status().message().rfind(std::string(name), 0) == 0) return r.status();
    return r.status().WithContext(std::string(name));
  }
  return r;
}

Result<Function> Registry::CreateKernel(std::string_view name, const AttrMap& attrs) const {
  Status error;
  const KernelEntry* e = FindKernelEntry(name, &error);
  if (e == nullptr) return error;
  SLUICE_RETURN_IF_ERROR(e->def.Validate(attrs));
  auto r = e->factory(attrs);
  if (!r.ok()) return r.status().WithContext("kernel " + std::string(name));
  return r;
}

const OpDef* Registry::FindOp(std::string_view name) const {
  MutexLock l(&mu_);
  auto it = ops_.find(name);
  return it == ops_.end() ? nullptr : &it->second.def;
}

const KernelDef* Registry::FindKernel(std::string_view name) const {
  MutexLock l(&mu_);
  auto it = kernels_.find(name);
  return it == kernels_.end() ? nullptr : &it->second.def;
}

std::vector<std::string> Registry::OpNames() const {
  MutexLock l(&mu_);
  std::vector<std::string> v;
  for (const auto& [k, f] : ops_) v.push_back(k);
  return v;
}

std::vector<std::string> Registry::KernelNames() const {
  MutexLock l(&mu_);
  std::vector<std::string> v;
  for (const auto& [k, f] : kernels_) v.push_back(k);
  return v;
}

const OpDef* FindOpDef(const DatasetNode& node) {
  return Registry::Global().FindOp(node.op());
}

}  // namespace sluice
