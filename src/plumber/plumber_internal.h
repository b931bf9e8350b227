// Internals of the doctor shared by its files.
#ifndef SLUICE_PLUMBER_PLUMBER_INTERNAL_H_
#define SLUICE_PLUMBER_PLUMBER_INTERNAL_H_

#include <map>
#include <utility>
#include <vector>

#include "sluice/plumber.h"

namespace sluice::plumber {

// The graph of `ds` as trace nodes (static facts only, counters zero), in id order.
std::vector<TraceNode> DescribeGraph(const Dataset& ds);

// `ds` rebuilt node by node with the plan applied (parallelism, caches, prefetch), carrying
// ds's options. `fresh`: every node new even when unchanged (a copy whose iterators do
// not count as passes over ds's nodes: the next pass over ds is still its first).
Result<Dataset> RebuildGraph(const Dataset& ds, const Plan& plan, bool fresh);
// The options ApplyPlan adds: the static rewrites that set parallelism or add prefetches
// (map_parallelization, parallel_batch, inject_prefetch) off, the plan sets those; the
// others keep ds's setting.
Options PlannedOptions();
// The graph `ds` runs: its static rewrites applied (OptimizeGraph with ds's options),
// carrying ds's options with every rewrite off (they ran). What the probe traces.
Result<Dataset> RewrittenGraph(const Dataset& ds);
// RebuildGraph with an empty plan, fresh: an equal, independent graph.
Result<Dataset> CloneGraph(const Dataset& ds);

// Run time and run-queue wait (ns) per thread of this process (/proc/self/task/*/schedstat),
// and the share of CPU the threads got while runnable between two readings (1: no wait),
// per thread, averaged weighted by run time.
using SchedTimes = std::map<int64_t, std::pair<int64_t, int64_t>>;
SchedTimes ReadSchedstat();
double Availability(const SchedTimes& before, const SchedTimes& after);

// The LP of docs/doctor.md for the given per-node CPU costs (ns per root element; 0 for
// nodes served from a cache), solved with GLPK: X and each node's theta.
struct LpResult {
  double x = 0;
  std::vector<double> theta;
};
// `extra_ns_per_root` is framework cost the plan adds (handoffs) beyond the trace's.
// `thread_share` is the share of a core one runnable thread gets (the measured CPU
// availability): a sequential group, one thread, gets at most that much.
Result<LpResult> SolveLp(const Analysis& a, const std::vector<double>& cpu_ns_per_root,
                         double cores, double disk_bound, double extra_ns_per_root,
                         double thread_share = 1.0);

}  // namespace sluice::plumber

#endif  // SLUICE_PLUMBER_PLUMBER_INTERNAL_H_
