#include "formats/input_stream.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>

#include "core/env.h"

namespace sluice {
namespace {

std::string_view KindName(Compression c) {
  switch (c) {
    case Compression::kGzip:
      return "GZIP";
    case Compression::kZlib:
      return "ZLIB";
    case Compression::kNone:
      break;
  }
  return "uncompressed";
}

int WindowBits(Compression c) { return c == Compression::kGzip ? 15 + 16 : 15; }

}  // namespace

Result<Compression> CompressionFromName(std::string_view name) {
  if (name.empty() || name == "NONE") return Compression::kNone;
  if (name == "GZIP") return Compression::kGzip;
  if (name == "ZLIB") return Compression::kZlib;
  return InvalidArgumentError("unknown compression '" + std::string(name) +
                              "' (expected \"\", NONE, GZIP or ZLIB)");
}

std::string_view CompressionName(Compression c) {
  switch (c) {
    case Compression::kNone: return "";
    case Compression::kGzip: return "GZIP";
    case Compression::kZlib: return "ZLIB";
  }
  return "";
}

// ---- Sources: where the (possibly compressed) bytes come from ----

class InputStream::Source {
 public:
  explicit Source(std::string name) : name_(std::move(name)) {}
  virtual ~Source() = default;
  // Reads up to n bytes at `offset`; fewer only at the end.
  virtual Result<size_t> PRead(uint64_t offset, char* dst, size_t n) = 0;
  virtual uint64_t size() const = 0;
  const std::string& name() const { return name_; }

 private:
  std::string name_;
};

class InputStream::FileSource : public InputStream::Source {
 public:
  explicit FileSource(std::unique_ptr<RandomAccessFile> file)
      : Source(file->name()), file_(std::move(file)), size_(file_->Size()) {}

  // Short reads from the Env are retried; 0 is the end of the file. An error after some
  // bytes returns those bytes first (the next read meets the error again), so records
  // before damage are not lost.
  Result<size_t> PRead(uint64_t offset, char* dst, size_t n) override {
    size_t done = 0;
    while (done < n) {
      auto r = file_->Read(offset + done, dst + done, n - done);
      if (!r.ok()) {
        if (done > 0) break;
        return r.status();
      }
      if (*r == 0) break;
      done += *r;
    }
    return done;
  }
  uint64_t size() const override { return size_; }

 private:
  std::unique_ptr<RandomAccessFile> file_;
  uint64_t size_;
};

class InputStream::MemorySource : public InputStream::Source {
 public:
  MemorySource(std::string name, std::string_view data)
      : Source(std::move(name)), data_(data) {}
  Result<size_t> PRead(uint64_t offset, char* dst, size_t n) override {
    if (offset >= data_.size()) return size_t{0};
    size_t k = std::min<uint64_t>(n, data_.size() - offset);
    memcpy(dst, data_.data() + offset, k);
    return k;
  }
  uint64_t size() const override { return data_.size(); }

 private:
  std::string_view data_;
};

struct InputStream::Inflater {
  z_stream z{};
  bool initialized = false;
  std::unique_ptr<char[]> in;
  size_t in_cap = 0;
  uint64_t raw_pos = 0;      // next compressed offset to fetch
  bool in_eof = false;       // the compressed input is exhausted
  bool member_done = false;  // the current gzip/zlib member reached its end marker
  ~Inflater() {
    if (initialized) inflateEnd(&z);
  }
};

// ---- InputStream ----

InputStream::InputStream(std::unique_ptr<Source> source, Compression compression,
                         size_t buffer_size)
    : source_(std::move(source)),
      name_(source_->name()),
      compression_(compression),
      base_capacity_(std::max<size_t>(buffer_size, 1)) {
  Reserve(base_capacity_);
}

InputStream::~InputStream() = default;

Result<std::unique_ptr<InputStream>> InputStream::Open(const std::string& path,
                                                       Compression compression,
                                                       size_t buffer_size, Env* env) {
  if (env == nullptr) env = Env::Default();
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file,
                          env->NewRandomAccessFile(path));
  auto source = std::make_unique<FileSource>(std::move(file));
  std::unique_ptr<InputStream> s(
      new InputStream(std::move(source), compression, buffer_size));
  SLUICE_RETURN_IF_ERROR(s->InitInflater());
  return s;
}

