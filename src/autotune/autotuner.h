// Autotuner: tunes a live pipeline's AUTOTUNE knobs (parallelism, buffer sizes) online,
// within the runtime's hard CPU and RAM budgets (tf.data's model-based autotuning, Murray
// et al. VLDB 2021, section 4.3).
//
// Made by Dataset::MakeIterator when autotuning is on; runs a background thread that reads
// the stats plane (Iterator::Snapshot) and writes the knobs' atomics. Chosen values are
// visible through Parameters() (Iterator::TunedParameters) and logged when they change.
//
// Thread-safety: thread-safe; the destructor stops and joins the tuning thread.
#ifndef SLUICE_AUTOTUNE_AUTOTUNER_H_
#define SLUICE_AUTOTUNE_AUTOTUNER_H_

#include <functional>
#include <memory>
#include <vector>

#include "runtime/runtime.h"
#include "sluice/dataset.h"

namespace sluice {

class Autotuner {
 public:
  // Starts tuning the knobs of `runtime`'s pipeline; `snapshot` reads the live stats tree.
  // Null when there is nothing to tune.
  static std::unique_ptr<Autotuner> Start(Runtime* runtime,
                                          std::function<PipelineStats()> snapshot);
  ~Autotuner();

  std::vector<TunedParameter> Parameters() const;

 private:
  Autotuner() = default;
};

}  // namespace sluice

#endif  // SLUICE_AUTOTUNE_AUTOTUNER_H_
