// Concatenate: the elements of input 0, then those of input 1. The inputs must agree on
// the number of components, their dtypes and their names; each output shape is the most
// specific shape compatible with both.
#include "graph/attr.h"
#include "ops/op_util.h"
#include "ops/ops.h"
#include "runtime/iterator_base.h"

namespace sluice {
namespace {

class ConcatenateDataset : public DatasetNode {
 public:
  // The cardinality is computed once: asking the inputs on every call would take time
  // exponential in the depth of a graph whose nodes are shared.
  ConcatenateDataset(OpArgs args, ElementSpec spec)
      : DatasetNode("Concatenate", std::move(args), std::move(spec)),
        cardinality_(CardinalityPlus(input(0)->Cardinality(), input(1)->Cardinality())) {}

  int64_t Cardinality() const override { return cardinality_; }

 protected:
  Result<IteratorPtr> MakeIteratorInternal(
      const IteratorContext& ctx, const std::string& prefix) const override;

 private:
  const int64_t cardinality_;
};

class ConcatenateIterator : public IteratorBase {
 public:
  ConcatenateIterator(const ConcatenateDataset* ds, const std::string& prefix)
      : IteratorBase(ds->shared(), prefix) {}

  Status Initialize(const IteratorContext& ctx) override {
    ctx_ = ctx;
    SLUICE_ASSIGN_OR_RETURN(input_, MakeInput(ctx_, 0));
    return Status::OK();
  }

 protected:
  Result<std::optional<Element>> GetNextInternal() override {
    while (input_) {
      SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, input_->GetNext());
      if (e) return e;
      SLUICE_RETURN_IF_ERROR(NextInput());
    }
    return std::nullopt;
  }

  Result<int64_t> SkipInternal(int64_t n) override {
    int64_t done = 0;
    while (input_ && done < n) {
      SLUICE_ASSIGN_OR_RETURN(int64_t k, input_->Skip(n - done));
      done += k;
      if (done < n) SLUICE_RETURN_IF_ERROR(NextInput());
    }
    return done;
  }

  Status SaveInternal(CheckpointWriter* w) const override {
    w->WriteInt(prefix(), "index", input_ ? index_ : 2);
    return input_ ? input_->Save(w) : Status::OK();
  }

  Status RestoreInternal(const CheckpointReader& r) override {
    SLUICE_ASSIGN_OR_RETURN(int64_t index, r.ReadInt(prefix(), "index"));
    if (index < 0 || index > 2) {
      return DataLossError("Concatenate: bad input index " + std::to_string(index) +
                           " in checkpoint");
    }
    index_ = index;
    input_.reset();
    if (index_ == 2) return Status::OK();
    SLUICE_ASSIGN_OR_RETURN(input_, MakeInput(ctx_, index_));
    return input_->Restore(r);
  }

 private:
  Status NextInput() {
    input_.reset();
    if (++index_ >= 2) return Status::OK();
    SLUICE_ASSIGN_OR_RETURN(input_, MakeInput(ctx_, index_));
    return Status::OK();
  }

  IteratorContext ctx_;
  IteratorPtr input_;  // null once both inputs ended
  int64_t index_ = 0;                    // which input is current
};

Result<IteratorPtr> ConcatenateDataset::MakeIteratorInternal(
    const IteratorContext&, const std::string& prefix) const {
  return IteratorPtr(new ConcatenateIterator(this, prefix));
}

Result<ElementSpec> ConcatenatedSpec(const ElementSpec& a, const ElementSpec& b) {
  if (a.unknown || b.unknown) return ElementSpec::Unknown();
  bool same_names = (a.names == nullptr) == (b.names == nullptr) &&
                    (a.names == nullptr || *a.names == *b.names);
  bool ok = a.size() == b.size() && same_names;
  for (size_t i = 0; ok && i < a.size(); ++i) ok = a[i].dtype == b[i].dtype;
  if (!ok) {
    return InvalidArgumentError("Concatenate: incompatible element specs " +
                                a.ToString() + " and " + b.ToString() +
                                " (need the same components, dtypes and names)");
  }
  ElementSpec out;
  out.names = a.names;
  for (size_t i = 0; i < a.size(); ++i) {
    out.components.push_back({a[i].dtype, a[i].shape.MostSpecificCompatible(b[i].shape)});
  }
  return out;
}

}  // namespace

void RegisterConcatenateDataset(Registry* r) {
  r->RegisterOp(
      OpDef("Concatenate")
          .Summary("The elements of its first input, then those of its second.")
          .Inputs(2)
          .Traits({.seed_mix = SeedMix::kNone}),
      [](OpArgs args) -> Result<DatasetPtr> {
     SLUICE_ASSIGN_OR_RETURN(ElementSpec spec,
                             ConcatenatedSpec(args.inputs[0]->element_spec(),
                                              args.inputs[1]->element_spec()));
     return DatasetPtr(
         std::make_shared<ConcatenateDataset>(std::move(args), std::move(spec)));
   });
}

}  // namespace sluice
