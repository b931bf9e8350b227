// IteratorBase: the internal base class of every op's iterator.
//
// The public GetNext/Skip/Save/Restore are non-virtual wrappers (tf.data dataset.h): they
// record stats and add context to errors; subclasses implement the *Internal methods.
//
// The iterator tree. An iterator creates the iterators of its inputs with MakeChild(), which
// names the child (its prefix, e.g. "Root/Batch[0]/Map[0]") and links it into the tree for
// Stats(). Children unlink themselves when destroyed, so dynamically created inner iterators
// (flat_map, interleave) come and go freely.
//
// Checkpoints. Save writes the iterator's position under its prefix and then its children's;
// Restore is called on a freshly made iterator of the same dataset and context (children of
// static inputs already exist; dynamic ones are re-created by the parent's RestoreInternal).
// Prefer positions over buffer contents so checkpoints stay small.
//
// Errors and progress. After GetNext returns an error the iterator has still made progress:
// the failed element (record, file, batch) is consumed, and the next call moves on. So an
// unopenable file is reported once and then skipped, a corrupt record is reported and the
// reader resumes after it. This is what lets ignore_errors() skip failures without looping.
//
// Thread-safety: GetNext/Skip/Save/Restore are called by one thread at a time. The child
// list is guarded by a mutex so CollectStats may run from another thread.
#ifndef SLUICE_RUNTIME_ITERATOR_BASE_H_
#define SLUICE_RUNTIME_ITERATOR_BASE_H_

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/mutex.h"
#include "graph/dataset_node.h"
#include "runtime/checkpoint.h"
#include "runtime/node_stats.h"
#include "runtime/random_access.h"
#include "runtime/span.h"
#include "sluice/dataset.h"

namespace sluice {

class RandomAccess;
class RowStream;
class Runtime;
class SplitProvider;

// Context shared by an iterator tree.
struct IteratorContext {
  // The pipeline's pool, memory budget and options; null means Runtime::Default().
  Runtime* runtime_ptr = nullptr;
  Runtime* runtime() const;

  // Varies per top-level iterator instance, per repeat epoch and per parent element of
  // flat_map/interleave: ops whose randomness should change between iterations (shuffle
  // with reshuffle_each_iteration) mix it into their seed.
  uint64_t seed_mix = 0;

  IteratorContext Mixed(uint64_t v) const {
    IteratorContext c = *this;
    c.seed_mix = HashCombine(seed_mix, v);
    return c;
  }

  // Where the pipeline's single splittable source takes its work from
  // (runtime/split_provider.h); null: sources read all their data. Transformations pass
  // it to their inputs unchanged; datasets made by functions (interleave, flat_map,
  // group_by_window's reduce) get a context without it (WithoutSplits).
  std::shared_ptr<SplitProvider> split_provider;

  IteratorContext WithoutSplits() const {
    IteratorContext c = *this;
    c.split_provider = nullptr;
    return c;
  }
};

class IteratorBase {
 public:
  IteratorBase(DatasetPtr node, std::string prefix);
  virtual ~IteratorBase();
  IteratorBase(const IteratorBase&) = delete;
  IteratorBase& operator=(const IteratorBase&) = delete;

  // Called once by DatasetNode::MakeIterator after construction: create input iterators.
  virtual Status Initialize(const IteratorContext& ctx) { return Status::OK(); }

  // Returns Cancelled once the iterator is cancelled (a relaxed load per call), so a loop
  // that calls its input until something comes out stops when the pipeline is cancelled.
  Result<std::optional<Element>> GetNext() {
    // One named return object (NRVO), initialized from either prvalue: a second return
    // path would cost a Result move per call per operator, most of the per-element budget.
    // A cancelled iterator returns Cancelled; the span hook (src/runtime/span.h) is one
    // predictable branch when no recorder is attached.
    Result<std::optional<Element>> r =
        cancelled()             ? Result<std::optional<Element>>(CancelledStatus())
        : spans_ != nullptr     ? GetNextSpanned()
        : stats_.ShouldSample() ? GetNextTimed()
                                : GetNextInternal();
    if (r.ok()) [[likely]] {
      if (r->has_value()) stats_.CountProduced();
    } else {
      r = AddContext(r.status());
    }
    return r;
  }
  // Skips up to n elements; returns how many were skipped (< n only at the end).
  Result<int64_t> Skip(int64_t n);
  Status Save(CheckpointWriter* w) const;
  Status Restore(const CheckpointReader& r);

