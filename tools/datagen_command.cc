// sluice datagen imagenet|text: writes the synthetic data sets the image and text
// pipelines run on (src/datagen/), deterministic by seed.
//
//   sluice datagen imagenet --out DIR [--images N] [--classes K] [--seed S] [--shards M]
//                           [--no-jpeg-folder] [--threads T] [--json]
//   sluice datagen text --out DIR [--sentences N] [--shards N] [--vocab N] [--seed S]
//                       [--oov F] [--json]
//
// Progress goes to stderr (a line that rewrites itself on a terminal, one every few
// seconds otherwise); the summary to stdout, as text or as one JSON object with --json.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "commands.h"
#include "datagen/imagenet_like.h"
#include "datagen/text_corpus.h"
#include "runtime/resources.h"

namespace sluice {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Totals over a MANIFEST written by GenerateImagenetLike.
struct ManifestTotals {
  int64_t images = 0, bytes = 0, pixels = 0;
};

Result<ManifestTotals> ReadManifestTotals(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFoundError("cannot read " + path);
  ManifestTotals t;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string rel;
    int64_t label, width, height, quality, bytes;
    if (!(fields >> rel >> label >> width >> height >> quality >> bytes)) {
      return DataLossError("malformed line in " + path + ": " + line);
    }
    ++t.images;
    t.bytes += bytes;
    t.pixels += width * height;
  }
  return t;
}

struct ImagenetArgs {
  std::string out;
  ImagenetLikeOptions opts;
  bool no_jpeg_folder = false;
  bool json = false;
};

int RunImagenet(const ImagenetArgs& a) {
  ImagenetLikeOptions opts = a.opts;
  opts.jpeg_folder = !a.no_jpeg_folder;
  const int64_t threads = opts.threads > 0 ? opts.threads : AvailableCores();
  const bool tty = isatty(STDERR_FILENO);
  const auto start = Clock::now();
  double last_print = -1e9;
  auto progress = [&](int64_t done, int64_t total) {
    const double secs = SecondsSince(start);
    const bool last = done == total;
    if (!last && secs - last_print < (tty ? 0.2 : 5.0)) return;
    last_print = secs;
    std::fprintf(stderr,
                 "%s  datagen imagenet: %7ld / %ld images  %6.1fs  %7.1f images/s%s",
                 tty ? "\r" : "", static_cast<long>(done), static_cast<long>(total), secs,
                 secs > 0 ? done / secs : 0.0, tty && !last ? "" : "\n");
    std::fflush(stderr);
  };
  Status s = GenerateImagenetLike(a.out, opts, progress);
  const double secs = SecondsSince(start);
  if (!s.ok()) {
    std::fprintf(stderr, "%ssluice datagen imagenet: %s\n", tty ? "\n" : "",
                 s.ToString().c_str());
    return 1;
  }
  Result<ManifestTotals> totals = ReadManifestTotals(a.out + "/MANIFEST");
  if (!totals.ok()) {
    std::fprintf(stderr, "sluice datagen imagenet: %s\n",
                 totals.status().ToString().c_str());
    return 1;
  }
  const ManifestTotals& t = *totals;
  const double mean_bytes = t.images > 0 ? static_cast<double>(t.bytes) / t.images : 0;
  const double bpp = t.pixels > 0 ? 8.0 * t.bytes / t.pixels : 0;
  const double rate = secs > 0 ? t.images / secs : 0;
  if (a.json) {
    nlohmann::json j = {
        {"dataset", "imagenet"},
        {"out", a.out},
        {"images", t.images},
        {"classes", opts.num_classes},
        {"seed", opts.seed},
        {"jpeg_folder", opts.jpeg_folder},
        {"tfrecord_shards", opts.tfrecord_shards},
        {"threads", threads},
        {"total_bytes", t.bytes},
        {"mean_bytes", mean_bytes},
        {"mean_pixels", t.images > 0 ? static_cast<double>(t.pixels) / t.images : 0},
        {"bits_per_pixel", bpp},
        {"seconds", secs},
        {"images_per_second", rate}};
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("datagen imagenet: %ld images (%ld classes, seed %llu) in %s\n",
                static_cast<long>(t.images), static_cast<long>(opts.num_classes),
                static_cast<unsigned long long>(opts.seed), a.out.c_str());
    std::string layout = opts.jpeg_folder ? "train/<wnid>/*.JPEG" : "";
    if (opts.tfrecord_shards > 0) {
      if (!layout.empty()) layout += " + ";
      layout +=
          std::to_string(opts.tfrecord_shards) + " TFRecord shards tfrecord/train-*";
    }
    std::printf("  layout   : %s + MANIFEST\n", layout.c_str());
    std::printf("  size     : %.1f MB, mean %.1f KB per image, %.2f bits per pixel\n",
                t.bytes / 1e6, mean_bytes / 1e3, bpp);
    std::printf("  elapsed  : %.2f s, %.1f images/s on %ld threads\n", secs, rate,
                static_cast<long>(threads));
  }
  return 0;
}