std::unique_ptr<InputStream> InputStream::FromMemory(std::string name,
                                                     std::string_view data,
                                                     Compression compression,
                                                     size_t buffer_size) {
  auto source = std::make_unique<MemorySource>(std::move(name), data);
  std::unique_ptr<InputStream> s(
      new InputStream(std::move(source), compression, buffer_size));
  // inflateInit2 only fails on memory exhaustion; report it on the first read.
  Status st = s->InitInflater();
  if (!st.ok()) s->error_ = st;
  return s;
}

Status InputStream::InitInflater() {
  if (compression_ == Compression::kNone) return Status::OK();
  inflater_ = std::make_unique<Inflater>();
  inflater_->in_cap = base_capacity_;
  inflater_->in.reset(new char[inflater_->in_cap]);
  if (inflateInit2(&inflater_->z, WindowBits(compression_)) != Z_OK) {
    return ResourceExhaustedError("cannot initialize zlib for '" + name_ + "'");
  }
  inflater_->initialized = true;
  return Status::OK();
}

void InputStream::Reserve(size_t cap) {
  if (cap == cap_) return;
  std::unique_ptr<char[]> nb(new char[cap]);
  size_t n = buffered();
  if (n > 0) memcpy(nb.get(), buf_.get() + pos_, n);
  buf_ = std::move(nb);
  cap_ = cap;
  pos_ = 0;
  end_ = n;
}

std::string InputStream::Where(uint64_t offset) const {
  std::string s =
      "in file " + name_ + " at uncompressed offset " + std::to_string(offset);
  if (inflater_) {
    s += " (compressed offset " +
         std::to_string(inflater_->raw_pos - inflater_->z.avail_in) + ")";
  }
  return s;
}

Result<size_t> InputStream::Produce(char* dst, size_t cap) {
  if (!error_.ok()) return error_;
  auto r = compression_ == Compression::kNone ? ProduceRaw(dst, cap)
                                              : ProduceInflated(dst, cap);
  if (!r.ok()) {
    error_ = r.status();
    return r;
  }
  produced_ += *r;
  return r;
}

Result<size_t> InputStream::ProduceRaw(char* dst, size_t cap) {
  SLUICE_ASSIGN_OR_RETURN(size_t n, source_->PRead(produced_, dst, cap));
  bytes_read_.fetch_add(n, std::memory_order_relaxed);
  return n;
}

Result<size_t> InputStream::ProduceInflated(char* dst, size_t cap) {
  Inflater& f = *inflater_;
  z_stream& z = f.z;
  z.next_out = reinterpret_cast<Bytef*>(dst);
  z.avail_out = static_cast<uInt>(std::min<size_t>(cap, 1u << 30));
  const size_t want = z.avail_out;
  Status err;
  while (z.avail_out > 0) {
    if (z.avail_in == 0 && !f.in_eof) {
      SLUICE_ASSIGN_OR_RETURN(size_t n, source_->PRead(f.raw_pos, f.in.get(), f.in_cap));
      bytes_read_.fetch_add(n, std::memory_order_relaxed);
      f.raw_pos += n;
      if (n == 0) {
        f.in_eof = true;
      } else {
        z.next_in = reinterpret_cast<Bytef*>(f.in.get());
        z.avail_in = static_cast<uInt>(n);
      }
    }
    if (z.avail_in == 0 && f.in_eof) break;
    if (f.member_done) {
      // More input after the end of a member: a concatenated gzip/zlib stream.
      inflateReset(&z);
      f.member_done = false;
    }
    int r = inflate(&z, Z_NO_FLUSH);
    if (r == Z_STREAM_END) {
      f.member_done = true;
    } else if (r == Z_OK || (r == Z_BUF_ERROR && z.avail_in == 0)) {
      // Progress made, or more input needed.
    } else {
      err = DataLossError("corrupt " + std::string(KindName(compression_)) + " data " +
                          Where(produced_ + (want - z.avail_out)) + ": " +
                          (z.msg ? z.msg : "zlib error " + std::to_string(r)));
      break;
    }
  }
  size_t n = want - z.avail_out;
  if (n > 0) {
    if (!err.ok()) error_ = err;  // reported on the next call, after the good bytes
    return n;
  }
  if (!err.ok()) return err;
  if (f.in_eof && !f.member_done && f.raw_pos > 0) {
    return DataLossError("truncated " + std::string(KindName(compression_)) + " stream " +
                         Where(produced_) +
                         ": the file ends before the end of the compressed data");
  }
  return size_t{0};
}

