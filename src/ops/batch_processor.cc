// BatchProcessor: batch assembly on the pool for ParallelBatch and MapAndBatch. The
// contract (parts, allocation under WorkUnit::mu, error rules, thread-safety) is in
// batch_processor.h.
#include "ops/batch_processor.h"

#include <algorithm>
#include <utility>

#include "core/mutex.h"
#include "graph/function_internal.h"
#include "ops/op_util.h"

namespace sluice {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Whether every row has row 0's component count, dtypes and shapes.
bool SameStructure(const std::vector<Element>& rows) {
  const Element& first = rows[0];
  for (size_t i = 1; i < rows.size(); ++i) {
    const Element& row = rows[i];
    if (row.size() != first.size()) return false;
    for (size_t c = 0; c < row.size(); ++c) {
      if (row[c].dtype() != first[c].dtype() || row[c].shape() != first[c].shape()) {
        return false;
      }
    }
  }
  return true;
}

// A tensor of `n` rows of `row_shape`.
Tensor BatchTensor(DType dtype, Shape row_shape, int64_t n) {
  row_shape.InsertDim(0, n);
  return Tensor(dtype, std::move(row_shape));
}

// Output tensors of `n` rows shaped like `row`.
Element AllocateBatch(const Element& row, int64_t n) {
  std::vector<Tensor> out;
  out.reserve(row.size());
  for (const Tensor& t : row.tensors()) out.push_back(BatchTensor(t.dtype(), t.shape(), n));
  return Element(std::move(out));
}

// Runs f under u->mu unless the unit is exclusive to this thread (inline mode).
template <typename F>
void UnderUnitLock(WorkUnit* u, F&& f) {
  if (u->exclusive) {
    f();
    return;
  }
  MutexLock l(&u->mu);
  f();
}

}  // namespace

BatchProcessor::BatchProcessor(int64_t batch_size, bool drop_remainder, Function fn,
                               uint64_t seed, int64_t static_output_bytes,
                               const ElementSpec& batch_spec, Env* env)
    : batch_size_(batch_size),
      drop_remainder_(drop_remainder),
      fn_(std::move(fn)),
      seed_(seed),
      static_output_bytes_(static_output_bytes),
      env_(env) {
  // Pre-allocation only pays with a function (a plain batch copies its rows anyway).
  if (!fn_.valid() || batch_spec.unknown || batch_spec.components.empty()) return;
  std::vector<StaticComponent> row;
  for (const TensorSpec& t : batch_spec.components) {
    if (t.dtype == DType::kString || !t.shape.rank_known() || t.shape.rank() < 1) return;
    PartialShape r = t.shape.WithoutLeadingDim();
    if (!r.fully_defined()) return;
    row.push_back({t.dtype, Shape(r.dims())});
  }
  static_row_ = std::move(row);
}

bool BatchProcessor::FitsStaticRow(const Element& row) const {
  if (static_row_.empty()) return true;
  if (row.size() != static_row_.size()) return false;
  for (size_t c = 0; c < row.size(); ++c) {
    if (row[c].dtype() != static_row_[c].dtype || row[c].shape() != static_row_[c].shape) {
      return false;
    }
  }
  return true;
}

int64_t BatchProcessor::Capacity(int64_t parallelism) const {
  const int64_t p = std::max<int64_t>(1, parallelism);
  const int64_t parts_per_batch =
      std::clamp<int64_t>(CeilDiv(batch_size_, min_rows_per_part()), 1, p);
  return 2 + std::min(CeilDiv(p, parts_per_batch), kMaxBatchesInFlight);
}

int BatchProcessor::NumParts(const WorkUnit& u, int64_t parallelism) const {
  const int64_t n = static_cast<int64_t>(u.inputs.size());
  const int64_t parts = std::min(parallelism, CeilDiv(n, min_rows_per_part()));
  return static_cast<int>(std::max<int64_t>(1, parts));
}

