// TakeWhile: the input's elements up to (not including) the first for which the predicate
// is false (tf.data take_while). An error of the input or of the predicate passes through
// and does not end the op (the element is consumed, as in Filter).
#include "graph/attr.h"
#include "ops/ops.h"
#include "runtime/iterator_base.h"

namespace sluice {
namespace {

class TakeWhileDataset : public DatasetNode {
 public:
  TakeWhileDataset(OpArgs args, ElementSpec spec, uint64_t seed)
      : DatasetNode("TakeWhile", std::move(args), std::move(spec)), seed_(seed) {}

  // As tf.data: unknown, except that an empty input stays empty.
  int64_t Cardinality() const override {
    return input(0)->Cardinality() == 0 ? 0 : kUnknownCardinality;
  }
  const Function& predicate() const { return functions()[0]; }
  uint64_t seed() const { return seed_; }

 protected:
  Result<IteratorPtr> MakeIteratorInternal(const IteratorContext& ctx,
                                           const std::string& prefix) const override;

 private:
  uint64_t seed_;
};

class TakeWhileIterator : public UnaryIterator {
 public:
  TakeWhileIterator(const TakeWhileDataset* ds, const std::string& prefix)
      : UnaryIterator(ds->shared(), prefix), ds_(ds) {}

 protected:
  Result<std::optional<Element>> GetNextInternal() override {
    if (ended_) return std::nullopt;
    SLUICE_RETURN_IF_ERROR(CheckCancelled());
    SLUICE_ASSIGN_OR_RETURN(std::optional<Element> in, input_->GetNext());
    if (!in) {
      ended_ = true;
      return std::nullopt;
    }
    FunctionContext fctx(ds_->seed(), position_++);
    SLUICE_ASSIGN_OR_RETURN(bool keep, ds_->predicate().Test(*in, fctx));
    if (!keep) {
      ended_ = true;
      return std::nullopt;
    }
    return in;
  }

  Status SaveState(CheckpointWriter* w) const override {
    w->WriteInt(prefix(), "position", position_);
    w->WriteInt(prefix(), "ended", ended_ ? 1 : 0);
    return Status::OK();
  }

  Status RestoreState(const CheckpointReader& r) override {
    SLUICE_ASSIGN_OR_RETURN(position_, r.ReadInt(prefix(), "position"));
    SLUICE_ASSIGN_OR_RETURN(int64_t ended, r.ReadInt(prefix(), "ended"));
    if (position_ < 0) return DataLossError("TakeWhile: negative position in checkpoint");
    ended_ = ended != 0;
    return Status::OK();
  }

 private:
  const TakeWhileDataset* ds_;
  int64_t position_ = 0;  // input elements consumed
  bool ended_ = false;
};

Result<IteratorPtr> TakeWhileDataset::MakeIteratorInternal(
    const IteratorContext&, const std::string& prefix) const {
  return IteratorPtr(new TakeWhileIterator(this, prefix));
}

}  // namespace

void RegisterTakeWhileDataset(Registry* r) {
  r->RegisterOp(OpDef("TakeWhile")
                    .Summary("The input's elements until the predicate is first false.")
                    .Inputs(1)
                    .Functions({Function::Kind::kPredicate})
                    .Attr("seed", AttrType::kInt, int64_t{0},
                          "Seed of the function's random draws.")
                    .Traits({.seed_mix = SeedMix::kNone}),
                [](OpArgs args) -> Result<DatasetPtr> {
                  SLUICE_ASSIGN_OR_RETURN(
                      int64_t seed,
                      GetAttrOr<int64_t>(args.attrs, "TakeWhile", "seed", 0));
                  ElementSpec spec = args.inputs[0]->element_spec();
                  return DatasetPtr(std::make_shared<TakeWhileDataset>(
                      std::move(args), std::move(spec), static_cast<uint64_t>(seed)));
                });
}

}  // namespace sluice
