// The pass driver (optimizer.h, pass.h).
#include "optimizer/optimizer.h"

#include <cstdio>

#include "optimizer/cost_model.h"
#include "optimizer/pass.h"
#include "runtime/node_stats.h"

namespace sluice {

std::vector<std::string> OptimizeReport::Lines() const {
  std::vector<std::string> out;
  for (const PassReport& p : passes) {
    if (!p.enabled) {
      out.push_back(p.name + ": disabled");
      continue;
    }
    char ms[32];
    std::snprintf(ms, sizeof(ms), "%.3f", p.time_ns / 1e6);
    std::string line = p.name + ": " + std::to_string(p.changes) +
                       (p.changes == 1 ? " change" : " changes") + " in " + ms + " ms";
    for (const std::string& note : p.notes) line += "; " + note;
    out.push_back(std::move(line));
  }
  return out;
}

PassList DefaultPasses() {
  PassList p;
  p.push_back(MakeNoopEliminationPass());
  p.push_back(MakeGlobalShufflePass());  // before shuffle_and_repeat_fusion takes Shuffle
  p.push_back(MakeVectorizeMapBatchPass());  // before map_fusion hides the kernels
  p.push_back(MakeShuffleAndRepeatFusionPass());
  p.push_back(MakeDecodeAndCropFusionPass());  // before map_fusion hides the two maps
  p.push_back(MakeMapFusionPass());
  p.push_back(MakeFilterFusionPass());
  p.push_back(MakeMapParallelizationPass());   // before the fusions, which take its maps
  p.push_back(MakeMapAndFilterFusionPass());
  p.push_back(MakeMapAndBatchFusionPass());    // after map_parallelization: takes its maps
  p.push_back(MakeParallelBatchPass());        // batches map_and_batch did not take
  p.push_back(MakeInjectPrefetchPass());       // last: sees the final root
  return p;
}

Result<DatasetPtr> RunPasses(const DatasetPtr& root, const Options& options,
                             const PassList& passes, OptimizeReport* report) {
  if (!root) return InvalidArgumentError("optimizer: null graph");
  DatasetPtr cur = root;
  // The cost model is on unless switched off by name (apply_default_optimizations does
  // not touch it).
  const auto cm = options.optimization.passes.find(kCostModelToggle);
  CostModelScope cost_model(cm != options.optimization.passes.end() && !cm->second);
  for (const auto& pass : passes) {
    PassReport pr;
    pr.name = std::string(pass->name());
    pr.enabled = options.optimization.Enabled(pass->name(), pass->on_by_default());
    if (pr.enabled) {
      const int64_t t0 = MonotonicNs();
      Result<PassResult> r = pass->Apply(cur);
      pr.time_ns = MonotonicNs() - t0;
      if (!r.ok()) {
        return InternalError("optimizer pass '" + pr.name + "' failed: " + r.status().ToString());
      }
      Status v = VerifyGraph(cur, r->root);
      if (!v.ok()) {
        return InternalError("optimizer pass '" + pr.name + "' produced an invalid graph: " +
                             v.message());
      }
      pr.changes = r->changes;
      pr.notes = std::move(r->notes);
      cur = std::move(r->root);
    }
    if (report) report->passes.push_back(std::move(pr));
  }
  return cur;
}

Result<DatasetPtr> OptimizeGraph(const DatasetPtr& root, const Options& options,
                                 OptimizeReport* report) {
  static const PassList* const kPasses = new PassList(DefaultPasses());
  return RunPasses(root, options, *kPasses, report);
}

}  // namespace sluice
