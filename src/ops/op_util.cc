#include "ops/op_util.h"

namespace sluice {

Status CheckArity(std::string_view op, const OpArgs& args, size_t inputs, size_t functions) {
  if (args.inputs.size() != inputs) {
    return InvalidArgumentError(std::string(op) + ": expects " + std::to_string(inputs) +
                                " input(s), got " + std::to_string(args.inputs.size()));
  }
  if (args.functions.size() != functions) {
    return InvalidArgumentError(std::string(op) + ": expects " + std::to_string(functions) +
                                " function(s), got " + std::to_string(args.functions.size()));
  }
  return Status::OK();
}

Status CheckFunctionKind(std::string_view op, const Function& f, Function::Kind kind) {
  Function::Kind k = f.kind();
  if (k == kind) return Status::OK();
  if (kind == Function::Kind::kPredicate && k == Function::Kind::kElement) return Status::OK();
  const char* want = kind == Function::Kind::kElement     ? "an element -> element function"
                     : kind == Function::Kind::kPredicate ? "a predicate"
                                                          : "an element -> dataset function";
  return InvalidArgumentError(std::string(op) + ": function '" + f.name() + "' must be " + want);
}

ElementSpec BatchedSpec(const ElementSpec& spec, int64_t batch) {
  if (spec.unknown) return spec;
  ElementSpec out;
  out.names = spec.names;
  for (const TensorSpec& c : spec.components) {
    out.components.push_back({c.dtype, c.shape.WithLeadingDim(batch)});
  }
  return out;
}

ElementSpec UnbatchedSpec(const ElementSpec& spec) {
  if (spec.unknown) return spec;
  ElementSpec out;
  out.names = spec.names;
  for (const TensorSpec& c : spec.components) {
    out.components.push_back({c.dtype, c.shape.WithoutLeadingDim()});
  }
  return out;
}

}  // namespace sluice