struct TextArgs {
  std::string out;
  TextCorpusOptions opts;
  bool json = false;
};

int RunText(const TextArgs& a) {
  const auto start = Clock::now();
  std::fprintf(stderr, "  datagen text: writing %ld sentences in %ld shards to %s\n",
               static_cast<long>(a.opts.num_sentences),
               static_cast<long>(a.opts.num_shards), a.out.c_str());
  Status s = GenerateTextCorpus(a.out, a.opts);
  const double secs = SecondsSince(start);
  if (!s.ok()) {
    std::fprintf(stderr, "sluice datagen text: %s\n", s.ToString().c_str());
    return 1;
  }
  int64_t bytes = 0;
  for (int64_t k = 0; k < a.opts.num_shards; ++k) {
    std::error_code ec;
    const auto size =
        std::filesystem::file_size(TextShardPath(a.out, k, a.opts.num_shards), ec);
    if (!ec) bytes += static_cast<int64_t>(size);
  }
  if (a.json) {
    nlohmann::json j = {
        {"dataset", "text"},
        {"out", a.out},
        {"sentences", a.opts.num_sentences},
        {"shards", a.opts.num_shards},
        {"vocab_size", a.opts.vocab_size},
        {"seed", a.opts.seed},
        {"oov_fraction", a.opts.oov_fraction},
        {"shard_bytes", bytes},
        {"seconds", secs},
        {"sentences_per_second", secs > 0 ? a.opts.num_sentences / secs : 0}};
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf(
        "datagen text: %ld sentences in %ld shards + vocab.txt (%ld words, seed %llu) in "
        "%s\n",
        static_cast<long>(a.opts.num_sentences), static_cast<long>(a.opts.num_shards),
        static_cast<long>(a.opts.vocab_size),
        static_cast<unsigned long long>(a.opts.seed), a.out.c_str());
    std::printf("  size     : %.1f MB of TFRecord shards\n", bytes / 1e6);
    std::printf("  elapsed  : %.2f s\n", secs);
  }
  return 0;
}

}  // namespace

void AddDatagenCommand(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("datagen",
                                 "Generate a synthetic data set (deterministic by seed)");
  cmd->require_subcommand(1);

  auto img = std::make_shared<ImagenetArgs>();
  auto* imagenet = cmd->add_subcommand(
      "imagenet",
      "ImageNet-like JPEGs: DIR/train/<wnid>/*.JPEG (ImageFolder layout), "
      "optionally DIR/tfrecord/train-* shards of tf.train.Example, and DIR/MANIFEST");
  imagenet->add_option("--out", img->out, "Output directory")->required();
  imagenet->add_option("--images", img->opts.num_images, "Number of images")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{1000000000}));
  imagenet->add_option("--classes", img->opts.num_classes, "Number of classes")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{100000000}));
  imagenet->add_option("--seed", img->opts.seed, "Seed")->capture_default_str();
  imagenet
      ->add_option("--shards", img->opts.tfrecord_shards,
                   "TFRecord shards to write (0: none)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{99999}));
  imagenet->add_flag("--no-jpeg-folder", img->no_jpeg_folder,
                     "Do not write the train/<wnid>/*.JPEG folder (needs --shards)");
  imagenet
      ->add_option("--threads", img->opts.threads,
                   "Worker threads (0: the cores available)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  imagenet->add_flag("--json", img->json, "Print the summary as one JSON object");
  imagenet->callback([img, exit_code] { *exit_code = RunImagenet(*img); });

  auto txt = std::make_shared<TextArgs>();
  auto* text = cmd->add_subcommand(
      "text",
      "A synthetic text corpus: DIR/vocab.txt and DIR/text-*-of-* TFRecord shards of "
      "sentences");
  text->add_option("--out", txt->out, "Output directory")->required();
  text->add_option("--sentences", txt->opts.num_sentences, "Number of sentences")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{1000000000000}));
  text->add_option("--shards", txt->opts.num_shards, "TFRecord shards")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  text->add_option("--vocab", txt->opts.vocab_size,
                   "Vocabulary size (lines of vocab.txt, reserved tokens included)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{5}, int64_t{10000000}));
  text->add_option("--seed", txt->opts.seed, "Seed")->capture_default_str();
  text->add_option("--oov", txt->opts.oov_fraction,
                   "Share of word tokens missing from the vocabulary")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  text->add_flag("--json", txt->json, "Print the summary as one JSON object");
  text->callback([txt, exit_code] { *exit_code = RunText(*txt); });
}

}  // namespace sluice
