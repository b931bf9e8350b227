// Take (the first `count` elements) and Skip (all but the first `count`). A negative
// count means all, as in tf.data (-1 is the documented spelling).
// Row access (RowAccess::kSlice): over an input that serves rows, Take(m) serves
// min(m, n) rows, row i of Skip(k) is the input's row i + k.
#include <limits>

#include "graph/attr.h"
#include "ops/op_util.h"
#include "ops/ops.h"
#include "runtime/iterator_base.h"
#include "runtime/random_access.h"

namespace sluice {
namespace {

constexpr int64_t kAll = std::numeric_limits<int64_t>::max();

class TakeSkipDataset : public DatasetNode {
 public:
  TakeSkipDataset(std::string op, OpArgs args, ElementSpec spec, int64_t count, bool take)
      : DatasetNode(std::move(op), std::move(args), std::move(spec)),
        count_(count),
        take_(take) {}

  int64_t Cardinality() const override {
    const int64_t n = input(0)->Cardinality();
    if (take_) {
      if (count_ == 0) return 0;
      if (n == kUnknownCardinality) return kUnknownCardinality;
      if (n == kInfiniteCardinality) return count_ < 0 ? kInfiniteCardinality : count_;
      return count_ < 0 ? n : std::min(n, count_);
    }
    if (n == kInfiniteCardinality || n == kUnknownCardinality) return n;
    return count_ < 0 ? 0 : std::max<int64_t>(0, n - count_);
  }
  // The count with "all" as the largest int64.
  int64_t count() const { return count_ < 0 ? kAll : count_; }

 protected:
  Result<IteratorPtr> MakeIteratorInternal(
      const IteratorContext& ctx, const std::string& prefix) const override;

 private:
  const int64_t count_;
  const bool take_;
};

class TakeIterator : public UnaryIterator, public RandomAccess {
 public:
  TakeIterator(const TakeSkipDataset* ds, const std::string& prefix)
      : UnaryIterator(ds->shared(), prefix), ds_(ds) {}

  RandomAccess* AsRandomAccess() override { return rows_ == nullptr ? nullptr : this; }
  int64_t RowCount() const override { return std::min(rows_->RowCount(), ds_->count()); }
  Result<Element> GetRow(int64_t i) override {
    if (i < 0 || i >= RowCount()) {
      return OutOfRangeError("Take: row " + std::to_string(i) + " of " +
                             std::to_string(RowCount()));
    }
    return rows_->GetRow(i);
  }

 protected:
  Status InitializeState(const IteratorContext&) override {
    rows_ = input_->AsRandomAccess();
    return Status::OK();
  }

  Result<std::optional<Element>> GetNextInternal() override {
    if (taken_ >= ds_->count()) return std::nullopt;
    SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, input_->GetNext());
    if (!e) {
      taken_ = ds_->count();  // the input ended: stay ended
      return std::nullopt;
    }
    ++taken_;
    return e;
  }

  Result<int64_t> SkipInternal(int64_t n) override {
    const int64_t want = std::min(n, ds_->count() - taken_);
    if (want <= 0) return int64_t{0};
    SLUICE_ASSIGN_OR_RETURN(int64_t k, input_->Skip(want));
    taken_ = k < want ? ds_->count() : taken_ + k;
    return k;
  }

  Status SaveState(CheckpointWriter* w) const override {
    w->WriteInt(prefix(), "taken", taken_);
    return Status::OK();
  }

  Status RestoreState(const CheckpointReader& r) override {
    SLUICE_ASSIGN_OR_RETURN(taken_, r.ReadInt(prefix(), "taken"));
    if (taken_ < 0) return DataLossError("Take: negative count in checkpoint");
    return Status::OK();
  }

 private:
  const TakeSkipDataset* ds_;
  RandomAccess* rows_ = nullptr;  // the input as rows by index, when it serves them
  int64_t taken_ = 0;  // elements produced (count() once the input ended)
};

class SkipIterator : public UnaryIterator, public RandomAccess {
 public:
  SkipIterator(const TakeSkipDataset* ds, const std::string& prefix)
      : UnaryIterator(ds->shared(), prefix), ds_(ds) {}

