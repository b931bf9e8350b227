// ShuffleBuffer (ops/shuffle_buffer.h): the shuffle of Shuffle and ShuffleAndRepeat.
#include "ops/shuffle_buffer.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include "core/coding.h"
#include "runtime/async_buffer.h"
#include "runtime/resources.h"

namespace sluice {

void ShuffleBuffer::Bind(const IteratorContext& ctx, IteratorBase* owner) {
  charge_.Bind(ctx, owner, "a smaller buffer_size");
  static_bytes_ = StaticElementBytes(owner->node().input(0)->element_spec());
}

void ShuffleBuffer::Reset(IteratorPtr input, uint64_t seed) {
  rng_ = Rng(seed);
  input_ = std::move(input);
  buffer_.clear();
  charge_.Clear();
  failed_ = Status::OK();
  hole_ = -1;
  consumed_ = 0;
  end_of_input_ = false;
  indices_valid_ = true;
}

Result<std::optional<Element>> ShuffleBuffer::Next() {
  if (!failed_.ok()) [[unlikely]] return failed_;
  // Refill the slot emptied by the previous call, then top the buffer up.
  if (hole_ >= 0) {
    std::optional<Element> e;
    if (!end_of_input_) {
      SLUICE_ASSIGN_OR_RETURN(e, ReadInput());
    }
    if (e) {
      const int64_t bytes = Bytes(*e);
      SLUICE_RETURN_IF_ERROR(Charge(bytes));
      buffer_[hole_] = {std::move(*e), consumed_ - 1, bytes};
    } else {
      if (hole_ + 1 < static_cast<int64_t>(buffer_.size())) {
        buffer_[hole_] = std::move(buffer_.back());
      }
      buffer_.pop_back();
    }
    hole_ = -1;
  }
  while (!end_of_input_ && static_cast<int64_t>(buffer_.size()) < buffer_size_) {
    SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, ReadInput());
    if (e) {
      const int64_t bytes = Bytes(*e);
      SLUICE_RETURN_IF_ERROR(Charge(bytes));
      buffer_.push_back({std::move(*e), consumed_ - 1, bytes});
      // A buffer size from an attribute must not drive memory on its own: a buffer that
      // cannot fit in the memory available is refused early (at powers of two), before
      // the budget's charge fails at the limit.
      const int64_t n = static_cast<int64_t>(buffer_.size());
      if (BatchMemoryCheckDue(n, buffer_size_)) {
        // First against the pipeline's RAM budget (the error names it), then against the
        // memory available.
        const int64_t card = input_->node().Cardinality();
        if (card == kInfiniteCardinality || card >= buffer_size_) {
          SLUICE_RETURN_IF_ERROR(charge_.CheckFits(buffer_size_, bytes));
        }
        SLUICE_RETURN_IF_ERROR(CheckBufferMemory("a shuffle buffer", buffer_size_,
                                                 input_->node().Cardinality(), n,
                                                 buffer_.front().element));
      }
    }
  }
  if (buffer_.empty()) return std::nullopt;
  hole_ = static_cast<int64_t>(rng_.UniformInt(buffer_.size()));
  charge_.Remove(buffer_[hole_].bytes);
  return std::move(buffer_[hole_].element);
}

Result<std::optional<Element>> ShuffleBuffer::ReadInput() {
  auto e = input_->GetNext();
  if (!e.ok()) {
    indices_valid_ = false;
    return e.status();
  }
  if (*e) {
    ++consumed_;
  } else {
    end_of_input_ = true;
  }
  return e;
}

Status ShuffleBuffer::Save(CheckpointWriter* w, const std::string& p) const {
  Rng::State st = rng_.state();
  w->WriteInt(p, "rng_key", static_cast<int64_t>(st.key));
  w->WriteInt(p, "rng_stream", static_cast<int64_t>(st.stream));
  w->WriteInt(p, "rng_counter", static_cast<int64_t>(st.counter));
  w->WriteInt(p, "rng_used", st.used);
  w->WriteInt(p, "consumed", consumed_);
  w->WriteInt(p, "end_of_input", end_of_input_ ? 1 : 0);
  w->WriteInt(p, "size", static_cast<int64_t>(buffer_.size()));
  w->WriteInt(p, "hole", hole_);
  const bool by_index = replayable_ && indices_valid_;
  w->WriteInt(p, "by_index", by_index ? 1 : 0);
  if (by_index) {
    // Ages (consumed - 1 - index) are small, so their varints are short.
    std::string ages;
    for (int64_t i = 0; i < static_cast<int64_t>(buffer_.size()); ++i) {
      if (i != hole_) {
        PutVarint64(&ages, static_cast<uint64_t>(consumed_ - 1 - buffer_[i].index));
      }
    }
    w->WriteString(p, "ages", ages);
    return Status::OK();  // the input is rebuilt by replay
  }
  for (int64_t i = 0; i < static_cast<int64_t>(buffer_.size()); ++i) {
    if (i != hole_) w->WriteElement(p, "slot" + std::to_string(i), buffer_[i].element);
  }
  return input_->Save(w);
}

