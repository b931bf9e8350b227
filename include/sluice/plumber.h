// The bottleneck doctor (Plumber, Kuchnik et al., MLSys 2022): trace a short run of a
// pipeline, account every operator's CPU and the disk's bytes per delivered element, bound
// the throughput with a linear program over the machine's cores and disk bandwidth, place
// a cache and prefetching, and rewrite the pipeline. docs/doctor.md states the model.
//
//   Dataset ds = Dataset::TFRecord(files).Map(parse).Batch(128).Repeat();
//   Result<Dataset> fast = sluice::plumber::Optimize(ds);     // the one-liner
//
//   // or step by step:
//   Result<plumber::Trace> t = plumber::TracePipeline(ds);     // a 2 s run
//   Result<plumber::Analysis> a = plumber::Analyze(*t);
//   Result<plumber::Plan> p = plumber::MakePlan(*a);
//   std::string text = plumber::ReportText(*a, *p);           // ranked bottlenecks
//   Result<Dataset> rewritten = plumber::ApplyPlan(ds, *p);    // same elements
//
// The trace runs the graph as written (the static rewrites off, AUTOTUNE knobs fixed at
// their start values) so that every counter belongs to a node of the user's graph; the
// rewritten dataset carries options that keep the static rewrites off and autotuning on
// for knobs the plan leaves at AUTOTUNE.
//
// Errors are Status values; nothing here throws, aborts or hangs (tracing is bounded by
// TraceOptions::seconds and ::max_elements).
//
// Thread-safety: free functions on values; thread-safe.
#ifndef SLUICE_PLUMBER_H_
#define SLUICE_PLUMBER_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/dataset.h"
#include "sluice/status.h"