Status InputStream::EnsureBuffered(size_t n) {
  if (buffered() >= n || eof_) return Status::OK();
  if (cap_ > base_capacity_ && n <= base_capacity_ && buffered() <= base_capacity_) {
    Reserve(base_capacity_);  // a big Peek is over: give the memory back
  }
  if (pos_ > 0) {
    size_t k = buffered();
    if (k > 0) memmove(buf_.get(), buf_.get() + pos_, k);
    pos_ = 0;
    end_ = k;
  }
  while (buffered() < n && !eof_) {
    if (end_ == cap_) {
      // Grow geometrically towards n, so memory follows the data actually present.
      Reserve(std::min(n, std::max(cap_ * 2, base_capacity_)));
    }
    SLUICE_ASSIGN_OR_RETURN(size_t k, Produce(buf_.get() + end_, cap_ - end_));
    if (k == 0) eof_ = true;
    end_ += k;
  }
  return Status::OK();
}

Result<std::string_view> InputStream::Read(size_t n) {
  SLUICE_RETURN_IF_ERROR(EnsureBuffered(n));
  size_t k = std::min(n, buffered());
  std::string_view v(buf_.get() + pos_, k);
  pos_ += k;
  return v;
}

Result<std::string_view> InputStream::Peek(size_t n) {
  SLUICE_RETURN_IF_ERROR(EnsureBuffered(n));
  return std::string_view(buf_.get() + pos_, std::min(n, buffered()));
}

Result<size_t> InputStream::ReadInto(char* dst, size_t n) {
  size_t done = std::min(n, buffered());
  if (done > 0) memcpy(dst, buf_.get() + pos_, done);
  pos_ += done;
  while (done < n && !eof_) {
    size_t rest = n - done;
    pos_ = end_ = 0;
    if (rest >= cap_) {
      // Large read: straight into the destination.
      SLUICE_ASSIGN_OR_RETURN(size_t k, Produce(dst + done, rest));
      if (k == 0) eof_ = true;
      done += k;
    } else {
      SLUICE_ASSIGN_OR_RETURN(size_t k, Refill());
      size_t take = std::min(rest, k);
      memcpy(dst + done, buf_.get(), take);
      pos_ = take;
      done += take;
    }
  }
  return done;
}

Result<size_t> InputStream::Refill() {
  pos_ = end_ = 0;
  SLUICE_ASSIGN_OR_RETURN(size_t k, Produce(buf_.get(), cap_));
  if (k == 0) eof_ = true;
  end_ = k;
  return k;
}

Result<size_t> InputStream::AppendFromBuffer(std::string* out, size_t n) {
  size_t done = 0;
  while (done < n) {
    if (buffered() == 0) {
      if (eof_) break;
      const size_t rest = n - done;
      if (rest >= cap_) {
        // Large read: straight into the string (which must be sized for it first).
        const size_t at = out->size();
        out->resize(at + rest);
        auto k = ReadInto(out->data() + at, rest);
        if (!k.ok()) return k.status();
        out->resize(at + *k);
        done += *k;
        break;
      }
      SLUICE_ASSIGN_OR_RETURN(size_t k, Refill());
      if (k == 0) break;
    }
    const size_t take = std::min(n - done, buffered());
    out->append(buf_.get() + pos_, take);
    pos_ += take;
    done += take;
  }
  return done;
}

Result<size_t> InputStream::ReadAppend(std::string* out, size_t n) {
  const size_t old = out->size();
  if (std::optional<uint64_t> size = Size()) {
    uint64_t here = Tell();
    size_t want =
        static_cast<size_t>(std::min<uint64_t>(n, *size > here ? *size - here : 0));
    // Appended from the read buffer as it fills: no zero-filled resize, one copy less.
    out->reserve(old + want);
    auto k = AppendFromBuffer(out, want);
    if (!k.ok()) {
      out->resize(old);
      return k;
    }
    return *k;
  }
  size_t done = 0;
  while (done < n) {
    size_t chunk = std::min(n - done, std::max(base_capacity_, done));
    out->resize(old + done + chunk);
    auto k = ReadInto(out->data() + old + done, chunk);
    if (!k.ok()) {
      out->resize(old + done);
      return k.status();
    }
    done += *k;
    if (*k < chunk) break;
  }
  out->resize(old + done);
  return done;
}

