// Shard: the input elements whose position p satisfies p % num_shards == index. The gaps
// are skipped with Skip, which is cheap for sources and skippable maps.
#include <limits>

#include "graph/attr.h"
#include "ops/op_util.h"
#include "ops/ops.h"
#include "runtime/iterator_base.h"

namespace sluice {
namespace {

class ShardDataset : public DatasetNode {
 public:
  ShardDataset(OpArgs args, ElementSpec spec, int64_t num_shards, int64_t index)
      : DatasetNode("Shard", std::move(args), std::move(spec)),
        num_shards_(num_shards),
        index_(index) {}

  int64_t Cardinality() const override {
    const int64_t n = input(0)->Cardinality();
    if (n == kInfiniteCardinality || n == kUnknownCardinality) return n;
    return n / num_shards_ + (index_ < n % num_shards_ ? 1 : 0);
  }
  int64_t num_shards() const { return num_shards_; }
  int64_t index() const { return index_; }

 protected:
  Result<IteratorPtr> MakeIteratorInternal(
      const IteratorContext& ctx, const std::string& prefix) const override;

 private:
  const int64_t num_shards_, index_;
};

class ShardIterator : public UnaryIterator {
 public:
  ShardIterator(const ShardDataset* ds, const std::string& prefix)
      : UnaryIterator(ds->shared(), prefix), ds_(ds) {}

 protected:
  Result<std::optional<Element>> GetNextInternal() override {
    if (ended_) return std::nullopt;
    const int64_t gap = Gap();
    if (gap > 0) {
      // As in tf.data, an error while skipping is returned without counting the elements
      // skipped before it.
      SLUICE_ASSIGN_OR_RETURN(int64_t k, input_->Skip(gap));
      next_ += k;
      if (k < gap) {
        ended_ = true;
        return std::nullopt;
      }
    }
    // The element is consumed even when it fails, so shards stay aligned after errors
    // (tf.data re-reads the next element as this shard's).
    ++next_;
    SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, input_->GetNext());
    if (!e) ended_ = true;
    return e;
  }

  Result<int64_t> SkipInternal(int64_t n) override {
    if (ended_) return int64_t{0};
    const int64_t gap = Gap();
    // Input elements up to and including the n-th element of this shard (saturating).
    const int64_t max = std::numeric_limits<int64_t>::max();
    int64_t want = gap + 1;
    if (n - 1 > (max - want) / ds_->num_shards()) {
      want = max;
    } else {
      want += (n - 1) * ds_->num_shards();
    }
    SLUICE_ASSIGN_OR_RETURN(int64_t k, input_->Skip(want));
    next_ += k;
    if (k < want) ended_ = true;
    // Shard elements among the k skipped: the first is at offset `gap`.
    return k <= gap ? 0 : (k - gap - 1) / ds_->num_shards() + 1;
  }

  Status SaveState(CheckpointWriter* w) const override {
    w->WriteInt(prefix(), "next", next_);
    w->WriteInt(prefix(), "ended", ended_ ? 1 : 0);
    return Status::OK();
  }

  Status RestoreState(const CheckpointReader& r) override {
    SLUICE_ASSIGN_OR_RETURN(next_, r.ReadInt(prefix(), "next"));
    SLUICE_ASSIGN_OR_RETURN(int64_t ended, r.ReadInt(prefix(), "ended"));
    if (next_ < 0) return DataLossError("Shard: negative position in checkpoint");
    ended_ = ended != 0;
    return Status::OK();
  }

 private:
  // Input elements before the next one of this shard.
  int64_t Gap() const {
    const int64_t m = ds_->num_shards();
    return ((ds_->index() - next_ % m) % m + m) % m;
  }

  const ShardDataset* ds_;
  int64_t next_ = 0;  // position of the next input element
  bool ended_ = false;
};

Result<IteratorPtr> ShardDataset::MakeIteratorInternal(
    const IteratorContext&, const std::string& prefix) const {
  return IteratorPtr(new ShardIterator(this, prefix));
}

}  // namespace

void RegisterShardDataset(Registry* r) {
  r->RegisterOp(
      OpDef("Shard")
          .Summary("Every num_shards-th element, starting at index.")
          .Inputs(1)
          .Attr("num_shards", AttrType::kInt, "Shards, > 0.")
          .Attr("index", AttrType::kInt, "This shard, in [0, num_shards).")
          .Traits({.seed_mix = SeedMix::kNone}),
      [](OpArgs args) -> Result<DatasetPtr> {
     SLUICE_ASSIGN_OR_RETURN(int64_t num_shards,
                             GetAttr<int64_t>(args.attrs, "Shard", "num_shards"));
     SLUICE_ASSIGN_OR_RETURN(int64_t index,
                             GetAttr<int64_t>(args.attrs, "Shard", "index"));
     if (num_shards <= 0) {
       return InvalidArgumentError("Shard: num_shards must be > 0, got " +
                                   std::to_string(num_shards));
     }
     if (index < 0 || index >= num_shards) {
       return InvalidArgumentError("Shard: index must be in [0, " +
                                   std::to_string(num_shards) + "), got " +
                                   std::to_string(index));
     }
     ElementSpec spec = args.inputs[0]->element_spec();
     return DatasetPtr(std::make_shared<ShardDataset>(std::move(args), std::move(spec),
                                                      num_shards, index));
   });
}

}  // namespace sluice
