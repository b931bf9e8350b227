// FromTensors (one element) and FromTensorSlices (rows along dimension 0).
#include <algorithm>

#include "graph/attr.h"
#include "ops/ops.h"
#include "runtime/iterator_base.h"

namespace sluice {
namespace {

class FromTensorsDataset : public DatasetNode {
 public:
  FromTensorsDataset(std::string op, OpArgs args, ElementSpec spec, std::vector<Tensor> comps,
                     Names names, bool slices)
      : DatasetNode(std::move(op), std::move(args), std::move(spec)),
        comps_(std::move(comps)), names_(std::move(names)), slices_(slices) {
    const bool numeric = std::none_of(comps_.begin(), comps_.end(), [](const Tensor& c) {
      return c.dtype() == DType::kString;
    });
    if (slices_ && numeric) memory_rows_ = Element(comps_, names_);
  }

  int64_t Cardinality() const override { return num_rows(); }
  int64_t num_rows() const {
    if (!slices_) return 1;
    return comps_.empty() ? 0 : comps_[0].dim(0);
  }
  // The slices' tensors as rows in memory (numeric slices only), else null.
  const Element* MemoryRows() const { return memory_rows_.size() > 0 ? &memory_rows_ : nullptr; }
  Element Row(int64_t i) const {
    std::vector<Tensor> t;
    t.reserve(comps_.size());
    for (const Tensor& c : comps_) t.push_back(slices_ ? c.SubTensor(i) : c);
    return Element(std::move(t), names_);
  }

 protected:
  Result<IteratorPtr> MakeIteratorInternal(
      const IteratorContext& ctx, const std::string& prefix) const override;

 private:
  std::vector<Tensor> comps_;
  Names names_;
  bool slices_;
  Element memory_rows_;  // comps_ (sharing their buffers) when MemoryRows serves them
};

class FromTensorsIterator : public IndexedIterator {
 public:
  FromTensorsIterator(const FromTensorsDataset* ds, const std::string& prefix)
      : IndexedIterator(ds->shared(), prefix), ds_(ds) {}

 protected:
  int64_t num_rows() const override { return ds_->num_rows(); }
  Result<Element> Row(int64_t i) override { return ds_->Row(i); }
  const Element* MemoryRows() const override { return ds_->MemoryRows(); }

 private:
  const FromTensorsDataset* ds_;
};

Result<IteratorPtr> FromTensorsDataset::MakeIteratorInternal(
    const IteratorContext&, const std::string& prefix) const {
  return IteratorPtr(new FromTensorsIterator(this, prefix));
}

Result<DatasetPtr> Make(std::string op, OpArgs args, bool slices) {
  SLUICE_ASSIGN_OR_RETURN(auto comps, GetAttr<std::vector<Tensor>>(args.attrs, op, "components"));
  SLUICE_ASSIGN_OR_RETURN(auto names, GetAttrOr<std::vector<std::string>>(args.attrs, op, "names", {}));
  if (comps.empty()) return InvalidArgumentError(op + ": needs at least one component");
  if (!names.empty() && names.size() != comps.size()) {
    return InvalidArgumentError(op + ": " + std::to_string(names.size()) + " names for " +
                                std::to_string(comps.size()) + " components");
  }
  ElementSpec spec;
  for (size_t i = 0; i < comps.size(); ++i) {
    const Tensor& c = comps[i];
    if (!c.valid()) return InvalidArgumentError(op + ": component " + std::to_string(i) + " is invalid");
    if (slices) {
      if (c.rank() == 0) {
        return InvalidArgumentError(op + ": component " + std::to_string(i) +
                                    " is a scalar; slicing needs rank >= 1");
      }
      if (c.dim(0) != comps[0].dim(0)) {
        return InvalidArgumentError(op + ": components have different sizes in dimension 0 (" +
                                    std::to_string(comps[0].dim(0)) + " and " +
                                    std::to_string(c.dim(0)) + ")");
      }
      spec.components.push_back({c.dtype(), PartialShape(c.shape()).WithoutLeadingDim()});
    } else {
      spec.components.push_back({c.dtype(), PartialShape(c.shape())});
    }
  }
  Names n = names.empty() ? nullptr : MakeNames(names);
  spec.names = n;
  return DatasetPtr(std::make_shared<FromTensorsDataset>(op, std::move(args), std::move(spec),
                                                         std::move(comps), std::move(n), slices));
}

}  // namespace

void RegisterFromTensorsDataset(Registry* r) {
  auto def = [](std::string op, std::string summary, bool splittable) {
    return OpDef(std::move(op))
        .Summary(std::move(summary))
        .Inputs(0)
        .Attr("components", AttrType::kTensorList, "The element's tensors.")
        .Attr("names", AttrType::kStringList, std::vector<std::string>{},
              "Component names (empty, or one per component).")
        .Traits({.source = true,
                 .splittable = splittable,
                 .seed_mix = SeedMix::kNone,
                 .row_access = RowAccess::kSource});
  };
  r->RegisterOp(def("FromTensors", "One element made of the given tensors.", false),
                [](OpArgs a) { return Make("FromTensors", std::move(a), false); });
  r->RegisterOp(def("FromTensorSlices",
                    "The slices of the given tensors along dimension 0 (all share dim 0).",
                    true),
                [](OpArgs a) { return Make("FromTensorSlices", std::move(a), true); });
}

}  // namespace sluice
