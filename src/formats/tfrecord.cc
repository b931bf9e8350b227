#include "formats/tfrecord.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "core/coding.h"
#include "core/crc32c.h"

namespace sluice {
namespace {

static_assert(std::endian::native == std::endian::little,
              "TFRecord coding assumes little endian");

void EncodeHeader(char* out, uint64_t length) {
  memcpy(out, &length, 8);
  uint32_t crc = crc32c::Mask(crc32c::Value(out, 8));
  memcpy(out + 8, &crc, 4);
}

bool HeaderValid(const char* p) {
  return crc32c::Unmask(DecodeFixed32(p + 8)) == crc32c::Value(p, 8);
}

bool DataValid(std::string_view data, const char* footer) {
  return crc32c::Unmask(DecodeFixed32(footer)) == crc32c::Value(data.data(), data.size());
}

// Bytes scanned per step while resynchronizing.
constexpr size_t kScanWindow = 64 * 1024;

}  // namespace

void AppendTFRecord(std::string* out, std::string_view data) {
  char header[kTFRecordHeaderSize];
  EncodeHeader(header, data.size());
  out->append(header, sizeof(header));
  out->append(data);
  uint32_t crc = crc32c::Mask(crc32c::Value(data.data(), data.size()));
  out->append(reinterpret_cast<const char*>(&crc), 4);
}

// ---- TFRecordReader ----

TFRecordReader::TFRecordReader(std::unique_ptr<InputStream> stream,
                               const Options& options)
    : stream_(std::move(stream)),
      options_(options),
      probe_budget_left_(options.resync_probe_budget) {
  options_.max_record_length = std::min(options_.max_record_length, kMaxRecordLength);
}

Result<std::unique_ptr<TFRecordReader>> TFRecordReader::Open(const std::string& path,
                                                             const Options& options) {
  SLUICE_ASSIGN_OR_RETURN(
      std::unique_ptr<InputStream> s,
      InputStream::Open(path, options.compression, options.buffer_size, options.env));
  return std::make_unique<TFRecordReader>(std::move(s), options);
}

std::string TFRecordReader::At(uint64_t offset) const {
  return "at offset " + std::to_string(offset) + " in file " + stream_->name();
}

uint64_t TFRecordReader::offset() const {
  return pending_ ? pending_->offset : stream_->Tell();
}

Status TFRecordReader::SeekTo(uint64_t offset) {
  pending_.reset();
  done_ = false;
  return stream_->SeekTo(offset);
}

Result<TFRecordReader::Outcome> TFRecordReader::ReadOne(std::string* data,
                                                        std::string* detail) {
  const uint64_t off = stream_->Tell();
  SLUICE_ASSIGN_OR_RETURN(std::string_view hdr, stream_->Peek(kTFRecordHeaderSize));
  if (hdr.empty()) return Outcome::kEnd;
  if (hdr.size() < kTFRecordHeaderSize) {
    *detail = "the header has " + std::to_string(hdr.size()) + " of 12 bytes (" +
              std::to_string(kTFRecordHeaderSize - hdr.size()) + " bytes missing)";
    SLUICE_RETURN_IF_ERROR(stream_->Skip(hdr.size()));
    return Outcome::kTruncated;
  }
  if (!HeaderValid(hdr.data())) {
    *detail = "header checksum mismatch (the length field is damaged)";
    return Outcome::kHeaderCorrupt;
  }
  const uint64_t len = DecodeFixed64(hdr.data());
  SLUICE_RETURN_IF_ERROR(stream_->Skip(kTFRecordHeaderSize));
  if (std::optional<uint64_t> size = stream_->Size()) {
    const uint64_t rest = *size - std::min(*size, off + kTFRecordHeaderSize);
    if (len > rest || rest - len < kTFRecordFooterSize) {
      *detail = "the record needs " + std::to_string(len) +
                " data bytes and a 4-byte checksum, " +
                std::to_string(len + kTFRecordFooterSize - rest) + " bytes missing";
      SLUICE_RETURN_IF_ERROR(stream_->Skip(rest));
      return Outcome::kTruncated;
    }
  }
  if (len > options_.max_record_length) {
    *detail = "its length " + std::to_string(len) + " exceeds the limit of " +
              std::to_string(options_.max_record_length) + " bytes; skipped";
    SLUICE_ASSIGN_OR_RETURN(uint64_t k, stream_->Skip(len + kTFRecordFooterSize));
    if (k < len + kTFRecordFooterSize) {
      *detail = "its length " + std::to_string(len) + " exceeds the limit of " +
                std::to_string(options_.max_record_length) + " bytes and " +
                std::to_string(len + kTFRecordFooterSize - k) + " bytes are missing";
      return Outcome::kTruncated;
    }
    return Outcome::kTooLong;
  }
  data->clear();
  SLUICE_ASSIGN_OR_RETURN(size_t n, stream_->ReadAppend(data, len));
  if (n < len) {
    *detail = "the record needs " + std::to_string(len) +
              " data bytes and a 4-byte checksum, " +
              std::to_string(len - n + kTFRecordFooterSize) + " bytes missing";
    return Outcome::kTruncated;
  }
  SLUICE_ASSIGN_OR_RETURN(std::string_view footer, stream_->Read(kTFRecordFooterSize));
  if (footer.size() < kTFRecordFooterSize) {
    *detail = "the data checksum has " + std::to_string(footer.size()) + " of 4 bytes (" +
              std::to_string(kTFRecordFooterSize - footer.size()) + " bytes missing)";
    return Outcome::kTruncated;
  }
  if (!DataValid(*data, footer.data())) {
    *detail = "data checksum mismatch (" + std::to_string(len) + " data bytes)";
    return Outcome::kDataCorrupt;
  }
  return Outcome::kOk;
}

Result<std::string> TFRecordReader::Resync() {
  const std::optional<uint64_t> size = stream_->Size();
  while (true) {
    const uint64_t base = stream_->Tell();
    SLUICE_ASSIGN_OR_RETURN(std::string_view w,
                            stream_->Peek(kScanWindow + kTFRecordHeaderSize - 1));
    if (w.size() < kTFRecordHeaderSize) {
      SLUICE_RETURN_IF_ERROR(stream_->Skip(w.size()));
      return std::string();
    }
    const size_t last = w.size() - kTFRecordHeaderSize;
    size_t i = 0;
    uint64_t len = 0;
    for (; i <= last; ++i) {
      const char* p = w.data() + i;
      if (!HeaderValid(p)) continue;
      len = DecodeFixed64(p);
      if (len > options_.max_record_length) continue;
      if (size && len + kTFRecordHeaderSize + kTFRecordFooterSize > *size - (base + i))
        continue;
      break;
    }
    if (i > last) {
      // No candidate; keep the last 11 bytes, which may begin a header.
      SLUICE_RETURN_IF_ERROR(stream_->Skip(last + 1));
      continue;
    }
    SLUICE_RETURN_IF_ERROR(stream_->Skip(i));
    // Peek the whole candidate, so a false one costs no re-read (no backward seek, which
    // would mean re-inflating a compressed file).
    const size_t total =
        static_cast<size_t>(len) + kTFRecordHeaderSize + kTFRecordFooterSize;
    SLUICE_ASSIGN_OR_RETURN(std::string_view rec, stream_->Peek(total));
    if (rec.size() == total &&
        DataValid(rec.substr(kTFRecordHeaderSize, len), rec.data() + total - 4)) {
      pending_ = Pending{base + i, std::string(rec.substr(kTFRecordHeaderSize, len))};
      SLUICE_RETURN_IF_ERROR(stream_->Skip(total));
      return std::string();
    }
    if (rec.size() >= probe_budget_left_) {
      probe_budget_left_ = 0;
      return std::string(
          "too many false record candidates while resynchronizing; the rest "
          "of the file is skipped");
    }
    probe_budget_left_ -= rec.size();
    SLUICE_RETURN_IF_ERROR(stream_->Skip(1));
  }
}

Result<std::optional<std::string>> TFRecordReader::ReadRecord() {
  if (pending_) {
    last_offset_ = pending_->offset;
    std::string data = std::move(pending_->data);
    pending_.reset();
    return std::optional<std::string>(std::move(data));
  }
  if (done_) return std::optional<std::string>();
  const uint64_t off = stream_->Tell();
  std::string data, detail;
  auto outcome = ReadOne(&data, &detail);
  if (!outcome.ok()) {
    done_ = true;  // I/O error or corrupt compressed data: the file cannot go on
    return outcome.status().WithContext("reading the record " + At(off));
  }
  switch (*outcome) {
    case Outcome::kOk:
      last_offset_ = off;
      return std::optional<std::string>(std::move(data));
    case Outcome::kEnd:
      done_ = true;
      return std::optional<std::string>();
    case Outcome::kDataCorrupt:
    case Outcome::kTooLong:
      return DataLossError("corrupt record " + At(off) + ": " + detail);
    case Outcome::kTruncated:
      done_ = true;
      return DataLossError("truncated record " + At(off) + ": " + detail);
    case Outcome::kHeaderCorrupt:
      break;
  }
  std::string msg = "corrupt record " + At(off) + ": " + detail;
  Status s = stream_->Skip(1).status();
  Result<std::string> r = s.ok() ? Resync() : Result<std::string>(s);
  if (!r.ok()) {
    done_ = true;
    msg += "; resynchronization stopped: " + r.status().message();
  } else if (!r->empty()) {
    done_ = true;
    msg += "; " + *r;
  } else if (pending_) {
    msg += "; resynchronized at offset " + std::to_string(pending_->offset);
  } else {
    done_ = true;
    msg += "; no intact record follows";
  }
  return DataLossError(std::move(msg));
}

// ---- TFRecordWriter ----

Result<std::unique_ptr<TFRecordWriter>> TFRecordWriter::Open(const std::string& path,
                                                             Compression compression,
                                                             Env* env) {
  SLUICE_ASSIGN_OR_RETURN(
      std::unique_ptr<OutputStream> out,
      OutputStream::Open(path, compression, InputStream::kDefaultBufferSize, env));
  return std::unique_ptr<TFRecordWriter>(new TFRecordWriter(std::move(out)));
}

TFRecordWriter::~TFRecordWriter() = default;

Status TFRecordWriter::Write(std::string_view record) {
  char header[kTFRecordHeaderSize];
  EncodeHeader(header, record.size());
  SLUICE_RETURN_IF_ERROR(out_->Append(std::string_view(header, sizeof(header))));
  SLUICE_RETURN_IF_ERROR(out_->Append(record));
  uint32_t crc = crc32c::Mask(crc32c::Value(record.data(), record.size()));
  return out_->Append(std::string_view(reinterpret_cast<const char*>(&crc), 4));
}

Status TFRecordWriter::Flush() { return out_->Flush(); }

Status TFRecordWriter::Close() { return out_->Close(); }

}  // namespace sluice
