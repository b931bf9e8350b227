// TFRecord files: reader and writer.
//
// Format (TensorFlow's tensorflow/core/lib/io/record_writer.h), all little endian:
//
//   uint64 length
//   uint32 masked_crc32c(length bytes)
//   byte   data[length]
//   uint32 masked_crc32c(data)
//
// with masked_crc = ((crc >> 15) | (crc << 17)) + 0xa282ead8 (src/core/crc32c.h). The
// file may be gzip- or zlib-compressed as a whole (Compression::kGzip / kZlib).
//
// Damage handling (TFRecordReader::ReadRecord):
//  * data checksum mismatch: DataLoss "corrupt record at offset N in file F: data
//  checksum
//    mismatch ..."; the header was intact, so the reader continues with the next record.
//  * header (length) checksum mismatch: DataLoss "corrupt record at offset N in file F:
//    header checksum mismatch ..."; the length cannot be trusted, so the reader
//    resynchronizes before returning: it scans forward from N+1 for the next offset whose
//    12 header bytes carry a valid length checksum and a plausible length and whose data
//    checksum verifies, and the next call returns that record. One flipped byte loses one
//    record, not the rest of the file. (TensorFlow gives up on the file instead.)
//  * a truncated final record (or header): DataLoss "truncated record at offset N in file
//  F:
//    ... M bytes missing"; the reader is then at the end.
//  * a length over kMaxRecordLength (2 GiB), or over what remains of an uncompressed
//  file, is
//    never allocated: it is reported (and the record skipped, or treated as truncated).
//  * an I/O error or corrupt compressed data ends the file: the error is returned and
//    done() becomes true.
// After any error the reader has made progress, so calling ReadRecord again never loops.
//
// Thread-safety: one thread at a time.
#ifndef SLUICE_FORMATS_TFRECORD_H_
#define SLUICE_FORMATS_TFRECORD_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "formats/input_stream.h"
#include "sluice/dataset.h"
#include "sluice/status.h"

namespace sluice {

inline constexpr size_t kTFRecordHeaderSize = 12;  // length + masked crc of the length
inline constexpr size_t kTFRecordFooterSize = 4;   // masked crc of the data

// Appends one framed record (header, data, footer) to `out`.
void AppendTFRecord(std::string* out, std::string_view data);

class TFRecordReader {
 public:
  static constexpr uint64_t kMaxRecordLength = uint64_t{1} << 31;  // 2 GiB

  struct Options {
    Compression compression = Compression::kNone;
    size_t buffer_size = InputStream::kDefaultBufferSize;
    // Longer records are reported and skipped, never allocated (at most
    // kMaxRecordLength).
    uint64_t max_record_length = kMaxRecordLength;
    // Resynchronization verifies candidate records; candidates whose data checksum fails
    // (which needs a 1-in-2^32 coincidence on naturally damaged data, so only adversarial
    // files produce many) consume this budget of bytes. When it is spent the reader stops
    // resynchronizing and ends the file instead, which bounds the work on hostile input.
    uint64_t resync_probe_budget = uint64_t{256} << 20;
    // The file system to open through (src/core/env.h); null: Env::Default().
    Env* env = nullptr;
  };

  static Result<std::unique_ptr<TFRecordReader>> Open(const std::string& path,
                                                      const Options& options);
  static Result<std::unique_ptr<TFRecordReader>> Open(
      const std::string& path, Compression compression = Compression::kNone) {
    Options o;
    o.compression = compression;
    return Open(path, o);
  }
  TFRecordReader(std::unique_ptr<InputStream> stream, const Options& options);

  // The next record, std::nullopt at the end (and on every call after), or an error (see
  // the header comment; the reader has moved past the damage).
  Result<std::optional<std::string>> ReadRecord();

  // Offset of the record ReadRecord returned last.
  uint64_t last_record_offset() const { return last_offset_; }
  // Offset at which the next ReadRecord starts: the checkpoint position. SeekTo(offset())
  // on a fresh reader of the same file continues exactly here.
  uint64_t offset() const;
  // Positions the reader at `offset`, which must be the start of a record (or the end).
  Status SeekTo(uint64_t offset);
  // True once the reader has reached the end, or stopped after an unrecoverable error.
  bool done() const { return done_ && !pending_; }

  const std::string& filename() const { return stream_->name(); }
  uint64_t bytes_read_from_disk() const { return stream_->bytes_read_from_disk(); }
  InputStream* stream() { return stream_.get(); }

 private:
  enum class Outcome { kOk, kEnd, kHeaderCorrupt, kDataCorrupt, kTruncated, kTooLong };
  // Reads the record at the current position; on kOk fills *data. `detail` describes a
  // failure. Stream errors are returned as errors.
  Result<Outcome> ReadOne(std::string* data, std::string* detail);
  // Scans forward from the current position for the next intact record; on success stores
  // it in pending_. Returns an empty string when the scan ended normally (found or EOF),
  // otherwise why it stopped.
  Result<std::string> Resync();
  std::string At(uint64_t offset) const;

  std::unique_ptr<InputStream> stream_;
  Options options_;
  uint64_t last_offset_ = 0;
  bool done_ = false;
  uint64_t probe_budget_left_;
  struct Pending {
    uint64_t offset;
    std::string data;
  };
  std::optional<Pending> pending_;
};

class TFRecordWriter {
 public:
  static Result<std::unique_ptr<TFRecordWriter>> Open(
      const std::string& path, Compression compression = Compression::kNone,
      Env* env = nullptr);
  ~TFRecordWriter();  // closes, ignoring errors

  Status Write(std::string_view record);
  // Makes everything written so far readable (a zlib sync flush when compressed).
  Status Flush();
  // Finishes the stream and closes the file (idempotent).
  Status Close();
  // Uncompressed offset at which the next record will start.
  uint64_t offset() const { return out_->Tell(); }

 private:
  explicit TFRecordWriter(std::unique_ptr<OutputStream> out) : out_(std::move(out)) {}
  std::unique_ptr<OutputStream> out_;
};

}  // namespace sluice

#endif  // SLUICE_FORMATS_TFRECORD_H_
