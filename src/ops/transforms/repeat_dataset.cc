// Repeat: the input `count` times (forever when count < 0). Each epoch is a fresh input
// iterator made with ctx.Mixed(epoch), so reshuffling ops below reshuffle every epoch.
// An epoch that yields nothing ends the repeat (tf.data does this for count = -1; here it
// applies to finite counts too, so Range(0).Repeat(1 << 60) does not spin).
#include "graph/attr.h"
#include "ops/op_util.h"
#include "ops/ops.h"
#include "runtime/iterator_base.h"

namespace sluice {
namespace {

class RepeatDataset : public DatasetNode {
 public:
  RepeatDataset(OpArgs args, ElementSpec spec, int64_t count)
      : DatasetNode("Repeat", std::move(args), std::move(spec)), count_(count) {}

  int64_t Cardinality() const override {
    return CardinalityTimes(input(0)->Cardinality(), count_);
  }
  int64_t count() const { return count_; }

 protected:
  Result<IteratorPtr> MakeIteratorInternal(
      const IteratorContext& ctx, const std::string& prefix) const override;

 private:
  const int64_t count_;
};

class RepeatIterator : public IteratorBase {
 public:
  RepeatIterator(const RepeatDataset* ds, const std::string& prefix)
      : IteratorBase(ds->shared(), prefix), ds_(ds) {}

  Status Initialize(const IteratorContext& ctx) override {
    ctx_ = ctx;
    if (ds_->count() == 0) return Status::OK();
    SLUICE_ASSIGN_OR_RETURN(input_, MakeInput(ctx_.Mixed(0)));
    return Status::OK();
  }

 protected:
  Result<std::optional<Element>> GetNextInternal() override {
    while (input_) {
      SLUICE_RETURN_IF_ERROR(CheckCancelled());
      SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, input_->GetNext());
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
    while (input_ && done < n) {
      if (first_call_ && card > 0 && n - done >= card) {
        // Whole epochs are skipped without iterating them.
        int64_t epochs = (n - done) / card;
        if (ds_->count() >= 0) epochs = std::min(epochs, ds_->count() - epoch_);
        done += epochs * card;
        epoch_ += epochs - 1;
        first_call_ = false;  // the skipped epoch was not empty
        SLUICE_RETURN_IF_ERROR(NextEpoch());
        continue;
      }
      SLUICE_ASSIGN_OR_RETURN(int64_t k, input_->Skip(n - done));
      if (k > 0) first_call_ = false;
      done += k;
      if (done < n) SLUICE_RETURN_IF_ERROR(NextEpoch());
    }
    return done;
  }

  Status SaveInternal(CheckpointWriter* w) const override {
    w->WriteInt(prefix(), "epoch", epoch_);
    w->WriteInt(prefix(), "first_call", first_call_ ? 1 : 0);
    w->WriteInt(prefix(), "has_input", input_ ? 1 : 0);
    return input_ ? input_->Save(w) : Status::OK();
  }

  Status RestoreInternal(const CheckpointReader& r) override {
    SLUICE_ASSIGN_OR_RETURN(epoch_, r.ReadInt(prefix(), "epoch"));
    SLUICE_ASSIGN_OR_RETURN(int64_t first_call, r.ReadInt(prefix(), "first_call"));
    SLUICE_ASSIGN_OR_RETURN(int64_t has_input, r.ReadInt(prefix(), "has_input"));
    if (epoch_ < 0 || (has_input && ds_->count() >= 0 && epoch_ >= ds_->count())) {
      return DataLossError("Repeat: checkpoint epoch " + std::to_string(epoch_) +
                           " is out of range for count " + std::to_string(ds_->count()));
    }
    first_call_ = first_call != 0;
    input_.reset();
    if (!has_input) return Status::OK();
    SLUICE_ASSIGN_OR_RETURN(input_, MakeInput(ctx_.Mixed(static_cast<uint64_t>(epoch_))));
    return input_->Restore(r);
  }

 private:
  // The current epoch ended: stop if it was empty or the count is reached, else start the
  // next one.
  Status NextEpoch() {
    if (first_call_ || (ds_->count() >= 0 && epoch_ + 1 >= ds_->count())) {
      input_.reset();
      return Status::OK();
    }
    ++epoch_;
    first_call_ = true;
    // The finished epoch goes first, so what it held (an in-memory cache's charge) is not
    // counted twice while the next one starts.
    input_.reset();
    auto in = MakeInput(ctx_.Mixed(static_cast<uint64_t>(epoch_)));
    if (!in.ok()) {
      input_.reset();  // cannot go on: the error is reported once, then the end
      return in.status();
    }
    input_ = std::move(in).value();
    return Status::OK();
  }

  const RepeatDataset* ds_;
  IteratorContext ctx_;
  IteratorPtr input_;  // null once finished
  int64_t epoch_ = 0;
  bool first_call_ = true;  // nothing produced yet in this epoch
};

Result<IteratorPtr> RepeatDataset::MakeIteratorInternal(
    const IteratorContext&, const std::string& prefix) const {
  return IteratorPtr(new RepeatIterator(this, prefix));
}

}  // namespace

void RegisterRepeatDataset(Registry* r) {
  r->RegisterOp(
      OpDef("Repeat")
          .Summary("Its input count times over (-1: forever).")
          .Inputs(1)
          .Attr("count", AttrType::kInt, int64_t{-1}, "Epochs; -1 repeats forever.")
          .Traits({.seed_mix = SeedMix::kNone}),
      [](OpArgs args) -> Result<DatasetPtr> {
     SLUICE_ASSIGN_OR_RETURN(int64_t count,
                             GetAttrOr<int64_t>(args.attrs, "Repeat", "count", -1));
     ElementSpec spec = args.inputs[0]->element_spec();
     return DatasetPtr(
         std::make_shared<RepeatDataset>(std::move(args), std::move(spec), count));
   });
}

}  // namespace sluice
