#include "datagen/text_corpus.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <unordered_set>

#include "formats/input_stream.h"
#include "formats/tfrecord.h"
#include "sluice/random.h"

namespace sluice {
namespace {

constexpr int64_t kReserved = 4;  // <pad> <unk> . ,
constexpr const char* kOnsets[] = {"b", "c", "d",  "f",  "g",  "h",  "j",  "k",
                                   "l", "m", "n",  "p",  "r",  "s",  "t",  "v",
                                   "w", "z", "br", "ch", "st", "tr", "sh", "pl"};
constexpr const char* kVowels[] = {"a", "e", "i",  "o",  "u", "a",
                                   "e", "o", "ai", "ou", "ea"};
constexpr const char* kCodas[] = {"n", "r", "s", "t", "l", "m", "nd", "st"};

template <size_t N>
const char* Pick(Rng& rng, const char* const (&options)[N]) {
  return options[rng.UniformInt(N)];
}

std::string MakeWord(Rng& rng, int syllables) {
  std::string w;
  for (int i = 0; i < syllables; ++i) {
    w += Pick(rng, kOnsets);
    w += Pick(rng, kVowels);
  }
  if (rng.Uniform() < 0.4) w += Pick(rng, kCodas);
  if (rng.Uniform() < 0.01) {
    // A two-byte UTF-8 letter in place of a vowel (or appended): é, ü, ö.
    static constexpr struct {
      char plain;
      const char* utf8;
    } kAccents[] = {{'e', "\xc3\xa9"}, {'u', "\xc3\xbc"}, {'o', "\xc3\xb6"}};
    const auto& a = kAccents[rng.UniformInt(3)];
    size_t pos = w.find(a.plain);
    if (pos == std::string::npos) {
      w += a.utf8;
    } else {
      w.replace(pos, 1, a.utf8);
    }
  }
  return w;
}

// Syllables of vocabulary word k: frequent words are short.
int BaseSyllables(int64_t k) { return 1 + (k >= 150) + (k >= 3000) + (k >= 40000); }

struct Corpus {
  std::vector<std::string> vocab;  // all lines, reserved tokens first
  std::vector<std::string> oov_pool;
  std::vector<double> cdf;  // cumulative Zipf weights of the words (vocab[4..])
};

Corpus BuildCorpus(const TextCorpusOptions& opts) {
  Corpus c;
  const uint64_t vocab_key = HashCombine(opts.seed, 0x766f636162ULL);  // "vocab"
  const uint64_t oov_key = HashCombine(opts.seed, 0x6f6f76ULL);        // "oov"
  c.vocab = {kTextPadToken, kTextUnkToken, ".", ","};
  std::unordered_set<std::string> seen(c.vocab.begin(),
                                       c.vocab.end());  // membership only
  const int64_t words = opts.vocab_size - kReserved;
  c.vocab.reserve(opts.vocab_size);
  for (int64_t k = 0; k < words; ++k) {
    Rng rng(vocab_key, static_cast<uint64_t>(k));
    const int base = BaseSyllables(k) + (rng.Uniform() < 0.3 ? 1 : 0);
    for (int attempt = 0;; ++attempt) {
      std::string w = MakeWord(rng, base + attempt / 16);
      if (seen.insert(w).second) {
        c.vocab.push_back(std::move(w));
        break;
      }
    }
  }
  const int64_t pool = std::max<int64_t>(opts.vocab_size, 1000);
  c.oov_pool.reserve(pool);
  for (int64_t k = 0; k < pool; ++k) {
    Rng rng(oov_key, static_cast<uint64_t>(k));
    for (int attempt = 0;; ++attempt) {
      std::string w =
          MakeWord(rng, 3 + static_cast<int>(rng.UniformInt(3)) + attempt / 16);
      if (seen.count(w) == 0) {
        c.oov_pool.push_back(std::move(w));
        break;
      }
    }
  }
  c.cdf.resize(words);
  double total = 0;
  for (int64_t k = 0; k < words; ++k) {
    total += 1.0 / (static_cast<double>(k) + 2.7);
    c.cdf[k] = total;
  }
  return c;
}

void AppendSentence(const Corpus& c, const TextCorpusOptions& opts, Rng& rng,
                    std::string* out) {
  out->clear();
  const double len = std::exp(std::log(18.0) + 0.6 * rng.Normal());
  const int64_t n = std::clamp<int64_t>(std::llround(len), 1, 200);
  const double total = c.cdf.empty() ? 0 : c.cdf.back();
  bool prev_comma = true;  // no comma first
  for (int64_t i = 0; i < n; ++i) {
    if (i > 0) *out += ' ';
    if (n >= 2 && i == n - 1) {
      *out += '.';
      break;
    }
    if (!prev_comma && rng.Uniform() < 0.06) {
      *out += ',';
      prev_comma = true;
      continue;
    }
    prev_comma = false;
    if (rng.Uniform() < opts.oov_fraction) {
      if (rng.UniformInt(4) == 0) {
        *out += std::to_string(rng.UniformInt(100000));
      } else {
        *out += c.oov_pool[rng.UniformInt(c.oov_pool.size())];
      }
      continue;
    }
    const double u = rng.Uniform() * total;
    size_t k = std::upper_bound(c.cdf.begin(), c.cdf.end(), u) - c.cdf.begin();
    k = std::min(k, c.cdf.size() - 1);
    *out += c.vocab[kReserved + k];
  }
}

}  // namespace

std::string TextShardPath(const std::string& out_dir, int64_t shard, int64_t num_shards) {
  char name[64];
  std::snprintf(name, sizeof(name), "text-%05lld-of-%05lld",
                static_cast<long long>(shard), static_cast<long long>(num_shards));
  return out_dir + "/" + name;
}

Status GenerateTextCorpus(const std::string& out_dir, const TextCorpusOptions& opts) {
  if (opts.num_sentences < 0 || opts.num_sentences > 1'000'000'000'000) {
    return InvalidArgumentError("text corpus: num_sentences must be in [0, 10^12]");
  }
  if (opts.num_shards < 1 || opts.num_shards > 99999) {
    return InvalidArgumentError("text corpus: num_shards must be in [1, 99999]");
  }
  if (opts.vocab_size < kReserved + 1 || opts.vocab_size > 10'000'000) {
    return InvalidArgumentError("text corpus: vocab_size must be in [5, 10000000]");
  }
  if (!(opts.oov_fraction >= 0 && opts.oov_fraction <= 1)) {
    return InvalidArgumentError("text corpus: oov_fraction must be in [0, 1]");
  }
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) {
    return InvalidArgumentError("text corpus: cannot create '" + out_dir +
                                "': " + ec.message());
  }
  const Corpus corpus = BuildCorpus(opts);

