// Interleave and FlatMap (sequential): each input element becomes a dataset through a
// dataset function; up to cycle_length of them are open at once and block_length elements
// are taken from each in turn (tf.data InterleaveDatasetOp). FlatMap is cycle_length=1,
// block_length=1.
#include <thread>

#include "graph/attr.h"
#include "graph/dataset_access.h"
#include "ops/op_util.h"
#include "ops/ops.h"
#include "runtime/iterator_base.h"

namespace sluice {
namespace {

class InterleaveDataset : public DatasetNode {
 public:
  InterleaveDataset(std::string op, OpArgs args, ElementSpec spec, int64_t cycle_length,
                    int64_t block_length, uint64_t seed)
      : DatasetNode(std::move(op), std::move(args), std::move(spec)),
        cycle_length_(cycle_length),
        block_length_(block_length),
        seed_(seed) {}

  // tf.data reports UNKNOWN for interleave and flat_map.
  int64_t Cardinality() const override {
    return input(0)->Cardinality() == 0 ? 0 : kUnknownCardinality;
  }
  const Function& fn() const { return functions()[0]; }
  int64_t cycle_length() const { return cycle_length_; }
  int64_t block_length() const { return block_length_; }
  uint64_t seed() const { return seed_; }

 protected:
  Result<IteratorPtr> MakeIteratorInternal(
      const IteratorContext& ctx, const std::string& prefix) const override;

 private:
  const int64_t cycle_length_, block_length_;
  const uint64_t seed_;
};

class InterleaveIterator : public UnaryIterator {
 public:
  InterleaveIterator(const InterleaveDataset* ds, const std::string& prefix)
      : UnaryIterator(ds->shared(), prefix), ds_(ds) {}

 protected:
  Result<std::optional<Element>> GetNextInternal() override {
    while (!end_of_input_ || num_open_ > 0) {
      SLUICE_RETURN_IF_ERROR(CheckCancelled());
      Slot* s = cycle_index_ < static_cast<int64_t>(slots_.size()) ? &slots_[cycle_index_]
                                                                   : nullptr;
      if (s != nullptr && s->it) {
        // An error here comes from the inner iterator, which has itself moved on.
        SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, s->it->GetNext());
        if (e) {
          if (++block_index_ == ds_->block_length()) AdvanceToNextInCycle();
          return e;
        }
        *s = Slot();
        --num_open_;
        AdvanceToNextInCycle();
      } else if (!end_of_input_) {
        SLUICE_RETURN_IF_ERROR(OpenSlot());
      } else {
        AdvanceToNextLiveSlot();
      }
    }
    return std::nullopt;
  }

  Status SaveState(CheckpointWriter* w) const override {
    w->WriteInt(prefix(), "cycle_length", ds_->cycle_length());
    w->WriteInt(prefix(), "input_position", input_position_);
    w->WriteInt(prefix(), "end_of_input", end_of_input_ ? 1 : 0);
    w->WriteInt(prefix(), "cycle_index", cycle_index_);
    w->WriteInt(prefix(), "block_index", block_index_);
    w->WriteInt(prefix(), "num_slots", static_cast<int64_t>(slots_.size()));
    for (size_t i = 0; i < slots_.size(); ++i) {
      const Slot& s = slots_[i];
      std::string key = "slot" + std::to_string(i);
      w->WriteInt(prefix(), key + ".position", s.it ? s.position : -1);
      if (!s.it) continue;
      w->WriteElement(prefix(), key + ".element", s.element);
      SLUICE_RETURN_IF_ERROR(s.it->Save(w));
    }
    return Status::OK();
  }

