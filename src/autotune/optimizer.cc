#include "autotune/optimizer.h"

#include <algorithm>

namespace sluice {

int64_t TotalParallelism(const std::vector<KnobState>& knobs, const std::vector<int64_t>& v) {
  int64_t total = 0;
  for (size_t k = 0; k < knobs.size(); ++k) {
    if (knobs[k].kind == KnobKind::kParallelism) total += v[k];
  }
  return total;
}

std::vector<int64_t> HillClimb(const Model& model, const std::vector<KnobState>& knobs,
                               const std::vector<int64_t>& current,
                               const OptimizerLimits& limits) {
  std::vector<int64_t> v = current;
  for (size_t k = 0; k < knobs.size(); ++k) {
    if (model.knob_ready(k)) v[k] = knobs[k].min;
  }
  const double ram = static_cast<double>(limits.ram_budget);
  // CPU: every parallelism knob is at most the budget (its max), and the model's
  // saturation bound makes growth stop once the modelled busy threads reach the budget;
  // the pool (cpu_budget threads) enforces it at run time whatever the knobs say.
  auto fits = [&](const std::vector<int64_t>& c) {
    for (size_t k = 0; k < knobs.size(); ++k) {
      if (knobs[k].kind == KnobKind::kParallelism && c[k] > limits.cpu_budget &&
          c[k] > knobs[k].min) {
        return false;
      }
    }
    return limits.ram_budget <= 0 || model.BufferedBytes(c) <= ram;
  };
  double period = model.Period(v);
  while (period > 0) {
    int best = -1;
    double best_period = period;
    for (size_t k = 0; k < knobs.size(); ++k) {
      if (!model.knob_ready(k) || v[k] >= knobs[k].max) continue;
      ++v[k];
      if (fits(v)) {
        const double p = model.Period(v);
        if (p < best_period) {
          best_period = p;
          best = static_cast<int>(k);
        }
      }
      --v[k];
    }
    if (best < 0 || best_period > period * (1 - limits.min_gain)) break;
    ++v[best];
    period = best_period;
  }
  return v;
}

}  // namespace sluice
