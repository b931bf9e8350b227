// ShuffleAndRepeat (the optimizer's shuffle_and_repeat_fusion): Shuffle(buffer_size, seed,
// reshuffle_each_iteration).Repeat(count) in one op, yielding exactly the same elements.
//
// Epoch e runs the input in the iterator context ctx.Mixed(e), as Repeat does, and
// shuffles it with the Shuffle algorithm (shuffle_dataset.cc: a buffer of buffer_size
// slots, each GetNext returns a uniformly random slot and refills it with the next input
// element, the buffer drains at the end of the input) seeded with HashCombine(seed,
// ctx.Mixed(e).seed_mix) when reshuffling, else with seed. The buffer drains completely at
// the end of every epoch, unlike tf.data's fused op, whose buffer spans epochs. An epoch
// that yields nothing ends the op (as Repeat). What the fusion saves: one Shuffle iterator
// and its buffer per epoch, and one op per element.
//
// Checkpoints hold the epoch and the Shuffle state under this op's prefix: when the input
// is replayable and no input error was seen, only the RNG state and buffer positions (the
// buffered elements are read back by replaying the epoch's input); otherwise the buffered
// elements and the input's state (ShuffleBuffer, src/ops/shuffle_buffer.h, shared with
// Shuffle). Skip skips whole epochs without reading them when the input's cardinality is
// known.
//
// Thread-safety: the node is immutable; the iterator follows the IteratorBase contract.
#include <algorithm>

#include "graph/attr.h"
#include "ops/op_util.h"
#include "ops/ops.h"
#include "ops/shuffle_buffer.h"
#include "runtime/iterator_base.h"

namespace sluice {
namespace {

constexpr char kOp[] = "ShuffleAndRepeat";

class ShuffleAndRepeatDataset : public DatasetNode {
 public:
  ShuffleAndRepeatDataset(OpArgs args, ElementSpec spec, int64_t buffer_size, uint64_t seed,
                          bool reshuffle, int64_t count)
      : DatasetNode(kOp, std::move(args), std::move(spec)),
        buffer_size_(buffer_size),
        seed_(seed),
        reshuffle_(reshuffle),
        count_(count) {}

  int64_t Cardinality() const override {
    return CardinalityTimes(input(0)->Cardinality(), count_);
  }
  int64_t buffer_size() const { return buffer_size_; }
  uint64_t seed() const { return seed_; }
  bool reshuffle() const { return reshuffle_; }
  int64_t count() const { return count_; }

 protected:
  Result<IteratorPtr> MakeIteratorInternal(const IteratorContext& ctx,
                                           const std::string& prefix) const override;

 private:
  const int64_t buffer_size_;
  const uint64_t seed_;
  const bool reshuffle_;
  const int64_t count_;
};

class ShuffleAndRepeatIterator : public IteratorBase {
 public:
  ShuffleAndRepeatIterator(const ShuffleAndRepeatDataset* ds, const std::string& prefix)
      : IteratorBase(ds->shared(), prefix),
        ds_(ds),
        shuffle_(kOp, ds->buffer_size(), ds->input(0)->IsReplayable()) {}

  Status Initialize(const IteratorContext& ctx) override {
    ctx_ = ctx;
    shuffle_.Bind(ctx, this);
    if (ds_->count() == 0) return Status::OK();
    return StartEpoch(0);
  }

 protected:
  Result<std::optional<Element>> GetNextInternal() override {
    while (shuffle_.has_input()) {
      SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, shuffle_.Next());
      if (e) {
        first_call_ = false;
        return e;
      }
      SLUICE_RETURN_IF_ERROR(NextEpoch());
    }
    return std::nullopt;
  }

  Result<int64_t> SkipInternal(int64_t n) override {
    const int64_t card = node().input(0)->Cardinality();
    int64_t done = 0;
    while (shuffle_.has_input() && done < n) {
      if (first_call_ && shuffle_.consumed() == 0 && card > 0 && n - done >= card) {
        // Whole epochs are skipped without reading them (each epoch reseeds, so the
        // epochs after them do not depend on them).
        int64_t epochs = (n - done) / card;
        if (ds_->count() >= 0) epochs = std::min(epochs, ds_->count() - epoch_);
        done += epochs * card;
        epoch_ += epochs - 1;
        first_call_ = false;
        SLUICE_RETURN_IF_ERROR(NextEpoch());
        continue;
      }
      SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, shuffle_.Next());
      if (e) {
        first_call_ = false;
        ++done;
      } else {
        SLUICE_RETURN_IF_ERROR(NextEpoch());
      }
    }
    return done;
  }

  Status SaveInternal(CheckpointWriter* w) const override {
    const std::string& p = prefix();
    w->WriteInt(p, "epoch", epoch_);
    w->WriteInt(p, "first_call", first_call_ ? 1 : 0);
    w->WriteInt(p, "has_input", shuffle_.has_input() ? 1 : 0);
    if (!shuffle_.has_input()) return Status::OK();
    return shuffle_.Save(w, p);
  }

