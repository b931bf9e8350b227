#include "formats/tfrecord_index.h"

#include <cstring>

#include "core/coding.h"
#include "core/crc32c.h"
#include "formats/tfrecord.h"
#include "sluice/io.h"

namespace sluice {

namespace {

constexpr size_t kMagicSize = 8;
constexpr size_t kHeaderSize = kMagicSize + 4 + 4 + 8 + 8 + 8;

Env* Or(Env* env) { return env != nullptr ? env : Env::Default(); }

Status Bad(const std::string& name, const std::string& why) {
  return DataLossError("corrupt TFRecord index " + name + ": " + why +
                       " (rebuild it with `sluice index`)");
}

}  // namespace

std::string TFRecordIndexPath(const std::string& file) { return file + kTFRecordIndexSuffix; }

Result<TFRecordIndex> BuildTFRecordIndex(const std::string& file, Env* env) {
  env = Or(env);
  SLUICE_ASSIGN_OR_RETURN(FileStat st, env->Stat(file));
  TFRecordReader::Options o;
  o.env = env;
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<TFRecordReader> r, TFRecordReader::Open(file, o));
  TFRecordIndex index;
  index.file_size = st.size;
  index.mtime_ns = st.mtime_ns;
  while (true) {
    SLUICE_ASSIGN_OR_RETURN(std::optional<std::string> rec, r->ReadRecord());
    if (!rec) break;
    index.offsets.push_back(r->last_record_offset());
  }
  return index;
}

std::string EncodeTFRecordIndex(const TFRecordIndex& index) {
  std::string out(kTFRecordIndexMagic, kMagicSize);
  PutFixed32(&out, kTFRecordIndexVersion);
  PutFixed32(&out, 0);
  PutFixed64(&out, index.file_size);
  PutFixed64(&out, static_cast<uint64_t>(index.mtime_ns));
  PutFixed64(&out, index.offsets.size());
  out.reserve(out.size() + 8 * index.offsets.size() + 4);
  for (uint64_t off : index.offsets) PutFixed64(&out, off);
  PutFixed32(&out, crc32c::Mask(crc32c::Value(out.data(), out.size())));
  return out;
}

Result<TFRecordIndex> DecodeTFRecordIndex(std::string_view b, const std::string& name) {
  if (b.size() < kHeaderSize + 4) {
    return Bad(name, std::to_string(b.size()) + " bytes, shorter than a header");
  }
  if (std::memcmp(b.data(), kTFRecordIndexMagic, kMagicSize) != 0) {
    return Bad(name, "bad magic at offset 0");
  }
  const uint32_t version = DecodeFixed32(b.data() + 8);
  if (version != kTFRecordIndexVersion) {
    return Bad(name, "unsupported version " + std::to_string(version));
  }
  TFRecordIndex index;
  index.file_size = DecodeFixed64(b.data() + 16);
  index.mtime_ns = static_cast<int64_t>(DecodeFixed64(b.data() + 24));
  const uint64_t n = DecodeFixed64(b.data() + 32);
  const uint64_t body = b.size() - kHeaderSize - 4;
  if (n > body / 8 || body != n * 8) {
    return Bad(name, "record count " + std::to_string(n) + " does not match its " +
                         std::to_string(b.size()) + " bytes");
  }
  const uint32_t stored = DecodeFixed32(b.data() + b.size() - 4);
  const uint32_t actual = crc32c::Mask(crc32c::Value(b.data(), b.size() - 4));
  if (stored != actual) return Bad(name, "checksum mismatch");
  index.offsets.resize(n);
  const char* p = b.data() + kHeaderSize;
  for (uint64_t i = 0; i < n; ++i, p += 8) {
    index.offsets[i] = DecodeFixed64(p);
    if ((i > 0 && index.offsets[i] <= index.offsets[i - 1]) ||
        index.offsets[i] + kTFRecordHeaderSize + kTFRecordFooterSize > index.file_size) {
      return Bad(name, "offset of record " + std::to_string(i) + " (" +
                           std::to_string(index.offsets[i]) + ") out of order or past the "
                           "file's " + std::to_string(index.file_size) + " bytes");
    }
  }
  return index;
}

Result<TFRecordIndex> WriteTFRecordIndex(const std::string& file, Env* env) {
  env = Or(env);
  SLUICE_ASSIGN_OR_RETURN(TFRecordIndex index, BuildTFRecordIndex(file, env));
  const std::string path = TFRecordIndexPath(file);
  const std::string tmp = path + ".tmp";
  {
    SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> w, env->NewWritableFile(tmp));
    SLUICE_RETURN_IF_ERROR(w->Append(EncodeTFRecordIndex(index)));
    SLUICE_RETURN_IF_ERROR(w->Sync());
    SLUICE_RETURN_IF_ERROR(w->Close());
  }
  SLUICE_RETURN_IF_ERROR(env->RenameFile(tmp, path));
  return index;
}

Result<std::string> ReadTFRecordAt(RandomAccessFile& file, const std::string& name,
                                   uint64_t offset) {
  auto at = [&](const std::string& why) {
    return DataLossError("corrupt record at offset " + std::to_string(offset) + " in file " +
                         name + ": " + why);
  };
  auto read_full = [&](uint64_t pos, char* dst, size_t n) -> Result<bool> {
    size_t done = 0;
    while (done < n) {
      SLUICE_ASSIGN_OR_RETURN(size_t k, file.Read(pos + done, dst + done, n - done));
      if (k == 0) return false;
      done += k;
    }
    return true;
  };
  char header[kTFRecordHeaderSize];
  SLUICE_ASSIGN_OR_RETURN(bool whole, read_full(offset, header, sizeof(header)));
  if (!whole) return at("truncated header");
  const uint64_t length = DecodeFixed64(header);
  if (crc32c::Mask(crc32c::Value(header, 8)) != DecodeFixed32(header + 8)) {
    return at("header checksum mismatch");
  }
  if (length > TFRecordReader::kMaxRecordLength ||
      offset + kTFRecordHeaderSize + length + kTFRecordFooterSize > file.Size()) {
    return at("length " + std::to_string(length) + " past the end of the file");
  }
  std::string data(length + kTFRecordFooterSize, '\0');
  SLUICE_ASSIGN_OR_RETURN(whole, read_full(offset + kTFRecordHeaderSize, data.data(),
                                           data.size()));
  if (!whole) return at("truncated record");
  if (crc32c::Mask(crc32c::Value(data.data(), length)) != DecodeFixed32(data.data() + length)) {
    return at("data checksum mismatch");
  }
  data.resize(length);
  return data;
}

Result<TFRecordIndex> ReadTFRecordIndex(const std::string& file, Env* env) {
  env = Or(env);
  const std::string path = TFRecordIndexPath(file);
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> f, env->NewRandomAccessFile(path));
  std::string bytes(f->Size(), '\0');
  size_t done = 0;
  while (done < bytes.size()) {
    SLUICE_ASSIGN_OR_RETURN(size_t n, f->Read(done, bytes.data() + done, bytes.size() - done));
    if (n == 0) return Bad(path, "file shrank while being read");
    done += n;
  }
  return DecodeTFRecordIndex(bytes, path);
}

namespace io {

Result<int64_t> WriteTFRecordIndex(const std::string& path) {
  SLUICE_ASSIGN_OR_RETURN(TFRecordIndex index, sluice::WriteTFRecordIndex(path));
  return static_cast<int64_t>(index.offsets.size());
}

}  // namespace io
}  // namespace sluice
