#include "graph/attr.h"
#include "ops/op_util.h"
#include "ops/ops.h"
#include "runtime/buffer_charge.h"
#include "runtime/iterator_base.h"

namespace sluice {
namespace {

class UnbatchDataset : public DatasetNode {
 public:
  UnbatchDataset(OpArgs args, ElementSpec spec)
      : DatasetNode("Unbatch", std::move(args), std::move(spec)) {}

  int64_t Cardinality() const override {
    int64_t c = input(0)->Cardinality();
    if (c == 0) return 0;
    if (c == kInfiniteCardinality) return c;
    // Known only when every batch has a known fixed size.
    const ElementSpec& in = input(0)->element_spec();
    if (c < 0 || in.unknown || in.components.empty()) return kUnknownCardinality;
    const PartialShape& s = in.components[0].shape;
    if (!s.rank_known() || s.rank() == 0 || s.dim(0) < 0) return kUnknownCardinality;
    return c * s.dim(0);
  }

 protected:
  Result<IteratorPtr> MakeIteratorInternal(
      const IteratorContext& ctx, const std::string& prefix) const override;
};

class UnbatchIterator : public UnaryIterator {
 public:
  UnbatchIterator(const UnbatchDataset* ds, const std::string& prefix)
      : UnaryIterator(ds->shared(), prefix) {}

 protected:
  // The current batch is charged as a held buffer (runtime/buffer_charge.h) while its
  // rows are handed out (they are views of it).
  Status InitializeState(const IteratorContext& ctx) override {
    charge_.Bind(ctx, this, "smaller batches");
    return Status::OK();
  }

  Result<std::optional<Element>> GetNextInternal() override {
    while (!current_ || index_ >= rows_) {
      ResetCurrent();
      SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, input_->GetNext());
      if (!e) return std::nullopt;
      if (OnlyRowInPlace(*e)) return std::move(e);
      SLUICE_RETURN_IF_ERROR(SetCurrent(std::move(*e)));
    }
    TensorVector row;  // the element's own vector type: no copy into it after
    row.reserve(current_->size());
    if (index_ + 1 < rows_) {
      for (const Tensor& t : current_->tensors()) row.push_back(t.SubTensor(index_));
    } else {
      // The batch's last row takes its buffer references (Save sees no rest after it).
      for (Tensor& t : current_->tensors()) row.push_back(std::move(t).SubTensor(index_));
    }
    ++index_;
    return Element(std::move(row), current_->names());
  }

  Status SaveState(CheckpointWriter* w) const override {
    // The rest of the current batch is saved (rows are views, so this is its size at most).
    bool has = current_ && index_ < rows_;
    w->WriteInt(prefix(), "has_current", has ? 1 : 0);
    if (has) {
      std::vector<Tensor> rest;
      for (const Tensor& t : current_->tensors()) rest.push_back(t.Slice(index_, rows_));
      w->WriteElement(prefix(), "rest", Element(std::move(rest), current_->names()));
    }
    return Status::OK();
  }

  Status RestoreState(const CheckpointReader& r) override {
    SLUICE_ASSIGN_OR_RETURN(int64_t has, r.ReadInt(prefix(), "has_current"));
    ResetCurrent();
    if (has) {
      SLUICE_ASSIGN_OR_RETURN(Element rest, r.ReadElement(prefix(), "rest"));
      SLUICE_RETURN_IF_ERROR(SetCurrent(std::move(rest)));
    }
    return Status::OK();
  }

 private:
  Status SetCurrent(Element e) {
    SLUICE_ASSIGN_OR_RETURN(const int64_t n, BatchRowsOf(e, "Unbatch"));
    SLUICE_RETURN_IF_ERROR(charge_.AddElement(e));
    current_ = std::move(e);
    rows_ = n;
    index_ = 0;
    return Status::OK();
  }
  // A batch of one row (every component [1, ...]) becomes its row in place: the same
  // memory without the leading dimension, its element kept (no new vector, no views, and
  // nothing held between calls, so nothing charged). Batch(1) does the reverse
  // (StackRows). False, with `e` untouched, for anything else (errors included: SetCurrent
  // reports them).
  static bool OnlyRowInPlace(Element& e) {
    if (e.empty()) return false;
    for (const Tensor& t : e.tensors()) {
      if (t.rank() == 0 || t.dim(0) != 1) return false;
    }
    for (Tensor& t : e.tensors()) t.RemoveUnitDim(0);  // same elements, same data
    return true;
  }
  void ResetCurrent() {
    if (current_) charge_.Remove(charge_.bytes(), charge_.elements());
    current_.reset();
  }

  std::optional<Element> current_;
  int64_t rows_ = 0;
  int64_t index_ = 0;
  BufferCharge charge_;  // current_
};

Result<IteratorPtr> UnbatchDataset::MakeIteratorInternal(
    const IteratorContext&, const std::string& prefix) const {
  return IteratorPtr(new UnbatchIterator(this, prefix));
}

}  // namespace

void RegisterUnbatchDataset(Registry* r) {
  r->RegisterOp(
      OpDef("Unbatch")
          .Summary("Splits each element along dimension 0 into its rows.")
          .Inputs(1)
          .Traits({.seed_mix = SeedMix::kNone}),
      [](OpArgs args) -> Result<DatasetPtr> {
     // As tf.data, a known spec is checked when the op is made: no scalar components,
     // and one batch size (where the first dimensions are known).
     const ElementSpec& in = args.inputs[0]->element_spec();
     int64_t batch = -1;
     for (size_t i = 0; !in.unknown && i < in.size(); ++i) {
       const PartialShape& s = in[i].shape;
       if (!s.rank_known()) continue;
       if (s.rank() == 0) {
         return InvalidArgumentError("Unbatch: component " + std::to_string(i) +
                                     " is a scalar (element spec " + in.ToString() +
                                     "); only batches can be unbatched");
       }
       const int64_t d = s.dim(0);
       if (d >= 0 && batch >= 0 && d != batch) {
         return InvalidArgumentError("Unbatch: the components' first dimensions "
                                     "differ (" + std::to_string(batch) + " and " +
                                     std::to_string(d) + " in " + in.ToString() + ")");
       }
       if (d >= 0) batch = d;
     }
     ElementSpec spec = UnbatchedSpec(in);
     return DatasetPtr(std::make_shared<UnbatchDataset>(std::move(args), std::move(spec)));
   });
}

}  // namespace sluice