namespace sluice {
class Env;  // src/core/env.h

namespace plumber {

// ---- Trace ----

// What the machine offers: the LP's constraints.
struct MachineFacts {
  int64_t cores = 0;         // cores the process may use (affinity and cgroup quota)
  int64_t memory_bytes = 0;  // memory available to the process (0: unknown)
  // Read bandwidth of the data's file system in bytes/s, measured by reading the traced
  // input files through the pipeline's Env: one reader, and `parallel_readers` at once.
  // 0 when there were no input files.
  double sequential_read_bps = 0;
  double parallel_read_bps = 0;
  int64_t parallel_readers = 0;
  // Share of the CPU the pipeline's threads got while they were runnable (from
  // /proc/self/task/*/schedstat: run time / (run time + run-queue wait)); below 1 when
  // other processes compete for the cores. The planner plans for cores x this.
  double cpu_availability = 1;
  // CPU one handoff of an element through a parallel op's buffer costs (ns), measured
  // by a calibration run; the planner charges it for every op it makes parallel.
  double handoff_ns = 0;
  // CPU of one read of the thread CPU clock (ns), measured by a calibration loop. The stats
  // plane times a sampled call between two reads, so each call's estimate carries about
  // one read; the analysis takes it off where no timed input call cancels it. 0: unknown.
  double timer_ns = 0;
  // CPU of one read of the monotonic clock (ns), measured by a calibration loop. The
  // tracer reads it once per root element to time the pipeline's GetNext (consumer_ns),
  // a read an untraced consumer does not make; the analysis takes it off the framework
  // cost. 0: unknown.
  double clock_ns = 0;
};

// One node of the traced graph with its counters over the traced window. Iterators of
// datasets made by functions (an interleave's inner readers) are charged to the node that
// made them.
struct TraceNode {
  int64_t id = 0;      // GraphNodeIds order: inputs before consumers; the root is last
  std::string op;      // "ParallelMap", "TFRecord", ...
  std::string name;    // op plus its function's name when it has one ("Map(parse)")
  std::vector<int64_t> inputs;
  // Static facts.
  bool source = false;
  bool random = false;          // draws randomness itself or through a function
  bool stateful_function = false;  // a function that must run alone (Python: the GIL)
  bool parallelizable = false;  // the rewriter can set its parallelism (or make it parallel)
  bool async = false;
  int64_t parallelism_attr = 0;  // its num_parallel_calls (-1 AUTOTUNE, 0 none)
  int64_t cardinality = kUnknownCardinality;
  // Counters (sums over the node's iterators in the window).
  int64_t elements = 0;
  int64_t cpu_ns = 0;
  int64_t wall_ns = 0;
  int64_t bytes_produced = 0;
  int64_t bytes_consumed = 0;
  int64_t file_bytes_read = 0;
  int64_t parallelism = 0;  // in use at the end of the window
  int64_t buffer_limit = 0;
  // Since the iterator was made (warm-up included): what the size estimates use, with
  // Trace::file_bytes_read over the same span.
  int64_t total_elements = 0;
  int64_t total_bytes_produced = 0;
};

struct Trace {
  int version = 1;
  std::string graph_json;   // SerializeDataset(kJson); "" when the graph has local callables
  std::string graph_error;  // why graph_json is empty
  MachineFacts machine;
  int64_t duration_ns = 0;      // the traced window (after warm-up)
  int64_t process_cpu_ns = 0;   // CPU the whole process used in the window
  int64_t consumer_ns = 0;      // time the consumer spent outside GetNext (its own work)
  int64_t ram_budget = 0;       // the pipeline's RAM budget (bytes; 0: unknown)
  int64_t window_file_bytes = 0;  // bytes read from files in the window
  std::vector<TraceNode> nodes;  // by id
  std::map<std::string, int64_t> file_sizes;       // every input file, bytes
  std::map<std::string, int64_t> file_bytes_read;  // bytes read per file since the start
};

struct TraceOptions {
  double seconds = 2;          // traced window after warm-up
  double warmup_seconds = 0.3;
  int64_t max_elements = 0;    // stop after this many root elements (0: no limit)
  // The consumer's own time per element (a training step), simulated by sleeping; 0: a
  // consumer that takes elements as fast as they come.
  double consumer_seconds_per_element = 0;
  bool measure_bandwidth = true;  // read the input files to measure the disk
  int64_t cpu_budget = 0;      // cores to trace with; 0: the pipeline's options
  Env* env = nullptr;          // overrides the dataset's Options::env (throttling tests)
};

// Runs `ds` for opts.seconds (or max_elements) and records the trace. Fails when the
// pipeline fails.
Result<Trace> TracePipeline(const Dataset& ds, const TraceOptions& opts = {});
std::string TraceToJson(const Trace& trace);
// DataLoss naming `source` and the field for malformed input.
Result<Trace> TraceFromJson(std::string_view json, std::string_view source = "trace");
Status SaveTrace(const Trace& trace, const std::string& path);
Result<Trace> LoadTrace(const std::string& path);

// ---- Analysis ----

struct NodeAnalysis {
  int64_t id = 0;
  std::string name;
  double visit_ratio = 0;        // elements of this node per root element
  double cpu_ns_per_root = 0;    // its CPU per root element
  double rate_per_core = 0;      // R_i: root elements/s one core of this node sustains
  double utilization = 0;        // cores it kept busy in the window
  double bytes_per_element = 0;  // output bytes per element
  int64_t cardinality = kUnknownCardinality;
  // Bytes its whole output would take in memory, from the source files' sizes; -1 when
  // unknown (infinite, or not traceable to files or a known cardinality).
  double materialized_bytes = -1;
  bool random_at_or_below = false;  // it or an input below it is random: never cached
  // Deterministic below, finite with a known size, read again (below a Repeat) and not
  // already below a Cache.
  bool cacheable = false;
  bool sequential = false;          // theta <= 1 (cannot be made parallel)
  bool gil = false;                 // sequential because its function must run alone
};

struct Analysis {
  Trace trace;
  std::vector<NodeAnalysis> nodes;  // by id
  int64_t root = 0;
  double root_elements_per_second = 0;  // measured
  double cpu_utilization = 0;           // process CPU / (cores x window)
  double disk_bytes_per_root = 0;       // file bytes read per root element
  double disk_utilization = 0;          // read rate / parallel bandwidth
  double framework_ns_per_root = 0;     // CPU outside the operators, per root element
  double framework_ns_per_visit = 0;    // the same per element any node produces
  // Factor applied to the operators' sampled CPU estimates so that they add up to at
  // most the process's measured CPU (1: none needed).
  double cpu_scale = 1;
  double consumer_wait_fraction = 0;    // share of the window the consumer waited
  double seen_fraction = 0;             // share of the input files' bytes read
};

Result<Analysis> Analyze(const Trace& trace);

// ---- Planner ----

struct PlanOptions {
  int64_t cores = 0;        // 0: the traced machine's
  int64_t ram_budget = 0;   // bytes a cache may use; 0: the trace's budget, else memory/2
  double disk_scale = 1;    // what-if: the disk's bandwidth times this
  // The share of the cores the pipeline will get (MachineFacts::cpu_availability); 0: the
  // share measured during the trace. 1 plans for an idle machine.
  double cpu_availability = 0;
  bool allow_cache = true;
  std::vector<int64_t> force_cache;  // what-if: node ids to cache whatever they cost
};

struct NodePlan {
  int64_t id = 0;
  double theta = 0;         // cores the LP gives it
  int64_t parallelism = 0;  // the num_parallel_calls to set (0: leave as is)
  double bound = 0;         // theta x R_i: the root rate this node allows
};

struct Bottleneck {
  std::string kind;  // "cpu", "disk", "gil", "memory", "consumer", "sequential"
  int64_t node = -1;
  std::string text;  // a sentence with numbers
  double bound = 0;  // root elements/s this limit allows
};

struct Plan {
  double predicted_rate = 0;       // root elements/s after the plan
  double predicted_rate_no_cache = 0;
  double cpu_bound = 0;            // the LP's X without the disk bound
  double disk_bound = 0;           // root elements/s the disk allows (inf: no files)
  // The bottlenecks are those of the pipeline as traced (no cache added): the cache is
  // the plan's remedy, reported with the plan.
  std::vector<NodePlan> nodes;     // by id
  std::vector<int64_t> cache_nodes;  // ids to cache after (MILP)
  int64_t cache_bytes = 0;
  int64_t ram_budget = 0;
  int64_t prefetch = 0;            // buffer of the Prefetch at the root (0: none)
  std::vector<Bottleneck> bottlenecks;  // ranked, tightest first
  struct WhatIf {
    std::string question;
    double rate = 0;
    // The bound that holds the rate there, in words: "CPU (4 cores)", "disk bandwidth",
    // "one thread: Shuffle (sequential)", "the GIL: ...": why two what-ifs can agree.
    std::string bound;
  };
  std::vector<WhatIf> what_ifs;
};

Result<Plan> MakePlan(const Analysis& analysis, const PlanOptions& opts = {});

// ---- Rewriter ----

// `ds` (the dataset the trace ran) with the plan applied: parallelism values, a memory
// cache after each cache node, a root prefetch. Yields the same elements as `ds` (same
// seeds): caches go only below random operators, parallel ops keep their order.
Result<Dataset> ApplyPlan(const Dataset& ds, const Plan& plan);

struct OptimizeOptions {
  TraceOptions trace;
  PlanOptions plan;
  // A probe: the rewritten pipeline traced for this long (after a warm-up that fills a
  // planned cache), then planned again from its own counters, which the first trace could
  // not see (a cache's reads, handoffs, how costs split once inputs are cached). 0: none.
  double probe_seconds = 1;
};
// Trace, analyze, plan and rewrite in one call.
Result<Dataset> Optimize(const Dataset& ds, const OptimizeOptions& opts = {});

// Optimize with what it found: the first trace's analysis and plan, the probe's (when
// one ran), and the rate predicted for the returned dataset: the first plan's, or with a
// probe the larger of the probe's plan and the rate the probe itself measured (a floor on
// what the configuration sustains).
struct Optimized {
  Dataset dataset;
  Analysis analysis;
  Plan plan;
  bool probed = false;
  Analysis probe_analysis;
  Plan probe_plan;
  double predicted_rate = 0;
};
Result<Optimized> OptimizeDetailed(const Dataset& ds, const OptimizeOptions& opts = {});

// Root elements per second of `ds` over `seconds` after `warmup_seconds` (the pipeline as
// it would run: its options, its rewrites), with `cpu_budget` cores (0: its options').
// A pipeline that ends early is measured over what it delivered. For predicted vs
// measured: a plan with a cache predicts the rate once the cache is full, so warm up
// past the first pass.
Result<double> MeasureThroughput(const Dataset& ds, double seconds, double warmup_seconds = 0.5,
                                 int64_t cpu_budget = 0);
// The same with the share of the CPU the pipeline got while runnable in the window
// (MachineFacts::cpu_availability): on a shared machine, compare a prediction made at this
// availability (MakePlan on a trace whose machine.cpu_availability is set to it).
struct Measurement {
  double rate = 0;
  double cpu_availability = 1;
};
Result<Measurement> Measure(const Dataset& ds, double seconds, double warmup_seconds = 0.5,
                            int64_t cpu_budget = 0);

// ---- Reports ----

// Ranked bottlenecks in plain words, the per-node table and the what-ifs.
std::string ReportText(const Analysis& analysis, const Plan& plan);
// The same as one JSON object (analysis, plan, bottlenecks, what-ifs).
std::string ReportJson(const Analysis& analysis, const Plan& plan, int indent = 2);
// A self-contained HTML page with inline SVG charts (per-node rates, the CPU/disk
// roofline, predicted vs measured). `measured_after` (root elements/s of the rewritten
// pipeline) adds the measured bar when > 0. An inline script marks <body> with
// data-charts-rendered="<number of charts>" (3) once the page has loaded.
std::string ReportHtml(const Analysis& analysis, const Plan& plan, double measured_after = 0);

}  // namespace plumber
}  // namespace sluice

#endif  // SLUICE_PLUMBER_H_
