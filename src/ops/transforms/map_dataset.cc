#include "graph/attr.h"
#include "ops/op_util.h"
#include "ops/ops.h"
#include "runtime/iterator_base.h"

namespace sluice {
namespace {

class MapDataset : public DatasetNode {
 public:
  MapDataset(OpArgs args, ElementSpec spec, uint64_t seed)
      : DatasetNode("Map", std::move(args), std::move(spec)), seed_(seed) {}

  int64_t Cardinality() const override { return input(0)->Cardinality(); }
  const Function& fn() const { return functions()[0]; }
  uint64_t seed() const { return seed_; }

 protected:
  Result<IteratorPtr> MakeIteratorInternal(
      const IteratorContext& ctx, const std::string& prefix) const override;

 private:
  uint64_t seed_;
};

class MapIterator : public UnaryIterator {
 public:
  MapIterator(const MapDataset* ds, const std::string& prefix)
      : UnaryIterator(ds->shared(), prefix), ds_(ds) {}

 protected:
  Result<std::optional<Element>> GetNextInternal() override {
    Result<std::optional<Element>> r = input_->GetNext();
    if (r.ok() && r->has_value()) [[likely]] {
      FunctionContext fctx(ds_->seed(), position_++);
      const ElementSource source(**r);
      Status s = ds_->fn().Apply(&**r, fctx);
      if (!s.ok()) [[unlikely]] {
        r = ElementError(s, position_ - 1, source);
      }
    }
    return r;
  }

  Result<int64_t> SkipInternal(int64_t n) override {
    if (!ds_->fn().traits().skippable) return IteratorBase::SkipInternal(n);
    SLUICE_ASSIGN_OR_RETURN(int64_t k, input_->Skip(n));
    position_ += k;
    return k;
  }

  Status SaveState(CheckpointWriter* w) const override {
    w->WriteInt(prefix(), "position", position_);
    return Status::OK();
  }

  Status RestoreState(const CheckpointReader& r) override {
    SLUICE_ASSIGN_OR_RETURN(position_, r.ReadInt(prefix(), "position"));
    return Status::OK();
  }

 private:
  const MapDataset* ds_;
  int64_t position_ = 0;
};

Result<IteratorPtr> MapDataset::MakeIteratorInternal(
    const IteratorContext&, const std::string& prefix) const {
  return IteratorPtr(new MapIterator(this, prefix));
}

}  // namespace

void RegisterMapDataset(Registry* r) {
  r->RegisterOp("Map", [](OpArgs args) -> Result<DatasetPtr> {
     SLUICE_RETURN_IF_ERROR(CheckArity("Map", args, 1, 1));
     SLUICE_RETURN_IF_ERROR(CheckFunctionKind("Map", args.functions[0], Function::Kind::kElement));
     SLUICE_ASSIGN_OR_RETURN(int64_t seed, GetAttrOr<int64_t>(args.attrs, "Map", "seed", 0));
     ElementSpec spec = ElementSpec::Unknown();
     if (auto s = args.functions[0].OutputSpec(args.inputs[0]->element_spec())) {
       if (!s->ok()) return s->status().WithContext("Map");
       spec = **s;
     }
     return DatasetPtr(std::make_shared<MapDataset>(std::move(args), std::move(spec),
                                                    static_cast<uint64_t>(seed)));
   }).IgnoreError();
}

}  // namespace sluice
