// The ImageNet-style training input pipeline that `sluice demo` and `sluice bench imagenet`
// run, written the way a user would:
//
//   list_files(tfrecord/train-*) -> interleave(TFRecord, cycle 4)
//     -> shuffle(1024) -> map(parse_example) -> map(decode_and_random_crop 224)
//     -> map(random_flip_left_right) -> map_and_batch(normalize CHW, 128) -> prefetch
//
// Parallel: the maps run with AUTOTUNE parallelism and the interleave on its own threads.
// Sequential: the same kernels, one element at a time on the caller's thread.
#ifndef SLUICE_TOOLS_IMAGENET_PIPELINE_H_
#define SLUICE_TOOLS_IMAGENET_PIPELINE_H_

#include <string>

#include "sluice/dataset.h"

namespace sluice {

// torchvision's ImageNet normalization.
inline constexpr float kImagenetMean[3] = {0.485f, 0.456f, 0.406f};
inline constexpr float kImagenetStd[3] = {0.229f, 0.224f, 0.225f};

struct ImagenetPipelineOptions {
  int64_t batch_size = 128;
  int64_t image_size = 224;
  bool parallel = true;
  int64_t epochs = -1;  // -1: forever
  uint64_t seed = 42;
  // Knobs (sluice bench autotune): parallelism of the maps and the interleave, and the
  // final prefetch's buffer; explicit values or kAutotune.
  int64_t num_parallel_calls = kAutotune;
  int64_t prefetch_buffer = 2;
};

// `data_dir` is `sluice datagen imagenet --shards N`'s output (data_dir/tfrecord/train-*).
// Batches are {"image": float32 [b, 3, size, size], "label": int64 [b]}.
Dataset ImagenetPipeline(const std::string& data_dir, const ImagenetPipelineOptions& opts);

}  // namespace sluice

#endif  // SLUICE_TOOLS_IMAGENET_PIPELINE_H_
