// TFRecord: the records of TFRecord files, one string scalar per record (tf.data's
// TFRecordDataset). Files are read one after another (ops/sources/file_sequence.h);
// damaged records are reported and reading resumes after them (see formats/tfrecord.h).
// Checkpoint: file index + uncompressed offset of the next record.
// Row access: when every file is uncompressed and has a valid, fresh offset index beside it
// (formats/tfrecord_index.h), the node knows its cardinality and serves row i by index. A
// stale index (the file's size or mtime changed) is ignored with a warning; a corrupt one
// fails construction (DataLoss naming the index file).
#include "core/logging.h"
#include "formats/tfrecord.h"
#include "formats/tfrecord_index.h"
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

  // Loads the files' offset indexes (see the top of the file).
  Status LoadIndexes() {
    if (attrs().compression != Compression::kNone || files().empty()) return Status::OK();
    Env* env = BuildEnv();
    auto rows = std::make_shared<RecordRows>();
    for (const std::string& file : files()) {
      Result<TFRecordIndex> index = ReadTFRecordIndex(file, env);
      if (!index.ok()) {
        if (index.status().code() == StatusCode::kDataLoss) {
          return index.status().WithContext(kOp);
        }
        if (index.status().code() != StatusCode::kNotFound) {
          SLUICE_LOG(kWarning) << kOp << ": ignoring the offset index of " << file << ": "
                               << index.status().ToString();
        }
        return Status::OK();
      }
      Result<FileStat> st = env->Stat(file);
      if (!st.ok()) return Status::OK();  // reported when the file is read
      if (!IndexFresh(*index, *st)) {
        SLUICE_LOG(kWarning) << kOp << ": ignoring stale offset index "
                             << TFRecordIndexPath(file) << " (" << file
                             << " changed since it was indexed; rebuild with `sluice index`)";
        return Status::OK();
      }
      rows->first.push_back(rows->count);
      rows->count += static_cast<int64_t>(index->offsets.size());
      rows->offsets.push_back(std::move(index->offsets));
    }
    set_rows(std::move(rows));
    return Status::OK();
  }

  Result<std::string> ReadRecordAt(RandomAccessFile& file, size_t i,
                                   uint64_t offset) const override {
    return ReadTFRecordAt(file, files()[i], offset);
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
  OpDef def = FileSourceOpDef(
      kOp, "Records of TFRecord files (string scalars); CRCs are verified. Serves rows by "
           "index when every file has an offset index (`sluice index`).");
  OpTraits traits = def.traits();
  traits.row_access = RowAccess::kSource;
  def.Traits(traits);
  r->RegisterOp(std::move(def), [](OpArgs args) -> Result<DatasetPtr> {
     SLUICE_ASSIGN_OR_RETURN(FileSourceAttrs attrs, ParseFileSourceAttrs(kOp, args));
     auto ds = std::make_shared<TFRecordDataset>(std::move(args), std::move(attrs));
     SLUICE_RETURN_IF_ERROR(ds->LoadIndexes());
     return DatasetPtr(std::move(ds));
   });
}

}  // namespace sluice
