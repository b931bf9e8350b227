// Small helpers shared by op implementations.
#ifndef SLUICE_OPS_OP_UTIL_H_
#define SLUICE_OPS_OP_UTIL_H_

#include <string>
#include <vector>

#include "graph/dataset_node.h"
#include "graph/op_def.h"
#include "runtime/iterator_base.h"

namespace sluice {

// `def` with the batch_size and drop_remainder attributes every batching op takes.
OpDef WithBatchAttrs(OpDef def);

// The spec of a batch of `spec` with leading dimension `batch` (-1: unknown).
ElementSpec BatchedSpec(const ElementSpec& spec, int64_t batch);
// The spec of one row of `spec` (drops dimension 0).
ElementSpec UnbatchedSpec(const ElementSpec& spec);

// The spec of elements drawn from inputs of specs `specs` (ChooseFromDatasets,
// SampleFromDatasets): the same number of components, dtypes and names, each shape the
// most specific one all inputs' shapes fit; unknown if any input's is. InvalidArgument
// naming `op` and the first input that differs otherwise.
Result<ElementSpec> CommonSpec(const std::vector<const ElementSpec*>& specs,
                               const std::string& op);

// What ElementError may quote of an element, taken before a function consumes it: handles
// (no byte copies) of its first two scalar string components. Cheap: elements without
// string scalars cost a look at each component's dtype (inline, no tensor constructed).
struct ElementSource {
  explicit ElementSource(const Element& e) {
    for (const Tensor& t : e.tensors()) {
      if (t.dtype() == DType::kString) [[unlikely]] {
        Take(e);
        break;
      }
    }
  }
  // The buffers and byte offsets of the first two scalar string components (null: none).
  BufferPtr buffers[2];
  size_t offsets[2] = {0, 0};

 private:
  void Take(const Element& e);
};
// `s`, the error of a map function on the element at `position` of the op's input, with
// that position ("element 12 of the input") and, when one of `source`'s strings looks
// like a file path, that path (clipped). Map, parallel Map and MapAndBatch use it, so
// that the failures of two elements read alike only when they are the same element's.
Status ElementError(const Status& s, int64_t position, const ElementSource& source);

// Batch-shaped ops (batch, padded_batch).
//
// The number of batches of `batch_size` (> 0) made from `input` elements; negative
// (unknown, infinite) cardinalities pass through.
int64_t BatchCardinality(int64_t input, int64_t batch_size, bool drop_remainder);
// Reads up to `batch_size` elements of `input` into *rows (cleared first, capacity kept);
// fewer only at the end of the input. On an input error the rows read before it are
// consumed and dropped, as in tf.data.
Status ReadBatchRows(IteratorBase* input, int64_t batch_size, std::vector<Element>* rows);
// Stacks `rows` (the same structure as rows[0]) into one batch element, moving their
// tensors out; `column` is scratch space reused between calls. InvalidArgument naming the
// component when rows differ. Shared by Batch, ParallelBatch and MapAndBatch so that they
// report identical errors. A batch of one row whose numeric tensor is the whole of its own
// buffer takes that buffer (a view with the new leading dimension, no copy); a row that
// is a view of a larger buffer is copied, so a batch never holds more memory than its own.
Result<Element> StackRows(std::vector<Element>& rows, std::vector<Tensor>& column);
// The batch size (first dimension) shared by every component of a batch element `e`;
// InvalidArgument naming `op` when `e` has no components, a scalar component, or
// components of different first dimensions. Shared by Unbatch and Rebatch.
Result<int64_t> BatchRowsOf(const Element& e, const std::string& op);
// Skips up to `n` batches of `input` without building them; returns how many (a last
// partial batch counts unless drop_remainder). Saturates instead of overflowing.
Result<int64_t> SkipBatches(IteratorBase* input, int64_t n, int64_t batch_size,
                            bool drop_remainder);

}  // namespace sluice

#endif  // SLUICE_OPS_OP_UTIL_H_
