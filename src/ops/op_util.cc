#include "ops/op_util.h"

#include <algorithm>
#include <cstdint>

#include "runtime/resources.h"

namespace sluice {

OpDef WithBatchAttrs(OpDef def) {
  return def.Attr("batch_size", AttrType::kInt, "Elements per batch, > 0.")
      .Attr("drop_remainder", AttrType::kBool, false,
            "Drop a last batch smaller than batch_size.");
}

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

Result<int64_t> BatchRowsOf(const Element& e, const std::string& op) {
  if (e.empty()) return InvalidArgumentError(op + ": an input element has no components");
  int64_t n = -1;
  for (size_t i = 0; i < e.size(); ++i) {
    if (e[i].rank() == 0) {
      return InvalidArgumentError(op + ": component " + std::to_string(i) +
                                  " of an input element is a scalar, not a batch");
    }
    if (n >= 0 && e[i].dim(0) != n) {
      return InvalidArgumentError(op +
                                  ": the components of an input batch have different "
                                  "batch sizes (" +
                                  std::to_string(n) + " and " + std::to_string(e[i].dim(0)) +
                                  ")");
    }
    n = e[i].dim(0);
  }
  return n;
}

int64_t BatchCardinality(int64_t input, int64_t batch_size, bool drop_remainder) {
  if (input < 0) return input;
  return drop_remainder ? input / batch_size : (input + batch_size - 1) / batch_size;
}

namespace {

// A scalar string that reads like a file path: printable, short, with a '/' or an
// extension. Raw records and encoded images are not.
bool LooksLikePath(const Tensor& t) {
  if (!t.valid() || t.dtype() != DType::kString || t.num_elements() != 1) return false;
  const std::string& s = t.flat<std::string>()[0];
  if (s.empty() || s.size() > 1024) return false;
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7f) return false;
  }
  const size_t dot = s.rfind('.');
  const bool extension =
      dot != std::string::npos && dot + 1 < s.size() && s.size() - dot <= 6;
  return s.find('/') != std::string::npos || extension;
}

}  // namespace

void ElementSource::Take(const Element& e) {
  int n = 0;
  for (const Tensor& t : e.tensors()) {
    if (t.dtype() != DType::kString || t.rank() != 0 || !t.buffer()) continue;
    buffers[n] = t.buffer();
    offsets[n] = t.byte_offset();
    if (++n == 2) break;
  }
}

Status ElementError(const Status& s, int64_t position, const ElementSource& source) {
  std::string where = "element " + std::to_string(position) + " of the input";
  for (int i = 0; i < 2; ++i) {
    if (!source.buffers[i]) continue;
    const Tensor t(DType::kString, Shape{}, source.buffers[i], source.offsets[i]);
    if (!LooksLikePath(t)) continue;
    std::string path = t.flat<std::string>()[0];
    if (path.size() > 120) path = "..." + path.substr(path.size() - 117);
    where += " ('" + path + "')";
    break;
  }
  return s.WithContext(where);
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

namespace {

// A numeric tensor that is the whole of its own buffer, or holds its data inline (a batch
// of it alone may take it).
bool OwnsWholeBuffer(const Tensor& t) {
  if (t.is_inline()) return true;
  return t.valid() && t.dtype() != DType::kString && t.buffer() && t.byte_offset() == 0 &&
         t.nbytes() == t.buffer()->size();
}

}  // namespace

Result<Element> StackRows(std::vector<Element>& rows, std::vector<Tensor>& column) {
  const size_t k = rows[0].size();
  if (rows.size() == 1 && k > 0 &&
      std::all_of(rows[0].tensors().begin(), rows[0].tensors().end(), OwnsWholeBuffer)) {
    // Every component is taken: the row's own element becomes the batch (no new vector).
    for (Tensor& t : rows[0].tensors()) t.InsertUnitDim(0);
    return std::move(rows[0]);
  }
  std::vector<Tensor> out;
  out.reserve(k);
  for (size_t c = 0; c < k; ++c) {
    const Tensor& only = rows[0][c];
    if (rows.size() == 1 && OwnsWholeBuffer(only)) {
      // Batch of one row owning its buffer: the batch is the same memory, reshaped (the
      // scratch column is not touched, so callers may pass a fresh one for free).
      out.push_back(std::move(rows[0][c]));
      out.back().InsertUnitDim(0);
      continue;
    }
    column.resize(rows.size());
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

Result<ElementSpec> CommonSpec(const std::vector<const ElementSpec*>& specs,
                               const std::string& op) {
  if (specs.empty()) return InvalidArgumentError(op + ": needs at least one input");
  for (const ElementSpec* s : specs) {
    if (s->unknown) return ElementSpec::Unknown();
  }
  ElementSpec out = *specs[0];
  for (size_t k = 1; k < specs.size(); ++k) {
    const ElementSpec& b = *specs[k];
    bool ok = b.size() == out.size() && (b.names == nullptr) == (out.names == nullptr) &&
              (b.names == nullptr || *b.names == *out.names);
    for (size_t i = 0; ok && i < b.size(); ++i) ok = b[i].dtype == out[i].dtype;
    if (!ok) {
      return InvalidArgumentError(op + ": input " + std::to_string(k) +
                                  " has element spec " + b.ToString() + ", input 0 has " +
                                  specs[0]->ToString() +
                                  " (need the same components, dtypes and names)");
    }
    for (size_t i = 0; i < b.size(); ++i) {
      out.components[i].shape = out[i].shape.MostSpecificCompatible(b[i].shape);
    }
  }
  return out;
}

}  // namespace sluice
