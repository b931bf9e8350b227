// The stats plane as users and tools read it: per-iterator statistics of a live pipeline
// (Iterator::Snapshot, Iterator::Stats), one JSON schema for them (StatsToJson: the
// protobuf messages of src/runtime/proto/stats.proto), and a windowed reader (StatsWindow)
// for rates over an interval.
//
//   auto it = ds.MakeIterator();
//   StatsWindow window((*it)->Snapshot());
//   ... run for a while ...
//   PipelineStats now = (*it)->Snapshot();
//   StatsDelta d = window.Delta(now);            // what happened since the window began
//   double rate = d.nodes[0].elements_produced * 1e9 / d.duration_ns;
//   window.Reset(now);                           // the next window starts here
//   std::string json = StatsToJson(now);         // `sluice ... --json`, Python's stats()
//
// Every figure comes from the one stats plane the runtime keeps for every live iterator
// (src/runtime/node_stats.h); nothing keeps a private copy. Times and byte counts are
// estimates from sampled calls (docs/runtime.md), counts are exact.
//
// Thread-safety: plain values; a StatsWindow is used by one thread.
#ifndef SLUICE_STATS_H_
#define SLUICE_STATS_H_

#include <cstdint>
#include <string>
#include <vector>

namespace sluice {

// One tuned knob of a live pipeline (Iterator::TunedParameters).
struct TunedParameter {
  std::string prefix;  // the iterator, e.g. "Root/Prefetch[0]/MapAndBatch[0]"
  std::string name;    // "parallelism", "buffer_size", "cycle_length", ...
  int64_t value = 0;
  int64_t min = 0;
  int64_t max = 0;
  std::string op;      // the operator, e.g. "MapAndBatch"
};

// Statistics of one live iterator (a node of the iterator tree).
struct IteratorStats {
  std::string name;    // op name, e.g. "Map"
  std::string prefix;  // its place in the tree, e.g. "Root/Batch[0]/Map[0]"
  // The id of its graph node: the node's position in the GraphDef of the graph the
  // iterator runs (SerializeDataset of Iterator::dataset(); `sluice spec show` prints the
  // same ids as #id). -1 for iterators over datasets made by functions (flat_map's inner
  // datasets), which are not nodes of that graph.
  int64_t node_id = -1;
  int parent = -1;     // index of the parent in the snapshot's list; -1 for the root
  bool async = false;  // runs its input on its own threads (prefetch, parallel ops)
  // Static facts of the node: its cardinality (kInfiniteCardinality, kUnknownCardinality
  // or a count) and the exact bytes of every element when its spec fixes them (-1 when not).
  int64_t cardinality = -2;
  int64_t static_bytes_per_element = -1;
  int64_t elements_produced = 0;
  int64_t elements_consumed = 0;  // produced by its inputs (including finished ones)
  int64_t elements_skipped = 0;   // ignore_errors: failed elements dropped
  int64_t cpu_ns = 0;   // CPU time of this op's own work, its inputs excluded
  int64_t wall_ns = 0;  // time callers spent in its GetNext (inputs included)
  int64_t bytes_produced = 0;
  int64_t bytes_consumed = 0;
  int64_t buffered_bytes = 0;     // held in its buffer now
  int64_t buffered_elements = 0;
  int64_t buffer_limit = 0;       // elements its buffer may hold (0: unbuffered)
  int64_t parallelism = 0;        // concurrent calls in use (0: sequential)
  int64_t file_bytes_read = 0;    // bytes read from files (sources)
};

// A snapshot of a pipeline: its live iterator tree (root first, pre-order) and budgets.
struct PipelineStats {
  int64_t uptime_ns = 0;            // since the iterator was made
  int64_t cpu_budget = 0;           // threads in the pool
  int64_t ram_budget = 0;           // bytes; 0 = unlimited
  int64_t buffered_bytes = 0;       // reserved by buffers now
  int64_t peak_buffered_bytes = 0;  // high-water mark of buffered_bytes
  int64_t budget_overshoot_bytes = 0;  // worst excess over ram_budget (docs/runtime.md)
  std::vector<IteratorStats> nodes;
};

// The snapshot as one JSON object in the stats schema (src/runtime/proto/stats.proto):
// every field of PipelineStats and of each node, by its proto name, numbers as numbers.
// `indent` < 0 prints it on one line.
std::string StatsToJson(const PipelineStats& stats, int indent = -1);
// The schema's field names: the pipeline's, then a node's (tests compare projections).
std::vector<std::string> StatsPipelineFieldNames();
std::vector<std::string> StatsNodeFieldNames();

// What changed in a window: the counters' differences per iterator (matched by prefix;
// an iterator that appeared during the window counts from zero). Gauges (buffered bytes,
// parallelism, ...) are the window's end values.
struct StatsDelta {
  int64_t duration_ns = 0;
  // The tree was rebuilt during the window (Restore) or a counter went back: the deltas
  // are from the new tree's start, not from the window's.
  bool restarted = false;
  std::vector<IteratorStats> nodes;  // the end snapshot's nodes, counters as differences
};

// A window over the stats of one pipeline: Delta(now) is what happened between the
// window's start and `now`; Reset(now) starts the next window. The autotuner, the doctor
// and progress displays read rates this way instead of each keeping a previous snapshot.
class StatsWindow {
 public:
  StatsWindow() = default;
  explicit StatsWindow(PipelineStats start) : start_(std::move(start)) {}
  StatsDelta Delta(const PipelineStats& now) const;
  void Reset(PipelineStats now) { start_ = std::move(now); }
  const PipelineStats& start() const { return start_; }

 private:
  PipelineStats start_;
};

}  // namespace sluice

#endif  // SLUICE_STATS_H_