Result<uint64_t> InputStream::Skip(uint64_t n) {
  uint64_t done = std::min<uint64_t>(n, buffered());
  pos_ += done;
  if (done == n) return done;
  pos_ = end_ = 0;
  if (compression_ == Compression::kNone) {
    if (!error_.ok()) return error_;
    uint64_t size = source_->size();
    uint64_t k = std::min<uint64_t>(n - done, size > produced_ ? size - produced_ : 0);
    produced_ += k;
    return done + k;
  }
  while (done < n && !eof_) {
    SLUICE_ASSIGN_OR_RETURN(size_t k,
                            Produce(buf_.get(), std::min<uint64_t>(cap_, n - done)));
    if (k == 0) eof_ = true;
    done += k;
  }
  return done;
}

Result<bool> InputStream::ReadLine(std::string* line, size_t max_size) {
  line->clear();
  const uint64_t start = Tell();
  while (true) {
    if (buffered() == 0) {
      SLUICE_RETURN_IF_ERROR(EnsureBuffered(1));
      if (buffered() == 0) break;
    }
    const char* p = buf_.get() + pos_;
    const char* nl = static_cast<const char*>(memchr(p, '\n', buffered()));
    if (line->size() + (nl != nullptr ? nl - p : buffered()) > max_size) {
      return ResourceExhaustedError("line longer than " + std::to_string(max_size) +
                                    " bytes (no newline) " + Where(start));
    }
    if (nl != nullptr) {
      line->append(p, nl - p);
      pos_ += (nl - p) + 1;
      if (!line->empty() && line->back() == '\r') line->pop_back();
      return true;
    }
    line->append(p, buffered());
    pos_ = end_;
  }
  if (!line->empty() && line->back() == '\r') line->pop_back();
  return !line->empty();
}

Status InputStream::Rewind() {
  Inflater& f = *inflater_;
  if (inflateReset(&f.z) != Z_OK)
    return InternalError("inflateReset failed for " + name_);
  f.z.avail_in = 0;
  f.z.next_in = nullptr;
  f.raw_pos = 0;
  f.in_eof = false;
  f.member_done = false;
  pos_ = end_ = 0;
  produced_ = 0;
  eof_ = false;
  error_ = Status::OK();
  return Status::OK();
}

Status InputStream::SeekTo(uint64_t offset) {
  const uint64_t buf_start = produced_ - end_;
  if (offset >= buf_start && offset <= produced_) {
    pos_ = static_cast<size_t>(offset - buf_start);
    return Status::OK();
  }
  if (compression_ == Compression::kNone) {
    if (offset > source_->size()) {
      return OutOfRangeError("cannot seek to offset " + std::to_string(offset) +
                             " in file " + name_ + ": it has only " +
                             std::to_string(source_->size()) + " bytes");
    }
    pos_ = end_ = 0;
    produced_ = offset;
    eof_ = false;
    return Status::OK();
  }
  if (offset < Tell()) SLUICE_RETURN_IF_ERROR(Rewind());
  SLUICE_RETURN_IF_ERROR(Skip(offset - Tell()));
  if (Tell() != offset) {
    return OutOfRangeError("cannot seek to uncompressed offset " +
                           std::to_string(offset) + " in file " + name_ +
                           ": the stream has only " + std::to_string(Tell()) + " bytes");
  }
  return Status::OK();
}

uint64_t InputStream::Tell() const { return produced_ - buffered(); }

std::optional<uint64_t> InputStream::Size() const {
  if (compression_ == Compression::kNone) return source_->size();
  return std::nullopt;
}

// ---- OutputStream ----

struct OutputStream::Deflater {
  z_stream z{};
  bool initialized = false;
  ~Deflater() {
    if (initialized) deflateEnd(&z);
  }
};

