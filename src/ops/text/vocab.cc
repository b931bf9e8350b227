#include "ops/text/vocab.h"

#include <cstring>

#include "core/env.h"

namespace sluice {
namespace {

// Spreads the FNV bits over the slot index (MurmurHash3's fmix64); FNV's low bits alone
// are weak for power-of-two tables.
inline uint64_t SlotIndex(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  return h;
}

std::string LineRef(std::string_view source, int64_t id) {
  return "vocab file '" + std::string(source) + "' line " + std::to_string(id + 1) +
         " (id " + std::to_string(id) + ")";
}

}  // namespace

Result<std::shared_ptr<const Vocab>> Vocab::Load(const std::string& path, Env* env) {
  auto contents = ReadFileToString(env != nullptr ? env : BuildEnv(), path,
                                   static_cast<uint64_t>(kMaxFileBytes));
  if (!contents.ok()) return contents.status().WithContext("vocab file");
  return FromContents(*contents, path);
}

Result<std::shared_ptr<const Vocab>> Vocab::FromContents(std::string_view contents,
                                                         std::string_view source) {
  if (static_cast<int64_t>(contents.size()) > kMaxFileBytes) {
    return InvalidArgumentError("vocab file '" + std::string(source) +
                                "' is over the limit of " +
                                std::to_string(kMaxFileBytes) + " bytes");
  }
  if (contents.empty()) {
    return InvalidArgumentError("vocab file '" + std::string(source) +
                                "' holds no tokens");
  }
  std::shared_ptr<Vocab> v(new Vocab());
  // Pass 1: count lines to size the table.
  int64_t lines = 0;
  for (char c : contents) lines += c == '\n';
  if (contents.back() != '\n') ++lines;
  if (lines > kMaxTokens) {
    return InvalidArgumentError("vocab file '" + std::string(source) + "' has " +
                                std::to_string(lines) + " lines, over the limit of " +
                                std::to_string(kMaxTokens) + " tokens");
  }
  uint64_t cap = 16;
  while (cap < static_cast<uint64_t>(lines) * 2) cap <<= 1;
  v->slots_.assign(cap, Slot{});
  v->mask_ = cap - 1;
  v->arena_.reserve(contents.size());
  v->offsets_.reserve(lines + 1);
  v->offsets_.push_back(0);
  // Pass 2: tokens.
  size_t pos = 0;
  int64_t id = 0;
  while (pos < contents.size()) {
    size_t end = contents.find('\n', pos);
    if (end == std::string_view::npos) end = contents.size();
    std::string_view line = contents.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) {
      return InvalidArgumentError(LineRef(source, id) +
                                  ": empty line (every line must hold one token; ids are "
                                  "line numbers)");
    }
    v->arena_.append(line);
    v->offsets_.push_back(static_cast<uint32_t>(v->arena_.size()));
    const int64_t prev = v->Insert(id, Hash(line));
    if (prev >= 0) {
      // The token is not quoted: errors never echo a file's bytes.
      return InvalidArgumentError(LineRef(source, id) +
                                  ": duplicate token (first on line " +
                                  std::to_string(prev + 1) + ")");
    }
    ++id;
    pos = end + 1;
  }
  return std::shared_ptr<const Vocab>(std::move(v));
}

int64_t Vocab::Insert(int64_t id, uint64_t hash) {
  const std::string_view tok = token(id);
  const uint32_t tag = static_cast<uint32_t>(hash >> 32);
  for (uint64_t i = SlotIndex(hash) & mask_;; i = (i + 1) & mask_) {
    Slot& s = slots_[i];
    if (s.id_plus_one == 0) {
      s.tag = tag;
      s.id_plus_one = static_cast<uint32_t>(id + 1);
      return -1;
    }
    if (s.tag == tag && token(s.id_plus_one - 1) == tok) return s.id_plus_one - 1;
  }
}

int64_t Vocab::Find(std::string_view tok, uint64_t hash) const {
  const uint32_t tag = static_cast<uint32_t>(hash >> 32);
  for (uint64_t i = SlotIndex(hash) & mask_;; i = (i + 1) & mask_) {
    const Slot& s = slots_[i];
    if (s.id_plus_one == 0) return -1;
    if (s.tag == tag) {
      const uint32_t b = offsets_[s.id_plus_one - 1], e = offsets_[s.id_plus_one];
      if (e - b == tok.size() &&
          std::memcmp(arena_.data() + b, tok.data(), tok.size()) == 0) {
        return s.id_plus_one - 1;
      }
    }
  }
}

}  // namespace sluice