  const std::string vocab_path = out_dir + "/vocab.txt";
  SLUICE_ASSIGN_OR_RETURN(auto vocab_out, OutputStream::Open(vocab_path));
  std::string text;
  for (const std::string& t : corpus.vocab) {
    text += t;
    text += '\n';
  }
  SLUICE_RETURN_IF_ERROR(vocab_out->Append(text));
  SLUICE_RETURN_IF_ERROR(vocab_out->Close());

  const uint64_t sentence_key = HashCombine(opts.seed, 0x73656e74ULL);  // "sent"
  std::string sentence;
  for (int64_t shard = 0; shard < opts.num_shards; ++shard) {
    const int64_t begin = shard * opts.num_sentences / opts.num_shards;
    const int64_t end = (shard + 1) * opts.num_sentences / opts.num_shards;
    const std::string path = TextShardPath(out_dir, shard, opts.num_shards);
    SLUICE_ASSIGN_OR_RETURN(auto writer, TFRecordWriter::Open(path));
    for (int64_t i = begin; i < end; ++i) {
      Rng rng(sentence_key, static_cast<uint64_t>(i));
      AppendSentence(corpus, opts, rng, &sentence);
      SLUICE_RETURN_IF_ERROR(writer->Write(sentence));
    }
    SLUICE_RETURN_IF_ERROR(writer->Close());
  }
  return Status::OK();
}

}  // namespace sluice
