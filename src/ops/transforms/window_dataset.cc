// Window: sliding windows over the input (tf.data window).
//
// Deviation from tf.data: tf.data's window() yields a dataset per window; sluice elements
// are tensors, so each window is emitted as one element whose components are the members'
// components stacked along a new dimension 0 (shape [window_len, ...]). That is what a
// tf.data user gets from `window(...).flat_map(lambda w: w.batch(size))` (for one
// component; zip the component windows for several). Which elements form which window is
// exactly tf.data's: window i holds input elements i*shift + j*stride for j in [0, size)
// that exist, and the partial windows at the end are emitted unless drop_remainder. A
// failed input element keeps its position, as in tf.data: each window it belongs to fails
// with its error, and the other windows are unchanged.
//
// Memory: the buffered input elements (up to a window's span) are charged to the
// pipeline's RAM budget as a held buffer (runtime/buffer_charge.h); a span that does not
// fit fails the pipeline with ResourceExhausted, on that call and every later one.
#include <deque>

#include "graph/attr.h"
#include "ops/op_util.h"
#include "ops/ops.h"
#include "runtime/buffer_charge.h"
#include "runtime/iterator_base.h"
#include "runtime/resources.h"

namespace sluice {
namespace {

class WindowDataset : public DatasetNode {
 public:
  WindowDataset(OpArgs args, ElementSpec spec, int64_t size, int64_t shift,
                int64_t stride, bool drop_remainder)
      : DatasetNode("Window", std::move(args), std::move(spec)),
        size_(size),
        shift_(shift),
        stride_(stride),
        drop_remainder_(drop_remainder) {}

  int64_t Cardinality() const override {
    int64_t n = input(0)->Cardinality();
    if (n < 0) return n;
    if (drop_remainder_) return n >= span() ? (n - span()) / shift_ + 1 : 0;
    return n / shift_ + (n % shift_ != 0 ? 1 : 0);
  }

  int64_t size() const { return size_; }
  int64_t shift() const { return shift_; }
  int64_t stride() const { return stride_; }
  bool drop_remainder() const { return drop_remainder_; }
  // Input elements spanned by a full window: the buffer the iterator keeps.
  int64_t span() const { return (size_ - 1) * stride_ + 1; }

 protected:
  Result<IteratorPtr> MakeIteratorInternal(
      const IteratorContext& ctx, const std::string& prefix) const override;

 private:
  int64_t size_, shift_, stride_;
  bool drop_remainder_;
};

class WindowIterator : public UnaryIterator {
 public:
  WindowIterator(const WindowDataset* ds, const std::string& prefix)
      : UnaryIterator(ds->shared(), prefix), ds_(ds) {}

 protected:
  Status InitializeState(const IteratorContext& ctx) override {
    charge_.Bind(ctx, this, "a smaller window size or stride");
    return Status::OK();
  }

  Result<std::optional<Element>> GetNextInternal() override {
    SLUICE_ASSIGN_OR_RETURN(bool has, Advance());
    if (!has) return std::nullopt;
    if (!window_error_.ok()) {  // a member failed: the whole window does (tf.data)
      window_.clear();
      return window_error_;
    }
    // The window's members are buffer_[0], buffer_[stride], ... (taken before the shift).
    const size_t k = window_[0].size();
    std::vector<Tensor> out;
    out.reserve(k);
    std::vector<Tensor> column(window_.size());
    Status error;
    for (size_t c = 0; c < k && error.ok(); ++c) {
      for (size_t i = 0; i < window_.size(); ++i) {
        if (window_[i].size() != k) {
          error =
              InvalidArgumentError("window members have " + std::to_string(k) + " and " +
                                   std::to_string(window_[i].size()) + " components");
          break;
        }
        column[i] = window_[i][c];
      }
      if (!error.ok()) break;
      auto stacked = Stack(column);
      if (!stacked.ok()) {
        error = stacked.status().WithContext("component " + std::to_string(c));
        break;
      }
      out.push_back(std::move(stacked).value());
    }
    Names names = window_[0].names();
    window_.clear();
    if (!error.ok()) return error.WithContext("Window");
    return Element(std::move(out), std::move(names));
  }

  Result<int64_t> SkipInternal(int64_t n) override {
    int64_t done = 0;
    while (done < n) {
      SLUICE_ASSIGN_OR_RETURN(bool has, Advance());
      window_.clear();
      if (!has) break;
      ++done;
    }
    return done;
  }

