#include "graph/function_internal.h"
#include "graph/registry.h"
#include "runtime/exception_status.h"
#include "sluice/dataset.h"

namespace sluice {

struct Function::Impl {
  std::string name;
  AttrMap attrs;
  bool kernel = false;
  Traits traits;
  ElementFn fn;
  PredicateFn pred;
  DatasetFn dfn;
  SpecFn spec;
  // A composition's stages (Compose): the functions it applies in order, each with the
  // seed of the op it came from. Empty for other functions.
  struct Stage {
    Function fn;
    uint64_t seed;
  };
  std::vector<Stage> stages;
  // Applies `stages` in order to `e` in place, each with its own seed and the call's
  // position; the last is offered the call's output slots.
  static Status ApplyStages(const std::vector<Stage>& stages, Element* e,
                            FunctionContext& ctx) {
    const size_t last = stages.size() - 1;
    for (size_t i = 0; i <= last; ++i) {
      FunctionContext c(stages[i].seed, ctx.position());
      c.set_env(ctx.env());
      if (i == last) OfferOutputSlots(c, OutputSlots(ctx));  // the result's slots
      SLUICE_RETURN_IF_ERROR(stages[i].fn.Apply(e, c));
    }
    return Status::OK();
  }
};

Function Function::Map(std::string name, ElementFn fn, Traits traits, SpecFn spec) {
  Function f;
  auto impl = std::make_shared<Impl>();
  impl->name = std::move(name);
  impl->traits = traits;
  impl->fn = std::move(fn);
  impl->spec = std::move(spec);
  f.impl_ = std::move(impl);
  return f;
}

Function Function::Predicate(std::string name, PredicateFn fn, Traits traits) {
  Function f;
  auto impl = std::make_shared<Impl>();
  impl->name = std::move(name);
  impl->traits = traits;
  impl->pred = std::move(fn);
  f.impl_ = std::move(impl);
  return f;
}

Function Function::DatasetFunction(std::string name, Function::DatasetFn fn, Traits traits,
                                   SpecFn spec) {
  Function f;
  auto impl = std::make_shared<Impl>();
  impl->name = std::move(name);
  impl->traits = traits;
  impl->dfn = std::move(fn);
  impl->spec = std::move(spec);
  f.impl_ = std::move(impl);
  return f;
}

Function internal::FunctionAccess::MakeKernel(
    std::string name, AttrMap attrs, Function::ElementFn fn, FunctionTraits traits,
    Function::SpecFn spec, Function::PredicateFn pred, Function::DatasetFn dfn) {
  Function f;
  auto impl = std::make_shared<Function::Impl>();
  impl->name = std::move(name);
  impl->attrs = std::move(attrs);
  impl->kernel = true;
  impl->traits = traits;
  impl->fn = std::move(fn);
  impl->spec = std::move(spec);
  impl->pred = std::move(pred);
  impl->dfn = std::move(dfn);
  f.impl_ = std::move(impl);
  return f;
}

namespace {
FunctionTraits FusedTraits(const FunctionTraits& a, const FunctionTraits& b) {
  return {.is_random = a.is_random || b.is_random,
          .skippable = a.skippable && b.skippable,
          .stateful = a.stateful || b.stateful,
          .cheap = a.cheap && b.cheap,
          // Known only when both stages are (a cheap stage counts as free per byte).
          .ns_per_byte = (a.cheap || a.ns_per_byte > 0) && (b.cheap || b.ns_per_byte > 0) &&
                                 !(a.cheap && b.cheap)
                             ? a.ns_per_byte + b.ns_per_byte
                             : 0};
}
}  // namespace

Result<Tensor> internal::FunctionContextAccess::NewOutput(FunctionContext& ctx,
                                                          size_t component, DType dtype,
                                                          const Shape& shape) {
  if (component < ctx.slots_.size() && component < 64 &&
      (ctx.taken_ >> component & 1) == 0) {
    const Tensor& slot = ctx.slots_[component];
    if (slot.dtype() == dtype && slot.shape() == shape && dtype != DType::kString) {
      ctx.taken_ |= uint64_t{1} << component;
      return slot;  // a view of the caller's buffer
    }
  }
  return Tensor::Allocate(dtype, shape);
}

Function internal::FunctionAccess::Compose(const Function& first, uint64_t first_seed,
                                           const Function& second, uint64_t second_seed) {
  if (!first.valid() || !second.valid()) return Function();
  Function::SpecFn spec;
  if (first.impl_->spec || second.impl_->spec) {
    // What the two ops declared: an undeclared stage yields an unknown spec.
    spec = [first, second](const ElementSpec& in) -> Result<ElementSpec> {
      ElementSpec mid = ElementSpec::Unknown();
      if (auto s = first.OutputSpec(in)) {
        SLUICE_ASSIGN_OR_RETURN(mid, std::move(*s));
      }
      if (auto s = second.OutputSpec(mid)) return std::move(*s);
      return ElementSpec::Unknown();
    };
  }
  // Nested compositions are flattened: one loop over the stages applies each in place on
  // one element, so fusing n maps costs n applications, not a chain of nested calls.
  using Stage = Function::Impl::Stage;
  std::vector<Stage> stages;
  const auto add = [&stages](const Function& f, uint64_t seed) {
    const std::vector<Stage>& inner = f.impl_->stages;
    if (inner.empty()) {
      stages.push_back({f, seed});
    } else {
      stages.insert(stages.end(), inner.begin(), inner.end());
    }
  };
  add(first, first_seed);
  add(second, second_seed);
  Function fused = Function::Map(
      first.name() + "+" + second.name(),
      [stages](Element&& e, FunctionContext& ctx) -> Result<Element> {
        SLUICE_RETURN_IF_ERROR(Function::Impl::ApplyStages(stages, &e, ctx));
        return std::move(e);
      },
      FusedTraits(first.traits(), second.traits()), std::move(spec));
  std::const_pointer_cast<Function::Impl>(fused.impl_)->stages = std::move(stages);
  return fused;
}

Function internal::FunctionAccess::Conjunction(const Function& first, uint64_t first_seed,
                                               const Function& second,
                                               uint64_t second_seed) {
  if (!first.valid() || !second.valid()) return Function();
  return Function::Predicate(
      first.name() + "+" + second.name(),
      [first, second, first_seed, second_seed](const Element& e,
                                               FunctionContext& ctx) -> Result<bool> {
        FunctionContext c1(first_seed, ctx.position());
        c1.set_env(ctx.env());
        SLUICE_ASSIGN_OR_RETURN(bool keep, first.Test(e, c1));
        if (!keep) return false;
        FunctionContext c2(second_seed, ctx.position());
        c2.set_env(ctx.env());
        return second.Test(e, c2);
      },
      FusedTraits(first.traits(), second.traits()));
}

Function::Kind Function::kind() const {
  if (!impl_) return Kind::kInvalid;
  if (impl_->fn) return Kind::kElement;
  if (impl_->pred) return Kind::kPredicate;
  if (impl_->dfn) return Kind::kDataset;
  return Kind::kInvalid;
}

const std::string& Function::name() const {
  static const std::string* const kNone = new std::string("<invalid function>");
  return impl_ ? impl_->name : *kNone;
}

const AttrMap& Function::attrs() const {
  static const AttrMap* const kEmpty = new AttrMap();
  return impl_ ? impl_->attrs : *kEmpty;
}

bool Function::serializable() const { return impl_ && impl_->kernel; }

const Function::Traits& Function::traits() const {
  static const Traits kDefault;
  return impl_ ? impl_->traits : kDefault;
}

Result<Element> Function::operator()(Element in, FunctionContext& ctx) const {
  if (!impl_ || !impl_->fn) {
    return InvalidArgumentError("function '" + name() + "' is not an element -> element function");
  }
  Result<Element> r = InternalError("unset");
  try {
    r = impl_->fn(std::move(in), ctx);
  } SLUICE_RETHROW_FORCED_UNWIND catch (...) {
    r = StatusFromException("'" + impl_->name + "'");
  }
  if (!r.ok()) [[unlikely]] r = r.status().WithContext("in function '" + impl_->name + "'");
  return r;
}

Status Function::Apply(Element* inout, FunctionContext& ctx) const {
  if (!impl_ || !impl_->fn) [[unlikely]] {
    return InvalidArgumentError("function '" + name() + "' is not an element -> element function");
  }
  if (!impl_->stages.empty()) {
    // A composition applies its stages here, in place, as its ElementFn does (Compose),
    // without the extra call through it and the Result it returns.
    Status s = Impl::ApplyStages(impl_->stages, inout, ctx);
    if (!s.ok()) [[unlikely]] return s.WithContext("in function '" + impl_->name + "'");
    return Status::OK();
  }
  Result<Element> r = [&]() -> Result<Element> {
    try {
      return impl_->fn(std::move(*inout), ctx);
    } SLUICE_RETHROW_FORCED_UNWIND catch (...) {
      return StatusFromException("'" + impl_->name + "'");
    }
  }();
  if (!r.ok()) [[unlikely]] {
    return r.status().WithContext("in function '" + impl_->name + "'");
  }
  *inout = std::move(r).value();
  return Status::OK();
}

Result<bool> Function::Test(const Element& in, FunctionContext& ctx) const {
  if (impl_ && impl_->pred) {
    Result<bool> r = InternalError("unset");
    try {
      r = impl_->pred(in, ctx);
    } SLUICE_RETHROW_FORCED_UNWIND catch (...) {
      r = StatusFromException("'" + impl_->name + "'");
    }
    if (!r.ok()) return r.status().WithContext("in predicate '" + impl_->name + "'");
    return r;
  }
  if (impl_ && impl_->fn) {
    SLUICE_ASSIGN_OR_RETURN(Element out, (*this)(in, ctx));
    if (out.size() != 1 || out[0].dtype() != DType::kBool || out[0].num_elements() != 1) {
      return InvalidArgumentError("predicate '" + impl_->name +
                                  "' must return one bool scalar, got " + out.DebugString(2));
    }
    return out[0].scalar<bool>();
  }
  return InvalidArgumentError("function '" + name() + "' is not a predicate");
}

Result<Dataset> Function::MakeDataset(Element in, FunctionContext& ctx) const {
  if (!impl_ || !impl_->dfn) {
    return InvalidArgumentError("function '" + name() + "' is not an element -> dataset function");
  }
  Result<Dataset> r = InternalError("unset");
  try {
    r = impl_->dfn(std::move(in), ctx);
  } SLUICE_RETHROW_FORCED_UNWIND catch (...) {
    r = StatusFromException("'" + impl_->name + "'");
  }
  if (!r.ok()) return r.status().WithContext("in function '" + impl_->name + "'");
  if (!r->ok()) return r->status().WithContext("in function '" + impl_->name + "'");
  return r;
}

std::optional<Result<ElementSpec>> Function::OutputSpec(const ElementSpec& in) const {
  if (!impl_ || !impl_->spec) return std::nullopt;
  return impl_->spec(in);
}

}  // namespace sluice
