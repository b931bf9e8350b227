#include "runtime/checkpoint.h"

#include "core/coding.h"
#include "core/crc32c.h"

namespace sluice {
namespace {
constexpr std::string_view kMagic = "SLCKPT01";
constexpr char kInt = 'i', kString = 's', kTensor = 't', kElement = 'e';

std::string FullKey(std::string_view prefix, std::string_view key) {
  std::string k;
  k.reserve(prefix.size() + key.size() + 1);
  k.append(prefix);
  k.push_back(':');
  k.append(key);
  return k;
}
}  // namespace

void CheckpointWriter::WriteInt(std::string_view prefix, std::string_view key, int64_t v) {
  std::string val(1, kInt);
  PutVarint64(&val, static_cast<uint64_t>(v));
  entries_[FullKey(prefix, key)] = std::move(val);
}

void CheckpointWriter::WriteString(std::string_view prefix, std::string_view key,
                                   std::string_view v) {
  std::string val(1, kString);
  val.append(v);
  entries_[FullKey(prefix, key)] = std::move(val);
}

void CheckpointWriter::WriteTensor(std::string_view prefix, std::string_view key,
                                   const Tensor& t) {
  std::string val(1, kTensor);
  EncodeTensor(t, &val);
  entries_[FullKey(prefix, key)] = std::move(val);
}

void CheckpointWriter::WriteElement(std::string_view prefix, std::string_view key,
                                    const Element& e) {
  std::string val(1, kElement);
  EncodeElement(e, &val);
  entries_[FullKey(prefix, key)] = std::move(val);
}

std::string CheckpointWriter::Serialize() const {
  std::string out(kMagic);
  PutVarint64(&out, entries_.size());
  for (const auto& [k, v] : entries_) {
    PutLengthPrefixed(&out, k);
    PutLengthPrefixed(&out, v);
  }
  PutFixed32(&out, crc32c::Mask(crc32c::Value(out.data(), out.size())));
  return out;
}

Result<CheckpointReader> CheckpointReader::Parse(std::string_view bytes) {
  if (bytes.size() < kMagic.size() + 4 || bytes.substr(0, kMagic.size()) != kMagic) {
    return DataLossError("not a sluice checkpoint (bad magic or too short: " +
                         std::to_string(bytes.size()) + " bytes)");
  }
  uint32_t stored = DecodeFixed32(bytes.data() + bytes.size() - 4);
  uint32_t actual = crc32c::Mask(crc32c::Value(bytes.data(), bytes.size() - 4));
  if (stored != actual) return DataLossError("checkpoint checksum mismatch (corrupt checkpoint)");
  std::string_view in = bytes.substr(kMagic.size(), bytes.size() - kMagic.size() - 4);
  uint64_t n;
  if (!GetVarint64(&in, &n)) return DataLossError("corrupt checkpoint: entry count");
  CheckpointReader r;
  for (uint64_t i = 0; i < n; ++i) {
    std::string_view k, v;
    if (!GetLengthPrefixed(&in, &k) || !GetLengthPrefixed(&in, &v) || v.empty()) {
      return DataLossError("corrupt checkpoint: entry " + std::to_string(i));
    }
    r.entries_.emplace(std::string(k), std::string(v));
  }
  if (!in.empty()) return DataLossError("corrupt checkpoint: trailing bytes");
  return r;
}

bool CheckpointReader::Contains(std::string_view prefix, std::string_view key) const {
  return entries_.find(FullKey(prefix, key)) != entries_.end();
}

Result<std::string_view> CheckpointReader::Find(std::string_view prefix, std::string_view key,
                                                char type) const {
  std::string full = FullKey(prefix, key);
  auto it = entries_.find(full);
  if (it == entries_.end()) {
    return NotFoundError("checkpoint has no entry '" + full +
                         "' (was it saved from a different pipeline?)");
  }
  if (it->second[0] != type) {
    return DataLossError("checkpoint entry '" + full + "' has the wrong type");
  }
  return std::string_view(it->second).substr(1);
}

Result<int64_t> CheckpointReader::ReadInt(std::string_view prefix, std::string_view key) const {
  SLUICE_ASSIGN_OR_RETURN(std::string_view v, Find(prefix, key, kInt));
  uint64_t x;
  if (!GetVarint64(&v, &x) || !v.empty()) {
    return DataLossError("corrupt checkpoint integer '" + FullKey(prefix, key) + "'");
  }
  return static_cast<int64_t>(x);
}

Result<std::string> CheckpointReader::ReadString(std::string_view prefix,
                                                 std::string_view key) const {
  SLUICE_ASSIGN_OR_RETURN(std::string_view v, Find(prefix, key, kString));
  return std::string(v);
}

Result<Tensor> CheckpointReader::ReadTensor(std::string_view prefix, std::string_view key) const {
  SLUICE_ASSIGN_OR_RETURN(std::string_view v, Find(prefix, key, kTensor));
  auto t = DecodeTensor(&v);
  if (!t.ok()) return t.status().WithContext("checkpoint entry '" + FullKey(prefix, key) + "'");
  return t;
}

Result<Element> CheckpointReader::ReadElement(std::string_view prefix,
                                              std::string_view key) const {
  SLUICE_ASSIGN_OR_RETURN(std::string_view v, Find(prefix, key, kElement));
  auto e = DecodeElement(&v);
  if (!e.ok()) return e.status().WithContext("checkpoint entry '" + FullKey(prefix, key) + "'");
  return e;
}

}  // namespace sluice
