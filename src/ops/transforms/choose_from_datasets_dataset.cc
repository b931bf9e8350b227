// ChooseFromDatasets: input 0 selects, for each output element, which of inputs 1..n
// gives it (tf.data choose_from_datasets). The selector yields int64 scalars in [0, n).
// A choice of an exhausted input ends the op with stop_on_empty_dataset (tf.data's
// default), and is skipped without; the op also ends when the selector does, or when
// every data input is exhausted. Errors of the selector or of a data input pass through;
// a selector value out of range is InvalidArgument naming it. Checkpoints hold the
// exhausted flags and every input's position.
#include <algorithm>

#include "graph/attr.h"
#include "ops/input_flags.h"
#include "ops/op_util.h"
#include "ops/ops.h"
#include "runtime/iterator_base.h"

namespace sluice {
namespace {

class ChooseFromDatasetsDataset : public DatasetNode {
 public:
  ChooseFromDatasetsDataset(OpArgs args, ElementSpec spec, bool stop_on_empty)
      : DatasetNode("ChooseFromDatasets", std::move(args), std::move(spec)),
        stop_on_empty_(stop_on_empty) {}

  // Infinite when the selector and every data input are; empty when the selector is;
  // otherwise unknown (as in tf.data).
  int64_t Cardinality() const override {
    if (input(0)->Cardinality() == 0) return 0;
    for (const DatasetPtr& in : inputs()) {
      if (in->Cardinality() != kInfiniteCardinality) return kUnknownCardinality;
    }
    return kInfiniteCardinality;
  }
  bool stop_on_empty() const { return stop_on_empty_; }

 protected:
  Result<IteratorPtr> MakeIteratorInternal(const IteratorContext& ctx,
                                           const std::string& prefix) const override;

 private:
  bool stop_on_empty_;
};

class ChooseFromDatasetsIterator : public IteratorBase {
 public:
  ChooseFromDatasetsIterator(const ChooseFromDatasetsDataset* ds,
                             const std::string& prefix)
      : IteratorBase(ds->shared(), prefix), ds_(ds) {}

  Status Initialize(const IteratorContext& ctx) override {
    for (size_t i = 0; i < node().inputs().size(); ++i) {
      SLUICE_ASSIGN_OR_RETURN(IteratorPtr it, MakeInput(ctx, i));
      inputs_.push_back(std::move(it));
    }
    exhausted_.assign(inputs_.size() - 1, false);
    return Status::OK();
  }

 protected:
  Result<std::optional<Element>> GetNextInternal() override {
    const int64_t n = static_cast<int64_t>(inputs_.size()) - 1;
    while (!ended_) {
      SLUICE_RETURN_IF_ERROR(CheckCancelled());
      if (std::find(exhausted_.begin(), exhausted_.end(), false) == exhausted_.end())
        break;
      SLUICE_ASSIGN_OR_RETURN(std::optional<Element> choice, inputs_[0]->GetNext());
      if (!choice) break;
      if (choice->size() != 1 || (*choice)[0].dtype() != DType::kInt64 ||
          (*choice)[0].rank() != 0) {
        return InvalidArgumentError(
            "ChooseFromDatasets: the selector must yield int64 "
            "scalars, got " +
            choice->DebugString());
      }
      const int64_t i = (*choice)[0].scalar<int64_t>();
      if (i < 0 || i >= n) {
        return InvalidArgumentError("ChooseFromDatasets: selector value " +
                                    std::to_string(i) + " is outside [0, " +
                                    std::to_string(n) + ")");
      }
      if (exhausted_[i]) {
        if (ds_->stop_on_empty()) break;
        continue;
      }
      SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, inputs_[i + 1]->GetNext());
      if (e) return e;
      exhausted_[i] = true;
      if (ds_->stop_on_empty()) break;
    }
    ended_ = true;
    return std::nullopt;
  }

  Status SaveInternal(CheckpointWriter* w) const override {
    w->WriteInt(prefix(), "ended", ended_ ? 1 : 0);
    return SaveInputsAndFlags(w, prefix(), "exhausted", exhausted_, inputs_);
  }

  Status RestoreInternal(const CheckpointReader& r) override {
    SLUICE_ASSIGN_OR_RETURN(int64_t ended, r.ReadInt(prefix(), "ended"));
    ended_ = ended != 0;
    return RestoreInputsAndFlags(r, prefix(), "exhausted", &exhausted_, &inputs_);
  }

 private:
  const ChooseFromDatasetsDataset* ds_;
  std::vector<IteratorPtr> inputs_;  // [selector, data inputs...]
  std::vector<bool> exhausted_;      // per data input
  bool ended_ = false;
};

Result<IteratorPtr> ChooseFromDatasetsDataset::MakeIteratorInternal(
    const IteratorContext&, const std::string& prefix) const {
  return IteratorPtr(new ChooseFromDatasetsIterator(this, prefix));
}

}  // namespace

void RegisterChooseFromDatasetsDataset(Registry* r) {
  r->RegisterOp(
      OpDef("ChooseFromDatasets")
          .Summary(
              "Elements of inputs 1..n in the order input 0 (int64 indices) selects.")
          .VariadicInputs(2)
          .Attr("stop_on_empty_dataset", AttrType::kBool, true,
                "End when the selected input is exhausted (else skip the choice).")
          .Traits({.seed_mix = SeedMix::kNone}),
      [](OpArgs args) -> Result<DatasetPtr> {
        SLUICE_ASSIGN_OR_RETURN(bool stop,
                                GetAttrOr<bool>(args.attrs, "ChooseFromDatasets",
                                                "stop_on_empty_dataset", true));
        const ElementSpec& sel = args.inputs[0]->element_spec();
        if (!sel.unknown && (sel.size() != 1 || sel[0].dtype != DType::kInt64 ||
                             (sel[0].shape.rank_known() && sel[0].shape.rank() != 0))) {
          return InvalidArgumentError(
              "ChooseFromDatasets: the selector must yield int64 "
              "scalars, its element spec is " +
              sel.ToString());
        }
        std::vector<const ElementSpec*> specs;
        for (size_t i = 1; i < args.inputs.size(); ++i) {
          specs.push_back(&args.inputs[i]->element_spec());
        }
        SLUICE_ASSIGN_OR_RETURN(ElementSpec spec,
                                CommonSpec(specs, "ChooseFromDatasets"));
        return DatasetPtr(std::make_shared<ChooseFromDatasetsDataset>(
            std::move(args), std::move(spec), stop));
      });
}

}  // namespace sluice
