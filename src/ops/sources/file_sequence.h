// The file sequence shared by the record-file sources (TextLine, TFRecord,
// FixedLengthRecord): each yields one string scalar per record of its files, read one
// file after another.
//
// A source derives its node from FileSequenceDataset and implements OpenFile, which
// returns a RecordFileReader: the per-format part (how to read one record, how to check
// a file before its first record). FileSequenceDataset makes the iterator, which does
// the rest the same way for every format:
//  * files are opened lazily, in order, through the pipeline's Env (src/core/env.h); a
//  file that cannot be opened (or fails Start)
//    is reported once and skipped: the next call goes on with the next file;
//  * a read error is returned prefixed with the op name; the file is closed when the
//    reader says it cannot go on (RecordFileReader::EndedByError), else reading
//    resumes in it;
//  * Skip reads records without building elements;
//  * checkpoint: "file_index" and "offset" (the reader's Tell(), -1 when no file is
//    open); Restore reopens the file with OpenFile and SeekTo(offset), without Start.
//  * with a split provider in the context, a split is a file (an int64 index into the
//    list or a string file name from it): the iterator reads the files the provider
//    hands out, each to its end, and ends when the provider does. The checkpoint is the
//    same (the file being read and its offset; file index 0 and offset -1 between
//    splits, files().size() once ended) and Save calls the provider's MarkCheckpoint.
// Cardinality is unknown (as in tf.data: it would need reading the files), unless the
// source knows the offset of every record (set_rows: TFRecord with an offset index beside
// every file, formats/tfrecord_index.h); then it is the record count, and the iterator
// serves row i by index (RandomAccess) through ReadRecordAt, without moving its position.
//
// Thread-safety: nodes are immutable; an iterator (and its reader) is used by one
// thread at a time.
#ifndef SLUICE_OPS_SOURCES_FILE_SEQUENCE_H_
#define SLUICE_OPS_SOURCES_FILE_SEQUENCE_H_

#include <memory>
#include <string>
#include <vector>

#include "core/env.h"
#include "formats/input_stream.h"
#include "graph/dataset_node.h"
#include "graph/op_def.h"

namespace sluice {

// The attributes every record-file source takes.
struct FileSourceAttrs {
  std::vector<std::string> filenames;
  Compression compression = Compression::kNone;
  size_t buffer_size = InputStream::kDefaultBufferSize;
};

// Checks that `args` has no inputs or functions and parses "filenames" (list(string),
// required), "compression" ("", "GZIP" or "ZLIB"; default "") and "buffer_size" (int in
// [1, 2^30]; default InputStream::kDefaultBufferSize). Errors are InvalidArgument (or the
// attribute lookup's) and start with `op`.
Result<FileSourceAttrs> ParseFileSourceAttrs(const std::string& op, const OpArgs& args);
// The definition every record-file source starts from: no inputs, the attributes above,
// and the traits of a splittable source (a file is a split). Ops add their own attributes.
OpDef FileSourceOpDef(std::string op, std::string summary);

// One open file of a record-file source: the format-specific reading.
class RecordFileReader {
 public:
  virtual ~RecordFileReader() = default;

  // Called once on a freshly opened file (not after a restore): checks the file and moves
  // to its first record (e.g. past a header). An error skips the file.
  virtual Status Start() { return Status::OK(); }
  // Reads the next record into *record (an empty string on entry), or skips it when
  // record is null. False at the end of the file. Errors need not name the op (the
  // caller adds it) but should name the file and offset.
  virtual Result<bool> ReadRecord(std::string* record) = 0;
  // Whether the file is finished after the error ReadRecord just returned. Default: yes
  // (a stream cannot go on after an I/O or decompression error).
  virtual bool EndedByError() const { return true; }
  // The checkpoint position: the uncompressed offset at which the next record starts.
  virtual uint64_t Tell() const = 0;
  // Continues at `offset`, a Tell() of a reader of the same file.
  virtual Status SeekTo(uint64_t offset) = 0;
  // Bytes fetched from the file so far (compressed bytes for compressed files), for the
  // stats plane (NodeStats::file_bytes_read).
  virtual uint64_t BytesReadFromDisk() const = 0;
};

// A RecordFileReader over an InputStream, for formats that read the stream directly.
class StreamRecordReader : public RecordFileReader {
 public:
  explicit StreamRecordReader(std::unique_ptr<InputStream> stream)
      : stream_(std::move(stream)) {}

  uint64_t Tell() const override { return stream_->Tell(); }
  Status SeekTo(uint64_t offset) override { return stream_->SeekTo(offset); }
  uint64_t BytesReadFromDisk() const override { return stream_->bytes_read_from_disk(); }

 protected:
  InputStream& stream() const { return *stream_; }

 private:
  std::unique_ptr<InputStream> stream_;
};

// The offset of every record of every file, for a source that serves rows by index.
struct RecordRows {
  std::vector<std::vector<uint64_t>> offsets;  // per file, in order
  std::vector<int64_t> first;                  // the row number of each file's first record
  int64_t count = 0;
};

class FileSequenceDataset : public DatasetNode {
 public:
  // The element spec is a string scalar.
  FileSequenceDataset(std::string op, OpArgs args, FileSourceAttrs attrs);

  int64_t Cardinality() const override {
    return rows_ ? rows_->count : kUnknownCardinality;
  }
  // The record offsets, or null when the source cannot serve rows by index.
  const RecordRows* rows() const { return rows_.get(); }
  // The record at `offset` of files()[i], read from `file` (an open handle on it); only
  // sources that set_rows are asked.
  virtual Result<std::string> ReadRecordAt(RandomAccessFile& file, size_t i,
                                           uint64_t offset) const {
    return UnimplementedError(op() + ": no row access");
  }
  const std::vector<std::string>& files() const { return attrs_.filenames; }
  const FileSourceAttrs& attrs() const { return attrs_; }

  // Opens files()[i] through `env` (the pipeline's, Runtime::env()) with the source's
  // compression and buffer size.
  Result<std::unique_ptr<InputStream>> OpenStream(Env* env, size_t i) const;

  // Opens files()[i] through `env` at offset 0 (Start is called separately).
  virtual Result<std::unique_ptr<RecordFileReader>> OpenFile(Env* env,
                                                             size_t i) const = 0;
  // The smallest offset a checkpoint may hold for an open file (a header's size).
  virtual uint64_t min_offset() const { return 0; }

 protected:
  Result<IteratorPtr> MakeIteratorInternal(
      const IteratorContext& ctx, const std::string& prefix) const override;
  void set_rows(std::shared_ptr<const RecordRows> rows) { rows_ = std::move(rows); }

 private:
  FileSourceAttrs attrs_;
  std::shared_ptr<const RecordRows> rows_;
};

}  // namespace sluice

#endif  // SLUICE_OPS_SOURCES_FILE_SEQUENCE_H_