  Status RestoreInternal(const CheckpointReader& r) override {
    const std::string& p = prefix();
    SLUICE_ASSIGN_OR_RETURN(int64_t epoch, r.ReadInt(p, "epoch"));
    SLUICE_ASSIGN_OR_RETURN(int64_t first_call, r.ReadInt(p, "first_call"));
    SLUICE_ASSIGN_OR_RETURN(int64_t has_input, r.ReadInt(p, "has_input"));
    if (epoch < 0 || (has_input && ds_->count() >= 0 && epoch >= ds_->count())) {
      return DataLossError(std::string(kOp) + ": checkpoint epoch " + std::to_string(epoch) +
                           " is out of range for count " + std::to_string(ds_->count()));
    }
    epoch_ = epoch;
    first_call_ = first_call != 0;
    shuffle_.ClearInput();
    if (!has_input) return Status::OK();
    // A fresh input of that epoch, for the replay.
    SLUICE_ASSIGN_OR_RETURN(IteratorPtr input,
                            MakeInput(ctx_.Mixed(static_cast<uint64_t>(epoch_))));
    return shuffle_.Restore(r, p, std::move(input));
  }

 private:
  // A fresh input and shuffle for epoch `e`.
  Status StartEpoch(int64_t e) {
    const IteratorContext ectx = ctx_.Mixed(static_cast<uint64_t>(e));
    shuffle_.ClearInput();
    SLUICE_ASSIGN_OR_RETURN(IteratorPtr input, MakeInput(ectx));
    shuffle_.Reset(std::move(input),
                   ds_->reshuffle() ? HashCombine(ds_->seed(), ectx.seed_mix) : ds_->seed());
    return Status::OK();
  }

  // The current epoch ended: stop if it was empty or the count is reached, else start
  // the next one. A failure to start it is reported once, then the end.
  Status NextEpoch() {
    if (first_call_ || (ds_->count() >= 0 && epoch_ + 1 >= ds_->count())) {
      shuffle_.ClearInput();
      return Status::OK();
    }
    ++epoch_;
    first_call_ = true;
    Status s = StartEpoch(epoch_);
    if (!s.ok()) shuffle_.ClearInput();
    return s;
  }

  const ShuffleAndRepeatDataset* ds_;
  IteratorContext ctx_;
  ShuffleBuffer shuffle_;  // the current epoch's shuffle; no input once finished
  int64_t epoch_ = 0;
  bool first_call_ = true;  // nothing produced yet in this epoch
};

Result<IteratorPtr> ShuffleAndRepeatDataset::MakeIteratorInternal(
    const IteratorContext&, const std::string& prefix) const {
  return IteratorPtr(new ShuffleAndRepeatIterator(this, prefix));
}

}  // namespace

void RegisterShuffleAndRepeatDataset(Registry* r) {
  r->RegisterOp(
      OpDef(kOp)
          .Summary("Shuffle then Repeat fused: the buffer carries over between epochs.")
          .Inputs(1)
          .Attr("buffer_size", AttrType::kInt, "Elements in the shuffle buffer, > 0.")
          .Attr("seed", AttrType::kInt, "Seed of the shuffle.")
          .Attr("reshuffle_each_iteration", AttrType::kBool, true,
                "Shuffle each epoch (and each iterator) differently.")
          .Attr("count", AttrType::kInt, int64_t{-1}, "Epochs; -1 repeats forever.")
          .Traits({.buffering = true,
                   .random = true,
                   .seed_mix = SeedMix::kWhenAttrTrue,
                   .seed_mix_attr = "reshuffle_each_iteration"}),
      [](OpArgs args) -> Result<DatasetPtr> {
     SLUICE_ASSIGN_OR_RETURN(int64_t bs, GetAttr<int64_t>(args.attrs, kOp, "buffer_size"));
     SLUICE_ASSIGN_OR_RETURN(int64_t seed, GetAttr<int64_t>(args.attrs, kOp, "seed"));
     SLUICE_ASSIGN_OR_RETURN(bool reshuffle, GetAttrOr<bool>(args.attrs, kOp,
                                                             "reshuffle_each_iteration", true));
     SLUICE_ASSIGN_OR_RETURN(int64_t count, GetAttrOr<int64_t>(args.attrs, kOp, "count", -1));
     if (bs <= 0) {
       return InvalidArgumentError(std::string(kOp) + ": buffer_size must be > 0, got " +
                                   std::to_string(bs));
     }
     ElementSpec spec = args.inputs[0]->element_spec();
     return DatasetPtr(std::make_shared<ShuffleAndRepeatDataset>(
         std::move(args), std::move(spec), bs, static_cast<uint64_t>(seed), reshuffle, count));
   });
}

}  // namespace sluice
