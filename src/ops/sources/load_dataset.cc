// Load: the elements Dataset::Save wrote under a directory (tf.data load), in order, with
// the element spec stored in its metadata (ops/saved_dataset.h). The metadata is read
// when the op is made (NotFound when there is none: nothing was saved there, or the save
// did not complete); each iterator opens and validates the shards as it reaches them.
// Checkpoints: the shard, the record index and byte offset within it.
#include "graph/attr.h"
#include "ops/ops.h"
#include "ops/record_file.h"
#include "ops/saved_dataset.h"
#include "runtime/iterator_base.h"
#include "runtime/runtime.h"

namespace sluice {
namespace {

class LoadDataset : public DatasetNode {
 public:
  LoadDataset(OpArgs args, std::string dir, SavedDatasetMetadata meta)
      : DatasetNode("Load", std::move(args), meta.spec),
        dir_(std::move(dir)),
        meta_(std::move(meta)) {}

  int64_t Cardinality() const override { return meta_.elements; }
  const std::string& dir() const { return dir_; }
  const SavedDatasetMetadata& meta() const { return meta_; }

 protected:
  Result<IteratorPtr> MakeIteratorInternal(const IteratorContext& ctx,
                                           const std::string& prefix) const override;

 private:
  std::string dir_;
  SavedDatasetMetadata meta_;
};

class LoadIterator : public IteratorBase {
 public:
  LoadIterator(const LoadDataset* ds, const std::string& prefix)
      : IteratorBase(ds->shared(), prefix), ds_(ds) {}

  Status Initialize(const IteratorContext& ctx) override {
    env_ = ctx.runtime()->env();
    return Status::OK();
  }

 protected:
  Result<std::optional<Element>> GetNextInternal() override {
    const auto& shards = ds_->meta().shards;
    while (shard_ < static_cast<int64_t>(shards.size())) {
      SLUICE_RETURN_IF_ERROR(OpenShard());
      auto e = reader_->Next();
      if (!e.ok()) {
        shard_ = static_cast<int64_t>(shards.size());  // position unknown: end
        reader_.reset();
        return e.status();
      }
      if (e->has_value()) return e;
      reader_.reset();
      ++shard_;
    }
    return std::nullopt;
  }

  Status SaveInternal(CheckpointWriter* w) const override {
    w->WriteInt(prefix(), "shard", shard_);
    w->WriteInt(prefix(), "index", reader_ ? reader_->index() : 0);
    w->WriteInt(prefix(), "offset",
                reader_ ? static_cast<int64_t>(reader_->offset()) : 0);
    return Status::OK();
  }

  Status RestoreInternal(const CheckpointReader& r) override {
    SLUICE_ASSIGN_OR_RETURN(int64_t shard, r.ReadInt(prefix(), "shard"));
    SLUICE_ASSIGN_OR_RETURN(int64_t index, r.ReadInt(prefix(), "index"));
    SLUICE_ASSIGN_OR_RETURN(int64_t offset, r.ReadInt(prefix(), "offset"));
    if (shard < 0 || shard > static_cast<int64_t>(ds_->meta().shards.size())) {
      return DataLossError("Load: checkpoint names shard " + std::to_string(shard) +
                           " of " + std::to_string(ds_->meta().shards.size()));
    }
    reader_.reset();
    shard_ = shard;
    if (shard_ < static_cast<int64_t>(ds_->meta().shards.size())) {
      SLUICE_RETURN_IF_ERROR(OpenShard());
      SLUICE_RETURN_IF_ERROR(reader_->Seek(index, static_cast<uint64_t>(offset)));
    }
    return Status::OK();
  }

 private:
  Status OpenShard() {
    if (reader_) return Status::OK();
    const std::string path = ds_->dir() + "/" + ds_->meta().shards[shard_];
    SLUICE_ASSIGN_OR_RETURN(
        reader_, ElementFileReader::Open(env_, path,
                                        {"Load", "saved shard", "save the dataset again"},
                                        ds_->meta().compression));
    if (ds_->meta().shards.size() == 1 && reader_->count() != ds_->meta().elements) {
      return DataLossError("Load: saved shard '" + path + "' holds " +
                           std::to_string(reader_->count()) + " elements, the metadata " +
                           std::to_string(ds_->meta().elements));
    }
    return Status::OK();
  }

  const LoadDataset* ds_;
  Env* env_ = nullptr;
  int64_t shard_ = 0;
  std::unique_ptr<ElementFileReader> reader_;
};

Result<IteratorPtr> LoadDataset::MakeIteratorInternal(const IteratorContext&,
                                                      const std::string& prefix) const {
  return IteratorPtr(new LoadIterator(this, prefix));
}

}  // namespace

void RegisterLoadDataset(Registry* r) {
  r->RegisterOp(OpDef("Load")
                    .Summary("The elements Dataset::Save wrote under a directory.")
                    .Attr("path", AttrType::kString, "The directory Dataset::Save wrote.")
                    .Traits({.source = true, .seed_mix = SeedMix::kNone}),
                [](OpArgs args) -> Result<DatasetPtr> {
                  SLUICE_ASSIGN_OR_RETURN(
                      std::string path, GetAttr<std::string>(args.attrs, "Load", "path"));
                  SLUICE_ASSIGN_OR_RETURN(SavedDatasetMetadata meta,
                                          ReadSavedMetadata(BuildEnv(), path));
                  return DatasetPtr(std::make_shared<LoadDataset>(
                      std::move(args), std::move(path), std::move(meta)));
                });
}

}  // namespace sluice
