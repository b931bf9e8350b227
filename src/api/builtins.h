// The builtin ops and kernels in the global registry.
//
// The framework's Registry::Global() starts empty: the framework layer cannot name the ops
// layer (src/ops/) above it. The API layer, which sits above both, installs the builtins
// (src/ops/builtins.cc RegisterBuiltins) from every public entry point that builds a node
// (Dataset::FromOp and so every fluent method, Function::Kernel, DeserializeDataset,
// the spec loader) before it looks anything up. Code that holds a node may therefore rely
// on the builtins being there; in-tree tools and tests that read the registry before
// building anything call BuiltinRegistry().
//
// Thread-safety: both functions are thread-safe.
#ifndef SLUICE_API_BUILTINS_H_
#define SLUICE_API_BUILTINS_H_

#include "graph/registry.h"

namespace sluice {

// Registers the builtins in Registry::Global() once (later calls return at once).
void InstallBuiltins();

// Registry::Global() with the builtins installed.
Registry& BuiltinRegistry();

}  // namespace sluice

#endif  // SLUICE_API_BUILTINS_H_