Status ShuffleBuffer::Restore(const CheckpointReader& r, const std::string& p,
                              IteratorPtr fresh_input) {
  SLUICE_ASSIGN_OR_RETURN(int64_t key, r.ReadInt(p, "rng_key"));
  SLUICE_ASSIGN_OR_RETURN(int64_t stream, r.ReadInt(p, "rng_stream"));
  SLUICE_ASSIGN_OR_RETURN(int64_t counter, r.ReadInt(p, "rng_counter"));
  SLUICE_ASSIGN_OR_RETURN(int64_t used, r.ReadInt(p, "rng_used"));
  SLUICE_ASSIGN_OR_RETURN(int64_t consumed, r.ReadInt(p, "consumed"));
  SLUICE_ASSIGN_OR_RETURN(int64_t eoi, r.ReadInt(p, "end_of_input"));
  SLUICE_ASSIGN_OR_RETURN(int64_t size, r.ReadInt(p, "size"));
  SLUICE_ASSIGN_OR_RETURN(int64_t hole, r.ReadInt(p, "hole"));
  SLUICE_ASSIGN_OR_RETURN(int64_t by_index, r.ReadInt(p, "by_index"));
  const int64_t live = size - (hole >= 0 ? 1 : 0);
  if (used < 0 || used > 4 || consumed < 0 || size < 0 || size > buffer_size_ ||
      hole < -1 || hole >= size || live > consumed) {
    return DataLossError(op_ + ": inconsistent checkpoint (size " + std::to_string(size) +
                         ", hole " + std::to_string(hole) + ", consumed " +
                         std::to_string(consumed) + ", buffer_size " +
                         std::to_string(buffer_size_) + ")");
  }
  Reset(std::move(fresh_input), 0);
  rng_ = Rng::FromState({static_cast<uint64_t>(key), static_cast<uint64_t>(stream),
                         static_cast<uint64_t>(counter), static_cast<uint32_t>(used)});
  consumed_ = consumed;
  end_of_input_ = eoi != 0;
  hole_ = hole;
  if (by_index) {
    if (!replayable_) {
      return FailedPreconditionError(
          op_ + ": checkpoint stores buffer positions but the input is not replayable");
    }
    return RestoreByReplay(r, p, size);
  }
  indices_valid_ = false;  // positions of restored elements are not known
  // No reserve(size): each slot must be present in the checkpoint, which bounds it.
  for (int64_t i = 0; i < size; ++i) {
    Slot s;
    if (i != hole_) {
      SLUICE_ASSIGN_OR_RETURN(s.element, r.ReadElement(p, "slot" + std::to_string(i)));
      s.bytes = Bytes(s.element);
      SLUICE_RETURN_IF_ERROR(Charge(s.bytes));
    }
    buffer_.push_back(std::move(s));
  }
  return input_->Restore(r);
}

Status ShuffleBuffer::RestoreByReplay(const CheckpointReader& r, const std::string& p,
                                      int64_t size) {
  SLUICE_ASSIGN_OR_RETURN(std::string ages, r.ReadString(p, "ages"));
  const int64_t live = size - (hole_ >= 0 ? 1 : 0);
  // Every varint takes at least one byte: bound the count before allocating.
  if (static_cast<int64_t>(ages.size()) < live) {
    return DataLossError(op_ + ": checkpoint 'ages' holds " + std::to_string(ages.size()) +
                         " bytes for " + std::to_string(live) + " buffered elements");
  }
  buffer_.resize(size);
  std::vector<std::pair<int64_t, int64_t>> order;  // (input index, slot)
  order.reserve(live);
  std::string_view in(ages);
  for (int64_t i = 0; i < size; ++i) {
    if (i == hole_) continue;
    uint64_t age;
    if (!GetVarint64(&in, &age) || age >= static_cast<uint64_t>(consumed_)) {
      return DataLossError(op_ + ": corrupt buffer position " + std::to_string(i) +
                           " in checkpoint");
    }
    order.emplace_back(consumed_ - 1 - static_cast<int64_t>(age), i);
  }
  if (!in.empty()) return DataLossError(op_ + ": trailing bytes in checkpoint 'ages'");
  std::sort(order.begin(), order.end());
  for (size_t i = 1; i < order.size(); ++i) {
    if (order[i].first == order[i - 1].first) {
      return DataLossError(op_ + ": input index " + std::to_string(order[i].first) +
                           " appears twice in checkpoint");
    }
  }
  int64_t pos = 0;
  for (const auto& [index, slot] : order) {
    SLUICE_RETURN_IF_ERROR(SkipInput(index - pos, index));
    SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, input_->GetNext());
    if (!e) return InputEndedEarly(index);
    const int64_t bytes = Bytes(*e);
    SLUICE_RETURN_IF_ERROR(Charge(bytes));
    buffer_[slot] = {std::move(*e), index, bytes};
    pos = index + 1;
  }
  return SkipInput(consumed_ - pos, consumed_);
}

Status ShuffleBuffer::SkipInput(int64_t n, int64_t target) {
  if (n <= 0) return Status::OK();
  SLUICE_ASSIGN_OR_RETURN(int64_t k, input_->Skip(n));
  if (k < n) return InputEndedEarly(target - n + k);
  return Status::OK();
}

Status ShuffleBuffer::InputEndedEarly(int64_t at) const {
  return FailedPreconditionError(
      op_ + ": the input ended after " + std::to_string(at) +
      " elements while restoring a checkpoint that consumed " + std::to_string(consumed_) +
      " (the input changed since the checkpoint was taken)");
}

}  // namespace sluice
