// Operational analysis of a trace: visit ratios, rates per core, utilizations, sizes,
// randomness and sequential nodes (docs/doctor.md).
#include <algorithm>
#include <limits>

#include "sluice/plumber.h"

namespace sluice::plumber {

Result<Analysis> Analyze(const Trace& trace) {
  if (trace.nodes.empty()) return InvalidArgumentError("plumber: the trace has no nodes");
  Analysis a;
  a.trace = trace;
  a.root = static_cast<int64_t>(trace.nodes.size()) - 1;
  const TraceNode& root = trace.nodes[a.root];
  if (root.elements <= 0 || trace.duration_ns <= 0) {
    return FailedPreconditionError(
        "plumber: the traced window delivered no elements (the pipeline ended during the "
        "warm-up or is stalled); trace longer or with less warm-up");
  }
  const double re = static_cast<double>(root.elements);
  const double dur = static_cast<double>(trace.duration_ns);
  a.root_elements_per_second = re * 1e9 / dur;

  int64_t sizes = 0, seen = 0;
  for (const auto& [path, size] : trace.file_sizes) sizes += size;
  for (const auto& [path, read] : trace.file_bytes_read) seen += read;
  a.seen_fraction = sizes > 0 ? static_cast<double>(seen) / sizes : 0;

  // Which nodes have file reads below them (sizes scale from the files seen).
  std::vector<bool> reads_files(trace.nodes.size(), false);
  std::vector<bool> stateful_below(trace.nodes.size(), false);
  double op_cpu = 0;
  a.nodes.resize(trace.nodes.size());
  for (const TraceNode& n : trace.nodes) {
    NodeAnalysis& x = a.nodes[n.id];
    x.id = n.id;
    x.name = n.name;
    x.visit_ratio = n.elements / re;
    // A timed call's estimate carries one clock read; a synchronous node's timed input
    // calls (subtracted from its own) cancel it, one per input element. The rest stays.
    int64_t untimed = n.elements;
    if (!n.async) {
      for (int64_t in : n.inputs) untimed -= trace.nodes[in].elements;
    }
    const double cpu = std::max(
        0.0, static_cast<double>(n.cpu_ns) - trace.machine.timer_ns * std::max<int64_t>(0, untimed));
    x.cpu_ns_per_root = cpu / re;
    x.rate_per_core = x.cpu_ns_per_root > 0 ? 1e9 / x.cpu_ns_per_root
                                            : std::numeric_limits<double>::infinity();
    x.utilization = cpu / dur;
    const int64_t elems = n.total_elements > 0 ? n.total_elements : n.elements;
    const int64_t bytes = n.total_elements > 0 ? n.total_bytes_produced : n.bytes_produced;
    x.bytes_per_element = elems > 0 ? static_cast<double>(bytes) / elems : 0;
    x.cardinality = n.cardinality;
    x.random_at_or_below = n.random;
    reads_files[n.id] = n.file_bytes_read > 0 || (n.source && seen > 0 && n.op != "Range");
    stateful_below[n.id] = n.stateful_function || n.op == "Cache";
    for (int64_t in : n.inputs) {
      x.random_at_or_below = x.random_at_or_below || a.nodes[in].random_at_or_below;
      reads_files[n.id] = reads_files[n.id] || reads_files[in];
      stateful_below[n.id] = stateful_below[n.id] || stateful_below[in];
    }
    if (n.cardinality == kInfiniteCardinality) {
      x.materialized_bytes = -1;
    } else if (n.cardinality >= 0 && elems > 0) {
      x.materialized_bytes = static_cast<double>(n.cardinality) * x.bytes_per_element;
    } else if (reads_files[n.id] && a.seen_fraction > 0) {
      // Elements seen so far scale with the share of the files' bytes read.
      x.materialized_bytes = bytes / a.seen_fraction;
    }
    x.sequential = !n.parallelizable;
    x.gil = n.stateful_function;
    x.cacheable = !x.random_at_or_below && !stateful_below[n.id] &&
                  x.materialized_bytes >= 0 && n.id != a.root;
    op_cpu += cpu;
  }
  // The tracer's consumer loop reads the clock once per root element to time GetNext, a
  // read an untraced consumer does not make: the pipeline's CPU is the process's less it.
  const double pipeline_cpu = std::max(
      0.0, static_cast<double>(trace.process_cpu_ns) - trace.machine.clock_ns * re);
  // The operators' CPU is estimated from sampled calls; the process's is exact. When the
  // estimates add up to more than the pipeline used, scale them down to it.
  if (pipeline_cpu > 0 && op_cpu > pipeline_cpu) {
    a.cpu_scale = pipeline_cpu / op_cpu;
    for (NodeAnalysis& x : a.nodes) {
      x.cpu_ns_per_root *= a.cpu_scale;
      x.rate_per_core /= a.cpu_scale;
      x.utilization *= a.cpu_scale;
    }
    op_cpu = pipeline_cpu;
  }
  // A cache pays only where the data is read again: below a Repeat, and not already
  // below a Cache.
  std::vector<bool> repeated(trace.nodes.size(), false), cached(trace.nodes.size(), false);
  for (int64_t id = a.root; id >= 0; --id) {
    const TraceNode& n = trace.nodes[id];
    const bool repeats = n.op == "Repeat" || n.op == "ShuffleAndRepeat";
    for (int64_t in : n.inputs) {
      repeated[in] = repeated[in] || repeated[id] || repeats;
      cached[in] = cached[in] || cached[id] || n.op == "Cache";
    }
    NodeAnalysis& x = a.nodes[id];
    x.cacheable = x.cacheable && repeated[id] && !cached[id] && n.op != "Cache";
  }
  const int64_t cores = std::max<int64_t>(1, trace.machine.cores);
  a.cpu_utilization = trace.process_cpu_ns / (cores * dur);
  a.disk_bytes_per_root = trace.window_file_bytes / re;
  const double read_bps = trace.window_file_bytes * 1e9 / dur;
  a.disk_utilization =
      trace.machine.parallel_read_bps > 0 ? read_bps / trace.machine.parallel_read_bps : 0;
  a.framework_ns_per_root = std::max(0.0, (pipeline_cpu - op_cpu) / re);
  // Charged per element each node produces (handoffs between iterators, the stats
  // plane), so a cache that removes nodes removes their share.
  double visits = 0;
  for (const NodeAnalysis& x : a.nodes) visits += x.visit_ratio;
  a.framework_ns_per_visit = visits > 0 ? a.framework_ns_per_root / visits : 0;
  a.consumer_wait_fraction = std::clamp(1.0 - trace.consumer_ns / dur, 0.0, 1.0);
  return a;
}

}  // namespace sluice::plumber
