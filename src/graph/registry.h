// Registry: op name -> (OpDef, dataset node factory), kernel name -> (KernelDef, function
// factory).
//
// Registration is explicit (Arrow compute/registry_internal.h style): RegisterBuiltins()
// calls one RegisterXxx(Registry*) per op or kernel family. No static initializers.
// Every op and kernel registers with its definition (graph/op_def.h); CreateOp and
// CreateKernel validate the parts against it before the factory runs, so factories see
// only declared attributes of the declared types, the declared number of inputs and
// functions of the declared kinds.
//
// The framework cannot name the ops layer above it, so the global registry starts empty and
// the API layer fills it: InstallGlobal(RegisterBuiltins) runs once, from every public
// entry point that builds a node (src/api/builtins.h), before the first node exists.
//
// Registering a name twice (or an op and a kernel under one name) is an error at startup:
// the registry keeps the first error in status(), InstallGlobal reports it on stderr, and every
// later CreateOp/CreateKernel returns it, so a duplicate builtin breaks every pipeline
// (and the registry test) instead of silently keeping one of the two.
//
// Thread-safety: InstallGlobal() registers the builtins exactly once; lookups are
// thread-safe after that. Registering while others look up is not supported.
#ifndef SLUICE_GRAPH_REGISTRY_H_
#define SLUICE_GRAPH_REGISTRY_H_

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/mutex.h"
#include "graph/dataset_node.h"
#include "graph/function_internal.h"
#include "graph/op_def.h"
#include "sluice/dataset.h"

namespace sluice {

using OpFactory = std::function<Result<DatasetPtr>(OpArgs args)>;
using KernelFactory = std::function<Result<Function>(const AttrMap& attrs)>;

class Registry {
 public:
  // The process-wide registry: the builtins are in it once InstallGlobal has run (every
  // public entry point that builds a node runs it first, so code that holds a node can
  // rely on them).
  static Registry& Global();
  // Runs `fill` on the global registry the first time it is called; later calls return
  // at once (after the first has finished). A registration error is reported on stderr.
  static void InstallGlobal(void (*fill)(Registry*));

  // A taken name (AlreadyExists) or an empty one is remembered in status(). Thread-safe:
  // registering and looking up may run concurrently.
  void RegisterOp(OpDef def, OpFactory factory);
  void RegisterKernel(KernelDef def, KernelFactory factory);
  // OK, or the first registration error.
  Status status() const;

  // NotFound (naming the closest name) when unknown; InvalidArgument when the parts do
  // not match the definition; otherwise the factory's result.
  Result<DatasetPtr> CreateOp(std::string_view name, OpArgs args) const;
  Result<Function> CreateKernel(std::string_view name, const AttrMap& attrs) const;

  // Definitions; null when unknown.
  const OpDef* FindOp(std::string_view name) const;
  const KernelDef* FindKernel(std::string_view name) const;

  std::vector<std::string> OpNames() const;
  std::vector<std::string> KernelNames() const;

 private:
  struct OpEntry {
    OpDef def;
    OpFactory factory;
  };
  struct KernelEntry {
    KernelDef def;
    KernelFactory factory;
  };
  const OpEntry* FindOpEntry(std::string_view name, Status* error) const;
  const KernelEntry* FindKernelEntry(std::string_view name, Status* error) const;

  // Registration may happen while other threads look ops up (a system above the API,
  // such as the service, registers its ops on first use). Entries are never changed or
  // removed once added, so a definition found under the lock stays valid after it.
  mutable Mutex mu_;
  std::map<std::string, OpEntry, std::less<>> ops_ GUARDED_BY(mu_);
  std::map<std::string, KernelEntry, std::less<>> kernels_ GUARDED_BY(mu_);
  Status status_ GUARDED_BY(mu_);
};

// The definition of a node's op in the global registry, or null for an op that is not
// registered there (only tests register private ops).
const OpDef* FindOpDef(const DatasetNode& node);

}  // namespace sluice

#endif  // SLUICE_GRAPH_REGISTRY_H_
