#include <algorithm>

#include "graph/attr.h"
#include "ops/ops.h"
#include "runtime/iterator_base.h"
#include "runtime/random_access.h"
#include "runtime/split_provider.h"

namespace sluice {
namespace {

class RangeDataset : public DatasetNode {
 public:
  RangeDataset(OpArgs args, int64_t start, int64_t stop, int64_t step)
      : DatasetNode("Range", std::move(args), ElementSpec{{{DType::kInt64, PartialShape{}}}}),
        start_(start), stop_(stop), step_(step) {}

  int64_t Cardinality() const override { return Remaining(start_); }

  // Elements left from `next` on, in 128 bits: stop - start and the rounding overflow
  // int64 for ranges spanning more than half of it.
  int64_t Remaining(int64_t next) const {
    const __int128 from = next, stop = stop_, step = step_;
    if (step > 0)
      return stop > from ? static_cast<int64_t>((stop - from + step - 1) / step) : 0;
    return from > stop ? static_cast<int64_t>((from - stop - step - 1) / -step) : 0;
  }

 protected:
  Result<IteratorPtr> MakeIteratorInternal(
      const IteratorContext& ctx, const std::string& prefix) const override;

 private:
  friend class RangeIterator;
  const int64_t start_, stop_, step_;
};

class RangeIterator : public IteratorBase, public RandomAccess, public RowStream {
 public:
  RangeIterator(const RangeDataset* ds, const std::string& prefix)
      : IteratorBase(ds->shared(), prefix), ds_(ds), next_(ds->start_) {}

  // With a split provider, split i is element i (start + i * step); next_ is then start
  // while reading and stop once the provider has ended.
  Status Initialize(const IteratorContext& ctx) override {
    splits_ = ctx.split_provider;
    return Status::OK();
  }

  // Row i is start + i * step (without a split provider).
  RandomAccess* AsRandomAccess() override { return splits_ ? nullptr : this; }
  int64_t RowCount() const override { return ds_->Cardinality(); }
  Result<Element> GetRow(int64_t i) override {
    if (i < 0 || i >= RowCount()) {
      return AddContext(OutOfRangeError("row " + std::to_string(i) + " of " +
                                        std::to_string(RowCount())));
    }
    stats().CountProduced();
    return Element{Tensor::Scalar<int64_t>(Value(i))};
  }

  // A batch's rows are computed straight into it (runtime/random_access.h), in its own
  // order or a GlobalShuffle's.
  bool GathersFromMemory() const override { return true; }
  Result<Element> GatherRows(std::span<const int64_t> rows) override {
    SLUICE_ASSIGN_OR_RETURN(
        Tensor t, Tensor::Allocate(DType::kInt64, Shape({static_cast<int64_t>(rows.size())})));
    int64_t* v = t.mutable_data<int64_t>();
    for (size_t k = 0; k < rows.size(); ++k) v[k] = Value(rows[k]);
    stats().CountProduced(static_cast<int64_t>(rows.size()));
    return Element{std::move(t)};
  }
  RowStream* AsRowStream() override { return splits_ ? nullptr : this; }
  RandomAccess* StreamRows() override { return this; }
  // Moves next_ as Skip does; the rows are counted when gathered.
  int64_t TakeRows(int64_t n, int64_t* out) override {
    if (Done()) return 0;
    const int64_t remaining = ds_->Remaining(next_);
    const int64_t first = RowCount() - remaining;  // the row next_ is
    const int64_t k = std::max<int64_t>(0, std::min(n, remaining));
    for (int64_t j = 0; j < k; ++j) out[j] = first + j;
    next_ = k == remaining ? ds_->stop_
                           : static_cast<int64_t>(static_cast<__int128>(next_) +
                                                  static_cast<__int128>(k) * ds_->step_);
    return k;
  }

 protected:
  bool Done() const { return ds_->step_ > 0 ? next_ >= ds_->stop_ : next_ <= ds_->stop_; }
  // Element i, start + i * step, for 0 <= i < cardinality (128 bits: i * step alone may
  // not fit).
  int64_t Value(int64_t i) const {
    return static_cast<int64_t>(static_cast<__int128>(ds_->start_) +
                                static_cast<__int128>(i) * ds_->step_);
  }

