// Filter: keeps the input elements for which the predicate returns true.
#include "graph/attr.h"
#include "ops/op_util.h"
#include "ops/ops.h"
#include "runtime/iterator_base.h"

namespace sluice {
namespace {

class FilterDataset : public DatasetNode {
 public:
  FilterDataset(OpArgs args, ElementSpec spec, uint64_t seed)
      : DatasetNode("Filter", std::move(args), std::move(spec)), seed_(seed) {}

  // tf.data reports UNKNOWN for filter; an empty input is known to stay empty.
  int64_t Cardinality() const override {
    return input(0)->Cardinality() == 0 ? 0 : kUnknownCardinality;
  }
  const Function& predicate() const { return functions()[0]; }
  uint64_t seed() const { return seed_; }

 protected:
  Result<IteratorPtr> MakeIteratorInternal(
      const IteratorContext& ctx, const std::string& prefix) const override;

 private:
  uint64_t seed_;
};

class FilterIterator : public UnaryIterator {
 public:
  FilterIterator(const FilterDataset* ds, const std::string& prefix)
      : UnaryIterator(ds->shared(), prefix), ds_(ds) {}

 protected:
  Result<std::optional<Element>> GetNextInternal() override {
    while (true) {
      SLUICE_RETURN_IF_ERROR(CheckCancelled());
      SLUICE_ASSIGN_OR_RETURN(std::optional<Element> in, input_->GetNext());
      if (!in) return std::nullopt;
      // The element is consumed before the predicate runs, so a failing predicate
      // still moves the iterator on.
      FunctionContext fctx(ds_->seed(), position_++);
      SLUICE_ASSIGN_OR_RETURN(bool keep, ds_->predicate().Test(*in, fctx));
      if (keep) return in;
    }
  }

  Status SaveState(CheckpointWriter* w) const override {
    w->WriteInt(prefix(), "position", position_);
    return Status::OK();
  }

  Status RestoreState(const CheckpointReader& r) override {
    SLUICE_ASSIGN_OR_RETURN(position_, r.ReadInt(prefix(), "position"));
    if (position_ < 0) return DataLossError("Filter: negative position in checkpoint");
    return Status::OK();
  }

 private:
  const FilterDataset* ds_;
  int64_t position_ = 0;  // input elements consumed
};

Result<IteratorPtr> FilterDataset::MakeIteratorInternal(
    const IteratorContext&, const std::string& prefix) const {
  return IteratorPtr(new FilterIterator(this, prefix));
}

}  // namespace

void RegisterFilterDataset(Registry* r) {
  r->RegisterOp(
      OpDef("Filter")
          .Summary("The elements for which the predicate is true.")
          .Inputs(1)
          .Functions({Function::Kind::kPredicate})
          .Attr("seed", AttrType::kInt, int64_t{0}, "Seed of the function's random draws.")
          .Traits({.seed_mix = SeedMix::kNone}),
      [](OpArgs args) -> Result<DatasetPtr> {
     SLUICE_ASSIGN_OR_RETURN(int64_t seed,
                             GetAttrOr<int64_t>(args.attrs, "Filter", "seed", 0));
     ElementSpec spec = args.inputs[0]->element_spec();
     return DatasetPtr(std::make_shared<FilterDataset>(std::move(args), std::move(spec),
                                                       static_cast<uint64_t>(seed)));
   });
}

}  // namespace sluice
