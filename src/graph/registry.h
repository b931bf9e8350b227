// Registry: op name -> dataset node factory, kernel name -> function factory.
//
// Registration is explicit (Arrow compute/registry_internal.h style): RegisterBuiltins()
// calls one RegisterXxx(Registry*) per op or kernel family. No static initializers.
//
// Thread-safety: Global() registers the builtins exactly once; lookups are thread-safe
// after that. Registering while others look up is not supported.
#ifndef SLUICE_GRAPH_REGISTRY_H_
#define SLUICE_GRAPH_REGISTRY_H_

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "graph/dataset_node.h"
#include "sluice/dataset.h"

namespace sluice {

using OpFactory = std::function<Result<DatasetPtr>(OpArgs args)>;
using KernelFactory = std::function<Result<Function>(const AttrMap& attrs)>;

class Registry {
 public:
  // The process-wide registry with all builtins registered.
  static Registry& Global();

  // AlreadyExists when the name is taken.
  Status RegisterOp(std::string name, OpFactory factory);
  Status RegisterKernel(std::string name, KernelFactory factory);

  // NotFound (listing close names) when unknown; otherwise the factory's result.
  Result<DatasetPtr> CreateOp(std::string_view name, OpArgs args) const;
  Result<Function> CreateKernel(std::string_view name, const AttrMap& attrs) const;

  std::vector<std::string> OpNames() const;
  std::vector<std::string> KernelNames() const;

 private:
  std::map<std::string, OpFactory, std::less<>> ops_;
  std::map<std::string, KernelFactory, std::less<>> kernels_;
};

// Registers every builtin op and kernel (src/ops/builtins.cc).
void RegisterBuiltins(Registry* registry);

}  // namespace sluice

#endif  // SLUICE_GRAPH_REGISTRY_H_
