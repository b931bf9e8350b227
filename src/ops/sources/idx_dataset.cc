// Idx: the rows (along dimension 0) of an IDX file, gzipped or plain.
//
// The header is read when the dataset is built, so the cardinality and element spec are
// known (tf.data sources read lazily; MNIST-sized files make the known size worth one
// open). Each iterator reopens the file on its first GetNext. Checkpoint: the row index.
// Files: the header is read through BuildEnv(), rows through the pipeline's Env.
//
// On the first read the whole data section is loaded into one tensor (one sequential read,
// one inflate pass for a gzipped file) when the pipeline's memory budget grants it
// (charged until the iterator goes; at most kMaxInMemoryBytes); rows are then zero-copy
// views of it, so reading them in any order (GlobalShuffle) costs no seek. The dataset
// keeps the loaded rows for its later iterators through the same Env (each epoch of a
// repeat makes new ones), as torchvision's dataset keeps its tensors: the file is read and
// inflated once. Otherwise rows stream from the file, and a backward seek in a gzipped
// file re-inflates from the start.
#include "core/env.h"
#include "core/mutex.h"
#include "formats/idx.h"
#include "graph/attr.h"
#include "ops/op_util.h"
#include "ops/ops.h"
#include "runtime/iterator_base.h"
#include "runtime/memory_budget.h"
#include "runtime/runtime.h"

namespace sluice {
namespace {

class IdxDataset : public DatasetNode {
 public:
  IdxDataset(OpArgs args, ElementSpec spec, std::string path, IdxHeader header)
      : DatasetNode("Idx", std::move(args), std::move(spec)),
        path_(std::move(path)),
        header_(std::move(header)) {}

  int64_t Cardinality() const override { return header_.num_rows(); }
  const std::string& path() const { return path_; }
  const IdxHeader& header() const { return header_; }

  // Every row, as loaded by an earlier iterator through `env` (invalid: none yet).
  Tensor Loaded(const Env* env) const {
    MutexLock l(&mu_);
    return env == loaded_env_ ? loaded_ : Tensor();
  }
  void SetLoaded(const Env* env, const Tensor& all) const {
    MutexLock l(&mu_);
    loaded_env_ = env;
    loaded_ = all;
  }

 protected:
  Result<IteratorPtr> MakeIteratorInternal(
      const IteratorContext& ctx, const std::string& prefix) const override;

 private:
  std::string path_;
  IdxHeader header_;
  mutable Mutex mu_;
  mutable const Env* loaded_env_ GUARDED_BY(mu_) = nullptr;
  mutable Tensor loaded_ GUARDED_BY(mu_);
};

// The largest data section loaded into memory (beyond it rows stream from the file).
constexpr int64_t kMaxInMemoryBytes = int64_t{1} << 31;

class IdxIterator : public IndexedIterator {
 public:
  IdxIterator(const IdxDataset* ds, const std::string& prefix, Env* env,
              MemoryBudget* memory)
      : IndexedIterator(ds->shared(), prefix), ds_(ds), env_(env), memory_(memory) {}
  ~IdxIterator() override {
    if (charged_ > 0) memory_->Release(charged_);
  }

 protected:
  int64_t num_rows() const override { return ds_->header().num_rows(); }
  std::string Where() const override { return " for '" + ds_->path() + "'"; }
  // The loaded file's rows (after the first read; until then rows go through Row).
  const Element* MemoryRows() const override {
    return memory_rows_.size() > 0 ? &memory_rows_ : nullptr;
  }

