// PaddedBatch: batches elements whose components may differ in shape, padding each
// component to a common shape (tf.data padded_batch).
#include <algorithm>
#include <cstring>

#include "graph/attr.h"
#include "ops/op_util.h"
#include "ops/ops.h"
#include "runtime/iterator_base.h"

namespace sluice {
namespace {

constexpr std::string_view kOp = "PaddedBatch";

std::string Str(int64_t v) { return std::to_string(v); }

class PaddedBatchDataset : public DatasetNode {
 public:
  PaddedBatchDataset(OpArgs args, ElementSpec spec, int64_t batch_size,
                     std::vector<PartialShape> padded_shapes,
                     std::vector<Tensor> padding_values, bool drop_remainder)
      : DatasetNode(std::string(kOp), std::move(args), std::move(spec)),
        batch_size_(batch_size),
        padded_shapes_(std::move(padded_shapes)),
        padding_values_(std::move(padding_values)),
        drop_remainder_(drop_remainder) {}

  int64_t Cardinality() const override {
    return BatchCardinality(input(0)->Cardinality(), batch_size_, drop_remainder_);
  }
  int64_t batch_size() const { return batch_size_; }
  bool drop_remainder() const { return drop_remainder_; }

  // Pads and stacks `rows` into one batch.
  Result<Element> MakeBatch(const std::vector<Element>& rows) const;

 protected:
  Result<IteratorPtr> MakeIteratorInternal(
      const IteratorContext& ctx, const std::string& prefix) const override;

 private:
  Result<Tensor> PadComponent(const std::vector<Element>& rows, size_t c) const;

