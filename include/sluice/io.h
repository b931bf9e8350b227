// Writing the files sluice reads: TFRecord files (tf.io.TFRecordWriter) and serialized
// tf.train.Example records (what tf.train.Example(...).SerializeToString() gives),
// without TensorFlow or protobuf headers.
//
//   using namespace sluice;
//   SLUICE_ASSIGN_OR_RETURN(io::TFRecordWriter w,
//                           io::TFRecordWriter::Open("train-0.tfrecord.gz", {"GZIP"}));
//   for (int64_t id = 0; id < 100; ++id) {
//     io::ExampleBuilder ex;
//     ex.AddInt64("x", {3 * id, 3 * id + 1, 3 * id + 2}).AddInt64("label", id % 10);
//     SLUICE_RETURN_IF_ERROR(w.Write(ex.Serialize()));
//   }
//   SLUICE_RETURN_IF_ERROR(w.Close());
//   // Dataset::TFRecord({"train-0.tfrecord.gz"}, Compression::kGzip) reads the records;
//   // the parse_example kernel turns each into {x: int64[3], label: int64}.
//
// Files are byte-compatible with TensorFlow's (the framing is in src/formats/tfrecord.h);
// a GZIP file is a regular .gz stream, a ZLIB file a zlib stream.
//
// Errors are Status values, never exceptions; each names the file.
//
// Thread-safety: a TFRecordWriter or an ExampleBuilder is used by one thread at a time;
// distinct objects are independent.
#ifndef SLUICE_IO_H_
#define SLUICE_IO_H_

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "sluice/status.h"

namespace sluice {

class Env;  // the file-system seam (src/core/env.h)

namespace io {

// tf.io.TFRecordOptions.
struct TFRecordOptions {
  // "" (or "NONE"), "GZIP" or "ZLIB": the names Dataset::TFRecord and the spec files
  // accept (CompressionName). Anything else makes Open fail with InvalidArgument.
  std::string compression;
  // The file system to write through; null: the default (POSIX) one. Tests pass a
  // faulting one.
  Env* env = nullptr;
};

// Writes records to one TFRecord file (tf.io.TFRecordWriter).
//
// Open creates or truncates the file. Write appends one record; the bytes go through a
// buffer (and, when compressed, the deflater), so an I/O error may surface only at a
// later Write, Flush or Close. Errors are sticky: after one, every Write, Flush and Close
// returns an error. Close finishes the compressed stream and closes the file; it is
// idempotent (later calls return what the first returned), and Write or Flush after it is
// FailedPrecondition. The destructor closes an open writer and logs (SLUICE_LOG(kError))
// an error it cannot return, so call Close() to see it. A moved-from writer is closed.
class TFRecordWriter {
 public:
  // Errors name `path`: NotFound (no such directory), PermissionDenied, InvalidArgument
  // (a directory, or an unknown compression).
  static Result<TFRecordWriter> Open(const std::string& path,
                                     const TFRecordOptions& options = {});

  TFRecordWriter(TFRecordWriter&& other) noexcept;
  TFRecordWriter& operator=(TFRecordWriter&& other) noexcept;  // closes this one first
  ~TFRecordWriter();

  // Appends one record: any bytes, empty included (records are at most 2 GiB, the
  // reader's limit; a longer one is InvalidArgument and nothing is written).
  Status Write(std::string_view record);
  // Hands what was written so far to the OS (a sync flush of a compressed stream), so a
  // reader of the file sees every record written up to here.
  Status Flush();
  Status Close();

  // The path as given to Open.
  const std::string& path() const;
  // Records written so far.
  int64_t records_written() const;

 private:
  struct Impl;
  explicit TFRecordWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Builds one serialized tf.train.Example: a map from feature names to a list of int64,
// float or bytes values (TensorFlow's own schema, so TensorFlow parses it too). The
// sluice parse_example kernel reads it back (FixedLenFeature for a list of known length,
// VarLenFeature otherwise).
//
// Adding a key that was already added replaces its values (and type). Serialize is
// deterministic: features in key order, so equal builders give equal bytes.
class ExampleBuilder {
 public:
  ExampleBuilder();
  ~ExampleBuilder();
  ExampleBuilder(ExampleBuilder&&) noexcept;
  ExampleBuilder& operator=(ExampleBuilder&&) noexcept;

  // int64_list.
  ExampleBuilder& AddInt64(std::string_view key, int64_t value);
  ExampleBuilder& AddInt64(std::string_view key, std::span<const int64_t> values);
  ExampleBuilder& AddInt64(std::string_view key, std::initializer_list<int64_t> values);
  // float_list.
  ExampleBuilder& AddFloat(std::string_view key, float value);
  ExampleBuilder& AddFloat(std::string_view key, std::span<const float> values);
  ExampleBuilder& AddFloat(std::string_view key, std::initializer_list<float> values);
  // bytes_list (any bytes: encoded images, UTF-8 text, ...).
  ExampleBuilder& AddBytes(std::string_view key, std::string_view value);
  ExampleBuilder& AddBytes(std::string_view key, std::span<const std::string> values);
  ExampleBuilder& AddBytes(std::string_view key,
                           std::initializer_list<std::string_view> values);

  // The serialized tf.train.Example.
  std::string Serialize() const;
  // Removes every feature.
  void Clear();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Writes the offset index of the uncompressed TFRecord file `path` beside it
// (`path` + ".index": record count and each record's offset, with a magic and a CRC) and
// returns the number of records. With indexes beside all of its files, Dataset::TFRecord
// knows its cardinality and serves rows by index, so GlobalShuffle (and a whole-input
// Shuffle) runs over it. Rebuild after changing the file: a stale index (the file's size
// or mtime differs) is ignored with a warning. `sluice index FILE...` does the same.
Result<int64_t> WriteTFRecordIndex(const std::string& path);

}  // namespace io
}  // namespace sluice

#endif  // SLUICE_IO_H_