  Status RestoreState(const CheckpointReader& r) override {
    SLUICE_ASSIGN_OR_RETURN(int64_t cycle_length, r.ReadInt(prefix(), "cycle_length"));
    if (cycle_length != ds_->cycle_length()) {
      return FailedPreconditionError(node().op() +
                                     ": checkpoint was taken with cycle_length " +
                                     std::to_string(cycle_length) + ", this one has " +
                                     std::to_string(ds_->cycle_length()));
    }
    SLUICE_ASSIGN_OR_RETURN(input_position_, r.ReadInt(prefix(), "input_position"));
    SLUICE_ASSIGN_OR_RETURN(int64_t eoi, r.ReadInt(prefix(), "end_of_input"));
    SLUICE_ASSIGN_OR_RETURN(cycle_index_, r.ReadInt(prefix(), "cycle_index"));
    SLUICE_ASSIGN_OR_RETURN(block_index_, r.ReadInt(prefix(), "block_index"));
    SLUICE_ASSIGN_OR_RETURN(int64_t num_slots, r.ReadInt(prefix(), "num_slots"));
    if (input_position_ < 0 || cycle_index_ < 0 || cycle_index_ >= cycle_length ||
        block_index_ < 0 || block_index_ >= ds_->block_length() || num_slots < 0 ||
        num_slots > cycle_length || num_slots > input_position_) {
      return DataLossError(node().op() + ": inconsistent checkpoint (input_position " +
                           std::to_string(input_position_) + ", cycle_index " +
                           std::to_string(cycle_index_) + ", block_index " +
                           std::to_string(block_index_) + ", num_slots " +
                           std::to_string(num_slots) + ")");
    }
    end_of_input_ = eoi != 0;
    slots_.clear();
    slots_.resize(num_slots);
    num_open_ = 0;
    for (int64_t i = 0; i < num_slots; ++i) {
      std::string key = "slot" + std::to_string(i);
      SLUICE_ASSIGN_OR_RETURN(int64_t pos, r.ReadInt(prefix(), key + ".position"));
      if (pos < 0) continue;
      if (pos >= input_position_) {
        return DataLossError(node().op() + ": checkpoint slot " + std::to_string(i) +
                             " has position " + std::to_string(pos) +
                             " beyond the input " + "position " +
                             std::to_string(input_position_));
      }
      SLUICE_ASSIGN_OR_RETURN(Element e, r.ReadElement(prefix(), key + ".element"));
      SLUICE_ASSIGN_OR_RETURN(slots_[i].it, MakeInner(e, pos, i));
      SLUICE_RETURN_IF_ERROR(slots_[i].it->Restore(r));
      slots_[i].element = std::move(e);
      slots_[i].position = pos;
      ++num_open_;
    }
    return Status::OK();
  }

 private:
  struct Slot {
    IteratorPtr it;  // null when the slot is empty
    Element element;                   // the input element that made it (for checkpoints)
    int64_t position = 0;              // that element's input position
  };

  // Reads the next input element into the current slot. A function error consumes the
  // element and leaves the slot empty, so the next call moves on.
  Status OpenSlot() {
    SLUICE_ASSIGN_OR_RETURN(std::optional<Element> in, input_->GetNext());
    if (!in) {
      end_of_input_ = true;
      return Status::OK();
    }
    const int64_t pos = input_position_++;
    if (static_cast<int64_t>(slots_.size()) <= cycle_index_)
      slots_.resize(cycle_index_ + 1);
    SLUICE_ASSIGN_OR_RETURN(IteratorPtr it,
                            MakeInner(*in, pos, cycle_index_));
    Slot& s = slots_[cycle_index_];
    s.it = std::move(it);
    s.element = std::move(*in);
    s.position = pos;
    ++num_open_;
    return Status::OK();
  }

  Result<IteratorPtr> MakeInner(const Element& e, int64_t pos,
                                                  int64_t slot) const {
    FunctionContext fctx(ds_->seed(), pos);
    SLUICE_ASSIGN_OR_RETURN(Dataset inner, ds_->fn().MakeDataset(e, fctx));
    const ElementSpec& want = node().element_spec();
    const ElementSpec& got = inner.element_spec();
    if (!want.unknown && !got.unknown) {
      bool ok = want.size() == got.size();
      for (size_t i = 0; ok && i < want.size(); ++i) ok = want[i].dtype == got[i].dtype;
      if (!ok) {
        return InvalidArgumentError("function '" + ds_->fn().name() +
                                    "' returned a dataset of " + got.ToString() +
                                    ", expected " + want.ToString());
      }
    }
    return MakeChild(NodeOf(inner),
                     ctx_.Mixed(static_cast<uint64_t>(pos)).WithoutSplits(),
                     "slot" + std::to_string(slot));
  }

