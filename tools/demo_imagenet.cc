// The ImageNet-style part of `sluice demo`: generates a small ImageNet-like set (once),
// then runs tools/imagenet_pipeline.h sequentially and in parallel, printing images/s.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "datagen/imagenet_like.h"
#include "demo.h"
#include "imagenet_pipeline.h"

namespace sluice {
namespace {

using Clock = std::chrono::steady_clock;

// Images/s of `batches` batches of the pipeline (0 and a message on error).
double ImagesPerSecond(const Dataset& ds, int64_t batches, const char* label, bool progress) {
  auto it = ds.MakeIterator();
  if (!it.ok()) {
    std::fprintf(stderr, "%s: %s\n", label, it.status().ToString().c_str());
    return 0;
  }
  const bool tty = isatty(STDERR_FILENO);
  // The first batch waits for the shuffle buffer and the threads to start: not timed.
  auto first = (*it)->GetNext();
  if (!first.ok() || !*first) {
    std::fprintf(stderr, "%s: %s\n", label, first.ok() ? "empty" : first.status().ToString().c_str());
    return 0;
  }
  const auto start = Clock::now();
  int64_t images = 0;
  for (int64_t b = 0; b < batches; ++b) {
    auto next = (*it)->GetNext();
    if (!next.ok() || !*next) {
      std::fprintf(stderr, "%s: %s\n", label,
                   next.ok() ? "ended early" : next.status().ToString().c_str());
      return 0;
    }
    images += (**next)[0].dim(0);
    if (progress) {
      double s = std::chrono::duration<double>(Clock::now() - start).count();
      std::fprintf(stderr, "%s  %-10s batch %3ld/%ld  %7.1f images/s%s", tty ? "\r" : "", label,
                   static_cast<long>(b + 1), static_cast<long>(batches), images / s,
                   tty && b + 1 < batches ? "" : "\n");
    }
  }
  return images / std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

Result<ImagenetDemoResult> RunImagenetDemo(const std::string& data_dir, bool progress) {
  ImagenetDemoResult r;
  if (!std::filesystem::exists(data_dir + "/MANIFEST")) {
    ImagenetLikeOptions gen;
    gen.num_images = 1024;
    gen.num_classes = 10;
    gen.seed = 1;
    gen.jpeg_folder = false;
    gen.tfrecord_shards = 8;
    const auto start = Clock::now();
    if (progress) std::fprintf(stderr, "  generating %ld ImageNet-like JPEGs in %s\n",
                               static_cast<long>(gen.num_images), data_dir.c_str());
    SLUICE_RETURN_IF_ERROR(GenerateImagenetLike(data_dir, gen));
    r.generate_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  }
  ImagenetPipelineOptions opts;
  const int64_t batches = 12;  // timed, after the first
  opts.parallel = false;
  r.sequential_images_per_second = ImagesPerSecond(ImagenetPipeline(data_dir, opts), batches, "sequential", progress);
  opts.parallel = true;
  r.parallel_images_per_second = ImagesPerSecond(ImagenetPipeline(data_dir, opts), batches, "parallel", progress);
  if (r.sequential_images_per_second == 0 || r.parallel_images_per_second == 0) {
    return InternalError("the ImageNet-style pipeline failed (see above)");
  }
  r.batch_size = opts.batch_size;
  r.batches = batches;
  return r;
}

}  // namespace sluice
