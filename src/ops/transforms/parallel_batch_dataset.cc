// ParallelBatch (tf.data batch with num_parallel_calls): combines batch_size consecutive
// input elements into one, stacking each component along a new dimension 0, with the
// copying done on the pipeline's pool: several batches at once, and a big batch split into
// row ranges copied concurrently (BatchProcessor, src/ops/batch_processor.h).
//
// Produces exactly the sequential Batch's elements and errors: a last partial batch is
// kept unless drop_remainder; rows whose component counts, dtypes or shapes differ give
// InvalidArgument naming the component (the batch is lost, the next one follows); an input
// error drops the rows read before it and surfaces the error. deterministic keeps the
// order; otherwise batches come out as they are ready. The buffer holds few batches (see
// BatchProcessor::Capacity) since each is big. Spec: BatchedSpec of the input's (batch
// dimension batch_size with drop_remainder, else unknown); cardinality as Batch.
//
// Thread-safety: the dataset node and the processor are immutable; iterators follow the
// AsyncBufferIterator contract (GetNext/Save/Restore from one thread, Cancel from any).
#include "graph/attr.h"
#include "ops/op_util.h"
#include "ops/ops.h"
#include "runtime/async_buffer.h"
#include "ops/batch_processor.h"

namespace sluice {
namespace {

class ParallelBatchDataset : public DatasetNode {
 public:
  ParallelBatchDataset(OpArgs args, ElementSpec spec, int64_t batch_size, bool drop_remainder,
                       ParallelAttrs p)
      : DatasetNode("ParallelBatch", std::move(args), std::move(spec)),
        batch_size_(batch_size),
        drop_remainder_(drop_remainder),
        p_(p) {}

  int64_t Cardinality() const override {
    return BatchCardinality(input(0)->Cardinality(), batch_size_, drop_remainder_);
  }

 protected:
  Result<IteratorPtr> MakeIteratorInternal(const IteratorContext&,
                                           const std::string& prefix) const override {
    AsyncBufferOptions o;
    o.parallelism = p_.num_parallel_calls;
    o.deterministic = p_.deterministic;
    // Exact only when the batch dimension is known (drop_remainder) and the rows are
    // fully shaped and numeric; StaticElementBytes says -1 otherwise.
    return IteratorPtr(new AsyncBufferIterator(
        shared(), prefix,
        std::make_unique<BatchProcessor>(batch_size_, drop_remainder_, Function(),
                                         /*seed=*/0, StaticElementBytes(element_spec()),
                                         element_spec()),
        o));
  }

 private:
  const int64_t batch_size_;
  const bool drop_remainder_;
  const ParallelAttrs p_;
};

}  // namespace

void RegisterParallelBatchDataset(Registry* r) {
  r->RegisterOp(
      WithParallelAttrs(
          WithBatchAttrs(OpDef("ParallelBatch")
              .Summary("Batch whose batches are assembled on the pool, several at once.")
              .Inputs(1)
              .Traits({.async = true, .buffering = true, .seed_mix = SeedMix::kNone}))),
      [](OpArgs args) -> Result<DatasetPtr> {
     const std::string op = "ParallelBatch";
     SLUICE_ASSIGN_OR_RETURN(int64_t bs, GetAttr<int64_t>(args.attrs, op, "batch_size"));
     SLUICE_ASSIGN_OR_RETURN(bool drop,
                             GetAttrOr<bool>(args.attrs, op, "drop_remainder", false));
     SLUICE_ASSIGN_OR_RETURN(ParallelAttrs p, GetParallelAttrs(op, args.attrs));
     if (bs <= 0) {
       return InvalidArgumentError(op + ": batch_size must be > 0, got " + std::to_string(bs));
     }
     ElementSpec spec = BatchedSpec(args.inputs[0]->element_spec(), drop ? bs : -1);
     return DatasetPtr(std::make_shared<ParallelBatchDataset>(std::move(args), std::move(spec),
                                                              bs, drop, p));
   });
}

}  // namespace sluice