  void AdvanceToNextInCycle() {
    block_index_ = 0;
    cycle_index_ = (cycle_index_ + 1) % ds_->cycle_length();
  }

  // With the input exhausted, empty slots are passed over: go straight to the next live
  // one in cycle order (same result as stepping through them one by one).
  void AdvanceToNextLiveSlot() {
    const int64_t n = static_cast<int64_t>(slots_.size());
    int64_t next = -1;
    for (int64_t i = cycle_index_ + 1; i < n && next < 0; ++i) {
      if (slots_[i].it) next = i;
    }
    for (int64_t i = 0; i < n && next < 0; ++i) {
      if (slots_[i].it) next = i;
    }
    block_index_ = 0;
    cycle_index_ = next < 0 ? 0 : next;
  }

  const InterleaveDataset* ds_;
  // Grown lazily up to cycle_length, so a huge cycle_length costs nothing up front.
  std::vector<Slot> slots_;
  int64_t num_open_ = 0;
  int64_t input_position_ = 0;  // input elements consumed
  bool end_of_input_ = false;
  int64_t cycle_index_ = 0;
  int64_t block_index_ = 0;
};

Result<IteratorPtr> InterleaveDataset::MakeIteratorInternal(
    const IteratorContext&, const std::string& prefix) const {
  return IteratorPtr(new InterleaveIterator(this, prefix));
}

Result<DatasetPtr> Make(const std::string& op, OpArgs args, bool flat_map) {
  SLUICE_ASSIGN_OR_RETURN(int64_t seed, GetAttrOr<int64_t>(args.attrs, op, "seed", 0));
  int64_t cycle_length = 1, block_length = 1;
  if (!flat_map) {
    SLUICE_ASSIGN_OR_RETURN(cycle_length,
                            GetAttr<int64_t>(args.attrs, op, "cycle_length"));
    SLUICE_ASSIGN_OR_RETURN(block_length,
                            GetAttrOr<int64_t>(args.attrs, op, "block_length", 1));
    if (cycle_length == kAutotune) {
      cycle_length = std::max<int64_t>(1, std::thread::hardware_concurrency());
    }
    if (cycle_length <= 0) {
      return InvalidArgumentError(op +
                                  ": cycle_length must be > 0 or AUTOTUNE (-1), got " +
                                  std::to_string(cycle_length));
    }
    if (block_length <= 0) {
      return InvalidArgumentError(op + ": block_length must be > 0, got " +
                                  std::to_string(block_length));
    }
  }
  ElementSpec spec = ElementSpec::Unknown();
  if (auto s = args.functions[0].OutputSpec(args.inputs[0]->element_spec())) {
    if (!s->ok()) return s->status().WithContext(op);
    spec = **s;
  }
  return DatasetPtr(std::make_shared<InterleaveDataset>(
      op, std::move(args), std::move(spec), cycle_length, block_length,
      static_cast<uint64_t>(seed)));
}

}  // namespace

void RegisterInterleaveDataset(Registry* r) {
  r->RegisterOp(
      OpDef("Interleave")
          .Summary("Pulls block_length elements from each of cycle_length datasets made by "
                   "the function, in turn.")
          .Inputs(1)
          .Functions({Function::Kind::kDataset})
          .Attr("seed", AttrType::kInt, int64_t{0}, "Seed of the function's random draws.")
          .Attr("cycle_length", AttrType::kInt,
                "Datasets open at once, > 0, or AUTOTUNE (-1): the cores.")
          .Attr("block_length", AttrType::kInt, int64_t{1},
                "Elements taken from a dataset before moving on, > 0.")
          .Traits({.interleave = true, .seed_mix = SeedMix::kAlways}),
      [](OpArgs a) { return Make("Interleave", std::move(a), false); });
  r->RegisterOp(
      OpDef("FlatMap")
          .Summary("The elements of the datasets the function makes, one dataset after "
                   "another.")
          .Inputs(1)
          .Functions({Function::Kind::kDataset})
          .Attr("seed", AttrType::kInt, int64_t{0}, "Seed of the function's random draws.")
          .Traits({.interleave = true, .seed_mix = SeedMix::kAlways}),
      [](OpArgs a) { return Make("FlatMap", std::move(a), true); });
}

}  // namespace sluice
