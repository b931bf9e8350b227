#include "api/builtins.h"

#include "graph/dataset_access.h"
#include "ops/ops.h"

namespace sluice {

void InstallBuiltins() { Registry::InstallGlobal(&RegisterBuiltins); }

Registry& BuiltinRegistry() {
  InstallBuiltins();
  return Registry::Global();
}

// The public entry points that build nodes from names install the builtins first; the
// framework's versions (graph/dataset_access.h) do not.
Dataset Dataset::FromOp(std::string_view op, AttrMap attrs, std::vector<Dataset> inputs,
                        std::vector<Function> functions) {
  InstallBuiltins();
  return BuildDataset(op, std::move(attrs), std::move(inputs), std::move(functions));
}

Result<Function> Function::Kernel(std::string_view name, AttrMap attrs) {
  return BuiltinRegistry().CreateKernel(name, attrs);
}

}  // namespace sluice
