// NodeStats: the always-on statistics of one live iterator (the stats plane).
//
// Autotune, Plumber, the profiler, the CLI and the service metrics all read these counters
// through Iterator::Snapshot(); none keeps a private copy.
//
// Cost model. Counting is a relaxed load+store by the one thread driving the iterator.
// Timing uses clock_gettime(CLOCK_THREAD_CPUTIME_ID), a ~250 ns system call, so it is
// sampled: GetNext is timed once every `period` calls, where the period adapts so that
// timing costs about kTargetOverhead of the node's own time (every call of a 10 us batch,
// one in thousands of a 40 ns map), with random jitter against aliasing with periodic
// workloads. A timed call is the last of its period and stands for the period's calls:
// totals are the sum of sampled time x period (plus the running period at the recent
// mean), so the always-timed first calls count once each, not as a mean over all calls
// (a first call that fills a 10,000-element shuffle buffer would otherwise be charged
// once per sample). Element sizes are weighted the same way (bytes produced = weighted
// mean bytes x elements).
//
// Exclusive CPU. A sample measures GetNext inclusively. The snapshot subtracts the
// estimated inclusive CPU of the children that this iterator calls synchronously (all of
// them, unless it is asynchronous: prefetch, parallel map... call their inputs on their
// own threads), and adds the CPU of work it ran on the pool (RecordTask). Children that
// died (interleave's finished inputs, a Repeat's input of past epochs) leave the parent
// what it needs for its own row: the elements and bytes it consumed from them and their
// inclusive CPU, which it subtracts. Nothing else of theirs: their own counts are not the
// parent's.
//
// Rebuilt iterators. A graph node's counters outlive its iterators: an iterator over a
// node of the pipeline's graph (node_id >= 0) that dies adds its row to the node's
// NodeTotals (the Runtime's NodeTotalsTable, by node id), and a snapshot reports, for the
// first live iterator of the node in pre-order, its counters plus the node's retired
// totals. So a Cache under a Repeat that is rebuilt every epoch reports all the elements
// and CPU of all its epochs, and every figure of a node only grows while the tree lives.
// Several live iterators of one node (a shared node used twice) keep a row each; the
// node's totals are the sum of its rows. A node with no live iterator has no row (its
// totals show again when an iterator of it is made). Iterators over datasets made by
// functions (node_id -1: interleave's and flat_map's inner pipelines) have no node to
// retire to: as before, they live on only in their parent's consumed counts and CPU.
// Restore starts a fresh table with the new tree, so counters start again from zero
// (StatsDelta::restarted), as they did. An iterator and its whole subtree retire when it
// leaves its parent, under the parent's child-list lock, which a snapshot holds while it
// reads that child's rows: one snapshot never sees an iterator both live and retired, or
// neither (what a dying subtree's threads do after that is not counted).
//
// Thread-safety: the GetNext-side members are written by the driving thread only and read
// by anyone; task, gauge and dead-children members are written by any thread.
#ifndef SLUICE_RUNTIME_NODE_STATS_H_
#define SLUICE_RUNTIME_NODE_STATS_H_

#include <time.h>

#include <atomic>
#include <cstdint>
#include <memory>

#include "sluice/stats.h"

namespace sluice {

class Element;
struct ElementSpec;

inline int64_t ThreadCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}
inline int64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}
// Bytes held by an element's tensors (string tensors: their strings' bytes).
int64_t ElementBytes(const Element& e);
// The exact bytes of every element of `spec` when it is fully shaped and numeric and at
// most 2^62 bytes, else -1 (a node's static fact in the stats plane; buffer estimates).
int64_t StaticElementBytes(const ElementSpec& spec);

struct NodeStats {
  // Fraction of a node's time that timing may cost, and the cost of one timed call.
  static constexpr double kTargetOverhead = 0.005;
  static constexpr int64_t kSampleCostNs = 600;
  static constexpr int32_t kMaxPeriod = 8192;

  // ---- GetNext side (driving thread writes) ----
  std::atomic<int64_t> elements_produced{0};
  std::atomic<int64_t> elements_skipped{0};
  std::atomic<int32_t> countdown{1};  // calls until the next timed one
  std::atomic<int32_t> period{1};     // the period countdown started from
  std::atomic<int64_t> counted_calls{0};  // calls in completed periods
  std::atomic<int64_t> sampled_calls{0};
  std::atomic<int64_t> sampled_cpu_ns{0};
  std::atomic<int64_t> sampled_wall_ns{0};
  std::atomic<int64_t> sampled_elements{0};
  std::atomic<int64_t> sampled_bytes{0};
  // The same sums with each sample weighted by its period (what the estimates use).
  std::atomic<int64_t> weighted_cpu_ns{0};
  std::atomic<int64_t> weighted_wall_ns{0};
  std::atomic<int64_t> weighted_elements{0};
  std::atomic<int64_t> weighted_bytes{0};
  uint32_t jitter_state = 0x9e3779b9u;
  // The monotonic start of the timed call in progress; 0 between timed calls. A snapshot
  // adds what such a call has run beyond the mean (InflightExcessWallNs), so that a call
  // stalled across a window's edge (preempted on a busy machine, or slow) is not read as
  // time spent outside the iterator by the window that saw it start.
  std::atomic<int64_t> timed_call_start_ns{0};

