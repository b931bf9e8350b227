// sluice bench text: TFRecord shards of sentences (`sluice datagen text`) -> tokenize
// (fused split + vocabulary lookup) -> bucket_by_sequence_length (which padded-batches
// each bucket) -> prefetch. Items are sequences.
//
// Parallel: list_files -> repeat -> parallel interleave (cycle 4, block 1, autotuned
// parallelism) of per-shard pipelines tfrecord(shard) -> map(tokenize) ->
// bucket_by_sequence_length (boundaries 16, 32, 64, 128; batch 128 in every bucket;
// padded with -1 to the batch's longest), then prefetch (autotuned). Sequential
// (args.sequential): the same with the sequential interleave and no prefetch.
//
// Extra figures, over the measured batches only: batches, tokens (real, not padding),
// tokens_per_second, padding_fraction (padding cells / all cells of the batches).
#include <vector>

#include "bench_suites.h"

namespace sluice {

namespace {

constexpr int64_t kDefaultBatchSize = 128;
const std::vector<int64_t> kBoundaries = {16, 32, 64, 128};
constexpr int64_t kPadId = -1;  // never a vocabulary or OOV id, so padding is countable
constexpr int64_t kUnkId = 1;   // "<unk>" in the generated vocabulary

}  // namespace

Result<BenchResult> BenchText(const BenchArgs& args) {
  const int64_t batch = args.batch_size > 0 ? args.batch_size : kDefaultBatchSize;
  SLUICE_ASSIGN_OR_RETURN(
      Function tokenize,
      Function::Kernel("tokenize", {{"vocab_file", args.data + "/vocab.txt"},
                                    {"default_value", kUnkId}}));
  SLUICE_ASSIGN_OR_RETURN(Function length, Function::Kernel("sequence_length"));
  // Each shard is read, tokenized and bucketed inside the interleave's function, so the
  // parallel interleave's workers do all of it and hand over finished batches, one
  // hand-off per batch rather than per sentence. (A hand-off costs more than the ~1 us
  // tokenize call: on 2 cores, parallel interleave -> parallel map(tokenize) -> bucket
  // ran at a quarter of this rate, and parallel interleave(tokenized shards) -> bucket at
  // about 3/4.) The PyTorch peer buckets per worker the same way.
  const std::vector<int64_t> batch_sizes(kBoundaries.size() + 1, batch);
  Function open_shard = Function::DatasetFunction(
      "tokenize_and_bucket_shard",
      [tokenize, length, batch_sizes](Element file, FunctionContext&) -> Result<Dataset> {
        return Dataset::TFRecord({file[0].scalar<std::string>()})
            .Map(tokenize)
            .BucketBySequenceLength(length, kBoundaries, batch_sizes, {},
                                    {Tensor::Scalar<int64_t>(kPadId)});
      },
      {},
      [](const ElementSpec&) -> Result<ElementSpec> {
        return ElementSpec{{{DType::kInt64, PartialShape{-1, -1}}}};
      });
  Dataset files =
      Dataset::ListFiles({args.data + "/text-*-of-*"}, /*shuffle=*/false).Repeat();
  Dataset ds = args.sequential
                   ? files.Interleave(open_shard, /*cycle_length=*/4, /*block_length=*/1)
                   : files.Interleave(open_shard, 4, 1, /*num_parallel_calls=*/
                                      args.parallelism != 0 ? args.parallelism : kAutotune);
  if (!args.sequential) ds = ds.Prefetch(args.prefetch != 0 ? args.prefetch : kAutotune);
  SLUICE_RETURN_IF_ERROR(ds.status());

  // One entry per batch delivered (warm-up included); the measured ones are the last
  // batches, whose rows add up to the measured item count.
  struct BatchFigures {
    int64_t rows, tokens, cells;
  };
  std::vector<BatchFigures> seen;
  seen.reserve(1 << 16);
  auto items_of = [&seen](const Element& b) -> int64_t {
    const Tensor& t = b[0];
    const int64_t cells = t.num_elements();
    int64_t tokens = 0;
    const int64_t* d = t.data<int64_t>();
    for (int64_t i = 0; i < cells; ++i) tokens += d[i] != kPadId;
    seen.push_back({t.dim(0), tokens, cells});
    return t.dim(0);
  };
  SLUICE_ASSIGN_OR_RETURN(BenchResult r, TimePipeline(ds, args, "text", items_of));
  int64_t rows = 0, tokens = 0, cells = 0, batches = 0;
  for (auto it = seen.rbegin(); it != seen.rend() && rows < r.items; ++it, ++batches) {
    rows += it->rows;
    tokens += it->tokens;
    cells += it->cells;
  }
  r.extra["batch_size"] = batch;
  r.extra["bucket_boundaries"] = kBoundaries;
  r.extra["batches"] = batches;
  r.extra["tokens"] = tokens;
  r.extra["tokens_per_second"] = r.seconds > 0 ? tokens / r.seconds : 0.0;
  r.extra["padding_fraction"] =
      cells > 0 ? 1.0 - static_cast<double>(tokens) / cells : 0.0;
  return r;
}

}  // namespace sluice
