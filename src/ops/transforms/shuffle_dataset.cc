// Shuffle: a buffer of buffer_size elements; each GetNext returns a uniformly random slot
// and refills that slot with the next input element; at the end of the input the buffer
// drains in random order (tf.data ShuffleDatasetOp).
//
// Checkpoints. When the input is replayable, the buffer is not stored: only the RNG
// state, the number of input elements consumed and, per slot, the input index of its
// element. Restore walks a fresh input iterator, skipping the gaps between buffered
// indices (cheap for ranges, slices, batches, skippable maps) and reading back only the
// buffered elements. When the input is not replayable, or when an input error was seen
// (errors make input positions ambiguous on replay), the buffered elements and the input
// state are stored.
#include <algorithm>

#include "core/coding.h"
#include "graph/attr.h"
#include "ops/op_util.h"
#include "ops/ops.h"
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
  ShuffleIterator(const ShuffleDataset* ds, const std::string& prefix)
      : IteratorBase(ds->shared(), prefix), ds_(ds), rng_(0) {}

  Status Initialize(const IteratorContext& ctx) override {
    uint64_t seed =
        ds_->reshuffle() ? HashCombine(ds_->seed(), ctx.seed_mix) : ds_->seed();
    rng_ = Rng(seed);
    replayable_ = node().input(0)->IsReplayable();
    ctx_ = ctx;
    SLUICE_ASSIGN_OR_RETURN(input_, MakeInput(ctx));
    return Status::OK();
  }

 protected:
  Result<std::optional<Element>> GetNextInternal() override {
    // Refill the slot emptied by the previous call, then top the buffer up.
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

  Status SaveInternal(CheckpointWriter* w) const override {
    const std::string& p = prefix();
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
      // Ages (consumed - 1 - index) are small, so their varints are short.
      std::string ages;
      for (int64_t i = 0; i < static_cast<int64_t>(buffer_.size()); ++i) {
        if (i != hole_)
          PutVarint64(&ages, static_cast<uint64_t>(consumed_ - 1 - buffer_[i].index));
      }
      w->WriteString(p, "ages", ages);
      return Status::OK();  // the input is rebuilt by replay
    }
    for (int64_t i = 0; i < static_cast<int64_t>(buffer_.size()); ++i) {
      if (i != hole_) w->WriteElement(p, "slot" + std::to_string(i), buffer_[i].element);
    }
    return input_->Save(w);
  }

  Status RestoreInternal(const CheckpointReader& r) override {
    const std::string& p = prefix();
    Rng::State st;
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
      return DataLossError("Shuffle: inconsistent checkpoint (size " +
                           std::to_string(size) + ", hole " + std::to_string(hole) +
                           ", consumed " + std::to_string(consumed) + ", buffer_size " +
                           std::to_string(ds_->buffer_size()) + ")");
    }
    st = {static_cast<uint64_t>(key), static_cast<uint64_t>(stream),
          static_cast<uint64_t>(counter), static_cast<uint32_t>(used)};
    rng_ = Rng::FromState(st);
    consumed_ = consumed;
    end_of_input_ = eoi != 0;
    // A fresh input iterator: replay walks it from the start.
    SLUICE_ASSIGN_OR_RETURN(input_, MakeInput(ctx_));
    hole_ = hole;
    buffer_.clear();
    if (by_index) {
      if (!replayable_) {
        return FailedPreconditionError(
            "Shuffle: checkpoint stores buffer positions but the input is not "
            "replayable");
      }
      SLUICE_RETURN_IF_ERROR(RestoreByReplay(r, size));
    } else {
      indices_valid_ = false;  // positions of restored elements are not known
      // No reserve(size): each slot must be present in the checkpoint, which bounds it.
      for (int64_t i = 0; i < size; ++i) {
        Slot s;
        if (i != hole_) {
          SLUICE_ASSIGN_OR_RETURN(s.element,
                                  r.ReadElement(p, "slot" + std::to_string(i)));
        }
        buffer_.push_back(std::move(s));
      }
      SLUICE_RETURN_IF_ERROR(input_->Restore(r));
    }
    return Status::OK();
  }

 private:
  struct Slot {
    Element element;
    int64_t index = -1;  // the element's position in the input
  };

  // The next input element (nullopt at the end). An input error disables index-based
  // checkpoints for the rest of this iterator (see the top of the file).
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
    // Every varint takes at least one byte: bound the count before allocating.
    if (static_cast<int64_t>(ages.size()) < live) {
      return DataLossError("Shuffle: checkpoint 'ages' holds " +
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
        return DataLossError("Shuffle: corrupt buffer position " + std::to_string(i) +
                             " in checkpoint");
      }
      order.emplace_back(consumed_ - 1 - static_cast<int64_t>(age), i);
    }
    if (!in.empty()) return DataLossError("Shuffle: trailing bytes in checkpoint 'ages'");
    std::sort(order.begin(), order.end());
    for (size_t i = 1; i < order.size(); ++i) {
      if (order[i].first == order[i - 1].first) {
        return DataLossError("Shuffle: input index " + std::to_string(order[i].first) +
                             " appears twice in checkpoint");
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
        "Shuffle: the input ended after " + std::to_string(at) +
        " elements while restoring a checkpoint that consumed " +
        std::to_string(consumed_) +
        " (the input changed since the checkpoint was taken)");
  }

  const ShuffleDataset* ds_;
  IteratorContext ctx_;
  Rng rng_;
  bool replayable_ = false;
  bool indices_valid_ = true;
  IteratorPtr input_;
  std::vector<Slot> buffer_;
  int64_t hole_ = -1;     // slot returned by the last call, refilled by the next
  int64_t consumed_ = 0;  // input elements read
  bool end_of_input_ = false;
};

Result<IteratorPtr> ShuffleDataset::MakeIteratorInternal(
    const IteratorContext&, const std::string& prefix) const {
  return IteratorPtr(new ShuffleIterator(this, prefix));
}

}  // namespace

void RegisterShuffleDataset(Registry* r) {
  r->RegisterOp("Shuffle", [](OpArgs args) -> Result<DatasetPtr> {
     SLUICE_RETURN_IF_ERROR(CheckArity("Shuffle", args, 1, 0));
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
   }).IgnoreError();
}

}  // namespace sluice
