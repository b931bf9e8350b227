// Small helpers shared by op implementations.
#ifndef SLUICE_OPS_OP_UTIL_H_
#define SLUICE_OPS_OP_UTIL_H_

#include <string>

#include "graph/dataset_node.h"

namespace sluice {

// InvalidArgument unless `args` has exactly `inputs` inputs and `functions` functions.
Status CheckArity(std::string_view op, const OpArgs& args, size_t inputs, size_t functions);
// InvalidArgument unless the function has the given kind (an element function whose result
// is one bool is accepted where a predicate is expected).
Status CheckFunctionKind(std::string_view op, const Function& f, Function::Kind kind);

// The spec of a batch of `spec` with leading dimension `batch` (-1: unknown).
ElementSpec BatchedSpec(const ElementSpec& spec, int64_t batch);
// The spec of one row of `spec` (drops dimension 0).
ElementSpec UnbatchedSpec(const ElementSpec& spec);

}  // namespace sluice

#endif  // SLUICE_OPS_OP_UTIL_H_
