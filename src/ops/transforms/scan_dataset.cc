// Scan: carries a state through the input (tf.data scan). The function is called on
// (state..., element...) and returns (new state..., output...).
#include "graph/attr.h"
#include "ops/op_util.h"
#include "ops/ops.h"
#include "runtime/buffer_charge.h"
#include "runtime/iterator_base.h"

namespace sluice {
namespace {

class ScanDataset : public DatasetNode {
 public:
  ScanDataset(OpArgs args, ElementSpec spec, std::vector<Tensor> initial_state,
              uint64_t seed)
      : DatasetNode("Scan", std::move(args), std::move(spec)),
        initial_state_(std::move(initial_state)),
        seed_(seed) {}

  int64_t Cardinality() const override { return input(0)->Cardinality(); }
  const Function& fn() const { return functions()[0]; }
  uint64_t seed() const { return seed_; }
  const std::vector<Tensor>& initial_state() const { return initial_state_; }

 protected:
  Result<IteratorPtr> MakeIteratorInternal(
      const IteratorContext& ctx, const std::string& prefix) const override;

 private:
  std::vector<Tensor> initial_state_;
  uint64_t seed_;
};

class ScanIterator : public UnaryIterator {
 public:
  ScanIterator(const ScanDataset* ds, const std::string& prefix)
      : UnaryIterator(ds->shared(), prefix), ds_(ds), state_(ds->initial_state()) {}

 protected:
  // The state is charged as a held buffer (runtime/buffer_charge.h); its bytes change only
  // with string components.
  Status InitializeState(const IteratorContext& ctx) override {
    charge_.Bind(ctx, this, "a smaller scan state");
    return ChargeState();
  }

  Result<std::optional<Element>> GetNextInternal() override {
    SLUICE_ASSIGN_OR_RETURN(std::optional<Element> in, input_->GetNext());
    if (!in) return std::nullopt;
    // On any error below the element is consumed and the state is left unchanged.
    std::vector<Tensor> args = state_;
    for (Tensor& t : in->tensors()) args.push_back(std::move(t));
    FunctionContext fctx(ds_->seed(), position_++);
    SLUICE_ASSIGN_OR_RETURN(Element out, ds_->fn()(Element(std::move(args)), fctx));
    const size_t s = state_.size();
    if (out.size() < s) {
      return InvalidArgumentError("Scan: function '" + ds_->fn().name() + "' returned " +
                                  std::to_string(out.size()) +
                                  " components, fewer than the " + std::to_string(s) +
                                  " state components");
    }
    for (size_t i = 0; i < s; ++i) {
      const Tensor& t = out[i];
      if (t.dtype() != state_[i].dtype() || t.shape() != state_[i].shape()) {
        return InvalidArgumentError(
            "Scan: function '" + ds_->fn().name() + "' returned state component " +
            std::to_string(i) + " as " + std::string(DTypeName(t.dtype())) +
            t.shape().ToString() + ", but the state is " +
            std::string(DTypeName(state_[i].dtype())) + state_[i].shape().ToString());
      }
    }
    std::vector<Tensor> rest(out.tensors().begin() + s, out.tensors().end());
    for (size_t i = 0; i < s; ++i) state_[i] = std::move(out[i]);
    SLUICE_RETURN_IF_ERROR(ChargeState());
    Names names;
    if (out.names() && out.names()->size() == out.size()) {
      names = MakeNames(
          std::vector<std::string>(out.names()->begin() + s, out.names()->end()));
    }
    return Element(std::move(rest), std::move(names));
  }

  Status SaveState(CheckpointWriter* w) const override {
    w->WriteInt(prefix(), "position", position_);
    w->WriteElement(prefix(), "state", Element(state_));
    return Status::OK();
  }

  Status RestoreState(const CheckpointReader& r) override {
    SLUICE_ASSIGN_OR_RETURN(position_, r.ReadInt(prefix(), "position"));
    SLUICE_ASSIGN_OR_RETURN(Element state, r.ReadElement(prefix(), "state"));
    const auto& init = ds_->initial_state();
    if (state.size() != init.size()) {
      return DataLossError("checkpoint holds " + std::to_string(state.size()) +
                           " state components, the scan has " +
                           std::to_string(init.size()));
    }
    for (size_t i = 0; i < init.size(); ++i) {
      if (state[i].dtype() != init[i].dtype() || state[i].shape() != init[i].shape()) {
        return DataLossError("checkpoint state component " + std::to_string(i) + " is " +
                             state[i].DebugString(0) + ", expected " +
                             init[i].DebugString(0));
      }
    }
    state_ = state.ToVector();
    return ChargeState();
  }

