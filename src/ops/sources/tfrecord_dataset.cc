// TFRecord: the records of TFRecord files, one string scalar per record (tf.data's
// TFRecordDataset). Files are opened lazily, one after another. A file that cannot be
// opened is reported once and skipped; damaged records are reported and reading resumes
// after them (see formats/tfrecord.h). Checkpoint: file index + uncompressed offset of
// the next record.
#include "formats/tfrecord.h"
#include "graph/attr.h"
#include "ops/ops.h"
#include "runtime/iterator_base.h"

namespace sluice {
namespace {

constexpr char kOp[] = "TFRecord";

class TFRecordDataset : public DatasetNode {
 public:
  TFRecordDataset(OpArgs args, std::vector<std::string> files,
                  TFRecordReader::Options options)
      : DatasetNode(kOp, std::move(args),
                    ElementSpec{{{DType::kString, PartialShape{}}}}),
        files_(std::move(files)),
        options_(options) {}

  // Unknown without reading the files, as in tf.data.
  int64_t Cardinality() const override { return kUnknownCardinality; }
  const std::vector<std::string>& files() const { return files_; }
  const TFRecordReader::Options& options() const { return options_; }

 protected:
  Result<std::unique_ptr<IteratorBase>> MakeIteratorInternal(
      const IteratorContext& ctx, const std::string& prefix) const override;

 private:
  std::vector<std::string> files_;
  TFRecordReader::Options options_;
};

class TFRecordIterator : public IteratorBase {
 public:
  TFRecordIterator(const TFRecordDataset* ds, const std::string& prefix)
      : IteratorBase(ds->shared(), prefix), ds_(ds) {}

 protected:
  Result<std::optional<Element>> GetNextInternal() override {
    while (true) {
      if (!reader_) {
        if (index_ >= ds_->files().size()) return std::nullopt;
        auto r = TFRecordReader::Open(ds_->files()[index_], ds_->options());
        if (!r.ok()) {
          ++index_;  // reported once, then skipped
          return r.status().WithContext(kOp);
        }
        reader_ = std::move(r).value();
      }
      auto rec = reader_->ReadRecord();
      if (!rec.ok()) {
        if (reader_->done()) NextFile();
        return rec.status().WithContext(kOp);
      }
      if (!rec->has_value()) {
        NextFile();
        continue;
      }
      return Element{Tensor::Scalar<std::string>(std::move(**rec))};
    }
  }

  Status SaveInternal(CheckpointWriter* w) const override {
    w->WriteInt(prefix(), "file_index", static_cast<int64_t>(index_));
    w->WriteInt(prefix(), "offset",
                reader_ ? static_cast<int64_t>(reader_->offset()) : -1);
    return Status::OK();
  }

  Status RestoreInternal(const CheckpointReader& r) override {
    SLUICE_ASSIGN_OR_RETURN(int64_t index, r.ReadInt(prefix(), "file_index"));
    SLUICE_ASSIGN_OR_RETURN(int64_t offset, r.ReadInt(prefix(), "offset"));
    const int64_t n = static_cast<int64_t>(ds_->files().size());
    if (index < 0 || index > n || offset < -1 || (offset >= 0 && index == n)) {
      return DataLossError("TFRecord: invalid checkpoint (file index " +
                           std::to_string(index) + ", offset " + std::to_string(offset) +
                           ")");
    }
    reader_.reset();
    index_ = static_cast<size_t>(index);
    if (offset >= 0) {
      SLUICE_ASSIGN_OR_RETURN(reader_,
                              TFRecordReader::Open(ds_->files()[index_], ds_->options()));
      SLUICE_RETURN_IF_ERROR(reader_->SeekTo(static_cast<uint64_t>(offset)));
    }
    return Status::OK();
  }

 private:
  void NextFile() {
    reader_.reset();
    ++index_;
  }

  const TFRecordDataset* ds_;
  size_t index_ = 0;
  std::unique_ptr<TFRecordReader> reader_;
};

Result<std::unique_ptr<IteratorBase>> TFRecordDataset::MakeIteratorInternal(
    const IteratorContext&, const std::string& prefix) const {
  return std::unique_ptr<IteratorBase>(new TFRecordIterator(this, prefix));
}

}  // namespace

void RegisterTFRecordDataset(Registry* r) {
  r->RegisterOp(kOp, [](OpArgs args) -> Result<DatasetPtr> {
     if (!args.inputs.empty() || !args.functions.empty()) {
       return InvalidArgumentError("TFRecord: takes no inputs or functions");
     }
     SLUICE_ASSIGN_OR_RETURN(
         auto files, GetAttr<std::vector<std::string>>(args.attrs, kOp, "filenames"));
     SLUICE_ASSIGN_OR_RETURN(std::string comp,
                             GetAttrOr<std::string>(args.attrs, kOp, "compression", ""));
     auto c = CompressionFromName(comp);
     if (!c.ok()) return c.status().WithContext(kOp);
     SLUICE_ASSIGN_OR_RETURN(
         int64_t buffer_size,
         GetAttrOr<int64_t>(args.attrs, kOp, "buffer_size",
                            static_cast<int64_t>(InputStream::kDefaultBufferSize)));
     if (buffer_size < 1 || buffer_size > (int64_t{1} << 30)) {
       return InvalidArgumentError("TFRecord: buffer_size must be in [1, 2^30], got " +
                                   std::to_string(buffer_size));
     }
     TFRecordReader::Options options;
     options.compression = *c;
     options.buffer_size = static_cast<size_t>(buffer_size);
     return DatasetPtr(
         std::make_shared<TFRecordDataset>(std::move(args), std::move(files), options));
   }).IgnoreError();
}

}  // namespace sluice