  // Unlinks this iterator from its parent (IteratorDeleter calls it before deleting).
  void DetachFromParent();

  const std::string& prefix() const { return prefix_; }
  // The id of this iterator's graph node (IteratorStats::node_id); -1 outside the graph.
  int64_t node_id() const { return node_id_; }
  const DatasetNode& node() const { return *node_; }
  const DatasetPtr& node_ptr() const { return node_; }
  NodeStats& stats() { return stats_; }
  const NodeStats& stats() const { return stats_; }
  // This iterator's stats and its live descendants', pre-order; `parent` is the index of
  // this iterator's parent in *out. The first row of each graph node includes the totals
  // of the node's retired iterators (NodeTotals, runtime/node_stats.h).
  void CollectStats(std::vector<IteratorStats>* out, int parent = -1) const;

  // Stops background work and wakes blocked calls (which return Cancelled), in this
  // iterator and all its descendants. Thread-safe; idempotent. Asynchronous iterators
  // override it (and call the base to reach their children); their destructors call it.
  // The base sets cancelled() first; children made later by MakeChild start cancelled.
  virtual void Cancel();
  // True once Cancel has been called here or on an ancestor. GetNext and Skip then return
  // Cancelled; loops that can run long without calling them check it (CheckCancelled).
  bool cancelled() const { return cancelled_.load(std::memory_order_relaxed); }
  // True for iterators that call their inputs on their own threads, not inside GetNext
  // (the stats plane then does not subtract the inputs' time from theirs).
  virtual bool async() const { return false; }
  // This iterator as a server of rows by index (runtime/random_access.h), or null when it
  // cannot serve them (the default). Valid for the iterator's lifetime once initialized.
  virtual RandomAccess* AsRandomAccess() { return nullptr; }
  // This iterator as a stream of rows known ahead (runtime/random_access.h, "Gathering a
  // batch"), or null (the default).
  virtual RowStream* AsRowStream() { return nullptr; }

 protected:
  // ---- Recording into the stats plane (the only way ops write their NodeStats) ----
  // A buffer's contents: an element of `bytes` entered or left it.
  void RecordBufferEnqueue(int64_t bytes) {
    stats_.buffered_bytes.fetch_add(bytes, std::memory_order_relaxed);
    stats_.buffered_elements.fetch_add(1, std::memory_order_relaxed);
  }
  void RecordBufferDequeue(int64_t bytes) {
    stats_.buffered_bytes.fetch_sub(bytes, std::memory_order_relaxed);
    stats_.buffered_elements.fetch_sub(1, std::memory_order_relaxed);
  }
  // A buffer's contents, set at once (ops that recount them).
  void RecordBuffered(int64_t bytes, int64_t elements) {
    stats_.buffered_bytes.store(bytes, std::memory_order_relaxed);
    stats_.buffered_elements.store(elements, std::memory_order_relaxed);
  }
  // Elements the buffer may hold (0: unbuffered) and concurrent calls in use.
  void RecordBufferLimit(int64_t elements) {
    stats_.buffer_limit.store(elements, std::memory_order_relaxed);
  }
  void RecordParallelism(int64_t calls) {
    stats_.parallelism.store(calls, std::memory_order_relaxed);
  }
  // Bytes read from files, as a running total of this iterator (sources).
  void RecordFileBytesRead(int64_t total) {
    stats_.file_bytes_read.store(total, std::memory_order_relaxed);
  }
  // An element dropped because computing it failed (ignore_errors).
  void RecordSkipped() { stats_.elements_skipped.fetch_add(1, std::memory_order_relaxed); }

