// GlobalShuffle: its random-access input in the order of a seeded permutation of [0, n)
// (IndexPermutation), one per epoch: row perm(p) at position p. No buffer (O(1) memory, no
// fill stall); the checkpoint is the permutation's seed and the position.
//
// When the input's iterator cannot serve rows after all (a split provider hands its
// source the rows to read, as under distribute), the op falls back to a buffered shuffle
// of the whole input (ShuffleBuffer, as Shuffle(n)): still a uniform permutation.
#include <algorithm>

#include "graph/attr.h"
#include "graph/random_access.h"
#include "ops/index_permutation.h"
#include "ops/op_util.h"
#include "ops/shuffle_buffer.h"
#include "ops/ops.h"
#include "runtime/iterator_base.h"
#include "runtime/random_access.h"

namespace sluice {
namespace {

class GlobalShuffleDataset : public DatasetNode {
 public:
  GlobalShuffleDataset(OpArgs args, ElementSpec spec, uint64_t seed, bool reshuffle,
                       DatasetPtr rows)
      : DatasetNode("GlobalShuffle", std::move(args), std::move(spec)),
        seed_(seed),
        reshuffle_(reshuffle),
        rows_(std::move(rows)) {}

  // The input as it serves rows (RowNodes: ParallelMaps as Maps).
  const DatasetPtr& rows() const { return rows_; }

  int64_t Cardinality() const override { return input(0)->Cardinality(); }
  uint64_t seed() const { return seed_; }
  bool reshuffle() const { return reshuffle_; }

 protected:
  Result<IteratorPtr> MakeIteratorInternal(
      const IteratorContext& ctx, const std::string& prefix) const override;

 private:
  const uint64_t seed_;
  const bool reshuffle_;
  const DatasetPtr rows_;
};

class GlobalShuffleIterator : public IteratorBase, public RowStream {
 public:
  GlobalShuffleIterator(const GlobalShuffleDataset* ds, const std::string& prefix)
      : IteratorBase(ds->shared(), prefix), ds_(ds) {}

  Status Initialize(const IteratorContext& ctx) override {
    ctx_ = ctx;
    const uint64_t seed =
        ds_->reshuffle() ? HashCombine(ds_->seed(), ctx.seed_mix) : ds_->seed();
    SLUICE_ASSIGN_OR_RETURN(input_, MakeChild(ds_->rows(), ctx, "0"));
    rows_ = input_->AsRandomAccess();
    if (rows_ == nullptr) {
      fallback_ = std::make_unique<ShuffleBuffer>(
          "GlobalShuffle", std::max<int64_t>(1, node().Cardinality()), /*replayable=*/false);
      fallback_->Bind(ctx, this);
      fallback_->Reset(std::move(input_), seed);
      return Status::OK();
    }
    SetSeed(seed);
    return Status::OK();
  }

  // Its rows in the permutation's order: a Batch above gathers them (random_access.h).
  RowStream* AsRowStream() override { return fallback_ ? nullptr : this; }
  RandomAccess* StreamRows() override { return rows_; }
  int64_t TakeRows(int64_t n, int64_t* out) override {
    const int64_t k = std::max<int64_t>(0, std::min(n, perm_.size() - position_));
    for (int64_t j = 0; j < k; ++j) out[j] = perm_.Apply(position_++);
    stats().CountProduced(k);
    return k;
  }

 protected:
  Result<std::optional<Element>> GetNextInternal() override {
    if (fallback_) [[unlikely]] return fallback_->Next();
    if (position_ >= perm_.size()) return std::nullopt;
    const int64_t row = perm_.Apply(position_++);  // consumed even when the row fails
    Result<Element> e = rows_->GetRow(row);
    if (!e.ok()) return e.status();
    return std::move(e).value();
  }

  Result<int64_t> SkipInternal(int64_t n) override {
    if (fallback_) return IteratorBase::SkipInternal(n);
    const int64_t k = std::min(n, perm_.size() - position_);
    position_ += k;
    return k;
  }

