// Optimizer: picks knob values for a Model within hard CPU and RAM budgets.
//
// Greedy hill climbing (tf.data's HILL_CLIMB): start every measured knob at its minimum
// (knobs whose node has produced nothing yet keep their current value), then repeatedly
// take the single +1 step that lowers the modelled output period the most, among the
// steps that keep
//   * every kParallelism knob <= cpu_budget (the model's saturation bound, total work /
//     cpu_budget, stops growth once the modelled busy threads fill the budget: more
//     parallelism then gains nothing), and
//   * the modelled buffered bytes <= ram_budget (when limited),
// until no step gains at least kMinGain of the period. Starting from the minimums each
// time makes the result a function of the measured work, not of the path taken, so
// repeated rounds agree and a knob shrinks when its work does.
//
// Thread-safety: a pure function.
#ifndef SLUICE_AUTOTUNE_OPTIMIZER_H_
#define SLUICE_AUTOTUNE_OPTIMIZER_H_

#include <cstdint>
#include <vector>

#include "autotune/model.h"
#include "runtime/tunable.h"

namespace sluice {

struct OptimizerLimits {
  int64_t cpu_budget = 1;  // bound on each parallelism knob (not on their sum; see above)
  int64_t ram_budget = 0;  // bytes; <= 0: unlimited
  // A step must lower the period by this fraction to be taken.
  double min_gain = 0.01;
};

// Values for `knobs` (indexed alike); `current` are their present values.
std::vector<int64_t> HillClimb(const Model& model, const std::vector<KnobState>& knobs,
                               const std::vector<int64_t>& current,
                               const OptimizerLimits& limits);

// The sum of the kParallelism knobs' values.
int64_t TotalParallelism(const std::vector<KnobState>& knobs, const std::vector<int64_t>& v);

}  // namespace sluice

#endif  // SLUICE_AUTOTUNE_OPTIMIZER_H_
