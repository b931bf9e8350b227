// The planner: the throughput LP and the cache MILP, both solved with GLPK, the ranked
// bottlenecks and the what-ifs (docs/doctor.md).
#include <glpk.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>

#include "plumber/plumber_internal.h"
#include "sluice/plumber.h"

namespace sluice::plumber {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kMaxRate = 1e12;  // caps X so the LP is never unbounded
constexpr int kLpTimeLimitMs = 2000;  // an LP of a few dozen rows takes microseconds

struct GlpDeleter {
  void operator()(glp_prob* p) const { glp_delete_prob(p); }
};

// Sequential groups: sequential nodes that run on one thread (a non-async node calls its
// sequential input synchronously). Functions that hold the GIL share one group.
std::vector<std::vector<int64_t>> SequentialGroups(const Analysis& a) {
  const size_t n = a.nodes.size();
  std::vector<int64_t> parent(n);
  std::iota(parent.begin(), parent.end(), 0);
  auto find = [&](int64_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  int64_t gil = -1;
  for (const TraceNode& t : a.trace.nodes) {
    if (!a.nodes[t.id].sequential) continue;
    if (t.stateful_function) {
      if (gil >= 0) parent[find(t.id)] = find(gil);
      gil = t.id;
    }
    if (t.async) continue;
    for (int64_t in : t.inputs) {
      if (a.nodes[in].sequential) parent[find(in)] = find(t.id);
    }
  }
  std::vector<std::vector<int64_t>> groups(n);
  for (size_t i = 0; i < n; ++i) {
    if (a.nodes[i].sequential) groups[find(i)].push_back(i);
  }
  std::vector<std::vector<int64_t>> out;
  for (auto& g : groups) {
    if (!g.empty()) out.push_back(std::move(g));
  }
  return out;
}

// Nodes in the subtree of `id` (itself included).
void Subtree(const Analysis& a, int64_t id, std::vector<bool>* in) {
  if ((*in)[id]) return;
  (*in)[id] = true;
  for (int64_t c : a.trace.nodes[id].inputs) Subtree(a, c, in);
}

std::string Rate(double r) {
  char buf[64];
  if (!std::isfinite(r)) return "unbounded";
  if (r >= 100) {
    std::snprintf(buf, sizeof buf, "%.0f", r);
  } else {
    std::snprintf(buf, sizeof buf, "%.3g", r);
  }
  return buf;
}

std::string Bytes(double b) {
  char buf[64];
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  std::snprintf(buf, sizeof buf, "%.3g %s", b, units[u]);
  return buf;
}

struct Evaluation {
  double x = 0;      // LP optimum with the disk bound
  double x_cpu = 0;  // without it
  double disk = kInf;
  std::vector<double> theta;
  std::vector<double> cost;  // ns per root element after caching
  double extra = 0;          // handoff ns per root element outside the graph's nodes
  double cores = 0;
  double share = 1;          // of a core, per runnable thread
  bool prefetch = false;     // a Prefetch added at the root
};

bool SequentialForm(const std::string& op) {
  return op == "Map" || op == "Filter" || op == "Batch" || op == "Interleave";
}

// Whether the plan turns node `id` from a sequential op into a parallel one.
bool MadeParallel(const Analysis& a, int64_t id) {
  return SequentialForm(a.trace.nodes[id].op) && !a.nodes[id].sequential;
}

bool MapLike(const std::string& op) { return op == "Map" || op == "ParallelMap"; }

// Where each node's work runs once the engine's map_fusion pass has run: a Map (or
// ParallelMap) read only by another one of the same form is fused into it (one function,
// one op, one buffer), so a chain of parallel maps is one parallel op. For each node, the
// top of its chain (the last map, read by a non-map); itself when it is in none. Only
// parallel maps are chained: the planner makes a chain parallel or sequential as a whole,
// and sequential maps fused run on one thread as they would apart.
std::vector<int64_t> FusionTops(const Analysis& a) {
  const size_t n = a.nodes.size();
  std::vector<int64_t> consumers(n, 0), consumer(n, -1);
  for (const TraceNode& t : a.trace.nodes) {
    for (int64_t in : t.inputs) {
      ++consumers[in];
      consumer[in] = t.id;
    }
  }
  auto chained = [&](int64_t id) {
    return MapLike(a.trace.nodes[id].op) && !a.nodes[id].sequential;
  };
  std::vector<int64_t> top(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t t = static_cast<int64_t>(i);
    while (chained(t) && consumers[t] == 1 && chained(consumer[t])) t = consumer[t];
    top[i] = t;
  }
  return top;
}

double DiskBound(const Analysis& a, const std::vector<bool>& cached, double scale) {
  const auto& m = a.trace.machine;
  if (a.disk_bytes_per_root <= 0) return kInf;
  // Reads under a parallel node run in parallel: the parallel bandwidth applies.
  bool parallel_reads = false;
  double uncached_bytes = 0;
  for (const TraceNode& t : a.trace.nodes) {
    if (t.file_bytes_read <= 0 || cached[t.id]) continue;
    uncached_bytes += t.file_bytes_read;
    if (t.parallelizable) parallel_reads = true;
  }
  if (uncached_bytes <= 0) return kInf;
  double bps = parallel_reads ? m.parallel_read_bps : m.sequential_read_bps;
  if (bps <= 0) return kInf;
  return bps * scale / a.disk_bytes_per_root;
}

Result<Evaluation> Evaluate(const Analysis& a, double cores, double disk_scale,
                            const std::vector<int64_t>& caches, double share) {
  Evaluation e;
  std::vector<bool> cached(a.nodes.size(), false);
  for (int64_t c : caches) Subtree(a, c, &cached);
  e.cost.resize(a.nodes.size());
  for (const NodeAnalysis& n : a.nodes) {
    e.cost[n.id] =
        cached[n.id] ? 0 : n.cpu_ns_per_root + a.framework_ns_per_visit * n.visit_ratio;
  }
  // Handoffs the plan adds: a sequential-form op made parallel passes every element
  // through a buffer, costing its workers and its consumer one handoff each; so does the
  // prefetch added at the root (its consumer is the user's thread: cores only).
  const double h = a.trace.machine.handoff_ns;
  double extra = 0;
  if (h > 0) {
    // A chain of maps fused into one op hands each element over once, at its top.
    const std::vector<int64_t> top = FusionTops(a);
    for (const TraceNode& t : a.trace.nodes) {
      if (cached[t.id] || top[t.id] != t.id || !MadeParallel(a, t.id)) continue;
      const double hv = h * a.nodes[t.id].visit_ratio;
      e.cost[t.id] += hv;
      int64_t consumer = -1;
      for (const TraceNode& c : a.trace.nodes) {
        for (int64_t in : c.inputs) {
          if (in == t.id) consumer = c.id;
        }
      }
      if (consumer >= 0) {
        e.cost[consumer] += hv;
      } else {
        extra += hv;
      }
    }
  }
  // A Prefetch at the root costs two handoffs per element: worth it, as the engine's
  // inline mode decides for a prefetch (runtime/async_buffer.h: its whole input's work
  // against a handoff), only when the pipeline's work per element (after caching) or the
  // consumer's own time per element is above a handoff.
  const double consumer_ns =
      a.trace.nodes[a.root].elements > 0
          ? static_cast<double>(a.trace.consumer_ns) / a.trace.nodes[a.root].elements
          : 0;
  double work_ns = 0;
  for (double c : e.cost) work_ns += c;
  e.prefetch = a.trace.nodes[a.root].op != "Prefetch" &&
               (h <= 0 || std::max(work_ns, consumer_ns) > h);
  if (e.prefetch) extra += 2 * h;
  e.extra = extra;
  e.cores = cores;
  e.share = share;
  e.disk = DiskBound(a, cached, disk_scale);
  SLUICE_ASSIGN_OR_RETURN(LpResult cpu, SolveLp(a, e.cost, cores, kInf, extra, share));
  e.x_cpu = cpu.x;
  SLUICE_ASSIGN_OR_RETURN(LpResult lp, SolveLp(a, e.cost, cores, e.disk, extra, share));
  e.x = lp.x;
  e.theta = lp.theta;
  return e;
}

// Cache placement: binary x_c per candidate, at most one per root-to-leaf path, sizes
// within the budget, maximizing the CPU (and disk time) saved per root element; a small
// bonus per level keeps ties closest to the root.
Result<std::vector<int64_t>> PlaceCaches(const Analysis& a, double budget,
                                         const std::vector<int64_t>& candidates) {
  if (candidates.empty()) return std::vector<int64_t>{};
  std::vector<std::vector<bool>> sub(candidates.size());
  std::vector<double> saved(candidates.size(), 0);
  const double bps = a.trace.machine.parallel_read_bps;
  for (size_t k = 0; k < candidates.size(); ++k) {
    sub[k].assign(a.nodes.size(), false);
    Subtree(a, candidates[k], &sub[k]);
    int64_t below = 0;
    for (size_t i = 0; i < a.nodes.size(); ++i) {
      if (!sub[k][i]) continue;
      ++below;
      saved[k] += a.nodes[i].cpu_ns_per_root;
      const TraceNode& t = a.trace.nodes[i];
      if (t.file_bytes_read > 0 && bps > 0 && a.trace.nodes[a.root].elements > 0) {
        saved[k] += 1e9 * t.file_bytes_read / bps / a.trace.nodes[a.root].elements;
      }
    }
    saved[k] += 1e-3 * below;
  }
  std::unique_ptr<glp_prob, GlpDeleter> p(glp_create_prob());
  glp_set_obj_dir(p.get(), GLP_MAX);
  const int n = static_cast<int>(candidates.size());
  glp_add_cols(p.get(), n);
  for (int k = 0; k < n; ++k) {
    glp_set_col_kind(p.get(), k + 1, GLP_BV);
    glp_set_obj_coef(p.get(), k + 1, saved[k]);
  }
  std::vector<int> ia{0}, ja{0};
  std::vector<double> ar{0};
  int row = 0;
  glp_add_rows(p.get(), 1);
  ++row;
  glp_set_row_bnds(p.get(), row, GLP_UP, 0, 1.0);  // sizes in units of the budget
  for (int k = 0; k < n; ++k) {
    ia.push_back(row);
    ja.push_back(k + 1);
    ar.push_back(a.nodes[candidates[k]].materialized_bytes / std::max(budget, 1.0));
  }
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      if (i == j || !sub[i][candidates[j]]) continue;  // j below i: not both
      glp_add_rows(p.get(), 1);
      ++row;
      glp_set_row_bnds(p.get(), row, GLP_UP, 0, 1.0);
      for (int k : {i, j}) {
        ia.push_back(row);
        ja.push_back(k + 1);
        ar.push_back(1.0);
      }
    }
  }
  glp_load_matrix(p.get(), static_cast<int>(ia.size()) - 1, ia.data(), ja.data(), ar.data());
  glp_iocp parm;
  glp_init_iocp(&parm);
  parm.presolve = GLP_ON;
  parm.msg_lev = GLP_MSG_OFF;
  const int rc = glp_intopt(p.get(), &parm);
  if (rc != 0 || (glp_mip_status(p.get()) != GLP_OPT && glp_mip_status(p.get()) != GLP_FEAS)) {
    return InternalError("plumber: the cache MILP failed (GLPK code " + std::to_string(rc) +
                         ")");
  }
  std::vector<int64_t> chosen;
  for (int k = 0; k < n; ++k) {
    if (glp_mip_col_val(p.get(), k + 1) > 0.5) chosen.push_back(candidates[k]);
  }
  return chosen;
}