  int64_t batch_size_;
  std::vector<PartialShape> padded_shapes_;  // empty: batch max everywhere
  std::vector<Tensor> padding_values_;  // empty: zeros; one: used for every component
  bool drop_remainder_;
};

// Fills `n` values of `dst` (dtype of `value`) with the scalar `value`.
void Fill(const Tensor& value, Tensor* dst) {
  const int64_t n = dst->num_elements();
  if (n == 0) return;
  if (value.dtype() == DType::kString) {
    const std::string& v = value.scalar<std::string>();
    std::string* d = dst->mutable_data<std::string>();
    if (!v.empty()) std::fill(d, d + n, v);
    return;
  }
  const size_t size = DTypeSize(value.dtype());
  char* d = dst->mutable_data<char>();
  const char* v = static_cast<const char*>(value.raw_data());
  if (std::all_of(v, v + size, [](char b) { return b == 0; })) {
    memset(d, 0, static_cast<size_t>(n) * size);
    return;
  }
  for (int64_t i = 0; i < n; ++i) memcpy(d + static_cast<size_t>(i) * size, v, size);
}

// Copies `src` into the corner of row `row` of `dst` ([B, t0, ..., tr-1], src dims <= t).
void CopyPadded(const Tensor& src, Tensor* dst, int64_t row) {
  const int r = src.rank();
  const int64_t n = src.num_elements();
  if (n == 0) return;
  // Strides of the destination row, in elements.
  std::vector<int64_t> stride(r + 1, 1);
  for (int i = r - 1; i >= 0; --i) stride[i] = stride[i + 1] * dst->dim(i + 1);
  const int64_t row_base = row * stride[0];
  const bool strings = src.dtype() == DType::kString;
  const size_t size = DTypeSize(src.dtype());
  const int64_t run = r == 0 ? 1 : src.dim(r - 1);  // contiguous elements per copy
  auto copy = [&](int64_t src_off, int64_t dst_off) {
    if (strings) {
      const std::string* s = src.data<std::string>() + src_off;
      std::string* d = dst->mutable_data<std::string>() + dst_off;
      for (int64_t i = 0; i < run; ++i) d[i] = s[i];
    } else {
      memcpy(dst->mutable_data<char>() + static_cast<size_t>(dst_off) * size,
             src.data<char>() + static_cast<size_t>(src_off) * size,
             static_cast<size_t>(run) * size);
    }
  };
  if (r <= 1) {
    copy(0, row_base);
    return;
  }
  // Walk the outer r-1 dims with an odometer.
  std::vector<int64_t> idx(r - 1, 0);
  for (int64_t src_off = 0; src_off < n; src_off += run) {
    int64_t dst_off = row_base;
    for (int i = 0; i < r - 1; ++i) dst_off += idx[i] * stride[i + 1];
    copy(src_off, dst_off);
    for (int i = r - 2; i >= 0; --i) {
      if (++idx[i] < src.dim(i)) break;
      idx[i] = 0;
    }
  }
}

Result<Tensor> PaddedBatchDataset::PadComponent(const std::vector<Element>& rows,
                                                size_t c) const {
  const std::string comp = "component " + std::to_string(c);
  const Tensor& first = rows[0][c];
  const DType dtype = first.dtype();
  const int rank = first.rank();
  const PartialShape* padded = padded_shapes_.empty() ? nullptr : &padded_shapes_[c];
  if (padded && padded->rank_known() && padded->rank() != rank) {
    return InvalidArgumentError(comp + ": element of shape " + first.shape().ToString() +
                                " has rank " + Str(rank) + " but the padded shape " +
                                padded->ToString() + " has rank " + Str(padded->rank()));
  }
  // Target shape: the padded dim where given, else the batch's largest.
  std::vector<int64_t> target(rank, 0);
  for (size_t i = 0; i < rows.size(); ++i) {
    const Tensor& t = rows[i][c];
    if (t.dtype() != dtype) {
      return InvalidArgumentError(comp +
                                  ": elements of one batch have different dtypes (" +
                                  std::string(DTypeName(dtype)) + " and " +
                                  std::string(DTypeName(t.dtype())) + ")");
    }
    if (t.rank() != rank) {
      return InvalidArgumentError(
          comp + ": elements of one batch have different ranks (" +
          first.shape().ToString() + " and " + t.shape().ToString() + ")");
    }
    for (int d = 0; d < rank; ++d) target[d] = std::max(target[d], t.dim(d));
  }
  if (padded && padded->rank_known()) {
    for (int d = 0; d < rank; ++d) {
      const int64_t p = padded->dim(d);
      if (p < 0) continue;
      if (target[d] > p) {
        for (const Element& row : rows) {
          if (row[c].dim(d) > p) {
            // DataLoss, as tf.data (padded_batch_test.py::testPaddedBatchShortPadding).
            return DataLossError(
                comp + ": element of shape " + row[c].shape().ToString() +
                " is larger than the padded shape " + padded->ToString());
          }
        }
      }
      target[d] = p;
    }
  }
  Tensor value;
  if (!padding_values_.empty()) {
    value = padding_values_[padding_values_.size() == 1 ? 0 : c];
    if (value.dtype() != dtype) {
      return InvalidArgumentError(
          comp + ": padding value is " + std::string(DTypeName(value.dtype())) +
          " but the component is " + std::string(DTypeName(dtype)));
    }
  }
  Shape shape(target);
  shape.InsertDim(0, static_cast<int64_t>(rows.size()));
  SLUICE_ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(dtype, std::move(shape)));
  // Padding is written only when some element is smaller than the target.
  const Shape target_shape(target);
  bool exact = true;
  for (const Element& row : rows) exact = exact && row[c].shape() == target_shape;
  if (!exact) {
    if (value.valid()) {
      Fill(value, &out);
    } else if (dtype != DType::kString && out.num_elements() > 0) {
      memset(out.mutable_data<char>(), 0,
             static_cast<size_t>(out.num_elements()) * DTypeSize(dtype));
    }
  }
  for (size_t i = 0; i < rows.size(); ++i)
    CopyPadded(rows[i][c], &out, static_cast<int64_t>(i));
  return out;
}

Result<Element> PaddedBatchDataset::MakeBatch(const std::vector<Element>& rows) const {
  const size_t k = rows[0].size();
  for (const Element& row : rows) {
    if (row.size() != k) {
      return InvalidArgumentError("cannot batch elements with " + std::to_string(k) +
                                  " and " + std::to_string(row.size()) + " components");
    }
  }
  if (!padded_shapes_.empty() && padded_shapes_.size() != k) {
    return InvalidArgumentError(std::to_string(padded_shapes_.size()) +
                                " padded shapes for elements of " + std::to_string(k) +
                                " components");
  }
  if (padding_values_.size() > 1 && padding_values_.size() != k) {
    return InvalidArgumentError(std::to_string(padding_values_.size()) +
                                " padding values for elements of " + std::to_string(k) +
                                " components");
  }
  std::vector<Tensor> out;
  out.reserve(k);
  for (size_t c = 0; c < k; ++c) {
    SLUICE_ASSIGN_OR_RETURN(Tensor t, PadComponent(rows, c));
    out.push_back(std::move(t));
  }
  return Element(std::move(out), rows[0].names());
}

class PaddedBatchIterator : public UnaryIterator {
 public:
  PaddedBatchIterator(const PaddedBatchDataset* ds, const std::string& prefix)
      : UnaryIterator(ds->shared(), prefix), ds_(ds) {}

 protected:
  Result<std::optional<Element>> GetNextInternal() override {
    SLUICE_RETURN_IF_ERROR(ReadBatchRows(input_.get(), ds_->batch_size(), &rows_));
    if (rows_.empty()) return std::nullopt;
    if (ds_->drop_remainder() && static_cast<int64_t>(rows_.size()) < ds_->batch_size()) {
      rows_.clear();
      return std::nullopt;
    }
    auto out = ds_->MakeBatch(rows_);
    rows_.clear();
    if (!out.ok()) return out.status().WithContext("PaddedBatch");
    return std::move(out).value();
  }

  Result<int64_t> SkipInternal(int64_t n) override {
    return SkipBatches(input_.get(), n, ds_->batch_size(), ds_->drop_remainder());
  }