  Status SaveState(CheckpointWriter* w) const override {
    w->WriteInt(prefix(), "input_done", input_done_ ? 1 : 0);
    w->WriteInt(prefix(), "pending_skip", pending_skip_);
    w->WriteInt(prefix(), "buffered", static_cast<int64_t>(buffer_.size()));
    for (size_t i = 0; i < buffer_.size(); ++i) {
      const std::string key = "buffer_" + std::to_string(i);
      if (!errors_[i].ok()) {  // a failed position: its error, no element
        w->WriteInt(prefix(), key + "_error_code",
                    static_cast<int64_t>(errors_[i].code()));
        w->WriteString(prefix(), key + "_error", errors_[i].message());
        continue;
      }
      w->WriteElement(prefix(), key, buffer_[i]);
    }
    return Status::OK();
  }

  Status RestoreState(const CheckpointReader& r) override {
    SLUICE_ASSIGN_OR_RETURN(int64_t done, r.ReadInt(prefix(), "input_done"));
    SLUICE_ASSIGN_OR_RETURN(pending_skip_, r.ReadInt(prefix(), "pending_skip"));
    SLUICE_ASSIGN_OR_RETURN(int64_t n, r.ReadInt(prefix(), "buffered"));
    if (n < 0 || n > ds_->span() || pending_skip_ < 0 || pending_skip_ > ds_->shift()) {
      return DataLossError("corrupt Window checkpoint: " + std::to_string(n) +
                           " buffered elements, " + std::to_string(pending_skip_) +
                           " to skip");
    }
    input_done_ = done != 0;
    ClearBuffer();
    failed_ = Status::OK();
    for (int64_t i = 0; i < n; ++i) {
      const std::string key = "buffer_" + std::to_string(i);
      if (r.Contains(prefix(), key + "_error_code")) {
        SLUICE_ASSIGN_OR_RETURN(int64_t code, r.ReadInt(prefix(), key + "_error_code"));
        SLUICE_ASSIGN_OR_RETURN(std::string msg, r.ReadString(prefix(), key + "_error"));
        if (code <= 0 || code > 16) {
          return DataLossError("corrupt Window checkpoint: error code " +
                               std::to_string(code));
        }
        buffer_.emplace_back();
        errors_.push_back(Status(static_cast<StatusCode>(code), std::move(msg)));
        continue;
      }
      SLUICE_ASSIGN_OR_RETURN(Element e, r.ReadElement(prefix(), key));
      SLUICE_RETURN_IF_ERROR(charge_.AddElement(e));
      buffer_.push_back(std::move(e));
      errors_.emplace_back();
    }
    return Status::OK();
  }

 private:
  // Fills the buffer, takes the next window's members into window_ and shifts the buffer.
  // False at the end. A failed input element takes its position in the buffer (as in
  // tf.data, so window boundaries stay where they are) and fails the windows it is a
  // member of: window_error_ is then the first failed member's error.
  Result<bool> Advance() {
    if (!failed_.ok()) return failed_;
    // The previous shift went past the buffer: skip the rest in the input, one at a time
    // so that an error leaves an exact count (the failed element counts as skipped).
    while (pending_skip_ > 0 && !input_done_) {
      auto k = input_->Skip(1);
      if (!k.ok() || *k == 1) --pending_skip_;
      if (!k.ok()) return k.status();
      if (*k == 0) input_done_ = true;
    }
    pending_skip_ = 0;
    const size_t span = static_cast<size_t>(ds_->span());
    while (buffer_.size() < span && !input_done_) {
      SLUICE_RETURN_IF_ERROR(CheckCancelled());
      Result<std::optional<Element>> e = input_->GetNext();
      if (!e.ok()) {
        if (e.status().code() == StatusCode::kCancelled) return e.status();
        buffer_.emplace_back();
        errors_.push_back(e.status());
        continue;
      }
      if (!*e) {
        input_done_ = true;
        break;
      }
      if (Status s = charge_.AddElement(**e); !s.ok()) {
        failed_ = s;
        return s;
      }
      buffer_.push_back(std::move(**e));
      errors_.emplace_back();
      const int64_t n = static_cast<int64_t>(buffer_.size());
      if (BatchMemoryCheckDue(n, ds_->span())) {
        SLUICE_RETURN_IF_ERROR(CheckBufferMemory(
            "a window", ds_->span(), input_->node().Cardinality(), n, buffer_.back()));
      }
    }
    if (buffer_.empty() || (ds_->drop_remainder() && buffer_.size() < span)) {
      ClearBuffer();
      input_done_ = true;
      pending_skip_ = 0;
      return false;
    }
    window_.clear();
    window_error_ = Status::OK();
    const size_t stride = static_cast<size_t>(ds_->stride());
    for (size_t i = 0; i < buffer_.size(); i += stride) {
      if (!errors_[i].ok() && window_error_.ok()) window_error_ = errors_[i];
      window_.push_back(buffer_[i]);
    }
    const size_t shift = static_cast<size_t>(ds_->shift());
    if (shift <= buffer_.size()) {
      for (size_t i = 0; i < shift; ++i) charge_.RemoveElement(buffer_[i]);
      buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<ptrdiff_t>(shift));
      errors_.erase(errors_.begin(), errors_.begin() + static_cast<ptrdiff_t>(shift));
    } else {
      pending_skip_ = static_cast<int64_t>(shift - buffer_.size());
      ClearBuffer();
    }
    return true;
  }