  // The next split's element index; nullopt (and Done) when the provider has ended.
  Result<std::optional<int64_t>> NextSplit() {
    SLUICE_ASSIGN_OR_RETURN(std::optional<Tensor> split, splits_->GetNext());
    if (!split) {
      next_ = ds_->stop_;
      return std::optional<int64_t>();
    }
    SLUICE_ASSIGN_OR_RETURN(int64_t i,
                            SplitRowIndex(*split, ds_->Cardinality(), "Range"));
    return std::optional<int64_t>(i);
  }

  Result<std::optional<Element>> GetNextInternal() override {
    if (Done()) return std::nullopt;
    if (splits_ != nullptr) [[unlikely]] {
      SLUICE_ASSIGN_OR_RETURN(std::optional<int64_t> i, NextSplit());
      if (!i) return std::nullopt;
      // *i < cardinality keeps the value in range.
      return Element{Tensor::Scalar<int64_t>(Value(*i))};
    }
    Element e;
    e.push_back(Tensor::Scalar<int64_t>(next_));  // moved in: no refcount traffic
    // Past the last element next_ + step may not fit: jump to stop, which is done.
    if (__builtin_add_overflow(next_, ds_->step_, &next_)) next_ = ds_->stop_;
    return e;
  }

  Result<int64_t> SkipInternal(int64_t n) override {
    if (Done()) return int64_t{0};
    if (splits_ != nullptr) {
      int64_t done = 0;
      while (done < n) {
        SLUICE_ASSIGN_OR_RETURN(std::optional<int64_t> i, NextSplit());
        if (!i) break;
        ++done;
      }
      return done;
    }
    const int64_t remaining = ds_->Remaining(next_);
    const int64_t k = std::min(n, remaining);
    // k < remaining keeps next_ + k * step in range, but k * step alone may not be (a
    // range spanning all of int64): compute in 128 bits.
    next_ = k == remaining ? ds_->stop_
                           : static_cast<int64_t>(static_cast<__int128>(next_) +
                                                  static_cast<__int128>(k) * ds_->step_);
    return k;
  }

  Status SaveInternal(CheckpointWriter* w) const override {
    w->WriteInt(prefix(), "next", next_);
    if (splits_ != nullptr) splits_->MarkCheckpoint();
    return Status::OK();
  }

  Status RestoreInternal(const CheckpointReader& r) override {
    SLUICE_ASSIGN_OR_RETURN(int64_t next, r.ReadInt(prefix(), "next"));
    if (splits_ != nullptr && next != ds_->start_ && next != ds_->stop_) {
      return DataLossError("Range: checkpoint position " + std::to_string(next) +
                           " was not taken with a split provider");
    }
    next_ = next;
    return Status::OK();
  }

 private:
  const RangeDataset* ds_;
  int64_t next_;
  std::shared_ptr<SplitProvider> splits_;
};

Result<IteratorPtr> RangeDataset::MakeIteratorInternal(
    const IteratorContext&, const std::string& prefix) const {
  return IteratorPtr(new RangeIterator(this, prefix));
}

}  // namespace

void RegisterRangeDataset(Registry* r) {
  r->RegisterOp(
      OpDef("Range")
          .Summary("start, start + step, ... up to but not including stop (int64 scalars).")
          .Inputs(0)
          .Attr("start", AttrType::kInt, int64_t{0}, "The first value.")
          .Attr("stop", AttrType::kInt, "The end (exclusive).")
          .Attr("step", AttrType::kInt, int64_t{1}, "The increment; not 0, may be negative.")
          .Traits({.source = true,
                   .splittable = true,
                   .seed_mix = SeedMix::kNone,
                   .row_access = RowAccess::kSource}),
      [](OpArgs args) -> Result<DatasetPtr> {
     SLUICE_ASSIGN_OR_RETURN(int64_t start, GetAttrOr<int64_t>(args.attrs, "Range", "start", 0));
     SLUICE_ASSIGN_OR_RETURN(int64_t stop, GetAttr<int64_t>(args.attrs, "Range", "stop"));
     SLUICE_ASSIGN_OR_RETURN(int64_t step, GetAttrOr<int64_t>(args.attrs, "Range", "step", 1));
     if (step == 0) return InvalidArgumentError("Range: step must not be 0");
     return DatasetPtr(std::make_shared<RangeDataset>(std::move(args), start, stop, step));
   });
}

}  // namespace sluice