// Which constraint of the LP holds X at e.x: the disk, a sequential group (one thread),
// or the cores; in plain words.
std::string BindingBound(const Analysis& a, const Evaluation& e) {
  constexpr double kTight = 0.995;
  if (std::isfinite(e.disk) && e.x >= kTight * e.disk) return "disk bandwidth";
  for (const auto& g : SequentialGroups(a)) {
    double used = 0;
    int64_t worst = g[0];
    bool gil = false;
    for (int64_t i : g) {
      used += e.x * e.cost[i] / 1e9;
      if (e.cost[i] > e.cost[worst]) worst = i;
      gil = gil || a.nodes[i].gil;
    }
    if (used >= kTight * e.share) {
      return (gil ? "the GIL: " : "one thread: ") + a.nodes[worst].name +
             (g.size() > 1 ? " and the operators sequential with it" : "") +
             " (sequential)";
    }
  }
  double used = e.x * e.extra / 1e9;
  for (double c : e.cost) used += e.x * c / 1e9;
  if (used >= kTight * e.cores) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "CPU (%.3g cores)", e.cores);
    return buf;
  }
  return "none (rate cap)";
}

}  // namespace

// maximize X  s.t.  X * c_i / 1e9 - theta_i <= 0        (X <= theta_i R_i)
//                   sum theta_i + X * u / 1e9 <= cores   (u: handoffs the plan adds
//                                                         outside the graph's nodes)
//                   sum_{i in group} theta_i <= 1       (sequential groups)
//                   0 <= X <= disk bound, 0 <= theta_i <= cores
Result<LpResult> SolveLp(const Analysis& a, const std::vector<double>& cost, double cores,
                         double disk_bound, double extra_ns_per_root,
                         double thread_share) {
  const int n = static_cast<int>(a.nodes.size());
  std::unique_ptr<glp_prob, GlpDeleter> p(glp_create_prob());
  glp_set_obj_dir(p.get(), GLP_MAX);
  glp_add_cols(p.get(), n + 1);
  const double xmax = std::isfinite(disk_bound) ? std::min(disk_bound, kMaxRate) : kMaxRate;
  glp_set_col_bnds(p.get(), 1, xmax > 0 ? GLP_DB : GLP_FX, 0, std::max(xmax, 0.0));
  glp_set_obj_coef(p.get(), 1, 1.0);
  for (int i = 0; i < n; ++i) {
    glp_set_col_bnds(p.get(), i + 2, GLP_DB, 0, std::max(cores, 1e-9));
  }
  std::vector<int> ia{0}, ja{0};
  std::vector<double> ar{0};
  int row = 0;
  auto add = [&](int col, double v) {
    ia.push_back(row);
    ja.push_back(col);
    ar.push_back(v);
  };
  for (int i = 0; i < n; ++i) {
    if (cost[i] <= 0) continue;
    glp_add_rows(p.get(), 1);
    ++row;
    glp_set_row_bnds(p.get(), row, GLP_UP, 0, 0);
    add(1, cost[i] / 1e9);
    add(i + 2, -1);
  }
  glp_add_rows(p.get(), 1);
  ++row;
  glp_set_row_bnds(p.get(), row, GLP_UP, 0, cores);
  if (extra_ns_per_root > 0) add(1, extra_ns_per_root / 1e9);
  for (int i = 0; i < n; ++i) add(i + 2, 1);
  for (const auto& g : SequentialGroups(a)) {
    glp_add_rows(p.get(), 1);
    ++row;
    glp_set_row_bnds(p.get(), row, GLP_UP, 0, std::clamp(thread_share, 1e-3, 1.0));
    for (int64_t i : g) add(static_cast<int>(i) + 2, 1);
  }
  glp_load_matrix(p.get(), static_cast<int>(ia.size()) - 1, ia.data(), ja.data(), ar.data());
  // Costs span nanoseconds to seconds: scale the rows and columns, or the simplex can
  // stall on a cheap pipeline (a cache read per element); and bound its time.
  const int term = glp_term_out(GLP_OFF);  // the scaling reports on stdout
  glp_scale_prob(p.get(), GLP_SF_AUTO);
  glp_term_out(term);
  glp_smcp parm;
  glp_init_smcp(&parm);
  parm.msg_lev = GLP_MSG_OFF;
  parm.tm_lim = kLpTimeLimitMs;
  const int rc = glp_simplex(p.get(), &parm);
  if (rc != 0 || glp_get_status(p.get()) != GLP_OPT) {
    return InternalError("plumber: the throughput LP failed (GLPK code " + std::to_string(rc) +
                         ")");
  }
  LpResult r;
  r.x = glp_get_col_prim(p.get(), 1);
  for (int i = 0; i < n; ++i) r.theta.push_back(glp_get_col_prim(p.get(), i + 2));
  // The LP may hand spare cores to any node; report what X needs: theta_i = X c_i / 1e9.
  for (int i = 0; i < n; ++i) r.theta[i] = r.x * cost[i] / 1e9;
  return r;
}

