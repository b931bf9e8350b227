// ShuffleBuffer: the shuffle that Shuffle and ShuffleAndRepeat (its fusion with Repeat)
// run over one pass of their input (tf.data ShuffleDatasetOp's algorithm): a buffer of
// buffer_size slots; each Next returns a uniformly random slot and refills that slot with
// the next input element on the following call; at the end of the input the buffer
// drains in random order.
//
// Checkpoints, under the owning iterator's prefix. When the input is replayable and no
// input error was seen, the buffer is not stored: only the RNG state, the number of input
// elements consumed and, per slot, the input index of its element (as a small "age").
// Restore walks a fresh input iterator, skipping the gaps between buffered indices
// (cheap for ranges, slices, batches, skippable maps) and reading back only the buffered
// elements. Otherwise (input not replayable, or an input error made input positions
// ambiguous on replay) the buffered elements and the input's state are stored. Every
// count read from a checkpoint is checked before it sizes anything; errors name `op`.
//
// Memory. The buffered elements are charged to the pipeline's RAM budget as a held buffer
// (runtime/buffer_charge.h, rules in runtime/memory_budget.h) and published in the owner's
// buffered_bytes / buffered_elements gauges. An element that does not fit fails the
// pipeline with ResourceExhausted: that call and every later one return the error (the
// buffer never shrinks, so waiting would not help).
//
// Thread-safety: none; owned by one iterator (the IteratorBase contract).
#ifndef SLUICE_OPS_SHUFFLE_BUFFER_H_
#define SLUICE_OPS_SHUFFLE_BUFFER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/buffer_charge.h"
#include "runtime/iterator_base.h"

namespace sluice {

class ShuffleBuffer {
 public:
  ShuffleBuffer(std::string op, int64_t buffer_size, bool replayable)
      : op_(std::move(op)), buffer_size_(buffer_size), replayable_(replayable) {}

  // Charges the buffer to ctx's budget and owner's gauges (call from Initialize); owner's
  // input 0 is the shuffled input.
  void Bind(const IteratorContext& ctx, IteratorBase* owner);
  // Starts a shuffle of `input` seeded with `seed` (the buffer keeps its capacity).
  void Reset(IteratorPtr input, uint64_t seed);
  // Drops the input (the owner's "finished" state); has_input() is then false.
  void ClearInput() {
    input_.reset();
    buffer_.clear();
    charge_.Clear();
  }
  bool has_input() const { return input_ != nullptr; }
  int64_t consumed() const { return consumed_; }

  // The next shuffled element; nullopt once the input and the buffer are exhausted.
  Result<std::optional<Element>> Next();

  // Checkpoint of the shuffle (and of the input when its elements are stored).
  Status Save(CheckpointWriter* w, const std::string& prefix) const;
  // Restores what Save wrote into `fresh_input`, a new iterator over the same input
  // (replayed from its start, or restored from the checkpoint).
  Status Restore(const CheckpointReader& r, const std::string& prefix,
                 IteratorPtr fresh_input);

 private:
  struct Slot {
    Element element;
    int64_t index = -1;  // the element's position in the input
    int64_t bytes = 0;   // ElementBytes(element), as charged
  };

  // The next input element (nullopt at the end). An input error disables index-based
  // checkpoints until the next Reset.
  Result<std::optional<Element>> ReadInput();
  Status RestoreByReplay(const CheckpointReader& r, const std::string& prefix, int64_t size);
  Status SkipInput(int64_t n, int64_t target);
  Status InputEndedEarly(int64_t at) const;
  // An element's bytes: static_bytes_ when the input's spec fixes them.
  int64_t Bytes(const Element& e) const {
    return static_bytes_ >= 0 ? static_bytes_ : ElementBytes(e);
  }
  // Charges a buffered element of `bytes`; on failure the error sticks (failed_).
  Status Charge(int64_t bytes) {
    Status s = charge_.Add(bytes);
    if (!s.ok()) [[unlikely]] failed_ = s;
    return s;
  }

  const std::string op_;
  const int64_t buffer_size_;
  const bool replayable_;
  Rng rng_{0};
  IteratorPtr input_;
  bool indices_valid_ = true;
  std::vector<Slot> buffer_;
  int64_t hole_ = -1;     // slot returned by the last call, refilled by the next
  int64_t consumed_ = 0;  // input elements read
  bool end_of_input_ = false;
  BufferCharge charge_;  // the buffered elements (the hole's excluded)
  int64_t static_bytes_ = -1;  // every element's bytes, or -1 (set by Bind)
  Status failed_;        // ResourceExhausted once the buffer did not fit
};

}  // namespace sluice

#endif  // SLUICE_OPS_SHUFFLE_BUFFER_H_
