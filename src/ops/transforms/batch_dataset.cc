#include <algorithm>
#include <new>

#include "graph/attr.h"
#include "ops/op_util.h"
#include "ops/ops.h"
#include "runtime/iterator_base.h"
#include "runtime/random_access.h"
#include "runtime/resources.h"

namespace sluice {
namespace {

class BatchDataset : public DatasetNode {
 public:
  BatchDataset(OpArgs args, ElementSpec spec, int64_t batch_size, bool drop_remainder)
      : DatasetNode("Batch", std::move(args), std::move(spec)),
        batch_size_(batch_size), drop_remainder_(drop_remainder) {}

  int64_t Cardinality() const override {
    return BatchCardinality(input(0)->Cardinality(), batch_size_, drop_remainder_);
  }
  int64_t batch_size() const { return batch_size_; }
  bool drop_remainder() const { return drop_remainder_; }

 protected:
  Result<IteratorPtr> MakeIteratorInternal(
      const IteratorContext& ctx, const std::string& prefix) const override;

 private:
  int64_t batch_size_;
  bool drop_remainder_;
};

class BatchIterator : public UnaryIterator {
 public:
  BatchIterator(const BatchDataset* ds, const std::string& prefix)
      : UnaryIterator(ds->shared(), prefix), ds_(ds) {}

 protected:
  Result<std::optional<Element>> GetNextInternal() override {
    if (stream_ != nullptr) [[unlikely]] {
      RandomAccess* rows = stream_->StreamRows();
      if (rows->GathersFromMemory()) return Gather(stream_, rows);
    }
    rows_.reserve(BatchReserve(ds_->batch_size()));
    SLUICE_RETURN_IF_ERROR(ReadBatchRows(input_.get(), ds_->batch_size(), &rows_));
    if (rows_.empty()) return std::nullopt;
    if (ds_->drop_remainder() && static_cast<int64_t>(rows_.size()) < ds_->batch_size()) {
      return std::nullopt;
    }
    SLUICE_ASSIGN_OR_RETURN(Element out, StackRows(rows_, column_));
    return out;
  }

  Result<int64_t> SkipInternal(int64_t n) override {
    return SkipBatches(input_.get(), n, ds_->batch_size(), ds_->drop_remainder());
  }

  // Whether the input is a row stream is fixed once it is made (a split provider, a
  // GlobalShuffle's fallback); whether its rows gather may change (a file loads).
  Status InitializeState(const IteratorContext&) override {
    stream_ = input_->AsRowStream();
    return Status::OK();
  }

 private:
  // The next batch's rows gathered straight from memory (runtime/random_access.h): the
  // same batch, one copy per row instead of an element per row and a second copy.
  Result<std::optional<Element>> Gather(RowStream* stream, RandomAccess* rows) {
    // At most the rows there are (a batch_size of 2^60 over 10 rows is one batch of 10),
    // and an error, not an abort, when they cannot fit in memory (as ReadBatchRows).
    const int64_t n = std::min(ds_->batch_size(), rows->RowCount());
    if (n > BatchReserve(n)) {  // a row's copy and its index
      const int64_t row = std::max<int64_t>(0, StaticElementBytes(input_->node().element_spec()));
      SLUICE_RETURN_IF_ERROR(CheckRowsFitMemory(
          "a batch", n, n, row + static_cast<int64_t>(sizeof(int64_t))));
    }
    if (static_cast<int64_t>(indices_.size()) < n) {
      try {
        indices_.resize(static_cast<size_t>(n));
      } catch (const std::bad_alloc&) {
        return ResourceExhaustedError("cannot hold the row indices of a batch of " +
                                      std::to_string(n) + " rows");
      }
    }
    const int64_t k = stream->TakeRows(n, indices_.data());
    if (k == 0 || (ds_->drop_remainder() && k < ds_->batch_size())) return std::nullopt;
    SLUICE_ASSIGN_OR_RETURN(Element out,
                            rows->GatherRows({indices_.data(), static_cast<size_t>(k)}));
    return out;
  }

  const BatchDataset* ds_;
  RowStream* stream_ = nullptr;   // input_ as a row stream, if it is one
  std::vector<int64_t> indices_;  // Gather's row indices, reused
  std::vector<Element> rows_;    // reused between calls to avoid reallocating
  std::vector<Tensor> column_;  // likewise
};

Result<IteratorPtr> BatchDataset::MakeIteratorInternal(
    const IteratorContext&, const std::string& prefix) const {
  return IteratorPtr(new BatchIterator(this, prefix));
}

}  // namespace

void RegisterBatchDataset(Registry* r) {
  r->RegisterOp(
      WithBatchAttrs(OpDef("Batch")
          .Summary("Stacks consecutive elements into batches.")
          .Inputs(1)
          .Traits({.seed_mix = SeedMix::kNone})),
      [](OpArgs args) -> Result<DatasetPtr> {
     SLUICE_ASSIGN_OR_RETURN(int64_t bs, GetAttr<int64_t>(args.attrs, "Batch", "batch_size"));
     SLUICE_ASSIGN_OR_RETURN(bool drop, GetAttrOr<bool>(args.attrs, "Batch", "drop_remainder", false));
     if (bs <= 0) return InvalidArgumentError("Batch: batch_size must be > 0, got " + std::to_string(bs));
     ElementSpec spec = BatchedSpec(args.inputs[0]->element_spec(), drop ? bs : -1);
     return DatasetPtr(std::make_shared<BatchDataset>(std::move(args), std::move(spec), bs, drop));
   });
}

}  // namespace sluice