Result<Plan> MakePlan(const Analysis& traced, const PlanOptions& opts) {
  if (traced.nodes.empty()) return InvalidArgumentError("plumber: empty analysis");
  // First pass: which sequential-form ops (Map, Filter, Batch, Interleave) earn more than
  // one core. Those that do not stay sequential (a thread of their own would cost a
  // handoff per element and gain nothing), so the second pass plans them as such.
  Analysis a = traced;
  const double availability = std::clamp(
      opts.cpu_availability > 0 ? opts.cpu_availability : a.trace.machine.cpu_availability,
      0.05, 1.0);
  const double physical_cores =
      static_cast<double>(opts.cores > 0 ? opts.cores : std::max<int64_t>(1, a.trace.machine.cores));
  const double cores = availability * physical_cores;
  // Availability is per runnable thread (the scheduler shares a busy machine by threads):
  // one thread gets `availability` of a core, so a sequential group is capped there, and
  // an op needs theta / availability threads to get theta cores.
  const double share = availability;
  {
    const double c0 = cores;
    std::vector<double> cost;
    for (const NodeAnalysis& n : traced.nodes) cost.push_back(n.cpu_ns_per_root);
    SLUICE_ASSIGN_OR_RETURN(LpResult first, SolveLp(traced, cost, c0, kInf, 0, share));
    // A chain of maps the engine fuses runs as one op: it needs the sum of its thetas.
    const std::vector<int64_t> top = FusionTops(a);
    std::vector<double> chain_theta(a.nodes.size(), 0);
    for (const NodeAnalysis& n : a.nodes) chain_theta[top[n.id]] += first.theta[n.id];
    for (NodeAnalysis& n : a.nodes) {
      if (!n.sequential && SequentialForm(a.trace.nodes[n.id].op) &&
          chain_theta[top[n.id]] <= share) {
        n.sequential = true;
        a.trace.nodes[n.id].parallelizable = false;
      }
    }
  }
  // Second: an op whose handoffs cost more than its parallelism gains stays sequential
  // (one greedy sweep, costliest handoff first).
  for (bool changed = true; changed;) {
    changed = false;
    SLUICE_ASSIGN_OR_RETURN(Evaluation with, Evaluate(a, cores, opts.disk_scale, {}, share));
    const std::vector<int64_t> top = FusionTops(a);
    for (NodeAnalysis& n : a.nodes) {
      if (!MadeParallel(a, n.id)) continue;
      Analysis demoted = a;
      for (const NodeAnalysis& m : a.nodes) {  // its fused chain with it
        if (top[m.id] != top[n.id] || !MadeParallel(a, m.id)) continue;
        demoted.nodes[m.id].sequential = true;
        demoted.trace.nodes[m.id].parallelizable = false;
      }
      SLUICE_ASSIGN_OR_RETURN(Evaluation without, Evaluate(demoted, cores, opts.disk_scale, {}, share));
      if (without.x >= with.x) {
        a = std::move(demoted);
        changed = true;
        break;
      }
    }
  }
  Plan plan;
  int64_t budget = opts.ram_budget;
  if (budget <= 0) budget = a.trace.ram_budget > 0 ? a.trace.ram_budget : a.trace.machine.memory_bytes / 2;
  plan.ram_budget = budget;
  const double cache_budget = 0.8 * static_cast<double>(budget);

  SLUICE_ASSIGN_OR_RETURN(Evaluation base, Evaluate(a, cores, opts.disk_scale, {}, share));
  plan.predicted_rate_no_cache = base.x;

  // Cache candidates: deterministic, finite, known size, with work below them.
  std::vector<int64_t> fits, all;
  for (const NodeAnalysis& n : a.nodes) {
    if (!n.cacheable) continue;
    all.push_back(n.id);
    if (n.materialized_bytes <= cache_budget) fits.push_back(n.id);
  }
  std::vector<int64_t> caches = opts.force_cache;
  if (caches.empty() && opts.allow_cache) {
    SLUICE_ASSIGN_OR_RETURN(caches, PlaceCaches(a, cache_budget, fits));
  }
  Evaluation e = base;
  if (!caches.empty()) {
    SLUICE_ASSIGN_OR_RETURN(e, Evaluate(a, cores, opts.disk_scale, caches, share));
    if (e.x < base.x * 1.05 && opts.force_cache.empty()) {  // not worth its memory
      caches.clear();
      e = base;
    }
  }
  plan.cache_nodes = caches;
  for (int64_t c : caches) plan.cache_bytes += static_cast<int64_t>(a.nodes[c].materialized_bytes);
  plan.predicted_rate = e.x;
  plan.cpu_bound = base.x_cpu;
  plan.disk_bound = base.disk;

  // The maps of a fused chain become one op with the largest parallelism of the chain
  // (map_fusion), so each is given the chain's: the threads its summed theta needs.
  const std::vector<int64_t> fused_top = FusionTops(a);
  std::vector<double> chain_theta(a.nodes.size(), 0);
  for (const NodeAnalysis& n : a.nodes) chain_theta[fused_top[n.id]] += e.theta[n.id];
  int64_t max_par = 1;
  for (const NodeAnalysis& n : a.nodes) {
    NodePlan np;
    np.id = n.id;
    np.theta = e.theta[n.id];
    np.bound = e.cost[n.id] > 0 ? np.theta * 1e9 / e.cost[n.id] : kInf;
    if (a.trace.nodes[n.id].parallelizable) {
      np.parallelism = std::clamp<int64_t>(
          static_cast<int64_t>(std::ceil(chain_theta[fused_top[n.id]] / share - 0.05)), 1,
          std::max<int64_t>(1, static_cast<int64_t>(std::ceil(physical_cores))));
      max_par = std::max(max_par, np.parallelism);
    }
    plan.nodes.push_back(np);
  }
  plan.prefetch = e.prefetch ? std::max<int64_t>(2, max_par) : 0;

  // ---- Bottlenecks, tightest first ----
  struct Ranked {
    Bottleneck b;
    int priority;
  };
  std::vector<Ranked> ranked;
  double total_cost = 0;
  int64_t top = -1;
  for (const NodeAnalysis& n : a.nodes) {
    total_cost += base.cost[n.id];
    if (top < 0 || base.cost[n.id] > base.cost[top]) top = n.id;
  }
  const std::string unit = "elements/s";
  if (top >= 0 && base.cost[top] > 0) {
    const NodeAnalysis& t = a.nodes[top];
    const double bound = total_cost > 0 ? cores * 1e9 / total_cost : kInf;
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "%s runs at %s %s per core and has %.2g of the %.2g cores available: the pipeline is "
                  "CPU-bound at %s %s (all operators together need %.3g ms of CPU per "
                  "element; %.0f%% of it in %s)",
                  t.name.c_str(), Rate(1e9 / base.cost[top]).c_str(), unit.c_str(),
                  base.theta[top], cores, Rate(bound).c_str(), unit.c_str(), total_cost / 1e6,
                  100.0 * base.cost[top] / total_cost, t.name.c_str());
    ranked.push_back({{"cpu", top, buf, bound}, 2});
  }
  for (const auto& g : SequentialGroups(a)) {
    double c = 0;
    int64_t worst = g[0];
    bool gil = false;
    for (int64_t i : g) {
      c += base.cost[i];
      if (base.cost[i] > base.cost[worst]) worst = i;
      gil = gil || a.nodes[i].gil;
    }
    if (c <= 0) continue;
    const double bound = share * 1e9 / c;
    if (bound > std::max(base.x_cpu, 1e-9) * 1.5) continue;  // far from binding
    char buf[512];
    if (gil) {
      std::snprintf(buf, sizeof buf,
                    "%s is a Python function: it holds the GIL, so it runs on one core "
                    "whatever the parallelism; at %.3g ms per element it caps the pipeline "
                    "at %s %s (GIL-bound)",
                    a.nodes[worst].name.c_str(), c / 1e6, Rate(bound).c_str(), unit.c_str());
    } else {
      std::snprintf(buf, sizeof buf,
                    "%s cannot run in parallel (a sequential operator on one thread): at "
                    "%.3g ms per element it caps the pipeline at %s %s",
                    a.nodes[worst].name.c_str(), c / 1e6, Rate(bound).c_str(), unit.c_str());
    }
    ranked.push_back({{gil ? "gil" : "sequential", worst, buf, bound}, 1});
  }
  if (std::isfinite(base.disk)) {
    char buf[512];
    const bool par = a.trace.machine.parallel_read_bps > 0;
    std::snprintf(buf, sizeof buf,
                  "the disk delivers %s/s (%s/s with %lld readers) and each element needs "
                  "%s read: the pipeline is disk-bound at %s %s",
                  Bytes(a.trace.machine.sequential_read_bps).c_str(),
                  Bytes(par ? a.trace.machine.parallel_read_bps : 0).c_str(),
                  static_cast<long long>(a.trace.machine.parallel_readers),
                  Bytes(a.disk_bytes_per_root).c_str(), Rate(base.disk).c_str(), unit.c_str());
    ranked.push_back({{"disk", -1, buf, base.disk}, 0});
  }
  // Memory: the best cache does not fit, and it would have helped.
  if (opts.force_cache.empty() && opts.allow_cache) {
    int64_t best = -1;
    double best_rate = 0;
    for (int64_t c : all) {
      if (a.nodes[c].materialized_bytes <= cache_budget) continue;
      auto ev = Evaluate(a, cores, opts.disk_scale, {c}, share);
      if (ev.ok() && ev->x > best_rate) {
        best_rate = ev->x;
        best = c;
      }
    }
    if (best >= 0 && best_rate > plan.predicted_rate * 1.2) {
      char buf[512];
      std::snprintf(buf, sizeof buf,
                    "caching after %s would raise the bound to %s %s but needs %s of the "
                    "%s budget: the pipeline is memory-bound (it does not fit)",
                    a.nodes[best].name.c_str(), Rate(best_rate).c_str(), unit.c_str(),
                    Bytes(a.nodes[best].materialized_bytes).c_str(),
                    Bytes(static_cast<double>(budget)).c_str());
      ranked.push_back({{"memory", best, buf, plan.predicted_rate_no_cache}, -1});
    }
  }
  // The consumer: it kept the pipeline waiting (its own step is the limit).
  const double consumer_rate =
      a.trace.consumer_ns > 0 ? a.trace.nodes[a.root].elements * 1e9 / a.trace.consumer_ns
                              : kInf;
  if (a.consumer_wait_fraction < 0.5 && consumer_rate < plan.predicted_rate_no_cache) {
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "the consumer takes %.3g ms per element and waited for the pipeline only "
                  "%.0f%% of the time: the pipeline is not the bottleneck (the consumer is, "
                  "at %s %s; the pipeline could deliver %s)",
                  1e3 / consumer_rate, 100 * a.consumer_wait_fraction,
                  Rate(consumer_rate).c_str(), unit.c_str(),
                  Rate(plan.predicted_rate_no_cache).c_str());
    ranked.push_back({{"consumer", -1, buf, consumer_rate}, -2});
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const Ranked& x, const Ranked& y) {
    if (std::abs(x.b.bound - y.b.bound) > 0.02 * std::min(x.b.bound, y.b.bound)) {
      return x.b.bound < y.b.bound;
    }
    return x.priority < y.priority;
  });
  for (auto& r : ranked) plan.bottlenecks.push_back(std::move(r.b));

  // ---- What-ifs ----
  auto what_if = [&](std::string q, double c, double disk, std::vector<int64_t> cache) {
    auto ev = Evaluate(a, c, disk, cache, share);
    if (ev.ok()) plan.what_ifs.push_back({std::move(q), ev->x, BindingBound(a, *ev)});
  };
  what_if("two more cores", cores + 2 * availability, opts.disk_scale, caches);
  what_if("twice the disk bandwidth", cores, opts.disk_scale * 2, caches);
  what_if("no cache", cores, opts.disk_scale, {});
  int64_t best_all = -1;
  for (int64_t c : all) {
    if (best_all < 0 || a.nodes[c].materialized_bytes >= 0) best_all = c;  // closest to root
  }
  if (best_all >= 0) {
    what_if("a cache after " + a.nodes[best_all].name + " (" +
                Bytes(a.nodes[best_all].materialized_bytes) + ")",
            cores, opts.disk_scale, {best_all});
  }
  return plan;
}

}  // namespace sluice::plumber
