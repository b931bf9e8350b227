// SampleFromDatasets: each element comes from input i with probability weights[i]
// (normalized; tf.data sample_from_datasets). Draw k is made with Philox keyed by the
// seed (mixed with the iteration's seed_mix under rerandomize_each_iteration) and stream
// k, so a checkpoint holds the draw count, the exhausted flags and the inputs' positions.
// A draw of an exhausted input ends the op with stop_on_empty_dataset; without it
// (tf.data's default) that input's weight drops out and the draw is made again among the
// rest. The op ends when every input is exhausted. Errors of an input pass through.
#include <limits>

#include "graph/attr.h"
#include "ops/input_flags.h"
#include "ops/op_util.h"
#include "ops/ops.h"
#include "runtime/iterator_base.h"
#include "sluice/random.h"

namespace sluice {
namespace {

class SampleFromDatasetsDataset : public DatasetNode {
 public:
  SampleFromDatasetsDataset(OpArgs args, ElementSpec spec, std::vector<double> weights,
                            uint64_t seed, bool stop_on_empty, bool rerandomize)
      : DatasetNode("SampleFromDatasets", std::move(args), std::move(spec)),
        weights_(std::move(weights)),
        seed_(seed),
        stop_on_empty_(stop_on_empty),
        rerandomize_(rerandomize) {}

  // Infinite when every input with a positive weight is; otherwise unknown.
  int64_t Cardinality() const override {
    for (size_t i = 0; i < inputs().size(); ++i) {
      if (weights_[i] > 0 && input(i)->Cardinality() != kInfiniteCardinality) {
        return kUnknownCardinality;
      }
    }
    return kInfiniteCardinality;
  }
  const std::vector<double>& weights() const { return weights_; }
  uint64_t seed() const { return seed_; }
  bool stop_on_empty() const { return stop_on_empty_; }
  bool rerandomize() const { return rerandomize_; }

 protected:
  Result<IteratorPtr> MakeIteratorInternal(const IteratorContext& ctx,
                                           const std::string& prefix) const override;

 private:
  std::vector<double> weights_;
  uint64_t seed_;
  bool stop_on_empty_, rerandomize_;
};

class SampleFromDatasetsIterator : public IteratorBase {
 public:
  SampleFromDatasetsIterator(const SampleFromDatasetsDataset* ds,
                             const std::string& prefix)
      : IteratorBase(ds->shared(), prefix), ds_(ds) {}

  Status Initialize(const IteratorContext& ctx) override {
    for (size_t i = 0; i < node().inputs().size(); ++i) {
      SLUICE_ASSIGN_OR_RETURN(IteratorPtr it, MakeInput(ctx, i));
      inputs_.push_back(std::move(it));
    }
    exhausted_.assign(inputs_.size(), false);
    key_ = ds_->rerandomize() ? HashCombine(ds_->seed(), ctx.seed_mix) : ds_->seed();
    return Status::OK();
  }

 protected:
  // The input draw `k` picks among those not exhausted, or -1 when none has weight left.
  int64_t Draw(uint64_t k) const {
    double total = 0;
    for (size_t i = 0; i < inputs_.size(); ++i) {
      if (!exhausted_[i]) total += ds_->weights()[i];
    }
    if (total <= 0) return -1;
    Rng rng(key_, k);
    double u = rng.Uniform() * total;
    int64_t last = -1;
    for (size_t i = 0; i < inputs_.size(); ++i) {
      if (exhausted_[i] || ds_->weights()[i] <= 0) continue;
      last = static_cast<int64_t>(i);
      if (u < ds_->weights()[i]) return last;
      u -= ds_->weights()[i];
    }
    return last;  // rounding at the top end
  }

  Result<std::optional<Element>> GetNextInternal() override {
    while (!ended_) {
      SLUICE_RETURN_IF_ERROR(CheckCancelled());
      const int64_t i = Draw(static_cast<uint64_t>(draws_));
      if (i < 0) break;
      ++draws_;
      SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, inputs_[i]->GetNext());
      if (e) return e;
      exhausted_[i] = true;
      if (ds_->stop_on_empty()) break;
    }
    ended_ = true;
    return std::nullopt;
  }

