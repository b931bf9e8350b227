// Vocab: a token -> id table loaded from a vocabulary file, used by the text kernels
// vocab_lookup and tokenize (src/ops/text/text_kernels.cc).
//
// File format (tf.lookup.TextFileInitializer with key = WHOLE_LINE, value = LINE_NUMBER):
//  * one token per line; a token's id is its 0-based line number;
//  * lines end with "\n"; one "\r" before it is dropped too (CRLF files read the same);
//    the last line needs no "\n";
//  * a token is the whole line, bytes as they are (spaces, tabs, NULs and non-UTF-8
//    bytes included; nothing is trimmed besides the line ending);
//  * an empty line is an error rather than a token: whitespace splitting never yields an
//    empty token, so an empty entry could never match, and skipping it silently would
//    shift every later id. (A final "\n" ends the last line; it does not start an empty
//    one.)
//  * a duplicate token is an error naming both lines (TensorFlow fails too);
//  * an empty file is an error, and so is one over kMaxFileBytes (it is read whole at
//    load) or with more than kMaxTokens lines (the table's memory stays bounded).
// Errors are InvalidArgument (NotFound etc. when the file cannot be opened) and name the
// file and the 1-based line ("line 7 (id 6)").
//
// Out-of-vocabulary tokens (Lookup): with num_oov_buckets == 0 they map to default_value;
// otherwise to size() + Hash(token) % num_oov_buckets, where Hash is 64-bit FNV-1a over
// the token's bytes (offset basis 0xcbf29ce484222325, prime 0x100000001b3; for each byte:
// h ^= byte, h *= prime), taken as an unsigned 64-bit value. The hash is fixed and
// documented so buckets are stable across runs, machines and languages (the Python peer
// and the test reference compute it the same way). TensorFlow uses FarmHash Fingerprint64
// instead, so bucket numbers differ from TensorFlow's.
//
// The table is an open-addressing hash table (linear probing, load <= 1/2) over one
// arena of token bytes, looked up by std::string_view without building a std::string.
//
// Thread-safety: immutable after construction; share it freely (the kernels hold a
// std::shared_ptr<const Vocab>).
#ifndef SLUICE_OPS_TEXT_VOCAB_H_
#define SLUICE_OPS_TEXT_VOCAB_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/status.h"

namespace sluice {

class Env;

// What Vocab::Lookup does with tokens that are not in the vocabulary.
struct OovOptions {
  int64_t num_oov_buckets = 0;  // > 0: hash OOV tokens into this many extra ids
  int64_t default_value = -1;   // the id of OOV tokens when num_oov_buckets == 0
};

class Vocab {
 public:
  // Vocabulary files larger than this are refused (256 MiB).
  static constexpr int64_t kMaxFileBytes = int64_t{256} << 20;
  // Vocabularies with more tokens are refused (2^25, about 33.5 million; the table then
  // takes at most 512 MiB).
  static constexpr int64_t kMaxTokens = int64_t{1} << 25;

  // Loads `path` (format above) through `env` (null: BuildEnv(), src/core/env.h).
  static Result<std::shared_ptr<const Vocab>> Load(const std::string& path,
                                                   Env* env = nullptr);
  // Parses file contents; `source` names them in errors (the path).
  static Result<std::shared_ptr<const Vocab>> FromContents(std::string_view contents,
                                                           std::string_view source);

  // 64-bit FNV-1a of the bytes of `s` (see the header comment).
  static uint64_t Hash(std::string_view s) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (unsigned char c : s) {
      h ^= c;
      h *= 0x100000001b3ULL;
    }
    return h;
  }

  // Number of tokens (= lines).
  int64_t size() const { return static_cast<int64_t>(offsets_.size()) - 1; }
  // The token with id `id` (0 <= id < size()).
  std::string_view token(int64_t id) const {
    return std::string_view(arena_).substr(offsets_[id], offsets_[id + 1] - offsets_[id]);
  }
  // The id of `token`, or -1 when absent. `hash` must be Hash(token).
  int64_t Find(std::string_view token, uint64_t hash) const;
  int64_t Find(std::string_view token) const { return Find(token, Hash(token)); }
  // The id of `token`, or its OOV id (see the header comment).
  int64_t Lookup(std::string_view token, const OovOptions& oov) const {
    const uint64_t h = Hash(token);
    const int64_t id = Find(token, h);
    if (id >= 0) return id;
    if (oov.num_oov_buckets > 0) {
      return size() +
             static_cast<int64_t>(h % static_cast<uint64_t>(oov.num_oov_buckets));
    }
    return oov.default_value;
  }

 private:
  Vocab() = default;
  // Inserts token `id` (already in the arena); returns the id of an equal token already
  // present, or -1.
  int64_t Insert(int64_t id, uint64_t hash);

  std::string arena_;              // all tokens back to back
  std::vector<uint32_t> offsets_;  // token i is arena_[offsets_[i], offsets_[i+1])
  // Slot: (upper 32 bits of the hash, id + 1); id + 1 == 0 marks an empty slot.
  struct Slot {
    uint32_t tag = 0;
    uint32_t id_plus_one = 0;
  };
  std::vector<Slot> slots_;
  uint64_t mask_ = 0;
};

}  // namespace sluice

#endif  // SLUICE_OPS_TEXT_VOCAB_H_