 private:
  // Charges the state's current bytes (as one element).
  Status ChargeState() {
    int64_t bytes = 0;
    for (const Tensor& t : state_) bytes += static_cast<int64_t>(t.nbytes());
    if (bytes == charge_.bytes() && charge_.elements() == 1) return Status::OK();
    charge_.Remove(charge_.bytes(), charge_.elements());
    return charge_.Add(bytes);
  }

  const ScanDataset* ds_;
  std::vector<Tensor> state_;
  BufferCharge charge_;  // state_
  int64_t position_ = 0;
};

Result<IteratorPtr> ScanDataset::MakeIteratorInternal(
    const IteratorContext&, const std::string& prefix) const {
  return IteratorPtr(new ScanIterator(this, prefix));
}

// The output spec from the function's declared spec, when it has one.
Result<ElementSpec> ScanSpec(const Function& fn, const std::vector<Tensor>& state,
                             const ElementSpec& in) {
  if (in.unknown) return ElementSpec::Unknown();
  ElementSpec args;
  for (const Tensor& t : state)
    args.components.push_back({t.dtype(), PartialShape(t.shape())});
  for (const TensorSpec& c : in.components) args.components.push_back(c);
  auto declared = fn.OutputSpec(args);
  if (!declared) return ElementSpec::Unknown();
  if (!declared->ok()) return declared->status();
  const ElementSpec& out = **declared;
  if (out.unknown) return out;
  if (out.size() < state.size()) {
    return InvalidArgumentError("function '" + fn.name() + "' declares " +
                                std::to_string(out.size()) + " outputs for " +
                                std::to_string(state.size()) + " state components");
  }
  for (size_t i = 0; i < state.size(); ++i) {
    if (out[i].dtype != state[i].dtype() ||
        !out[i].shape.IsCompatibleWith(state[i].shape())) {
      return InvalidArgumentError(
          "function '" + fn.name() + "' declares state component " + std::to_string(i) +
          " as " + out[i].ToString() + ", but the state is " +
          std::string(DTypeName(state[i].dtype())) + state[i].shape().ToString());
    }
  }
  ElementSpec spec;
  spec.components.assign(out.components.begin() + state.size(), out.components.end());
  if (out.names && out.names->size() == out.size()) {
    spec.names = MakeNames(
        std::vector<std::string>(out.names->begin() + state.size(), out.names->end()));
  }
  return spec;
}

}  // namespace

void RegisterScanDataset(Registry* r) {
  r->RegisterOp(
      OpDef("Scan")
          .Summary("state' = fn(state..., element...); emits fn's outputs after the state.")
          .Inputs(1)
          .Functions({Function::Kind::kElement})
          .Attr("initial_state", AttrType::kTensorList, "The state's first value.")
          .Attr("seed", AttrType::kInt, int64_t{0}, "Seed of the function's random draws.")
          .Traits({.elementwise = true, .seed_mix = SeedMix::kNone}),
      [](OpArgs args) -> Result<DatasetPtr> {
     SLUICE_ASSIGN_OR_RETURN(
         auto state, GetAttr<std::vector<Tensor>>(args.attrs, "Scan", "initial_state"));
     SLUICE_ASSIGN_OR_RETURN(int64_t seed,
                             GetAttrOr<int64_t>(args.attrs, "Scan", "seed", 0));
     for (size_t i = 0; i < state.size(); ++i) {
       if (!state[i].valid()) {
         return InvalidArgumentError("Scan: initial state component " +
                                     std::to_string(i) + " is invalid");
       }
     }
     auto spec = ScanSpec(args.functions[0], state, args.inputs[0]->element_spec());
     if (!spec.ok()) return spec.status().WithContext("Scan");
     return DatasetPtr(std::make_shared<ScanDataset>(std::move(args), std::move(*spec),
                                                     std::move(state),
                                                     static_cast<uint64_t>(seed)));
   });
}

}  // namespace sluice