  Status SaveInternal(CheckpointWriter* w) const override {
    w->WriteInt(prefix(), "ended", ended_ ? 1 : 0);
    w->WriteInt(prefix(), "draws", draws_);
    return SaveInputsAndFlags(w, prefix(), "exhausted", exhausted_, inputs_);
  }

  Status RestoreInternal(const CheckpointReader& r) override {
    SLUICE_ASSIGN_OR_RETURN(int64_t ended, r.ReadInt(prefix(), "ended"));
    SLUICE_ASSIGN_OR_RETURN(draws_, r.ReadInt(prefix(), "draws"));
    if (draws_ < 0) return DataLossError("SampleFromDatasets: negative draw count");
    ended_ = ended != 0;
    return RestoreInputsAndFlags(r, prefix(), "exhausted", &exhausted_, &inputs_);
  }

 private:
  const SampleFromDatasetsDataset* ds_;
  std::vector<IteratorPtr> inputs_;
  std::vector<bool> exhausted_;
  uint64_t key_ = 0;
  int64_t draws_ = 0;
  bool ended_ = false;
};

Result<IteratorPtr> SampleFromDatasetsDataset::MakeIteratorInternal(
    const IteratorContext&, const std::string& prefix) const {
  return IteratorPtr(new SampleFromDatasetsIterator(this, prefix));
}

}  // namespace

void RegisterSampleFromDatasetsDataset(Registry* r) {
  r->RegisterOp(
      OpDef("SampleFromDatasets")
          .Summary("Elements drawn at random from its inputs with the given weights.")
          .VariadicInputs(1)
          .Attr("weights", AttrType::kFloatList,
                "One weight >= 0 per input (normalized).")
          .Attr("seed", AttrType::kInt, "Seed of the draws.")
          .Attr("stop_on_empty_dataset", AttrType::kBool, false,
                "End at the first draw of an exhausted input (else draw again).")
          .Attr("rerandomize_each_iteration", AttrType::kBool, false,
                "Different draws each epoch (and each iterator).")
          .Traits({.random = true,
                   .seed_mix = SeedMix::kWhenAttrTrue,
                   .seed_mix_attr = "rerandomize_each_iteration"}),
      [](OpArgs args) -> Result<DatasetPtr> {
        const char* op = "SampleFromDatasets";
        SLUICE_ASSIGN_OR_RETURN(auto weights,
                                GetAttr<std::vector<double>>(args.attrs, op, "weights"));
        SLUICE_ASSIGN_OR_RETURN(int64_t seed, GetAttr<int64_t>(args.attrs, op, "seed"));
        SLUICE_ASSIGN_OR_RETURN(
            bool stop, GetAttrOr<bool>(args.attrs, op, "stop_on_empty_dataset", false));
        SLUICE_ASSIGN_OR_RETURN(
            bool rerandomize,
            GetAttrOr<bool>(args.attrs, op, "rerandomize_each_iteration", false));
        if (weights.size() != args.inputs.size()) {
          return InvalidArgumentError(
              "SampleFromDatasets: " + std::to_string(weights.size()) + " weights for " +
              std::to_string(args.inputs.size()) + " inputs");
        }
        double total = 0;
        for (double w : weights) {
          if (!(w >= 0) || w == std::numeric_limits<double>::infinity()) {
            return InvalidArgumentError(
                "SampleFromDatasets: weights must be finite and >= 0, "
                "got " +
                std::to_string(w));
          }
          total += w;
        }
        if (!(total > 0)) {
          return InvalidArgumentError("SampleFromDatasets: the weights sum to 0");
        }
        std::vector<const ElementSpec*> specs;
        for (const DatasetPtr& in : args.inputs) specs.push_back(&in->element_spec());
        SLUICE_ASSIGN_OR_RETURN(ElementSpec spec, CommonSpec(specs, op));
        return DatasetPtr(std::make_shared<SampleFromDatasetsDataset>(
            std::move(args), std::move(spec), std::move(weights),
            static_cast<uint64_t>(seed), stop, rerandomize));
      });
}

}  // namespace sluice
