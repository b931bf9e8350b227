// TFRecord: the records of TFRecord files, one string scalar per record (tf.data's
// TFRecordDataset). Files are read one after another (ops/sources/file_sequence.h);
// damaged records are reported and reading resumes after them (see formats/tfrecord.h).
// Checkpoint: file index + uncompressed offset of the next record.
#include "formats/tfrecord.h"
#include "ops/ops.h"
#include "ops/sources/file_sequence.h"

namespace sluice {
namespace {

constexpr char kOp[] = "TFRecord";

class TFRecordFileReader : public RecordFileReader {
 public:
  explicit TFRecordFileReader(std::unique_ptr<TFRecordReader> reader)
      : reader_(std::move(reader)) {}

  Result<bool> ReadRecord(std::string* record) override {
    SLUICE_ASSIGN_OR_RETURN(std::optional<std::string> rec, reader_->ReadRecord());
    if (!rec) return false;
    if (record != nullptr) *record = std::move(*rec);
    return true;
  }
  // The reader resumes after damaged records; only unrecoverable errors end the file.
  bool EndedByError() const override { return reader_->done(); }
  uint64_t Tell() const override { return reader_->offset(); }
  Status SeekTo(uint64_t offset) override { return reader_->SeekTo(offset); }
  uint64_t BytesReadFromDisk() const override { return reader_->bytes_read_from_disk(); }

 private:
  std::unique_ptr<TFRecordReader> reader_;
};

class TFRecordDataset : public FileSequenceDataset {
 public:
  TFRecordDataset(OpArgs args, FileSourceAttrs attrs)
      : FileSequenceDataset(kOp, std::move(args), std::move(attrs)) {
    options_.compression = this->attrs().compression;
    options_.buffer_size = this->attrs().buffer_size;
  }

  Result<std::unique_ptr<RecordFileReader>> OpenFile(Env* env, size_t i) const override {
    TFRecordReader::Options o = options_;
    o.env = env;
    SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<TFRecordReader> r,
                            TFRecordReader::Open(files()[i], o));
    return std::unique_ptr<RecordFileReader>(new TFRecordFileReader(std::move(r)));
  }

 private:
  TFRecordReader::Options options_;
};

}  // namespace

void RegisterTFRecordDataset(Registry* r) {
  r->RegisterOp(FileSourceOpDef(kOp, "Records of TFRecord files (string scalars); CRCs are verified."), [](OpArgs args) -> Result<DatasetPtr> {
     SLUICE_ASSIGN_OR_RETURN(FileSourceAttrs attrs, ParseFileSourceAttrs(kOp, args));
     return DatasetPtr(
         std::make_shared<TFRecordDataset>(std::move(args), std::move(attrs)));
   });
}

}  // namespace sluice