  RandomAccess* AsRandomAccess() override { return rows_ == nullptr ? nullptr : this; }
  int64_t RowCount() const override {
    return std::max<int64_t>(0, rows_->RowCount() - std::min(rows_->RowCount(), ds_->count()));
  }
  Result<Element> GetRow(int64_t i) override {
    if (i < 0 || i >= RowCount()) {
      return OutOfRangeError("Skip: row " + std::to_string(i) + " of " +
                             std::to_string(RowCount()));
    }
    return rows_->GetRow(i + ds_->count());
  }

 protected:
  Status InitializeState(const IteratorContext&) override {
    rows_ = input_->AsRandomAccess();
    return Status::OK();
  }

  Result<std::optional<Element>> GetNextInternal() override {
    if (ended_) return std::nullopt;
    SLUICE_RETURN_IF_ERROR(SkipPrefix());
    if (ended_) return std::nullopt;
    SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, input_->GetNext());
    if (!e) ended_ = true;
    return e;
  }

  Result<int64_t> SkipInternal(int64_t n) override {
    if (ended_) return int64_t{0};
    SLUICE_RETURN_IF_ERROR(SkipPrefix());
    if (ended_) return int64_t{0};
    SLUICE_ASSIGN_OR_RETURN(int64_t k, input_->Skip(n));
    if (k < n) ended_ = true;
    return k;
  }

  Status SaveState(CheckpointWriter* w) const override {
    w->WriteInt(prefix(), "skipped", skipped_);
    w->WriteInt(prefix(), "ended", ended_ ? 1 : 0);
    return Status::OK();
  }

  Status RestoreState(const CheckpointReader& r) override {
    SLUICE_ASSIGN_OR_RETURN(skipped_, r.ReadInt(prefix(), "skipped"));
    SLUICE_ASSIGN_OR_RETURN(int64_t ended, r.ReadInt(prefix(), "ended"));
    if (skipped_ < 0) return DataLossError("Skip: negative count in checkpoint");
    ended_ = ended != 0;
    return Status::OK();
  }

 private:
  // Skips what is left of the first `count` elements. As in tf.data, an error while
  // skipping is returned without counting the elements skipped before it.
  Status SkipPrefix() {
    while (skipped_ < ds_->count()) {
      SLUICE_RETURN_IF_ERROR(CheckCancelled());
      const int64_t want = ds_->count() - skipped_;
      SLUICE_ASSIGN_OR_RETURN(int64_t k, input_->Skip(want));
      skipped_ += k;
      if (k < want) {
        ended_ = true;
        break;
      }
    }
    return Status::OK();
  }

  const TakeSkipDataset* ds_;
  RandomAccess* rows_ = nullptr;
  int64_t skipped_ = 0;
  bool ended_ = false;
};

Result<IteratorPtr> TakeSkipDataset::MakeIteratorInternal(
    const IteratorContext&, const std::string& prefix) const {
  if (take_) return IteratorPtr(new TakeIterator(this, prefix));
  return IteratorPtr(new SkipIterator(this, prefix));
}

Result<DatasetPtr> Make(const std::string& op, OpArgs args, bool take) {
  SLUICE_ASSIGN_OR_RETURN(int64_t count, GetAttr<int64_t>(args.attrs, op, "count"));
  ElementSpec spec = args.inputs[0]->element_spec();
  return DatasetPtr(std::make_shared<TakeSkipDataset>(op, std::move(args),
                                                      std::move(spec), count, take));
}

}  // namespace

void RegisterTakeSkipDataset(Registry* r) {
  auto def = [](std::string op, std::string summary) {
    return OpDef(std::move(op))
        .Summary(std::move(summary))
        .Inputs(1)
        .Attr("count", AttrType::kInt, "Elements; -1: all.")
        .Traits({.seed_mix = SeedMix::kNone, .row_access = RowAccess::kSlice});
  };
  r->RegisterOp(def("Take", "The first count elements of its input."),
                [](OpArgs a) { return Make("Take", std::move(a), true); });
  r->RegisterOp(def("Skip", "Its input without the first count elements."),
                [](OpArgs a) { return Make("Skip", std::move(a), false); });
}

}  // namespace sluice