  virtual Result<std::optional<Element>> GetNextInternal() = 0;
  virtual Status SaveInternal(CheckpointWriter* w) const = 0;
  virtual Status RestoreInternal(const CheckpointReader& r) = 0;
  // Default: calls GetNextInternal n times. Override when skipping is cheaper (ranges,
  // slices, maps of skippable functions, batches).
  virtual Result<int64_t> SkipInternal(int64_t n);

  // Creates a child iterator over `node` named prefix_/op[label].
  Result<IteratorPtr> MakeChild(const DatasetPtr& node,
                                                  const IteratorContext& ctx,
                                                  const std::string& label) const;
  // Shorthand for the i-th input of this node, labelled by i.
  Result<IteratorPtr> MakeInput(const IteratorContext& ctx,
                                                  size_t i = 0) const;
  // Prefixes `s` with this iterator's op and prefix unless it already names it.
  Status AddContext(const Status& s) const;
  // The span recorder for work an iterator does outside GetNext (pool tasks of parallel
  // ops report it as spans "<prefix>/fn" of their own), or null: none attached, or the
  // recorder does not want this iterator's work spans (Wants("<prefix>/fn", op)).
  SpanRecorder* span_recorder() const { return work_spans_; }
  // Cancelled when cancelled(), else OK: for loops that may run without producing.
  Status CheckCancelled() const {
    return cancelled() ? CancelledStatus() : Status::OK();
  }

 private:
  // The error of a cancelled iterator.
  Status CancelledStatus() const;
  // GetNextInternal, timed for the stats plane (a sampled call).
  Result<std::optional<Element>> GetNextTimed();
  // GetNextInternal reported to the span recorder (sampled for the stats plane as usual).
  Result<std::optional<Element>> GetNextSpanned();
  friend class DatasetNode;
  void Link(IteratorBase* child) const;
  void Unlink(IteratorBase* child) const;
  // This iterator's counters (its row less the tree fields and gauges), its live
  // children's counts and CPU included in what it consumed and subtracted.
  void FillCounters(IteratorStats* s) const;
  void CollectStats(std::vector<IteratorStats>* out, int parent,
                    std::unordered_set<int64_t>* seen) const;
  // Adds this iterator's counters and its live descendants' to their nodes' totals, once.
  void RetireTree() const;

  DatasetPtr node_;
  std::string prefix_;
  // Set by DatasetNode::MakeIterator from the pipeline's Runtime.
  int64_t node_id_ = -1;
  // The node's retired totals (null outside the graph) and the table that holds them.
  std::shared_ptr<NodeTotalsTable> totals_table_;
  NodeTotals* totals_ = nullptr;
  mutable std::atomic<bool> retired_{false};
  SpanRecorder* spans_ = nullptr;       // GetNext spans
  SpanRecorder* work_spans_ = nullptr;  // pool work spans (span_recorder())
  // Span::cache of this iterator's spans (the recorder's per-iterator slot).
  std::atomic<int64_t> span_cache_{-1};
  mutable NodeStats stats_;  // mutable: Unlink (const) leaves dead children's totals here
  mutable Mutex children_mu_;
  mutable std::vector<IteratorBase*> children_ GUARDED_BY(children_mu_);
  mutable IteratorBase* parent_ = nullptr;
  std::atomic<bool> cancelled_{false};
};

// UnaryIterator: the base of iterators with exactly one input that is created at
// Initialize and lives as long as the iterator (map, filter, batch, take, ...).
//
// Initialize makes input_ with MakeInput(ctx) and keeps ctx in ctx_ (for inner iterators
// the subclass creates later), then calls InitializeState(ctx). A checkpoint holds the
// subclass's state (SaveState/RestoreState, under prefix()) followed by the input's;
// RestoreState runs on a freshly initialized iterator, before the input is restored, and
// an error from it is returned without restoring the input.
//
// Ops whose input is re-created (repeat, concatenate, shuffle's replay) or made lazily
// (cache), or whose checkpoint sometimes omits the input, derive from IteratorBase.
//
// Thread-safety: as IteratorBase.
class UnaryIterator : public IteratorBase {
 public:
  using IteratorBase::IteratorBase;

