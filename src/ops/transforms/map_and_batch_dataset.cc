// MapAndBatch (tf.data map_and_batch): map(fn) then batch(batch_size, drop_remainder)
// fused. Up to num_parallel_calls parts run on the pipeline's pool; each applies fn to its
// rows and copies every result straight into its row of the output batch, so no mapped
// element is buffered on its own (BatchProcessor, src/ops/batch_processor.h).
//
// Output = exactly Map(fn).Batch(batch_size, drop_remainder) of the sequential ops: each
// call gets FunctionContext(seed, input position), so random functions give the same
// batches at any parallelism; mismatching rows give Batch's InvalidArgument; an input error
// drops the rows read before it and surfaces the error (those rows keep their positions).
// One documented difference, as in tf.data: a failing fn call fails that whole batch with
// the function's error (the lowest failing row's, whatever the scheduling), and the next
// batch starts at the next batch_size boundary, whereas map().batch() would drop only the
// rows before the failure and start the next batch right after it.
//
// deterministic keeps the order; otherwise batches come out as they are ready. Spec:
// BatchedSpec of fn's declared output spec (batch dimension batch_size with
// drop_remainder), unknown when fn declares none; cardinality as Batch.
//
// Thread-safety: the dataset node and the processor are immutable; iterators follow the
// AsyncBufferIterator contract (GetNext/Save/Restore from one thread, Cancel from any).
#include "graph/attr.h"
#include "ops/op_util.h"
#include "ops/ops.h"
#include "runtime/async_buffer.h"
#include "ops/batch_processor.h"
#include "runtime/runtime.h"

namespace sluice {
namespace {

class MapAndBatchDataset : public DatasetNode {
 public:
  MapAndBatchDataset(OpArgs args, ElementSpec spec, uint64_t seed, int64_t batch_size,
                     bool drop_remainder, ParallelAttrs p)
      : DatasetNode("MapAndBatch", std::move(args), std::move(spec)),
        seed_(seed),
        batch_size_(batch_size),
        drop_remainder_(drop_remainder),
        p_(p) {}

  int64_t Cardinality() const override {
    return BatchCardinality(input(0)->Cardinality(), batch_size_, drop_remainder_);
  }

 protected:
  Result<IteratorPtr> MakeIteratorInternal(const IteratorContext& ctx,
                                           const std::string& prefix) const override {
    AsyncBufferOptions o;
    o.parallelism = p_.num_parallel_calls;
    o.deterministic = p_.deterministic;
    return IteratorPtr(new AsyncBufferIterator(
        shared(), prefix,
        std::make_unique<BatchProcessor>(batch_size_, drop_remainder_, functions()[0], seed_,
                                         StaticElementBytes(element_spec()), element_spec(),
                                         ctx.runtime()->env()),
        o));
  }

 private:
  const uint64_t seed_;
  const int64_t batch_size_;
  const bool drop_remainder_;
  const ParallelAttrs p_;
};

}  // namespace

void RegisterMapAndBatchDataset(Registry* r) {
  r->RegisterOp(
      WithParallelAttrs(
          WithBatchAttrs(OpDef("MapAndBatch")
              .Summary("Map then Batch fused: the function runs in parallel and each result "
                       "is written to its row of the batch.")
              .Inputs(1)
              .Functions({Function::Kind::kElement})
              .Attr("seed", AttrType::kInt, int64_t{0}, "Seed of the function's random draws.")
              .Traits({.async = true, .buffering = true, .seed_mix = SeedMix::kNone}))),
      [](OpArgs args) -> Result<DatasetPtr> {
     const std::string op = "MapAndBatch";
     SLUICE_ASSIGN_OR_RETURN(int64_t seed, GetAttrOr<int64_t>(args.attrs, op, "seed", 0));
     SLUICE_ASSIGN_OR_RETURN(int64_t bs, GetAttr<int64_t>(args.attrs, op, "batch_size"));
     SLUICE_ASSIGN_OR_RETURN(bool drop,
                             GetAttrOr<bool>(args.attrs, op, "drop_remainder", false));
     SLUICE_ASSIGN_OR_RETURN(ParallelAttrs p, GetParallelAttrs(op, args.attrs));
     if (bs <= 0) {
       return InvalidArgumentError(op + ": batch_size must be > 0, got " + std::to_string(bs));
     }
     ElementSpec spec = ElementSpec::Unknown();
     if (auto s = args.functions[0].OutputSpec(args.inputs[0]->element_spec())) {
       if (!s->ok()) return s->status().WithContext(op);
       spec = BatchedSpec(**s, drop ? bs : -1);
     }
     return DatasetPtr(std::make_shared<MapAndBatchDataset>(
         std::move(args), std::move(spec), static_cast<uint64_t>(seed), bs, drop, p));
   });
}

}  // namespace sluice