 private:
  const PaddedBatchDataset* ds_;
  std::vector<Element> rows_;
};

Result<IteratorPtr> PaddedBatchDataset::MakeIteratorInternal(
    const IteratorContext&, const std::string& prefix) const {
  return IteratorPtr(new PaddedBatchIterator(this, prefix));
}

// Checks padded shapes and padding values against a known input spec (tf.data raises the
// same errors when the dataset is built) and returns the output spec.
Result<ElementSpec> OutputSpec(const ElementSpec& in,
                               const std::vector<PartialShape>& padded,
                               const std::vector<Tensor>& values, int64_t batch) {
  if (in.unknown) return in;
  const size_t k = in.size();
  if (!padded.empty() && padded.size() != k) {
    return InvalidArgumentError(std::to_string(padded.size()) +
                                " padded shapes for elements of " + std::to_string(k) +
                                " components " + in.ToString());
  }
  if (values.size() > 1 && values.size() != k) {
    return InvalidArgumentError(std::to_string(values.size()) +
                                " padding values for elements of " + std::to_string(k) +
                                " components " + in.ToString());
  }
  ElementSpec out;
  out.names = in.names;
  for (size_t c = 0; c < k; ++c) {
    const TensorSpec& s = in[c];
    if (!values.empty()) {
      const Tensor& v = values[values.size() == 1 ? 0 : c];
      if (v.dtype() != s.dtype) {
        return InvalidArgumentError("padding value for component " + std::to_string(c) +
                                    " is " + std::string(DTypeName(v.dtype())) +
                                    " but the component is " +
                                    std::string(DTypeName(s.dtype)));
      }
    }
    PartialShape shape = s.shape;
    if (!padded.empty() && padded[c].rank_known()) {
      const PartialShape& p = padded[c];
      if (s.shape.rank_known()) {
        if (p.rank() != s.shape.rank()) {
          return InvalidArgumentError("padded shape " + p.ToString() + " of component " +
                                      std::to_string(c) + " has rank " + Str(p.rank()) +
                                      ", the component " + s.shape.ToString() +
                                      " has rank " + Str(s.shape.rank()));
        }
        std::vector<int64_t> dims(p.rank());
        for (int d = 0; d < p.rank(); ++d) {
          const int64_t pd = p.dim(d), sd = s.shape.dim(d);
          if (pd >= 0 && sd >= 0 && sd > pd) {
            return InvalidArgumentError(
                "padded shape " + p.ToString() + " is smaller than the shape " +
                s.shape.ToString() + " of component " + std::to_string(c));
          }
          dims[d] = pd >= 0 ? pd : sd;
        }
        shape = PartialShape(std::move(dims));
      } else {
        shape = p;
      }
    }
    out.components.push_back({s.dtype, shape.WithLeadingDim(batch)});
  }
  return out;
}

}  // namespace

void RegisterPaddedBatchDataset(Registry* r) {
  r->RegisterOp(
      OpDef(std::string(kOp))
          .Summary("Batches elements, padding each component to a common shape.")
          .Inputs(1)
          .Attr("batch_size", AttrType::kInt, "Elements per batch, > 0.")
          .Attr("padded_shapes", AttrType::kShapeList, std::vector<PartialShape>{},
                "Per component; -1 dimensions (or an empty list): the batch's longest.")
          .Attr("padding_values", AttrType::kTensorList, std::vector<Tensor>{},
                "Scalar per component; empty: zero / \"\".")
          .Attr("drop_remainder", AttrType::kBool, false,
                "Drop a last batch smaller than batch_size.")
          .Traits({.seed_mix = SeedMix::kNone}),
      [](OpArgs args) -> Result<DatasetPtr> {
     SLUICE_ASSIGN_OR_RETURN(int64_t bs, GetAttr<int64_t>(args.attrs, kOp, "batch_size"));
     SLUICE_ASSIGN_OR_RETURN(auto padded, GetAttrOr<std::vector<PartialShape>>(
                                              args.attrs, kOp, "padded_shapes", {}));
     SLUICE_ASSIGN_OR_RETURN(auto values, GetAttrOr<std::vector<Tensor>>(
                                              args.attrs, kOp, "padding_values", {}));
     SLUICE_ASSIGN_OR_RETURN(bool drop,
                             GetAttrOr<bool>(args.attrs, kOp, "drop_remainder", false));
     if (bs <= 0)
       return InvalidArgumentError("PaddedBatch: batch_size must be > 0, got " + Str(bs));
     for (size_t i = 0; i < padded.size(); ++i) {
       if (!padded[i].rank_known()) continue;
       for (int64_t d : padded[i].dims()) {
         if (d < -1) {
           return InvalidArgumentError("PaddedBatch: padded shape " +
                                       padded[i].ToString() +
                                       " has a negative dimension");
         }
       }
     }
     for (size_t i = 0; i < values.size(); ++i) {
       if (!values[i].valid() || values[i].rank() != 0) {
         return InvalidArgumentError("PaddedBatch: padding value " + std::to_string(i) +
                                     " must be a scalar, got " +
                                     values[i].DebugString(2));
       }
     }
     auto spec =
         OutputSpec(args.inputs[0]->element_spec(), padded, values, drop ? bs : -1);
     if (!spec.ok()) return spec.status().WithContext("PaddedBatch");
     return DatasetPtr(std::make_shared<PaddedBatchDataset>(
         std::move(args), std::move(*spec), bs, std::move(padded), std::move(values),
         drop));
   });
}

}  // namespace sluice