  Status Initialize(const IteratorContext& ctx) final;

 protected:
  // Hooks; each defaults to OK (stateless ops need none of them).
  virtual Status InitializeState(const IteratorContext& ctx) { return Status::OK(); }
  virtual Status SaveState(CheckpointWriter* w) const { return Status::OK(); }
  virtual Status RestoreState(const CheckpointReader& r) { return Status::OK(); }

  Status SaveInternal(CheckpointWriter* w) const final;
  Status RestoreInternal(const CheckpointReader& r) final;

  IteratorPtr input_;  // non-null after a successful Initialize
  IteratorContext ctx_;                  // the context Initialize was called with
};

// IndexedIterator: the base of source iterators that produce rows 0 .. num_rows() - 1 of
// a known, fixed count by index (from_tensors, image_folder, idx, ...). It keeps the
// index of the next row, skips by moving it (no row is built), and checkpoints it as
// "next"; Restore rejects an index outside [0, num_rows()] with DataLoss.
//
// Row(i) is called after the index has moved past i: the row is consumed even when it
// fails. A subclass that cannot go on after an error calls End().
//
// With a split provider in the context, each split names a row (an int64 scalar index,
// SplitRowIndex) and GetNext produces that row; the iterator ends when the provider does.
// Skip takes and drops splits. The checkpoint's "next" is then 0 (reading) or num_rows()
// (ended), and Save calls the provider's MarkCheckpoint.
//
// Without a split provider it is also a RowStream over its own rows (rows next, next+1,
// ...): a source whose rows lie in memory (MemoryRows) gathers a Batch's rows in one call.
//
// Thread-safety: as IteratorBase.
class IndexedIterator : public IteratorBase, public RandomAccess, public RowStream {
 public:
  using IteratorBase::IteratorBase;

  // Keeps ctx's split provider, then calls InitializeRows.
  Status Initialize(const IteratorContext& ctx) final;

  // Serves rows by index (Row, without moving the index) unless a split provider is set.
  RandomAccess* AsRandomAccess() override { return splits_ ? nullptr : this; }
  int64_t RowCount() const override { return num_rows(); }
  Result<Element> GetRow(int64_t i) override;
  bool GathersFromMemory() const override { return MemoryRows() != nullptr; }
  // Copies each row from MemoryRows() into the batch, prefetching the rows ahead.
  Result<Element> GatherRows(std::span<const int64_t> rows) override;

  RowStream* AsRowStream() override { return splits_ ? nullptr : this; }
  RandomAccess* StreamRows() override { return this; }
  // Moves the index; the rows are counted when gathered (GatherRows).
  int64_t TakeRows(int64_t n, int64_t* out) override;

 protected:
  // Subclass setup (default: none).
  virtual Status InitializeRows(const IteratorContext& ctx) { return Status::OK(); }
  // The number of rows; fixed for the iterator's lifetime.
  virtual int64_t num_rows() const = 0;
  // Row i, 0 <= i < num_rows().
  virtual Result<Element> Row(int64_t i) = 0;
  // Appended to checkpoint errors, e.g. " for 'path'" (default: nothing).
  virtual std::string Where() const { return ""; }
  // When every row is in memory and numeric: an element whose component c is a tensor
  // [num_rows(), ...] whose row i is component c of Row(i), with Row's names (default:
  // null). GatherRows copies from it.
  virtual const Element* MemoryRows() const { return nullptr; }

  // Moves to the end: the next GetNext returns nullopt.
  void End() { next_ = num_rows(); }

  Result<std::optional<Element>> GetNextInternal() final;
  Result<int64_t> SkipInternal(int64_t n) final;
  Status SaveInternal(CheckpointWriter* w) const final;
  Status RestoreInternal(const CheckpointReader& r) final;

 private:
  int64_t next_ = 0;
  std::shared_ptr<SplitProvider> splits_;
};

}  // namespace sluice

#endif  // SLUICE_RUNTIME_ITERATOR_BASE_H_