OutputStream::OutputStream(std::unique_ptr<WritableFile> file, size_t buffer_size)
    : name_(file->name()),
      file_(std::move(file)),
      buf_(new char[std::max<size_t>(buffer_size, 64)]),
      cap_(std::max<size_t>(buffer_size, 64)) {}

OutputStream::~OutputStream() { Close().IgnoreError(); }

Result<std::unique_ptr<OutputStream>> OutputStream::Open(const std::string& path,
                                                         Compression compression,
                                                         size_t buffer_size, Env* env) {
  if (env == nullptr) env = Env::Default();
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, env->NewWritableFile(path));
  std::unique_ptr<OutputStream> s(new OutputStream(std::move(file), buffer_size));
  if (compression != Compression::kNone) {
    s->deflater_ = std::make_unique<Deflater>();
    if (deflateInit2(&s->deflater_->z, Z_DEFAULT_COMPRESSION, Z_DEFLATED,
                     WindowBits(compression), 8, Z_DEFAULT_STRATEGY) != Z_OK) {
      return ResourceExhaustedError("cannot initialize zlib for '" + path + "'");
    }
    s->deflater_->initialized = true;
  }
  return s;
}

Status OutputStream::WriteRaw(const char* data, size_t n) {
  Status s = file_->Append(std::string_view(data, n));
  if (!s.ok()) return error_ = s;
  bytes_written_.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
  return Status::OK();
}

Status OutputStream::FlushBuffer() {
  if (len_ == 0) return Status::OK();
  Status s = WriteRaw(buf_.get(), len_);
  len_ = 0;
  return s;
}

Status OutputStream::Deflate(const char* data, size_t n, int flush) {
  z_stream& z = deflater_->z;
  // zlib counts in uInt; feed huge appends in slices.
  do {
    size_t slice = std::min<size_t>(n, 1u << 30);
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data));
    z.avail_in = static_cast<uInt>(slice);
    int mode = slice == n ? flush : Z_NO_FLUSH;
    while (true) {
      if (len_ == cap_) SLUICE_RETURN_IF_ERROR(FlushBuffer());
      z.next_out = reinterpret_cast<Bytef*>(buf_.get() + len_);
      z.avail_out = static_cast<uInt>(cap_ - len_);
      int r = deflate(&z, mode);
      len_ = cap_ - z.avail_out;
      if (r == Z_STREAM_ERROR)
        return error_ = InternalError("deflate failed for " + name_);
      if (mode == Z_FINISH) {
        if (r == Z_STREAM_END) break;
        continue;
      }
      if (z.avail_in == 0 && z.avail_out != 0) break;
    }
    data += slice;
    n -= slice;
  } while (n > 0);
  return Status::OK();
}

Status OutputStream::Append(std::string_view data) {
  if (closed_) return FailedPreconditionError("append to closed file " + name_);
  SLUICE_RETURN_IF_ERROR(error_);
  appended_ += data.size();
  if (deflater_) {
    if (data.empty()) return Status::OK();
    dirty_ = true;
    return Deflate(data.data(), data.size(), Z_NO_FLUSH);
  }
  if (len_ + data.size() <= cap_) {
    memcpy(buf_.get() + len_, data.data(), data.size());
    len_ += data.size();
    return Status::OK();
  }
  SLUICE_RETURN_IF_ERROR(FlushBuffer());
  if (data.size() >= cap_) return WriteRaw(data.data(), data.size());
  memcpy(buf_.get(), data.data(), data.size());
  len_ = data.size();
  return Status::OK();
}

Status OutputStream::Flush() {
  if (closed_) return error_;
  SLUICE_RETURN_IF_ERROR(error_);
  if (deflater_ && dirty_) {
    SLUICE_RETURN_IF_ERROR(Deflate(nullptr, 0, Z_SYNC_FLUSH));
    dirty_ = false;
  }
  return FlushBuffer();
}

Status OutputStream::Close() {
  if (closed_) return error_;
  closed_ = true;
  if (error_.ok() && deflater_) Deflate(nullptr, 0, Z_FINISH).IgnoreError();
  if (error_.ok()) FlushBuffer().IgnoreError();
  deflater_.reset();
  Status closed = file_->Close();
  if (error_.ok()) error_ = closed;
  return error_;
}

}  // namespace sluice
