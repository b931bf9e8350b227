// Random: an endless stream of pseudorandom int64 scalars (tf.data Dataset.random).
// Element i is drawn from Philox keyed by the seed with stream i, so the op is a pure
// function of its position: checkpoints hold the position, Skip moves it. With
// rerandomize_each_iteration the seed is mixed with the iteration's seed_mix, so each
// epoch (and each iterator) gets another stream; by default every iteration repeats it.
#include "graph/attr.h"
#include "ops/ops.h"
#include "runtime/iterator_base.h"
#include "sluice/random.h"

namespace sluice {
namespace {

class RandomDataset : public DatasetNode {
 public:
  RandomDataset(OpArgs args, uint64_t seed, bool rerandomize)
      : DatasetNode("Random", std::move(args),
                    ElementSpec{{{DType::kInt64, PartialShape{}}}}),
        seed_(seed),
        rerandomize_(rerandomize) {}

  int64_t Cardinality() const override { return kInfiniteCardinality; }
  uint64_t seed() const { return seed_; }
  bool rerandomize() const { return rerandomize_; }

 protected:
  Result<IteratorPtr> MakeIteratorInternal(const IteratorContext& ctx,
                                           const std::string& prefix) const override;

 private:
  uint64_t seed_;
  bool rerandomize_;
};

class RandomIterator : public IteratorBase {
 public:
  RandomIterator(const RandomDataset* ds, const std::string& prefix)
      : IteratorBase(ds->shared(), prefix), ds_(ds) {}

  Status Initialize(const IteratorContext& ctx) override {
    key_ = ds_->rerandomize() ? HashCombine(ds_->seed(), ctx.seed_mix) : ds_->seed();
    return Status::OK();
  }

 protected:
  Result<std::optional<Element>> GetNextInternal() override {
    Rng rng(key_, static_cast<uint64_t>(next_++));
    return Element{Tensor::Scalar<int64_t>(static_cast<int64_t>(rng.Next64()))};
  }

  Result<int64_t> SkipInternal(int64_t n) override {
    next_ += n;
    return n;
  }

  Status SaveInternal(CheckpointWriter* w) const override {
    w->WriteInt(prefix(), "next", next_);
    return Status::OK();
  }

  Status RestoreInternal(const CheckpointReader& r) override {
    SLUICE_ASSIGN_OR_RETURN(next_, r.ReadInt(prefix(), "next"));
    if (next_ < 0) return DataLossError("Random: negative position in checkpoint");
    return Status::OK();
  }

 private:
  const RandomDataset* ds_;
  uint64_t key_ = 0;
  int64_t next_ = 0;
};

Result<IteratorPtr> RandomDataset::MakeIteratorInternal(const IteratorContext&,
                                                        const std::string& prefix) const {
  return IteratorPtr(new RandomIterator(this, prefix));
}

}  // namespace

void RegisterRandomDataset(Registry* r) {
  r->RegisterOp(
      OpDef("Random")
          .Summary(
              "Endless pseudorandom int64 scalars (Philox, keyed by seed and position).")
          .Inputs(0)
          .Attr("seed", AttrType::kInt, "Seed of the stream.")
          .Attr("rerandomize_each_iteration", AttrType::kBool, false,
                "A different stream each epoch (and each iterator).")
          .Traits({.source = true,
                   .random = true,
                   .seed_mix = SeedMix::kWhenAttrTrue,
                   .seed_mix_attr = "rerandomize_each_iteration"}),
      [](OpArgs args) -> Result<DatasetPtr> {
        SLUICE_ASSIGN_OR_RETURN(int64_t seed,
                                GetAttr<int64_t>(args.attrs, "Random", "seed"));
        SLUICE_ASSIGN_OR_RETURN(
            bool rerandomize,
            GetAttrOr<bool>(args.attrs, "Random", "rerandomize_each_iteration", false));
        return DatasetPtr(std::make_shared<RandomDataset>(
            std::move(args), static_cast<uint64_t>(seed), rerandomize));
      });
}

}  // namespace sluice