  // Skips only move the index: the reader seeks on the next read.
  Result<Element> Row(int64_t i) override {
    if (!reader_ && !all_.valid()) {
      const int64_t bytes = ds_->header().data_bytes;
      Tensor shared = ds_->Loaded(env_);
      if (shared.valid() && memory_->TryReserve(bytes)) {
        charged_ = bytes;
        all_ = std::move(shared);
        memory_rows_ = Element{all_};
      }
    }
    if (!reader_ && !all_.valid()) {
      auto r = IdxReader::Open(ds_->path(), env_);
      if (!r.ok()) {
        End();  // nothing more can be read: report once, then end
        return r.status();
      }
      if (!((*r)->header() == ds_->header())) {
        End();
        return DataLossError("Idx: '" + ds_->path() +
                             "' changed since the dataset was built (" + "dims " +
                             Shape((*r)->header().dims).ToString() + ", were " +
                             Shape(ds_->header().dims).ToString() + ")");
      }
      reader_ = std::move(r).value();
      SLUICE_RETURN_IF_ERROR(LoadAll());
    }
    if (all_.valid()) {
      // A view of the loaded file's buffer; a row of at most Tensor::kInlineBytes (a
      // label) is copied inline instead (tensor.h), and a small file is inline whole.
      Element e;
      e.push_back(all_.SubTensor(i));
      return e;
    }
    auto row = reader_->ReadRow(i);
    stats().file_bytes_read.store(static_cast<int64_t>(reader_->bytes_read_from_disk()),
                                  std::memory_order_relaxed);
    if (!row.ok()) {
      End();  // truncated or corrupt data: the rest of the file is unreadable too
      return row.status();
    }
    return Element{std::move(row).value()};
  }

 private:
  // Loads every row when the budget grants the bytes; else (or on bad data) rows stream.
  Status LoadAll() {
    const int64_t bytes = ds_->header().data_bytes;
    if (bytes <= 0 || bytes > kMaxInMemoryBytes || !memory_->TryReserve(bytes)) {
      return Status::OK();  // rows stream from the file
    }
    charged_ = bytes;
    auto all = reader_->ReadAll();
    stats().file_bytes_read.store(static_cast<int64_t>(reader_->bytes_read_from_disk()),
                                  std::memory_order_relaxed);
    if (!all.ok()) {
      // Truncated, corrupt or unreadable: stream rows from a fresh reader instead, so the
      // error surfaces at its row as before (the rows ahead of it are still read).
      memory_->Release(charged_);
      charged_ = 0;
      auto fresh = IdxReader::Open(ds_->path(), env_);
      if (!fresh.ok()) {
        End();
        return fresh.status();
      }
      reader_ = std::move(fresh).value();
      return Status::OK();
    }
    all_ = std::move(all).value();
    ds_->SetLoaded(env_, all_);
    memory_rows_ = Element{all_};
    return Status::OK();
  }

  const IdxDataset* ds_;
  Env* env_;
  MemoryBudget* memory_;
  std::unique_ptr<IdxReader> reader_;  // opened on the first read
  Tensor all_;                         // every row, when loaded into memory
  Element memory_rows_;                // {all_} once loaded (MemoryRows)
  int64_t charged_ = 0;                // bytes of all_ charged to memory_
};

Result<IteratorPtr> IdxDataset::MakeIteratorInternal(const IteratorContext& ctx,
                                                     const std::string& prefix) const {
  return IteratorPtr(
      new IdxIterator(this, prefix, ctx.runtime()->env(), &ctx.runtime()->memory()));
}

}  // namespace

void RegisterIdxDataset(Registry* r) {
  r->RegisterOp(
      OpDef("Idx")
          .Summary("Rows of an IDX file (the MNIST format), gzipped or not.")
          .Inputs(0)
          .Attr("path", AttrType::kString, "The IDX file.")
          .Traits({.source = true,
                   .splittable = true,
                   .seed_mix = SeedMix::kNone,
                   .row_access = RowAccess::kSource}),
      [](OpArgs args) -> Result<DatasetPtr> {
     SLUICE_ASSIGN_OR_RETURN(std::string path,
                             GetAttr<std::string>(args.attrs, "Idx", "path"));
     if (path.empty()) return InvalidArgumentError("Idx: path is empty");
     SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<IdxReader> reader,
                             IdxReader::Open(path, BuildEnv()));
     IdxHeader header = reader->header();
     ElementSpec spec{{{header.dtype, PartialShape(header.row_shape())}}};
     return DatasetPtr(std::make_shared<IdxDataset>(std::move(args), std::move(spec),
                                                    std::move(path), std::move(header)));
   });
}

}  // namespace sluice