  // The input serves rows without a position of its own: only the seed and position.
  Status SaveInternal(CheckpointWriter* w) const override {
    if (fallback_) return fallback_->Save(w, prefix());
    w->WriteInt(prefix(), "seed", static_cast<int64_t>(seed_));
    w->WriteInt(prefix(), "pos", position_);
    return Status::OK();
  }

  Status RestoreInternal(const CheckpointReader& r) override {
    if (fallback_) {
      SLUICE_ASSIGN_OR_RETURN(IteratorPtr input, MakeChild(ds_->rows(), ctx_, "0"));
      return fallback_->Restore(r, prefix(), std::move(input));
    }
    SLUICE_ASSIGN_OR_RETURN(int64_t seed, r.ReadInt(prefix(), "seed"));
    SLUICE_ASSIGN_OR_RETURN(int64_t pos, r.ReadInt(prefix(), "pos"));
    if (pos < 0 || pos > rows_->RowCount()) {
      return DataLossError("GlobalShuffle: checkpoint position " + std::to_string(pos) +
                           " outside [0, " + std::to_string(rows_->RowCount()) + "]");
    }
    SetSeed(static_cast<uint64_t>(seed));
    position_ = pos;
    return Status::OK();
  }

 private:
  void SetSeed(uint64_t seed) {
    seed_ = seed;
    perm_ = IndexPermutation(rows_->RowCount(), seed);
  }

  const GlobalShuffleDataset* ds_;
  IteratorContext ctx_;
  IteratorPtr input_;
  std::unique_ptr<ShuffleBuffer> fallback_;  // set when the input cannot serve rows
  RandomAccess* rows_ = nullptr;  // input_ as rows by index
  uint64_t seed_ = 0;             // of this epoch's permutation
  IndexPermutation perm_{0, 0};
  int64_t position_ = 0;
};

Result<IteratorPtr> GlobalShuffleDataset::MakeIteratorInternal(
    const IteratorContext&, const std::string& prefix) const {
  return IteratorPtr(new GlobalShuffleIterator(this, prefix));
}

}  // namespace

void RegisterGlobalShuffleDataset(Registry* r) {
  r->RegisterOp(
      OpDef("GlobalShuffle")
          .Summary("Its random-access input in a seeded uniform order, a new one each epoch; "
                   "O(1) memory.")
          .Inputs(1)
          .Attr("seed", AttrType::kInt, "Seed of the permutation.")
          .Attr("reshuffle_each_iteration", AttrType::kBool, true,
                "A different permutation each epoch (and each iterator).")
          .Traits({.random = true,
                   .seed_mix = SeedMix::kWhenAttrTrue,
                   .seed_mix_attr = "reshuffle_each_iteration"}),
      [](OpArgs args) -> Result<DatasetPtr> {
        SLUICE_ASSIGN_OR_RETURN(int64_t seed,
                                GetAttr<int64_t>(args.attrs, "GlobalShuffle", "seed"));
        SLUICE_ASSIGN_OR_RETURN(
            bool reshuffle,
            GetAttrOr<bool>(args.attrs, "GlobalShuffle", "reshuffle_each_iteration", true));
        if (const DatasetNode* bad = FirstNotRandomAccess(args.inputs[0])) {
          const int64_t n = bad->Cardinality();
          return InvalidArgumentError(
              "GlobalShuffle: its input cannot serve rows by index: op '" + bad->op() +
              "' " +
              (n < 0 ? std::string("has no known, finite cardinality")
                     : std::string("is not random-access")) +
              " (random-access: Range, FromTensorSlices, FromTensors, Idx, ImageFolder, "
              "ListFiles, and Map without randomness, Zip or a memory Cache over them); "
              "use shuffle(buffer_size) instead");
        }
        ElementSpec spec = args.inputs[0]->element_spec();
        SLUICE_ASSIGN_OR_RETURN(DatasetPtr rows, RowNodes(args.inputs[0]));
        return DatasetPtr(std::make_shared<GlobalShuffleDataset>(
            std::move(args), std::move(spec), static_cast<uint64_t>(seed), reshuffle,
            std::move(rows)));
      });
}

}  // namespace sluice
