#include "imagenet_pipeline.h"

#include <vector>

namespace sluice {

Dataset ImagenetPipeline(const std::string& data_dir, const ImagenetPipelineOptions& opts) {
  auto open_shard = Function::Kernel("tfrecord_dataset");
  auto parse = Function::Kernel(
      "parse_example", {{"keys", std::vector<std::string>{"image/encoded", "image/class/label"}},
                        {"kinds", std::vector<std::string>{"fixed", "fixed"}},
                        {"dtypes", std::vector<DType>{DType::kString, DType::kInt64}},
                        {"shapes", std::vector<PartialShape>{PartialShape{}, PartialShape{}}}});
  auto crop = Function::Kernel(
      "decode_and_random_crop",
      {{"size", std::vector<int64_t>{opts.image_size, opts.image_size}}, {"channels", int64_t{3}}});
  auto flip = Function::Kernel("random_flip_left_right", {});
  auto normalize = Function::Kernel(
      "normalize", {{"mean", std::vector<double>(kImagenetMean, kImagenetMean + 3)},
                    {"std", std::vector<double>(kImagenetStd, kImagenetStd + 3)},
                    {"layout", std::string("CHW")}});
  for (const auto* f : {&open_shard, &parse, &crop, &flip, &normalize}) {
    if (!f->ok()) return Dataset(f->status());
  }
  const int64_t npc = opts.parallel ? opts.num_parallel_calls : 1;
  Dataset files =
      Dataset::ListFiles({data_dir + "/tfrecord/train-*"}, /*shuffle=*/true, opts.seed)
          .Repeat(opts.epochs);
  Dataset records = (opts.parallel ? files.Interleave(*open_shard, /*cycle_length=*/4,
                                                      /*block_length=*/1, npc)
                                   : files.Interleave(*open_shard, 4, 1))
                        .Shuffle(1024, opts.seed);
  if (!opts.parallel) {
    // The baseline runs as built: the default rewrites would parallelize it.
    Options as_built;
    as_built.optimization.apply_default_optimizations = false;
    return records.Map(*parse).Map(*crop).Map(*flip).Map(*normalize).Batch(opts.batch_size)
        .WithOptions(as_built);
  }
  return records.Map(*parse, npc)
      .Map(*crop, npc)
      .Map(*flip, npc)
      .MapAndBatch(*normalize, opts.batch_size, npc)
      .Prefetch(opts.prefetch_buffer);
}

}  // namespace sluice