  // ---- Pool tasks (any thread) ----
  std::atomic<int64_t> task_calls{0};
  std::atomic<int64_t> task_sampled{0};
  std::atomic<int64_t> task_sampled_cpu_ns{0};

  // ---- Gauges set by buffering operators and sources (any thread) ----
  std::atomic<int64_t> buffered_bytes{0};
  std::atomic<int64_t> buffered_elements{0};
  std::atomic<int64_t> buffer_limit{0};  // elements (slots) the buffer may hold; 0: none
  std::atomic<int64_t> parallelism{0};   // concurrent calls in use; 0: sequential op
  std::atomic<int64_t> file_bytes_read{0};

  // ---- Totals left by dead children ----
  std::atomic<int64_t> dead_children_produced{0};
  std::atomic<int64_t> dead_children_bytes{0};
  std::atomic<int64_t> dead_children_cpu_ns{0};

  void CountProduced(int64_t n = 1) { Add(elements_produced, n); }
  // Single-writer increment (no locked read-modify-write).
  static void Add(std::atomic<int64_t>& c, int64_t v) {
    c.store(c.load(std::memory_order_relaxed) + v, std::memory_order_relaxed);
  }

  // Decrements the countdown; true when this call is to be timed.
  bool ShouldSample() {
    const int32_t c = countdown.load(std::memory_order_relaxed) - 1;
    countdown.store(c, std::memory_order_relaxed);
    return c <= 0;
  }
  // Wall time the timed call in progress has run beyond the mean timed call, at `now_ns`
  // (MonotonicNs); 0 when none is in progress. Any thread.
  int64_t InflightExcessWallNs(int64_t now_ns) const;
  // Records a timed GetNext and starts the next period.
  void RecordSample(int64_t cpu_ns, int64_t wall_ns, const Element* produced);

  // Whether a pool task should be timed: one in kTaskPeriod, picked by a hash of the task
  // count so that alternating kinds of task are not aliased. Thread-safe.
  bool ShouldSampleTask() {
    const uint64_t c = static_cast<uint64_t>(task_calls.fetch_add(1, std::memory_order_relaxed));
    return ((c * 0x9E3779B97F4A7C15ull) >> 61) % kTaskPeriod == 0;
  }
  void RecordTask(int64_t cpu_ns) {
    task_sampled.fetch_add(1, std::memory_order_relaxed);
    task_sampled_cpu_ns.fetch_add(cpu_ns, std::memory_order_relaxed);
  }
  static constexpr int64_t kTaskPeriod = 4;

  // ---- Estimates ----
  int64_t EstimatedCalls() const;
  int64_t EstimatedInclusiveCpuNs() const;
  int64_t EstimatedWallNs() const;
  int64_t EstimatedBytesProduced() const;
  int64_t EstimatedTaskCpuNs() const;
};

// The totals a graph node's iterators left when they died: the counters of their
// IteratorStats rows (elements, exclusive CPU, wall, bytes in and out, file bytes), summed.
// An iterator adds its row once, when it leaves the tree (a Repeat's input at the end of
// each epoch, a Cache's input once it is filled, the old tree at Restore), so the cost is
// per iterator death, never per element: a few relaxed atomic adds, no lock of its own.
// Thread-safe.
struct NodeTotals {
  std::atomic<int64_t> iterators{0};  // iterators that retired here
  std::atomic<int64_t> elements_produced{0};
  std::atomic<int64_t> elements_consumed{0};
  std::atomic<int64_t> elements_skipped{0};
  std::atomic<int64_t> cpu_ns{0};
  std::atomic<int64_t> wall_ns{0};
  std::atomic<int64_t> bytes_produced{0};
  std::atomic<int64_t> bytes_consumed{0};
  std::atomic<int64_t> file_bytes_read{0};

  // Adds a dying iterator's counters (its row's, gauges and tree fields ignored).
  void Retire(const IteratorStats& row);
  // Adds these totals to the counters of `row` (gauges and tree fields untouched).
  void AddTo(IteratorStats* row) const;
};

// The retired totals of every node of a pipeline's graph, by node id (the Runtime owns
// one per iterator tree; the tree's iterators share it, so it outlives them all).
class NodeTotalsTable {
 public:
  explicit NodeTotalsTable(size_t nodes)
      : size_(nodes), totals_(std::make_unique<NodeTotals[]>(nodes)) {}
  // Null for ids outside the graph (-1: iterators over datasets made by functions).
  NodeTotals* at(int64_t id) const {
    return id >= 0 && static_cast<size_t>(id) < size_ ? &totals_[id] : nullptr;
  }
  size_t size() const { return size_; }

 private:
  size_t size_;
  std::unique_ptr<NodeTotals[]> totals_;
};

// Times a unit of pool work for a node (sampled): construct at the start of the task.
class TaskTimer {
 public:
  explicit TaskTimer(NodeStats* s) : stats_(s), start_(s->ShouldSampleTask() ? ThreadCpuNs() : -1) {}
  ~TaskTimer() {
    if (start_ >= 0) stats_->RecordTask(ThreadCpuNs() - start_);
  }
  TaskTimer(const TaskTimer&) = delete;
  TaskTimer& operator=(const TaskTimer&) = delete;

 private:
  NodeStats* stats_;
  int64_t start_;
};

}  // namespace sluice

#endif  // SLUICE_RUNTIME_NODE_STATS_H_