Status BatchProcessor::ProcessPart(WorkUnit* u, int part, int num_parts) const {
  const int64_t n = static_cast<int64_t>(u->inputs.size());
  if (n == 1 && static_row_.empty()) {
    // A batch of one row is made by Finish from the row itself: only the function runs.
    if (!fn_.valid()) return Status::OK();
    Element& row = u->inputs[0];
    FunctionContext fctx(seed_, u->first_position);
    fctx.set_env(env_);
    const ElementSource source(row);
    Status s = fn_.Apply(&row, fctx);
    if (!s.ok()) {
      MutexLock l(&u->mu);
      u->status = ElementError(s, u->first_position, source);
      u->status_row = 0;
    }
    return Status::OK();
  }
  const int64_t begin = n * part / num_parts;
  const int64_t end = n * (part + 1) / num_parts;
  // The output's tensors: a copy (views of the shared buffers) when parts run
  // concurrently, the unit's own when it is exclusive (saves a vector copy per unit).
  TensorVector out_copy;
  TensorVector* out = &out_copy;
  const auto take_out = [&] {
    if (u->exclusive) {
      out = &u->output.tensors();
    } else {
      out_copy = u->output.tensors();
    }
  };
  bool have_out = false;
  std::vector<Tensor> slots;  // row r of each output tensor (pre-allocated output)
  if (!static_row_.empty() && end > begin) {
    UnderUnitLock(u, [&] {
      if (u->output.empty()) {
        std::vector<Tensor> batch;
        for (const StaticComponent& c : static_row_) {
          batch.push_back(BatchTensor(c.dtype, c.shape, n));
        }
        u->output = Element(std::move(batch));
      }
      take_out();
    });
    have_out = true;
    slots.resize(out->size());
  }
  for (int64_t r = begin; r < end; ++r) {
    Element& row = u->inputs[r];
    if (fn_.valid()) {
      FunctionContext fctx(seed_, u->first_position + r);
      fctx.set_env(env_);
      if (!slots.empty()) {
        for (size_t c = 0; c < out->size(); ++c) slots[c] = (*out)[c].SubTensor(r);
        OfferOutputSlots(fctx, slots);
      }
      const ElementSource source(row);
      Status s = fn_.Apply(&row, fctx);
      if (!s.ok()) {
        // The batch fails; the lowest failed row's error is the one reported. Returning
        // OK keeps the buffer from recording a scheduling-dependent "first" error.
        MutexLock l(&u->mu);
        if (u->status_row < 0 || r < u->status_row) {
          u->status = ElementError(s, u->first_position + r, source);
          u->status_row = r;
        }
        return Status::OK();
      }
    }
    // A batch of one row without a pre-allocated output is made by Finish from the row
    // itself (StackRows: a view of a row that owns its buffer), not allocated and copied.
    if (n == 1 && slots.empty()) break;
    if (!have_out) {
      UnderUnitLock(u, [&] {
        if (u->output.empty() && !row.empty()) u->output = AllocateBatch(row, n);
        take_out();
      });
      have_out = true;
    }
    // A row that does not fit the allocated structure is left out here; Finish sees the
    // mismatch and reports it as the sequential Batch would.
    if (row.size() != out->size()) continue;
    for (size_t c = 0; c < row.size(); ++c) {
      // A result the function wrote into its slot is in place already.
      if (!slots.empty() && row[c].num_elements() > 0 &&
          row[c].raw_data() == slots[c].raw_data() && row[c].dtype() == slots[c].dtype() &&
          row[c].shape() == slots[c].shape()) {
        continue;
      }
      if (!CopyIntoRow(row[c], &(*out)[c], r).ok()) break;
    }
  }
  return Status::OK();
}

Result<std::optional<Element>> BatchProcessor::Finish(WorkUnit* u) const {
  std::vector<Element>& rows = u->inputs;
  // A single row left in place by ProcessPart (no pre-allocated output): one row has its
  // own structure, and StackRows reports what does not stack.
  if (rows.size() == 1 && u->output.empty()) {
    std::vector<Tensor> column;
    SLUICE_ASSIGN_OR_RETURN(Element e, StackRows(rows, column));
    return std::optional<Element>(std::move(e));
  }
  // A pre-allocated output holds the rows only when they have the declared structure.
  if (!SameStructure(rows) || !FitsStaticRow(rows[0])) {
    // Rare: the sequential stacking gives the exact error.
    std::vector<Tensor> column;
    SLUICE_ASSIGN_OR_RETURN(Element e, StackRows(rows, column));
    return std::optional<Element>(std::move(e));
  }
  // Every row matched row 0, so every row was copied. (Zero-component rows: no output.)
  Element out(std::move(u->output.tensors()), rows[0].names());
  return std::optional<Element>(std::move(out));
}

}  // namespace sluice
