// InputStream: a buffered, sequential reader over a file (or a memory block) with
// optional zlib/gzip decompression. OutputStream: its writing counterpart. Every record
// format (TFRecord, text lines, fixed-length records, IDX, ...) reads through
// InputStream.
//
// Offsets are offsets in the *uncompressed* stream: Tell() after reading n bytes is n,
// whatever the compression. SeekTo(offset) is a pread-position change for uncompressed
// input; for compressed input a forward seek inflates and discards, and a backward seek
// restarts decompression from the beginning of the file (so checkpoints store
// uncompressed offsets and restore by reopen + SeekTo).
//
// Compression: kGzip reads gzip streams (zlib windowBits 15+16), kZlib reads zlib streams
// (windowBits 15). Concatenated gzip/zlib members are read one after another, as `zcat`
// does. A zero-byte compressed file reads as an empty stream. Corrupt compressed data and
// a compressed stream that ends before its end marker are DataLoss errors naming the file
// and the uncompressed and compressed offsets; such errors are sticky: every later read
// returns the same error.
//
// Sizes read from data must never drive allocations on their own: Read/Peek/ReadAppend
// grow their buffers with the data actually present, so asking for 2 GiB from a 10-byte
// file allocates about 10 bytes.
//
// Accounting: bytes_read_from_disk() counts the bytes fetched from the underlying file
// (compressed bytes for compressed input). It is an atomic counter so the stats plane may
// read it from another thread.
//
// Files are opened through an Env (src/core/env.h; null: Env::Default()), so only regular
// files are read, a confined Env's roots apply, and tests can inject faults. A short read
// from the Env is retried; each buffer refill is one virtual call, never one per byte.
//
// Thread-safety: an InputStream/OutputStream is used by one thread at a time, except
// bytes_read_from_disk()/bytes_written_to_disk(), which may be read concurrently.
#ifndef SLUICE_FORMATS_INPUT_STREAM_H_
#define SLUICE_FORMATS_INPUT_STREAM_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "sluice/dataset.h"
#include "sluice/status.h"

namespace sluice {

class Env;
class WritableFile;

class InputStream {
 public:
  static constexpr size_t kDefaultBufferSize = 256 * 1024;

  // Opens `path` for reading through `env` (null: Env::Default()). NotFound /
  // PermissionDenied / InvalidArgument (a directory, a device, a FIFO) name the file.
  // `buffer_size` (> 0) is the read buffer (and, when compressed, also the
  // compressed-input buffer).
  static Result<std::unique_ptr<InputStream>> Open(
      const std::string& path, Compression compression = Compression::kNone,
      size_t buffer_size = kDefaultBufferSize, Env* env = nullptr);
  // Reads from memory (fuzzers, tests). `data` must outlive the stream; `name` stands for
  // the file name in error messages.
  static std::unique_ptr<InputStream> FromMemory(
      std::string name, std::string_view data,
      Compression compression = Compression::kNone,
      size_t buffer_size = kDefaultBufferSize);

  ~InputStream();
  InputStream(const InputStream&) = delete;
  InputStream& operator=(const InputStream&) = delete;

  // Consumes and returns up to `n` bytes; fewer only at the end of the stream. The view
  // stays valid until the next non-const call. Meant for small reads (headers); the
  // buffer grows to `n` when needed.
  Result<std::string_view> Read(size_t n);
  // Like Read but does not consume: the next Read/Peek sees the same bytes.
  Result<std::string_view> Peek(size_t n);
  // Copies up to `n` bytes into `dst`; returns how many (fewer only at the end). Large
  // reads bypass the buffer.
  Result<size_t> ReadInto(char* dst, size_t n);
  // Appends up to `n` bytes to `*out`; returns how many. Memory grows with the bytes
  // actually read, so an absurd `n` from corrupt data allocates nothing extra.
  Result<size_t> ReadAppend(std::string* out, size_t n);
  // Discards up to `n` bytes; returns how many (fewer only at the end).
  Result<uint64_t> Skip(uint64_t n);
  // Reads one line into `*line` without its "\n" (and a "\r" before it, or at the very
  // end, is dropped too, like TensorFlow's InputBuffer::ReadLine). Returns false at the
  // end of the stream when no characters remain. A line longer than `max_size` bytes is
  // ResourceExhausted naming the file and the line's offset (the stream is then left
  // inside the line).
  Result<bool> ReadLine(std::string* line, size_t max_size = SIZE_MAX);

