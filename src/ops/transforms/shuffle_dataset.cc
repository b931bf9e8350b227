// Shuffle: a buffer of buffer_size elements; each GetNext returns a uniformly random slot
// and refills that slot with the next input element; at the end of the input the buffer
// drains in random order (tf.data ShuffleDatasetOp). The algorithm and its checkpoints
// (positions only when the input is replayable) are ShuffleBuffer's
// (src/ops/shuffle_buffer.h), shared with ShuffleAndRepeat.
#include "graph/attr.h"
#include "ops/op_util.h"
#include "ops/ops.h"
#include "ops/shuffle_buffer.h"
#include "runtime/iterator_base.h"

namespace sluice {
namespace {

class ShuffleDataset : public DatasetNode {
 public:
  ShuffleDataset(OpArgs args, ElementSpec spec, int64_t buffer_size, uint64_t seed,
                 bool reshuffle)
      : DatasetNode("Shuffle", std::move(args), std::move(spec)),
        buffer_size_(buffer_size),
        seed_(seed),
        reshuffle_(reshuffle) {}

  int64_t Cardinality() const override { return input(0)->Cardinality(); }
  int64_t buffer_size() const { return buffer_size_; }
  uint64_t seed() const { return seed_; }
  bool reshuffle() const { return reshuffle_; }

 protected:
  Result<IteratorPtr> MakeIteratorInternal(
      const IteratorContext& ctx, const std::string& prefix) const override;

 private:
  const int64_t buffer_size_;
  const uint64_t seed_;
  const bool reshuffle_;
};

class ShuffleIterator : public IteratorBase {
 public:
  // With a split provider the input is not replayed (a fresh input would take new
  // splits): checkpoints store the buffered elements.
  ShuffleIterator(const ShuffleDataset* ds, const std::string& prefix, bool has_splits)
      : IteratorBase(ds->shared(), prefix),
        ds_(ds),
        shuffle_("Shuffle", ds->buffer_size(),
                 ds->input(0)->IsReplayable() && !has_splits) {}

  Status Initialize(const IteratorContext& ctx) override {
    ctx_ = ctx;
    shuffle_.Bind(ctx, this);
    SLUICE_ASSIGN_OR_RETURN(IteratorPtr input, MakeInput(ctx));
    shuffle_.Reset(std::move(input),
                   ds_->reshuffle() ? HashCombine(ds_->seed(), ctx.seed_mix) : ds_->seed());
    return Status::OK();
  }

 protected:
  Result<std::optional<Element>> GetNextInternal() override { return shuffle_.Next(); }

  Status SaveInternal(CheckpointWriter* w) const override { return shuffle_.Save(w, prefix()); }

  Status RestoreInternal(const CheckpointReader& r) override {
    // A fresh input iterator: replay walks it from the start.
    SLUICE_ASSIGN_OR_RETURN(IteratorPtr input, MakeInput(ctx_));
    return shuffle_.Restore(r, prefix(), std::move(input));
  }

 private:
  const ShuffleDataset* ds_;
  IteratorContext ctx_;
  ShuffleBuffer shuffle_;
};

Result<IteratorPtr> ShuffleDataset::MakeIteratorInternal(
    const IteratorContext& ctx, const std::string& prefix) const {
  return IteratorPtr(new ShuffleIterator(this, prefix, ctx.split_provider != nullptr));
}

}  // namespace

void RegisterShuffleDataset(Registry* r) {
  r->RegisterOp(
      OpDef("Shuffle")
          .Summary("Its input in random order, drawn from a buffer of buffer_size elements.")
          .Inputs(1)
          .Attr("buffer_size", AttrType::kInt, "Elements in the shuffle buffer, > 0.")
          .Attr("seed", AttrType::kInt, "Seed of the shuffle.")
          .Attr("reshuffle_each_iteration", AttrType::kBool, true,
                "Shuffle each epoch (and each iterator) differently.")
          .Traits({.buffering = true,
                   .random = true,
                   .seed_mix = SeedMix::kWhenAttrTrue,
                   .seed_mix_attr = "reshuffle_each_iteration"}),
      [](OpArgs args) -> Result<DatasetPtr> {
     SLUICE_ASSIGN_OR_RETURN(int64_t bs,
                             GetAttr<int64_t>(args.attrs, "Shuffle", "buffer_size"));
     SLUICE_ASSIGN_OR_RETURN(int64_t seed,
                             GetAttr<int64_t>(args.attrs, "Shuffle", "seed"));
     SLUICE_ASSIGN_OR_RETURN(
         bool reshuffle,
         GetAttrOr<bool>(args.attrs, "Shuffle", "reshuffle_each_iteration", true));
     if (bs <= 0) {
       return InvalidArgumentError("Shuffle: buffer_size must be > 0, got " +
                                   std::to_string(bs));
     }
     ElementSpec spec = args.inputs[0]->element_spec();
     return DatasetPtr(std::make_shared<ShuffleDataset>(
         std::move(args), std::move(spec), bs, static_cast<uint64_t>(seed), reshuffle));
   });
}

}  // namespace sluice
