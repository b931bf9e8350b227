#include "ops/sources/file_sequence.h"

#include <algorithm>
#include <unordered_map>

#include "graph/attr.h"
#include "runtime/iterator_base.h"
#include "runtime/random_access.h"
#include "runtime/runtime.h"
#include "runtime/split_provider.h"

namespace sluice {

Result<FileSourceAttrs> ParseFileSourceAttrs(const std::string& op, const OpArgs& args) {
  FileSourceAttrs out;
  SLUICE_ASSIGN_OR_RETURN(out.filenames,
                          GetAttr<std::vector<std::string>>(args.attrs, op, "filenames"));
  SLUICE_ASSIGN_OR_RETURN(std::string comp,
                          GetAttrOr<std::string>(args.attrs, op, "compression", ""));
  auto c = CompressionFromName(comp);
  if (!c.ok()) return c.status().WithContext(op);
  out.compression = *c;
  SLUICE_ASSIGN_OR_RETURN(
      int64_t buffer_size,
      GetAttrOr<int64_t>(args.attrs, op, "buffer_size",
                         static_cast<int64_t>(InputStream::kDefaultBufferSize)));
  if (buffer_size < 1 || buffer_size > (int64_t{1} << 30)) {
    return InvalidArgumentError(op + ": buffer_size must be in [1, 2^30], got " +
                                std::to_string(buffer_size));
  }
  out.buffer_size = static_cast<size_t>(buffer_size);
  return out;
}

OpDef FileSourceOpDef(std::string op, std::string summary) {
  return OpDef(std::move(op))
      .Summary(std::move(summary))
      .Inputs(0)
      .Attr("filenames", AttrType::kStringList, "The files to read, in order.")
      .Attr("compression", AttrType::kString, std::string(),
            "\"\" or \"NONE\", \"GZIP\" or \"ZLIB\".")
      .Attr("buffer_size", AttrType::kInt, static_cast<int64_t>(InputStream::kDefaultBufferSize),
            "Bytes of each file's read buffer, in [1, 2^30].")
      .Traits({.source = true, .splittable = true, .seed_mix = SeedMix::kNone});
}

FileSequenceDataset::FileSequenceDataset(std::string op, OpArgs args,
                                         FileSourceAttrs attrs)
    : DatasetNode(std::move(op), std::move(args),
                  ElementSpec{{{DType::kString, PartialShape{}}}}),
      attrs_(std::move(attrs)) {}

Result<std::unique_ptr<InputStream>> FileSequenceDataset::OpenStream(Env* env,
                                                                     size_t i) const {
  return InputStream::Open(attrs_.filenames[i], attrs_.compression, attrs_.buffer_size,
                           env);
}

namespace {

// Open handles kept for row reads; past this many, all are closed and reopened on demand.
constexpr size_t kMaxRowFiles = 64;

class FileSequenceIterator : public IteratorBase, public RandomAccess {
 public:
  FileSequenceIterator(const FileSequenceDataset* ds, const std::string& prefix, Env* env)
      : IteratorBase(ds->shared(), prefix), ds_(ds), env_(env) {}

  Status Initialize(const IteratorContext& ctx) override {
    splits_ = ctx.split_provider;
    return Status::OK();
  }

  RandomAccess* AsRandomAccess() override {
    return ds_->rows() != nullptr && splits_ == nullptr ? this : nullptr;
  }
  int64_t RowCount() const override { return ds_->rows()->count; }
  Result<Element> GetRow(int64_t i) override {
    const RecordRows& rows = *ds_->rows();
    if (i < 0 || i >= rows.count) {
      return OutOfRangeError(node().op() + ": row " + std::to_string(i) + " of " +
                             std::to_string(rows.count));
    }
    const size_t f = static_cast<size_t>(
        std::upper_bound(rows.first.begin(), rows.first.end(), i) - rows.first.begin() - 1);
    if (row_files_.empty()) row_files_.resize(ds_->files().size());
    if (!row_files_[f]) {
      if (open_row_files_ >= kMaxRowFiles) {
        for (auto& h : row_files_) h.reset();
        open_row_files_ = 0;
      }
      Result<std::unique_ptr<RandomAccessFile>> h = env_->NewRandomAccessFile(ds_->files()[f]);
      if (!h.ok()) return h.status().WithContext(node().op());
      row_files_[f] = std::move(*h);
      ++open_row_files_;
    }
    Result<std::string> rec =
        ds_->ReadRecordAt(*row_files_[f], f, rows.offsets[f][i - rows.first[f]]);
    if (!rec.ok()) return rec.status().WithContext(node().op() + ": row " + std::to_string(i));
    return Element{Tensor::Scalar<std::string>(std::move(*rec))};
  }

 protected:
  Result<std::optional<Element>> GetNextInternal() override {
    std::string record;
    SLUICE_ASSIGN_OR_RETURN(bool got, Next(&record));
    if (!got) return std::nullopt;
    return Element{Tensor::Scalar<std::string>(std::move(record))};
  }

