// Iterator: a stateful, checkpointable cursor over a Dataset (Dataset::MakeIterator).
//
//   auto it = ds.MakeIterator();                    // Result<std::unique_ptr<Iterator>>
//   while (true) {
//     auto next = (*it)->GetNext();                 // Result<std::optional<Element>>
//     if (!next.ok()) { /* error: names the operator, file, offset */ break; }
//     if (!*next) break;                            // end of data
//     Use(**next);
//   }
//   std::string checkpoint = *(*it)->Save();        // later: Restore(checkpoint)
//
// Thread-safety: below, per method.
#ifndef SLUICE_ITERATOR_H_
#define SLUICE_ITERATOR_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/element.h"
#include "sluice/stats.h"
#include "sluice/status.h"

namespace sluice {

namespace internal {
struct IteratorAccess;  // src/api/dataset_internal.h
}  // namespace internal

// A stateful cursor over a Dataset. One thread calls GetNext/Save/Restore at a time;
// Cancel, Stats, Snapshot and TunedParameters may be called from any thread.
//
// Destroying an iterator cancels it: its background threads stop within milliseconds (a
// user function already running is waited for) and are joined. If another thread is
// blocked in GetNext, it returns Cancelled and the destructor waits for it to leave.
class Iterator {
 public:
  ~Iterator();
  Iterator(const Iterator&) = delete;
  Iterator& operator=(const Iterator&) = delete;

  // The next element, std::nullopt at the end (and on every call after), or an error.
  // After an error the iterator can go on (the failed element is lost); ops that cannot
  // continue keep returning the error.
  Result<std::optional<Element>> GetNext();
  // A compact binary checkpoint of the position (see docs/checkpointing.md).
  Result<std::string> Save();
  // Restores a checkpoint taken from an iterator of the same dataset. Call on a fresh
  // iterator; continuing yields what the saved iterator would have yielded.
  Status Restore(std::string_view checkpoint);
  const ElementSpec& element_spec() const;
  // Stops all work: pending and later GetNext calls return Cancelled. Thread-safe.
  void Cancel();
  // Stats of every live iterator in the tree, root first.
  std::vector<IteratorStats> Stats() const;
  // The stats tree plus pipeline-wide figures. Thread-safe.
  PipelineStats Snapshot() const;
  // The current values of the knobs the autotuner owns (AUTOTUNE parallelism and buffer
  // sizes), in tree order. Empty when nothing is tuned. Thread-safe.
  std::vector<TunedParameter> TunedParameters() const;

 private:
  // The iterator tree, its runtime and tuner (src/api/dataset.cc); made by
  // Dataset::MakeIterator through internal::IteratorAccess (src/api/dataset_internal.h).
  friend struct internal::IteratorAccess;
  struct Impl;
  explicit Iterator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace sluice

#endif  // SLUICE_ITERATOR_H_
