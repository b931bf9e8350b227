// Parts of `sluice demo` (tools/sluice_main.cc runs them).
#ifndef SLUICE_TOOLS_DEMO_H_
#define SLUICE_TOOLS_DEMO_H_

#include <string>

#include "sluice/status.h"

namespace sluice {

struct ImagenetDemoResult {
  double generate_seconds = 0;  // 0 when the set already existed
  int64_t batch_size = 0, batches = 0;
  double sequential_images_per_second = 0;
  double parallel_images_per_second = 0;
};

// Generates 1024 ImageNet-like JPEGs in 8 TFRecord shards under data_dir (when its
// MANIFEST is missing), then times 12 batches (after a first, untimed one) of tools/imagenet_pipeline.h sequentially and
// in parallel.
Result<ImagenetDemoResult> RunImagenetDemo(const std::string& data_dir, bool progress);

}  // namespace sluice

#endif  // SLUICE_TOOLS_DEMO_H_
