#include "autotune/autotuner.h"

namespace sluice {

// Placeholder until the tuner lands: nothing is tuned.
std::unique_ptr<Autotuner> Autotuner::Start(Runtime* runtime,
                                            std::function<PipelineStats()> snapshot) {
  return nullptr;
}

Autotuner::~Autotuner() = default;

std::vector<TunedParameter> Autotuner::Parameters() const { return {}; }

}  // namespace sluice
