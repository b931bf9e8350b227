// The rewriter: rebuilds the graph with the plan's parallelism, caches and prefetch.
#include <algorithm>
#include <chrono>
#include <unordered_map>

#include "graph/dataset_access.h"
#include "graph/registry.h"
#include "optimizer/optimizer.h"
#include "plumber/plumber_internal.h"
#include "sluice/plumber.h"
#include "sluice/serialize.h"

namespace sluice::plumber {
namespace {

int64_t IntAttr(const AttrMap& attrs, const char* name, int64_t def) {
  auto it = attrs.find(name);
  if (it == attrs.end()) return def;
  if (auto* v = std::get_if<int64_t>(&it->second)) return *v;
  return def;
}

// The op and attributes of `node` running with `parallelism` calls (its parallel form).
void Parallelize(const DatasetNode& node, int64_t parallelism, std::string* op,
                 AttrMap* attrs) {
  const std::string& o = node.op();
  const int64_t det = IntAttr(node.attrs(), "deterministic", 1);
  if (o == "Map" || o == "Filter" || o == "Interleave") {
    *op = o == "Map" ? "ParallelMap" : o == "Filter" ? "ParallelFilter" : "ParallelInterleave";
    (*attrs)["num_parallel_calls"] = parallelism;
    (*attrs)["deterministic"] = int64_t{1};  // the sequential op's order
  } else if (o == "Batch") {
    if (parallelism < 2) return;  // a handoff costs more than a cheap batch
    *op = "ParallelBatch";
    (*attrs)["num_parallel_calls"] = parallelism;
    (*attrs)["deterministic"] = int64_t{1};
  } else if (attrs->count("num_parallel_calls")) {
    (*attrs)["num_parallel_calls"] = parallelism;
    (void)det;
  }
}

// The static rewrites that choose parallelism or add prefetches: the plan decides those.
constexpr const char* kPlannedPasses[] = {"map_parallelization", "parallel_batch",
                                          "inject_prefetch"};

}  // namespace

Options PlannedOptions() {
  Options o;
  for (const char* pass : kPlannedPasses) o.optimization.Set(pass, false);
  return o;
}

Result<Dataset> RewrittenGraph(const Dataset& ds) {
  SLUICE_RETURN_IF_ERROR(ds.status());
  SLUICE_ASSIGN_OR_RETURN(DatasetPtr graph, OptimizeGraph(NodeOf(ds), ds.options(), nullptr));
  Options o = ds.options();
  o.optimization.passes.clear();
  o.optimization.apply_default_optimizations = false;  // applied above
  return DatasetOf(graph).WithOptions(o);
}

Result<Dataset> CloneGraph(const Dataset& ds) {
  SLUICE_RETURN_IF_ERROR(ds.status());
  Plan none;
  none.nodes.resize(GraphNodesInIdOrder(NodeOf(ds)).size());
  none.prefetch = 0;
  return RebuildGraph(ds, none, /*fresh=*/true);
}

Result<Dataset> ApplyPlan(const Dataset& ds, const Plan& plan) {
  SLUICE_RETURN_IF_ERROR(ds.status());
  SLUICE_ASSIGN_OR_RETURN(Dataset result, RebuildGraph(ds, plan, /*fresh=*/false));
  // The plan sets parallelism and prefetch; the other static rewrites (fusions,
  // vectorize_map_batch, global_shuffle) still run: they make the graph cheaper and keep
  // its elements, and the probe plans what they produce (OptimizeDetailed).
  return result.WithOptions(PlannedOptions());
}

Result<Dataset> RebuildGraph(const Dataset& ds, const Plan& plan, bool fresh) {
  const DatasetPtr& root = NodeOf(ds);
  std::vector<DatasetPtr> order = GraphNodesInIdOrder(root);
  if (order.size() != plan.nodes.size()) {
    return InvalidArgumentError("plumber: the plan has " + std::to_string(plan.nodes.size()) +
                                " nodes but the dataset has " + std::to_string(order.size()) +
                                " (a plan applies to the dataset that was traced)");
  }
  std::vector<bool> cache(order.size(), false);
  for (int64_t c : plan.cache_nodes) {
    if (c < 0 || c >= static_cast<int64_t>(order.size())) {
      return InvalidArgumentError("plumber: cache node " + std::to_string(c) + " out of range");
    }
    cache[c] = true;
  }
  std::unordered_map<const DatasetNode*, DatasetPtr> rebuilt;
  const std::vector<TraceNode> described = DescribeGraph(ds);
  for (size_t id = 0; id < order.size(); ++id) {
    const DatasetNode& n = *order[id];
    OpArgs args;
    args.attrs = n.attrs();
    args.functions = n.functions();
    for (const DatasetPtr& in : n.inputs()) args.inputs.push_back(rebuilt.at(in.get()));
    std::string op = n.op();
    bool changed = args.inputs != n.inputs();
    if (described[id].parallelizable && plan.nodes[id].parallelism > 0) {
      const int64_t before = IntAttr(args.attrs, "num_parallel_calls", 0);
      Parallelize(n, plan.nodes[id].parallelism, &op, &args.attrs);
      changed = changed || op != n.op() ||
                IntAttr(args.attrs, "num_parallel_calls", 0) != before;
    }
    DatasetPtr out;
    if (!changed && !fresh) {
      out = order[id];  // unchanged: keep the node (and any state it shares)
    } else {
      SLUICE_ASSIGN_OR_RETURN(out, Registry::Global().CreateOp(op, std::move(args)));
    }
    if (cache[id]) {
      Dataset c = BuildDataset("Cache", {{"filename", std::string()}}, {DatasetOf(out)});
      SLUICE_RETURN_IF_ERROR(c.status());
      out = NodeOf(c);
    }
    rebuilt[order[id].get()] = out;
  }
  Dataset result = DatasetOf(rebuilt.at(root.get()));
  if (plan.prefetch > 0) {
    if (root->op() == "Prefetch") {
      AttrMap attrs = NodeOf(result)->attrs();
      attrs["buffer_size"] = plan.prefetch;
      result = BuildDataset("Prefetch", attrs, {DatasetOf(NodeOf(result)->input(0))});
    } else {
      result = BuildDataset("Prefetch", {{"buffer_size", plan.prefetch}}, {result});
    }
  }
  SLUICE_RETURN_IF_ERROR(result.status());
  return result.WithOptions(ds.options());
}

Result<Dataset> Optimize(const Dataset& ds, const OptimizeOptions& opts) {
  SLUICE_ASSIGN_OR_RETURN(Optimized o, OptimizeDetailed(ds, opts));
  return o.dataset;
}

Result<Optimized> OptimizeDetailed(const Dataset& ds, const OptimizeOptions& opts) {
  Optimized o;
  SLUICE_ASSIGN_OR_RETURN(Trace trace, TracePipeline(ds, opts.trace));
  SLUICE_ASSIGN_OR_RETURN(o.analysis, Analyze(trace));
  SLUICE_ASSIGN_OR_RETURN(o.plan, MakePlan(o.analysis, opts.plan));
  SLUICE_ASSIGN_OR_RETURN(o.dataset, ApplyPlan(ds, o.plan));
  const Dataset first = o.dataset;
  o.predicted_rate = o.plan.predicted_rate;
  if (opts.probe_seconds <= 0) return o;
  // The probe traces what the engine will run: the rewritten graph after the static
  // rewrites the plan leaves on, so that its plan and prediction are for that graph.
  auto runs = RewrittenGraph(o.dataset);
  if (!runs.ok()) return o;
  TraceOptions probe = opts.trace;
  probe.seconds = opts.probe_seconds;
  // A cache is full after the first pass: let the warm-up cover it.
  if (!o.plan.cache_nodes.empty()) probe.warmup_seconds += opts.trace.seconds;
  probe.measure_bandwidth = false;  // the same files: keep the first trace's figures
  auto probed = TracePipeline(*runs, probe);
  if (!probed.ok()) return o;  // the first plan stands
  probed->machine.sequential_read_bps = trace.machine.sequential_read_bps;
  probed->machine.parallel_read_bps = trace.machine.parallel_read_bps;
  probed->machine.parallel_readers = trace.machine.parallel_readers;
  auto pa = Analyze(*probed);
  if (!pa.ok()) return o;
  PlanOptions po = opts.plan;
  po.force_cache.clear();
  auto pp = MakePlan(*pa, po);
  if (!pp.ok()) return o;
  auto again = ApplyPlan(*runs, *pp);
  if (!again.ok()) return o;
  o.probed = true;
  o.probe_analysis = std::move(*pa);
  o.probe_plan = std::move(*pp);
  // The probe drained the rewritten pipeline as fast as it could: its rate is a floor on
  // what that configuration sustains, whatever the LP says.
  o.predicted_rate =
      std::max(o.probe_plan.predicted_rate, o.probe_analysis.root_elements_per_second);
  // `again` is in the rewritten graph's terms, whose fused maps (compositions) do not
  // serialize; `first`, in ds's own terms, is what the engine rewrites into `runs`. When
  // the probe's plan leaves `runs` as it is (RebuildGraph keeps every node), both are the
  // same pipeline: return `first`. When it changes `runs` but only `first` serializes,
  // keep `first` and predict what the probe measured on it.
  if (NodeOf(*again).get() == NodeOf(*runs).get()) return o;
  if (!SerializeDataset(*again, GraphFormat::kJson).ok() &&
      SerializeDataset(first, GraphFormat::kJson).ok()) {
    o.predicted_rate = o.probe_analysis.root_elements_per_second;
    return o;
  }
  o.dataset = std::move(*again);
  return o;
}

Result<double> MeasureThroughput(const Dataset& ds, double seconds, double warmup_seconds,
                                 int64_t cpu_budget) {
  SLUICE_ASSIGN_OR_RETURN(Measurement m, Measure(ds, seconds, warmup_seconds, cpu_budget));
  return m.rate;
}

Result<Measurement> Measure(const Dataset& ds, double seconds, double warmup_seconds,
                            int64_t cpu_budget) {
  using Clock = std::chrono::steady_clock;
  Options extra;
  if (cpu_budget > 0) extra.autotune.cpu_budget = cpu_budget;
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<Iterator> it, ds.MakeIterator(extra));
  const auto warm_end = Clock::now() + std::chrono::duration<double>(warmup_seconds);
  while (Clock::now() < warm_end) {
    SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, it->GetNext());
    if (!e) return FailedPreconditionError("plumber: the pipeline ended during the warm-up");
  }
  const SchedTimes sched = ReadSchedstat();
  const auto start = Clock::now();
  const auto end = start + std::chrono::duration<double>(seconds);
  int64_t n = 0;
  while (Clock::now() < end) {
    SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, it->GetNext());
    if (!e) break;
    ++n;
  }
  const double s = std::chrono::duration<double>(Clock::now() - start).count();
  Measurement m;
  m.cpu_availability = Availability(sched, ReadSchedstat());
  m.rate = s > 0 ? n / s : 0.0;
  return m;
}

}  // namespace sluice::plumber