  // Positions the stream at uncompressed `offset`. OutOfRange when the stream is shorter.
  Status SeekTo(uint64_t offset);
  // The uncompressed offset of the next byte to be read.
  uint64_t Tell() const;
  // The uncompressed size when known without reading (uncompressed input), else nullopt.
  std::optional<uint64_t> Size() const;

  uint64_t bytes_read_from_disk() const {
    return bytes_read_.load(std::memory_order_relaxed);
  }
  const std::string& name() const { return name_; }
  Compression compression() const { return compression_; }

 private:
  class Source;
  class FileSource;
  class MemorySource;
  struct Inflater;

  InputStream(std::unique_ptr<Source> source, Compression compression,
              size_t buffer_size);
  Status InitInflater();
  // Produces up to `cap` stream bytes at the current production point into `dst`; returns
  // 0 only at the end of the stream.
  Result<size_t> Produce(char* dst, size_t cap);
  Result<size_t> ProduceRaw(char* dst, size_t cap);
  Result<size_t> ProduceInflated(char* dst, size_t cap);
  // Ensures min(n, rest of stream) bytes are buffered at pos_.
  Status EnsureBuffered(size_t n);
  void Reserve(size_t cap);
  // Refills the empty read buffer from the start with up to cap_ bytes; returns how many
  // (0 sets eof_).
  Result<size_t> Refill();
  // ReadAppend's body for a stream of known size: appends up to n bytes to *out from the
  // read buffer as it fills (reads of cap_ bytes or more go straight into the string).
  Result<size_t> AppendFromBuffer(std::string* out, size_t n);
  size_t buffered() const { return end_ - pos_; }
  Status Rewind();
  std::string Where(uint64_t offset) const;

  std::unique_ptr<Source> source_;
  const std::string name_;
  const Compression compression_;
  const size_t base_capacity_;

  std::unique_ptr<char[]> buf_;
  size_t cap_ = 0;
  size_t pos_ = 0;  // next unread byte in buf_
  size_t end_ = 0;  // end of valid bytes in buf_
  // Uncompressed offset just past the last produced byte (the end of buf_'s data).
  uint64_t produced_ = 0;
  bool eof_ = false;
  Status error_;  // sticky decompression / I/O error

  // Compressed input.
  std::unique_ptr<Inflater> inflater_;
  std::atomic<uint64_t> bytes_read_{0};
};

// Buffered writer of a file with optional gzip/zlib compression (a real .gz stream for
// kGzip, readable by zcat/gzip). Errors are sticky. The destructor closes the file,
// ignoring errors; call Close() to see them.
//
// Thread-safety: one thread at a time.
class OutputStream {
 public:
  // Creates (truncates) `path` through `env` (null: Env::Default()).
  static Result<std::unique_ptr<OutputStream>> Open(
      const std::string& path, Compression compression = Compression::kNone,
      size_t buffer_size = InputStream::kDefaultBufferSize, Env* env = nullptr);
  ~OutputStream();
  OutputStream(const OutputStream&) = delete;
  OutputStream& operator=(const OutputStream&) = delete;

  Status Append(std::string_view data);
  // Hands everything appended so far to the OS (a zlib sync flush when compressed), so a
  // reader sees complete data up to here.
  Status Flush();
  // Finishes the compressed stream and closes the file. Idempotent.
  Status Close();
  // Uncompressed bytes appended so far.
  uint64_t Tell() const { return appended_; }
  uint64_t bytes_written_to_disk() const {
    return bytes_written_.load(std::memory_order_relaxed);
  }
  const std::string& name() const { return name_; }

 private:
  struct Deflater;
  OutputStream(std::unique_ptr<WritableFile> file, size_t buffer_size);
  Status WriteRaw(const char* data, size_t n);
  Status FlushBuffer();
  Status Deflate(const char* data, size_t n, int flush);

  const std::string name_;
  std::unique_ptr<WritableFile> file_;
  std::unique_ptr<char[]> buf_;
  size_t cap_;
  size_t len_ = 0;
  uint64_t appended_ = 0;
  bool closed_ = false;
  bool dirty_ = false;  // data deflated since the last flush
  Status error_;
  std::unique_ptr<Deflater> deflater_;
  std::atomic<uint64_t> bytes_written_{0};
};

}  // namespace sluice

#endif  // SLUICE_FORMATS_INPUT_STREAM_H_
