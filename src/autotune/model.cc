#include "autotune/model.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "graph/registry.h"

namespace sluice {
namespace {
constexpr double kSoftMaxQ = 8;
// Root elements the root must have produced before the model is used.
constexpr int64_t kMinRootElements = 2;
}  // namespace

double BlockingProbability(double rho, int64_t k) {
  k = std::max<int64_t>(1, k);
  if (!(rho > 0)) return 0;
  if (std::abs(rho - 1) < 1e-9) return 1.0 / static_cast<double>(k + 1);
  // (1 - rho) rho^k / (1 - rho^(k+1)), computed stably for large rho.
  if (rho > 1) {
    const double inv = 1 / rho;
    return (1 - inv) / (1 - std::pow(inv, static_cast<double>(k + 1)));
  }
  return (1 - rho) * std::pow(rho, static_cast<double>(k)) /
         (1 - std::pow(rho, static_cast<double>(k + 1)));
}

Model Model::Build(const PipelineStats& stats, const std::vector<KnobState>& knobs,
                   double consumer_ns) {
  Model m;
  m.knobs_ = knobs;
  m.consumer_ns_ = std::max(0.0, consumer_ns);
  m.cpu_budget_ = static_cast<double>(std::max<int64_t>(1, stats.cpu_budget));
  m.knob_node_.assign(knobs.size(), -1);
  if (stats.nodes.empty()) return m;
  const double root = static_cast<double>(stats.nodes[0].elements_produced);
  m.ready_ = stats.nodes[0].elements_produced >= kMinRootElements;
  const double per_root = root > 0 ? 1 / root : 0;
  std::map<std::string, int> by_prefix;
  m.nodes_.resize(stats.nodes.size());
  for (size_t i = 0; i < stats.nodes.size(); ++i) {
    const IteratorStats& s = stats.nodes[i];
    Node& n = m.nodes_[i];
    n.name = s.name;
    n.parent = s.parent;
    n.async = s.async;
    const OpDef* def = Registry::Global().FindOp(s.name);
    n.interleave = def != nullptr && def->traits().async && def->traits().interleave;
    n.ready = s.elements_produced > 0;
    n.work = static_cast<double>(s.cpu_ns) * per_root;
    n.wall = static_cast<double>(s.wall_ns) * per_root;
    n.bytes = s.elements_produced > 0
                  ? static_cast<double>(s.bytes_produced) / static_cast<double>(s.elements_produced)
                  : 0;
    n.fixed_parallelism = std::max<int64_t>(1, s.parallelism);
    n.fixed_slots = s.buffer_limit;
    if (n.parent >= 0) {
      const Node& p = m.nodes_[n.parent];
      n.stage = p.async ? n.parent : p.stage;
    }
    m.total_work_ += n.work;
    by_prefix.emplace(s.prefix, static_cast<int>(i));
  }
  // Which stages read from an asynchronous node (so their wall time includes waits).
  for (const Node& n : m.nodes_) {
    if (!n.async || n.parent < 0) continue;
    const int stage = m.nodes_[n.parent].async ? n.parent : m.nodes_[n.parent].stage;
    if (stage >= 0) m.nodes_[stage].reads_async = true;
  }
  for (size_t k = 0; k < knobs.size(); ++k) {
    auto it = by_prefix.find(knobs[k].prefix);
    if (it == by_prefix.end()) continue;
    m.knob_node_[k] = it->second;
    Node& n = m.nodes_[it->second];
    (knobs[k].kind == KnobKind::kParallelism ? n.par_knob : n.buf_knob) = static_cast<int>(k);
  }
  return m;
}

double Model::Parallelism(const Node& n, const std::vector<int64_t>& v) const {
  return static_cast<double>(n.par_knob >= 0 ? std::max<int64_t>(1, v[n.par_knob])
                                             : n.fixed_parallelism);
}

double Model::Slots(const Node& n, const std::vector<int64_t>& v) const {
  if (n.buf_knob >= 0) return static_cast<double>(knobs_[n.buf_knob].SlotsAt(v[n.buf_knob]));
  if (n.par_knob >= 0) {
    const int64_t s = knobs_[n.par_knob].SlotsAt(v[n.par_knob]);
    if (s >= 0) return static_cast<double>(s);
  }
  return static_cast<double>(n.fixed_slots);
}

double Model::Period(const std::vector<int64_t>& v) const {
  if (nodes_.empty()) return 0;
  const size_t n = nodes_.size();
  // Serial work and wall of each stage (index n: the consumer's).
  std::vector<double> serial(n + 1, 0), chain_wall(n + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    const Node& x = nodes_[i];
    const size_t st = x.stage < 0 ? n : static_cast<size_t>(x.stage);
    // An asynchronous node's own work runs on its workers (its period below), not on the
    // thread of the stage that reads it.
    if (!x.async) serial[st] += x.work;
    // The stage's chain top: a node whose parent is the stage's owner.
    const bool top = x.stage < 0 ? x.parent < 0 : x.parent == x.stage;
    if (top) chain_wall[st] += x.wall;
  }
  std::vector<double> period(n + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    const Node& x = nodes_[i];
    if (!x.async) continue;
    double s = serial[i];
    if (!x.reads_async) s = std::max(s, chain_wall[i]);
    const double p = Parallelism(x, v);
    period[i] = x.interleave ? (x.work + s) / p : std::max(x.work / p, s);
  }
  period[n] = consumer_ns_ + serial[n];
  double sum = 0, top = 0;
  for (double t : period) top = std::max(top, t);
  if (top <= 0) return 0;
  for (double t : period) sum += std::pow(t / top, kSoftMaxQ);
  double out = std::max(top * std::pow(sum, 1 / kSoftMaxQ), SaturationPeriod());
  // Buffer losses: M/M/1/K between each async stage and the stage consuming it.
  for (size_t i = 0; i < n; ++i) {
    const Node& x = nodes_[i];
    if (!x.async || period[i] <= 0) continue;
    const size_t cons = x.stage < 0 ? n : static_cast<size_t>(x.stage);
    const double tc = period[cons];
    if (tc <= 0) continue;
    const double p = x.interleave ? 1.0 : Parallelism(x, v);
    const int64_t k = std::max<int64_t>(1, static_cast<int64_t>(Slots(x, v) - p + 1));
    const double rho = tc / period[i];  // arrival (production) rate over service rate
    const double ideal = std::min(1 / period[i], 1 / tc);
    const double x_rate = (1 / period[i]) * (1 - BlockingProbability(rho, k));
    if (x_rate > 0) out *= std::max(1.0, ideal / x_rate);
  }
  return out;
}

double Model::BusyThreads(const std::vector<int64_t>& v) const {
  const double period = Period(v);
  if (!(period > 0)) return 0;
  double busy = 0;
  for (const Node& x : nodes_) {
    if (x.async) busy += std::min(Parallelism(x, v), x.work / period);
  }
  return busy;
}

double Model::BufferedBytes(const std::vector<int64_t>& v) const {
  double total = 0;
  for (const Node& x : nodes_) {
    if (!x.async) continue;
    total += Slots(x, v) * x.bytes;
  }
  return total;
}

}  // namespace sluice
