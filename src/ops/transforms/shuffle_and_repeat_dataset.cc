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
// elements and the input's state. Skip skips whole epochs without reading them when the
// input's cardinality is known.
//
// Thread-safety: the node is immutable; the iterator follows the IteratorBase contract.
#include <algorithm>

#include "core/coding.h"
#include "graph/attr.h"
#include "ops/op_util.h"
#include "ops/ops.h"
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
      : IteratorBase(ds->shared(), prefix), ds_(ds), rng_(0) {}

  Status Initialize(const IteratorContext& ctx) override {
    ctx_ = ctx;
    replayable_ = node().input(0)->IsReplayable();
    if (ds_->count() == 0) return Status::OK();
    return StartEpoch(0);
  }

 protected:
  Result<std::optional<Element>> GetNextInternal() override {
    while (input_) {
      SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, ShuffleNext());
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
      if (first_call_ && consumed_ == 0 && card > 0 && n - done >= card) {
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
      SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, ShuffleNext());
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
    w->WriteInt(p, "has_input", input_ ? 1 : 0);
    if (!input_) return Status::OK();
    Rng::State st = rng_.state();
    w->WriteInt(p, "rng_key", static_cast<int64_t>(st.key));
    w->WriteInt(p, "rng_stream", static_cast<int64_t>(st.stream));
    w->WriteInt(p, "rng_counter", static_cast<int64_t>(st.counter));
    w->WriteInt(p, "rng_used", st.used);
    w->WriteInt(p, "consumed", consumed_);
    w->WriteInt(p, "end_of_input", end_of_input_ ? 1 : 0);
    w->WriteInt(p, "size", static_cast<int64_t>(buffer_.size()));
    w->WriteInt(p, "hole", hole_);
    const bool by_index = replayable_ && indices_valid_;
    w->WriteInt(p, "by_index", by_index ? 1 : 0);
    if (by_index) {
      std::string ages;
      for (int64_t i = 0; i < static_cast<int64_t>(buffer_.size()); ++i) {
        if (i != hole_) {
          PutVarint64(&ages, static_cast<uint64_t>(consumed_ - 1 - buffer_[i].index));
        }
      }
      w->WriteString(p, "ages", ages);
      return Status::OK();
    }
    for (int64_t i = 0; i < static_cast<int64_t>(buffer_.size()); ++i) {
      if (i != hole_) w->WriteElement(p, "slot" + std::to_string(i), buffer_[i].element);
    }
    return input_->Save(w);
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
    input_.reset();
    buffer_.clear();
    if (!has_input) return Status::OK();
    SLUICE_ASSIGN_OR_RETURN(int64_t key, r.ReadInt(p, "rng_key"));
    SLUICE_ASSIGN_OR_RETURN(int64_t stream, r.ReadInt(p, "rng_stream"));
    SLUICE_ASSIGN_OR_RETURN(int64_t counter, r.ReadInt(p, "rng_counter"));
    SLUICE_ASSIGN_OR_RETURN(int64_t used, r.ReadInt(p, "rng_used"));
    SLUICE_ASSIGN_OR_RETURN(int64_t consumed, r.ReadInt(p, "consumed"));
    SLUICE_ASSIGN_OR_RETURN(int64_t eoi, r.ReadInt(p, "end_of_input"));
    SLUICE_ASSIGN_OR_RETURN(int64_t size, r.ReadInt(p, "size"));
    SLUICE_ASSIGN_OR_RETURN(int64_t hole, r.ReadInt(p, "hole"));
    SLUICE_ASSIGN_OR_RETURN(int64_t by_index, r.ReadInt(p, "by_index"));
    const int64_t live = size - (hole >= 0 ? 1 : 0);
    if (used < 0 || used > 4 || consumed < 0 || size < 0 || size > ds_->buffer_size() ||
        hole < -1 || hole >= size || live > consumed) {
      return DataLossError(std::string(kOp) + ": inconsistent checkpoint (size " +
                           std::to_string(size) + ", hole " + std::to_string(hole) +
                           ", consumed " + std::to_string(consumed) + ", buffer_size " +
                           std::to_string(ds_->buffer_size()) + ")");
    }
    SLUICE_RETURN_IF_ERROR(StartEpoch(epoch_));  // a fresh input for the replay
    rng_ = Rng::FromState({static_cast<uint64_t>(key), static_cast<uint64_t>(stream),
                           static_cast<uint64_t>(counter), static_cast<uint32_t>(used)});
    consumed_ = consumed;
    end_of_input_ = eoi != 0;
    hole_ = hole;
    if (by_index) {
      if (!replayable_) {
        return FailedPreconditionError(
            std::string(kOp) +
            ": checkpoint stores buffer positions but the input is not replayable");
      }
      return RestoreByReplay(r, size);
    }
    indices_valid_ = false;
    for (int64_t i = 0; i < size; ++i) {
      Slot s;
      if (i != hole_) {
        SLUICE_ASSIGN_OR_RETURN(s.element, r.ReadElement(p, "slot" + std::to_string(i)));
      }
      buffer_.push_back(std::move(s));
    }
    return input_->Restore(r);
  }

 private:
  struct Slot {
    Element element;
    int64_t index = -1;  // the element's position in the epoch's input
  };

  // A fresh input and shuffle state for epoch `e` (the buffer keeps its capacity).
  Status StartEpoch(int64_t e) {
    const IteratorContext ectx = ctx_.Mixed(static_cast<uint64_t>(e));
    rng_ = Rng(ds_->reshuffle() ? HashCombine(ds_->seed(), ectx.seed_mix) : ds_->seed());
    buffer_.clear();
    hole_ = -1;
    consumed_ = 0;
    end_of_input_ = false;
    indices_valid_ = true;
    input_.reset();
    SLUICE_ASSIGN_OR_RETURN(input_, MakeInput(ectx));
    return Status::OK();
  }

  // The current epoch ended: stop if it was empty or the count is reached, else start
  // the next one. A failure to start it is reported once, then the end.
  Status NextEpoch() {
    if (first_call_ || (ds_->count() >= 0 && epoch_ + 1 >= ds_->count())) {
      input_.reset();
      return Status::OK();
    }
    ++epoch_;
    first_call_ = true;
    Status s = StartEpoch(epoch_);
    if (!s.ok()) input_.reset();
    return s;
  }

  // One step of the epoch's shuffle: the next element, or nullopt when the epoch is done.
  Result<std::optional<Element>> ShuffleNext() {
    if (hole_ >= 0) {
      std::optional<Element> e;
      if (!end_of_input_) {
        SLUICE_ASSIGN_OR_RETURN(e, ReadInput());
      }
      if (e) {
        buffer_[hole_] = {std::move(*e), consumed_ - 1};
      } else {
        if (hole_ + 1 < static_cast<int64_t>(buffer_.size())) {
          buffer_[hole_] = std::move(buffer_.back());
        }
        buffer_.pop_back();
      }
      hole_ = -1;
    }
    while (!end_of_input_ && static_cast<int64_t>(buffer_.size()) < ds_->buffer_size()) {
      SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, ReadInput());
      if (e) buffer_.push_back({std::move(*e), consumed_ - 1});
    }
    if (buffer_.empty()) return std::nullopt;
    hole_ = static_cast<int64_t>(rng_.UniformInt(buffer_.size()));
    return std::move(buffer_[hole_].element);
  }

  Result<std::optional<Element>> ReadInput() {
    auto e = input_->GetNext();
    if (!e.ok()) {
      indices_valid_ = false;
      return e.status();
    }
    if (*e) {
      ++consumed_;
    } else {
      end_of_input_ = true;
    }
    return e;
  }

  Status RestoreByReplay(const CheckpointReader& r, int64_t size) {
    SLUICE_ASSIGN_OR_RETURN(std::string ages, r.ReadString(prefix(), "ages"));
    const int64_t live = size - (hole_ >= 0 ? 1 : 0);
    if (static_cast<int64_t>(ages.size()) < live) {
      return DataLossError(std::string(kOp) + ": checkpoint 'ages' holds " +
                           std::to_string(ages.size()) + " bytes for " +
                           std::to_string(live) + " buffered elements");
    }
    buffer_.resize(size);
    std::vector<std::pair<int64_t, int64_t>> order;  // (input index, slot)
    order.reserve(live);
    std::string_view in(ages);
    for (int64_t i = 0; i < size; ++i) {
      if (i == hole_) continue;
      uint64_t age;
      if (!GetVarint64(&in, &age) || age >= static_cast<uint64_t>(consumed_)) {
        return DataLossError(std::string(kOp) + ": corrupt buffer position " +
                             std::to_string(i) + " in checkpoint");
      }
      order.emplace_back(consumed_ - 1 - static_cast<int64_t>(age), i);
    }
    if (!in.empty()) {
      return DataLossError(std::string(kOp) + ": trailing bytes in checkpoint 'ages'");
    }
    std::sort(order.begin(), order.end());
    for (size_t i = 1; i < order.size(); ++i) {
      if (order[i].first == order[i - 1].first) {
        return DataLossError(std::string(kOp) + ": input index " +
                             std::to_string(order[i].first) + " appears twice in checkpoint");
      }
    }
    int64_t pos = 0;
    for (const auto& [index, slot] : order) {
      SLUICE_RETURN_IF_ERROR(SkipInput(index - pos, index));
      SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, input_->GetNext());
      if (!e) return InputEndedEarly(index);
      buffer_[slot] = {std::move(*e), index};
      pos = index + 1;
    }
    return SkipInput(consumed_ - pos, consumed_);
  }

  Status SkipInput(int64_t n, int64_t target) {
    if (n <= 0) return Status::OK();
    SLUICE_ASSIGN_OR_RETURN(int64_t k, input_->Skip(n));
    if (k < n) return InputEndedEarly(target - n + k);
    return Status::OK();
  }

  Status InputEndedEarly(int64_t at) const {
    return FailedPreconditionError(
        std::string(kOp) + ": the input ended after " + std::to_string(at) +
        " elements while restoring a checkpoint that consumed " + std::to_string(consumed_) +
        " (the input changed since the checkpoint was taken)");
  }

  const ShuffleAndRepeatDataset* ds_;
  IteratorContext ctx_;
  Rng rng_;
  bool replayable_ = false;
  IteratorPtr input_;  // the current epoch's input; null once finished
  int64_t epoch_ = 0;
  bool first_call_ = true;  // nothing produced yet in this epoch
  // The current epoch's shuffle.
  bool indices_valid_ = true;
  std::vector<Slot> buffer_;
  int64_t hole_ = -1;     // slot returned by the last call, refilled by the next
  int64_t consumed_ = 0;  // input elements read this epoch
  bool end_of_input_ = false;
};

Result<IteratorPtr> ShuffleAndRepeatDataset::MakeIteratorInternal(
    const IteratorContext&, const std::string& prefix) const {
  return IteratorPtr(new ShuffleAndRepeatIterator(this, prefix));
}

}  // namespace

void RegisterShuffleAndRepeatDataset(Registry* r) {
  r->RegisterOp(kOp, [](OpArgs args) -> Result<DatasetPtr> {
     SLUICE_RETURN_IF_ERROR(CheckArity(kOp, args, 1, 0));
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
   }).IgnoreError();
}

}  // namespace sluice
