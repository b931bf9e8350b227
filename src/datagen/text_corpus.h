// A synthetic text corpus for the text pipeline (`sluice datagen text`, `sluice bench
// text`).
//
// GenerateTextCorpus(out_dir, opts) writes
//  * out_dir/vocab.txt: opts.vocab_size lines, one token per line, id = line number (the
//    vocab_lookup / tokenize format, src/ops/text/vocab.h). Lines 0-3 are the reserved
//    tokens "<pad>", "<unk>", "." and ","; the rest are synthetic lowercase words
//    (consonant-vowel syllables, about 1% with a two-byte UTF-8 letter such as "é") in
//    order of decreasing frequency, frequent words shorter, like real text.
//  * out_dir/text-SSSSS-of-NNNNN (TextShardPath): opts.num_shards uncompressed TFRecord
//    files whose records are sentences, raw UTF-8: tokens joined by single spaces.
//    Shard k holds sentences [k * n / N, (k + 1) * n / N) (integer division; n =
//    num_sentences, N = num_shards): consecutive runs, sizes differing by at most one.
//
// Sentences:
//  * length in tokens: lognormal, median 18, sigma 0.6 (mean about 21), rounded and
//    clamped to [1, 200];
//  * the last token of a sentence of two or more tokens is "."; each other token after
//    the first is "," with probability 0.06 (never two in a row);
//  * other tokens: with probability opts.oov_fraction an out-of-vocabulary word (from a
//    fixed pool of max(vocab_size, 1000) longer words absent from vocab.txt, or, one time
//    in four, a number, which the vocabulary never holds); otherwise vocabulary word k
//    (0-based among the words)
//    drawn with probability proportional to 1 / (k + 2.7) (Zipf-Mandelbrot, exponent 1).
//
// Determinism: the output is a pure function of the options (bit-identical files for the
// same options on any machine with IEEE doubles and a correctly rounded libm for log/cos/
// exp on these inputs; in practice: the same build). All randomness comes from sluice's
// counter-based Rng keyed by the seed: the vocabulary from one stream, sentence i from a
// stream of its own, so the corpus does not depend on the shard count except for where
// sentences land. Nothing iterates an unordered container.
//
// Thread-safety: reentrant; concurrent calls must use different out_dirs.
#ifndef SLUICE_DATAGEN_TEXT_CORPUS_H_
#define SLUICE_DATAGEN_TEXT_CORPUS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "sluice/status.h"

namespace sluice {

struct TextCorpusOptions {
  int64_t num_sentences = 200000;  // 0..10^12
  int64_t num_shards = 8;          // >= 1
  int64_t vocab_size = 20000;  // lines of vocab.txt, reserved tokens included; 5..10^7
  uint64_t seed = 0;
  double oov_fraction = 0.02;  // share of word tokens missing from the vocabulary, [0, 1]
};

// The reserved tokens at the top of vocab.txt, in line order.
inline constexpr const char* kTextPadToken = "<pad>";  // id 0
inline constexpr const char* kTextUnkToken = "<unk>";  // id 1

// out_dir/text-SSSSS-of-NNNNN with 5-digit, zero-padded shard index and count.
std::string TextShardPath(const std::string& out_dir, int64_t shard, int64_t num_shards);

// Writes the corpus (see above), creating out_dir if needed and overwriting its files.
// InvalidArgument for options out of range; I/O errors name the file.
Status GenerateTextCorpus(const std::string& out_dir, const TextCorpusOptions& opts);

}  // namespace sluice

#endif  // SLUICE_DATAGEN_TEXT_CORPUS_H_