  Result<int64_t> SkipInternal(int64_t n) override {
    int64_t done = 0;
    while (done < n) {
      SLUICE_ASSIGN_OR_RETURN(bool got, Next(nullptr));
      if (!got) break;
      ++done;
    }
    return done;
  }

  Status SaveInternal(CheckpointWriter* w) const override {
    w->WriteInt(prefix(), "file_index", static_cast<int64_t>(index_));
    w->WriteInt(prefix(), "offset", reader_ ? static_cast<int64_t>(reader_->Tell()) : -1);
    if (splits_ != nullptr) splits_->MarkCheckpoint();
    return Status::OK();
  }

  Status RestoreInternal(const CheckpointReader& r) override {
    SLUICE_ASSIGN_OR_RETURN(int64_t index, r.ReadInt(prefix(), "file_index"));
    SLUICE_ASSIGN_OR_RETURN(int64_t offset, r.ReadInt(prefix(), "offset"));
    const int64_t n = static_cast<int64_t>(ds_->files().size());
    if (index < 0 || index > n || offset < -1 || (offset >= 0 && index == n) ||
        (offset >= 0 && static_cast<uint64_t>(offset) < ds_->min_offset())) {
      return DataLossError(node().op() + ": invalid checkpoint (file index " +
                           std::to_string(index) + ", offset " + std::to_string(offset) +
                           ")");
    }
    reader_.reset();
    index_ = static_cast<size_t>(index);
    if (offset >= 0) {
      SLUICE_ASSIGN_OR_RETURN(reader_, ds_->OpenFile(env_, index_));
      SLUICE_RETURN_IF_ERROR(reader_->SeekTo(static_cast<uint64_t>(offset)));
    }
    return Status::OK();
  }

 private:
  // The next record into *out (skipped when out is null); false after the last file.
  Result<bool> Next(std::string* out) {
    while (true) {
      if (!reader_) {
        if (index_ >= ds_->files().size()) return false;
        if (splits_ != nullptr) {
          SLUICE_ASSIGN_OR_RETURN(std::optional<Tensor> split, splits_->GetNext());
          if (!split) {
            index_ = ds_->files().size();
            return false;
          }
          SLUICE_ASSIGN_OR_RETURN(index_, FileOfSplit(*split));
        }
        SLUICE_RETURN_IF_ERROR(OpenCurrent());
      }
      auto got = reader_->ReadRecord(out);
      RecordFileBytesRead(closed_files_bytes_ + static_cast<int64_t>(reader_->BytesReadFromDisk()));
      if (!got.ok()) {
        if (reader_->EndedByError()) NextFile();
        return got.status().WithContext(node().op());
      }
      if (*got) return true;
      NextFile();
    }
  }

  Status OpenCurrent() {
    auto r = ds_->OpenFile(env_, index_);
    Status s = r.ok() ? (*r)->Start() : r.status();
    if (!s.ok()) {
      Advance();  // reported once, then skipped
      return s.WithContext(node().op());
    }
    reader_ = std::move(r).value();
    return Status::OK();
  }

  void NextFile() {
    closed_files_bytes_ += static_cast<int64_t>(reader_ ? reader_->BytesReadFromDisk() : 0);
    reader_.reset();
    Advance();
  }

  // Past the current file: the next one, or with a split provider the next split's
  // (index_ 0 means "take a split"; files().size() means the provider has ended).
  void Advance() {
    if (splits_ != nullptr) {
      index_ = 0;
    } else {
      ++index_;
    }
  }

  // The file a split names: an int64 scalar index into files(), or a string scalar equal
  // to one of them (the first, if the list repeats it).
  Result<size_t> FileOfSplit(const Tensor& split) {
    const std::vector<std::string>& files = ds_->files();
    if (split.dtype() == DType::kString && split.rank() == 0) {
      if (by_name_.empty()) {
        for (size_t i = files.size(); i-- > 0;) by_name_[files[i]] = i;
      }
      auto it = by_name_.find(split.scalar<std::string>());
      if (it == by_name_.end()) {
        return InvalidArgumentError(
            node().op() + ": split '" + split.scalar<std::string>() +
            "' is not one of the source's " + std::to_string(files.size()) + " files");
      }
      return it->second;
    }
    SLUICE_ASSIGN_OR_RETURN(
        int64_t i, SplitRowIndex(split, static_cast<int64_t>(files.size()), node().op()));
    return static_cast<size_t>(i);
  }

  const FileSequenceDataset* ds_;
  std::vector<std::unique_ptr<RandomAccessFile>> row_files_;  // by file, for GetRow
  size_t open_row_files_ = 0;
  Env* env_;
  size_t index_ = 0;
  std::unique_ptr<RecordFileReader> reader_;  // the open file, null between files
  int64_t closed_files_bytes_ = 0;  // bytes read from files already closed
  std::shared_ptr<SplitProvider> splits_;
  std::unordered_map<std::string, size_t> by_name_;  // file -> index, built on first use
};

}  // namespace

Result<IteratorPtr> FileSequenceDataset::MakeIteratorInternal(
    const IteratorContext& ctx, const std::string& prefix) const {
  return IteratorPtr(new FileSequenceIterator(this, prefix, ctx.runtime()->env()));
}

}  // namespace sluice