  void ClearBuffer() {
    buffer_.clear();
    errors_.clear();
    charge_.Clear();
  }

  const WindowDataset* ds_;
  std::deque<Element> buffer_;  // the input elements from the next window's start on
  std::deque<Status> errors_;   // per buffer_ entry: OK, or the error of a failed element
  std::vector<Element> window_;
  Status window_error_;         // of the window in window_: its first failed member's
  int64_t pending_skip_ = 0;  // input elements to drop before the next window starts
  bool input_done_ = false;
  BufferCharge charge_;  // buffer_'s elements
  Status failed_;        // ResourceExhausted once the span did not fit
};

Result<IteratorPtr> WindowDataset::MakeIteratorInternal(
    const IteratorContext&, const std::string& prefix) const {
  return IteratorPtr(new WindowIterator(this, prefix));
}

}  // namespace

void RegisterWindowDataset(Registry* r) {
  r->RegisterOp(
      OpDef("Window")
          .Summary("Windows of size elements taken every shift elements, each component "
                   "stacked.")
          .Inputs(1)
          .Attr("size", AttrType::kInt, "Elements per window, > 0.")
          .OptionalAttr("shift", AttrType::kInt, "Elements between window starts (default: size).")
          .Attr("stride", AttrType::kInt, int64_t{1}, "Distance between a window's members.")
          .Attr("drop_remainder", AttrType::kBool, false, "Drop windows smaller than size.")
          .Traits({.buffering = true, .seed_mix = SeedMix::kNone}),
      [](OpArgs args) -> Result<DatasetPtr> {
     SLUICE_ASSIGN_OR_RETURN(int64_t size,
                             GetAttr<int64_t>(args.attrs, "Window", "size"));
     SLUICE_ASSIGN_OR_RETURN(int64_t shift,
                             GetAttrOr<int64_t>(args.attrs, "Window", "shift", size));
     SLUICE_ASSIGN_OR_RETURN(int64_t stride,
                             GetAttrOr<int64_t>(args.attrs, "Window", "stride", 1));
     SLUICE_ASSIGN_OR_RETURN(
         bool drop, GetAttrOr<bool>(args.attrs, "Window", "drop_remainder", false));
     if (size <= 0 || shift <= 0 || stride <= 0) {
       return InvalidArgumentError(
           "Window: size, shift and stride must be > 0, got size " +
           std::to_string(size) + ", shift " + std::to_string(shift) + ", stride " +
           std::to_string(stride));
     }
     // The buffer holds (size - 1) * stride + 1 elements; refuse spans that overflow.
     if (size - 1 > (INT64_MAX - 1) / stride ||
         (size - 1) * stride + 1 > (int64_t{1} << 32)) {
       return InvalidArgumentError("Window: size " + std::to_string(size) +
                                   " with stride " + std::to_string(stride) +
                                   " spans too many elements");
     }
     ElementSpec spec = BatchedSpec(args.inputs[0]->element_spec(), drop ? size : -1);
     return DatasetPtr(std::make_shared<WindowDataset>(std::move(args), std::move(spec),
                                                       size, shift, stride, drop));
   });
}

}  // namespace sluice
