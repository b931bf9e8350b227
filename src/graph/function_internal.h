// Internals of Function and FunctionContext (sluice/function.h) for the framework, the
// ops and the optimizer: wrapping a kernel implementation (the registry's kernel
// factories), fusing two functions (map_fusion, filter_fusion), and output slots.
//
// Output slots: where the caller stores each output component anyway (MapAndBatch offers
// the element's rows of the batch it assembles). A kernel that creates output component
// `i` as a new tensor calls NewOutput(ctx, i, dtype, shape) and writes its result there:
// it gets the slot offered for i when dtype and shape match exactly and the slot was not
// handed out before in this call, else a newly allocated tensor (ResourceExhausted for
// absurd sizes, as Tensor::Allocate). Writing into the slot saves copying the result into
// the batch. Whoever applies several functions in a row (fusion) offers the slots to the
// last one only: an earlier stage's output is read by a later one, so it must not live
// where the final result goes. `slots` must outlive the call.
//
// Thread-safety: as Function (immutable) and FunctionContext (one call).
#ifndef SLUICE_GRAPH_FUNCTION_INTERNAL_H_
#define SLUICE_GRAPH_FUNCTION_INTERNAL_H_

#include <cstdint>
#include <span>
#include <string>

#include "sluice/function.h"

namespace sluice {

namespace internal {
struct FunctionAccess {
  static Function MakeKernel(std::string name, AttrMap attrs, Function::ElementFn fn,
                             FunctionTraits traits, Function::SpecFn spec,
                             Function::PredicateFn pred, Function::DatasetFn dfn);
  static Function Compose(const Function& first, uint64_t first_seed,
                          const Function& second, uint64_t second_seed);
  static Function Conjunction(const Function& first, uint64_t first_seed,
                              const Function& second, uint64_t second_seed);
};

struct FunctionContextAccess {
  static void OfferOutputSlots(FunctionContext& ctx, std::span<const Tensor> slots) {
    ctx.slots_ = slots;
    ctx.taken_ = 0;
  }
  static std::span<const Tensor> OutputSlots(const FunctionContext& ctx) {
    return ctx.slots_;
  }
  static Result<Tensor> NewOutput(FunctionContext& ctx, size_t component, DType dtype,
                                  const Shape& shape);
};
}  // namespace internal

// A registered kernel's function (serializable): what kernel factories return.
inline Function MakeKernelFunction(std::string name, AttrMap attrs,
                                   Function::ElementFn fn, FunctionTraits traits,
                                   Function::SpecFn spec = nullptr,
                                   Function::PredicateFn pred = nullptr,
                                   Function::DatasetFn dfn = nullptr) {
  return internal::FunctionAccess::MakeKernel(std::move(name), std::move(attrs),
                                              std::move(fn), traits, std::move(spec),
                                              std::move(pred), std::move(dfn));
}

// Fusion (the optimizer's map_fusion and filter_fusion, src/optimizer/). Each stage runs
// with FunctionContext(its own seed, the fused call's position), so its random draws are
// the ones it made in its own op. The result is a local callable (not serializable:
// rewrites run when an iterator is made, after serialization), named "a+b"; it is random
// if either stage is, skippable if both are, stateful if either is.
//   ComposeFunctions: x -> second(first(x)) (element functions; spec composed when
//                     declared).
//   ConjoinFunctions: x -> first(x) && second(x), `second` not called when first is false
//                     (predicates, or element functions returning one bool).
inline Function ComposeFunctions(const Function& first, uint64_t first_seed,
                                 const Function& second, uint64_t second_seed) {
  return internal::FunctionAccess::Compose(first, first_seed, second, second_seed);
}
inline Function ConjoinFunctions(const Function& first, uint64_t first_seed,
                                 const Function& second, uint64_t second_seed) {
  return internal::FunctionAccess::Conjunction(first, first_seed, second, second_seed);
}

// Output slots (see the top of this file).
inline void OfferOutputSlots(FunctionContext& ctx, std::span<const Tensor> slots) {
  internal::FunctionContextAccess::OfferOutputSlots(ctx, slots);
}
inline std::span<const Tensor> OutputSlots(const FunctionContext& ctx) {
  return internal::FunctionContextAccess::OutputSlots(ctx);
}
inline Result<Tensor> NewOutput(FunctionContext& ctx, size_t component, DType dtype,
                                const Shape& shape) {
  return internal::FunctionContextAccess::NewOutput(ctx, component, dtype, shape);
}

}  // namespace sluice

#endif  // SLUICE_GRAPH_FUNCTION_INTERNAL_H_
