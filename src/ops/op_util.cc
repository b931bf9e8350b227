#include "ops/op_util.h"

#include <cstdint>

#include "runtime/resources.h"

namespace sluice {

ElementSpec BatchedSpec(const ElementSpec& spec, int64_t batch) {
  if (spec.unknown) return spec;
  ElementSpec out;
  out.names = spec.names;
  for (const TensorSpec& c : spec.components) {
    out.components.push_back({c.dtype, c.shape.WithLeadingDim(batch)});
  }
  return out;
}

ElementSpec UnbatchedSpec(const ElementSpec& spec) {
  if (spec.unknown) return spec;
  ElementSpec out;
  out.names = spec.names;
  for (const TensorSpec& c : spec.components) {
    out.components.push_back({c.dtype, c.shape.WithoutLeadingDim()});
  }
  return out;
}

int64_t BatchCardinality(int64_t input, int64_t batch_size, bool drop_remainder) {
  if (input < 0) return input;
  return drop_remainder ? input / batch_size : (input + batch_size - 1) / batch_size;
}

Status ReadBatchRows(IteratorBase* input, int64_t batch_size,
                     std::vector<Element>* rows) {
  rows->clear();
  while (static_cast<int64_t>(rows->size()) < batch_size) {
    SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, input->GetNext());
    if (!e) break;
    rows->push_back(std::move(*e));
    const int64_t n = static_cast<int64_t>(rows->size());
    if (BatchMemoryCheckDue(n, batch_size)) {
      SLUICE_RETURN_IF_ERROR(CheckBufferMemory(
          "a batch", batch_size, input->node().Cardinality(), n, rows->front()));
    }
  }
  return Status::OK();
}

Result<int64_t> SkipBatches(IteratorBase* input, int64_t n, int64_t batch_size,
                            bool drop_remainder) {
  if (n > INT64_MAX / batch_size) n = INT64_MAX / batch_size;
  SLUICE_ASSIGN_OR_RETURN(int64_t k, input->Skip(n * batch_size));
  const bool partial = k % batch_size != 0;
  return k / batch_size + (partial && !drop_remainder ? 1 : 0);
}

Result<Element> StackRows(std::vector<Element>& rows, std::vector<Tensor>& column) {
  const size_t k = rows[0].size();
  std::vector<Tensor> out;
  out.reserve(k);
  column.resize(rows.size());
  for (size_t c = 0; c < k; ++c) {
    for (size_t i = 0; i < rows.size(); ++i) {
      if (rows[i].size() != k) {
        return InvalidArgumentError("cannot batch elements with " + std::to_string(k) + " and " +
                                    std::to_string(rows[i].size()) + " components");
      }
      column[i] = std::move(rows[i][c]);
    }
    auto stacked = Stack(column);
    // The scratch keeps its capacity, not the rows: it would hold them until the next call.
    for (Tensor& t : column) t = Tensor();
    if (!stacked.ok()) return stacked.status().WithContext("component " + std::to_string(c));
    out.push_back(std::move(stacked).value());
  }
  return Element(std::move(out), rows[0].names());
}

}  // namespace sluice
