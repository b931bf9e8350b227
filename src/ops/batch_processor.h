// BatchProcessor: the UnitProcessor that assembles batches on the pool, shared by
// ParallelBatch (no function: rows are copied as they are) and MapAndBatch (a function is
// applied to each row first, tf.data's map_and_batch).
//
// A unit is the batch_size input rows of one batch (fewer for a last partial batch; the
// AsyncBufferIterator drops it when drop_remainder). It is split into NumParts contiguous
// row ranges that run concurrently:
//  * each part applies the function (if any) to its rows in place, with
//    FunctionContext(seed, unit.first_position + row), exactly as the sequential Map;
//  * the first part to have a finished row allocates the output tensors, shape
//    [n, row_shape...] with n the unit's rows, under WorkUnit::mu (not taken when the
//    unit is exclusive: inline mode);
//  * every part then copies its rows into their rows of the output (CopyIntoRow).
// With a function whose output rows are statically known (every component numeric and
// fully shaped: `row_spec`), the output is allocated before any call instead, and each call
// is offered its rows of the output as FunctionContext output slots: a kernel that writes
// its result there (FunctionContext::NewOutput) saves the copy, which CopyIntoRow would
// otherwise make (for a normalized 224x224 image, 600 KB per row).
// Finish checks that all rows have row 0's structure (component count, dtypes, shapes; a
// cheap comparison, no data touched). If they do, the output is complete and is returned
// with row 0's component names. If not, it stacks the rows the way the sequential Batch
// does, which yields the sequential Batch's exact error (InvalidArgument naming the
// component and the row) - so ParallelBatch returns exactly what Batch returns, whichever
// row a part happened to see first. A batch of one row with no pre-allocated output is
// not copied at all: the row stays in place and Finish stacks it with StackRows (a view of
// a row that owns its buffer), as the sequential Batch(1) does.
//
// Function errors (MapAndBatch). A failing call fails the whole batch with the function's
// error, as tf.data's map_and_batch does, and the next batch starts at the next
// batch_size boundary. (The sequential map().batch() instead drops only the rows read
// before the failing one and starts the next batch right after it.) When several rows of a
// batch fail, the error of the lowest row is reported, so the result does not depend on
// scheduling: a part records its first error in WorkUnit::status and WorkUnit::status_row
// under WorkUnit::mu (the lowest row wins) and returns OK; the AsyncBufferIterator then
// completes the unit with that status instead of calling Finish.
//
// Sizes. Copying a row is cheap, so ParallelBatch gives each part at least
// kMinCopyRowsPerPart rows (a small batch is one part); MapAndBatch's function calls are
// the expensive work, so it splits down to one row per part. A unit holds its input (or
// mapped) rows until it completes, so a batch in flight costs about twice its output; see
// Capacity for how few are in flight.
//
// Thread-safety: immutable after construction; ProcessPart runs concurrently on the parts
// of a unit (disjoint rows; the shared output is allocated under WorkUnit::mu and then
// written at disjoint rows).
#ifndef SLUICE_OPS_BATCH_PROCESSOR_H_
#define SLUICE_OPS_BATCH_PROCESSOR_H_

#include <cstdint>
#include <optional>

#include "runtime/async_buffer.h"
#include "sluice/dataset.h"

namespace sluice {

class BatchProcessor final : public UnitProcessor {
 public:
  // Rows per part for a plain copy (ParallelBatch).
  static constexpr int64_t kMinCopyRowsPerPart = 8;
  // Batches being computed at once are capped at this (plus the ready ones).
  static constexpr int64_t kMaxBatchesInFlight = 16;

  // `fn` invalid (Function()): no function (ParallelBatch). `static_output_bytes`: the
  // exact bytes of every batch when known (fully shaped numeric spec with a known batch
  // dimension), else -1. `batch_spec`: the op's output spec (batched rows). `env`: the
  // pipeline's file system, handed to the function (FunctionContext::env).
  BatchProcessor(int64_t batch_size, bool drop_remainder, Function fn, uint64_t seed,
                 int64_t static_output_bytes, const ElementSpec& batch_spec,
                 Env* env = nullptr);

  int64_t inputs_per_unit() const override { return batch_size_; }
  bool drop_partial_unit() const override { return drop_remainder_; }
  // Enough batches in flight to keep `parallelism` parts busy (parallelism / parts per
  // batch, at most kMaxBatchesInFlight) plus two ready for the consumer: each batch is big,
  // so the buffer is kept short (for batch_size 1 it is like ParallelMap's 2 x parallelism).
  int64_t Capacity(int64_t parallelism) const override;
  // Up to `parallelism` parts, each with at least min_rows_per_part() rows.
  int NumParts(const WorkUnit& u, int64_t parallelism) const override;
  Status ProcessPart(WorkUnit* u, int part, int num_parts) const override;
  Result<std::optional<Element>> Finish(WorkUnit* u) const override;
  int64_t StaticOutputBytes() const override { return static_output_bytes_; }

  int64_t min_rows_per_part() const { return fn_.valid() ? 1 : kMinCopyRowsPerPart; }

 private:
  const int64_t batch_size_;
  const bool drop_remainder_;
  const Function fn_;
  const uint64_t seed_;
  const int64_t static_output_bytes_;
  Env* const env_;
  // The rows' components when the output is allocated up front (see above), else empty.
  struct StaticComponent {
    DType dtype;
    Shape shape;
  };
  std::vector<StaticComponent> static_row_;
  // Whether `row` has the static row's structure (true when there is none): only then
  // does the pre-allocated output hold the rows.
  bool FitsStaticRow(const Element& row) const;
};

}  // namespace sluice

#endif  // SLUICE_OPS_BATCH_PROCESSOR_H_
