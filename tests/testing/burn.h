// CPU burners for tests of the stats plane and the tuner: work measured in this thread's
// CPU time, so preemption does not shorten it.
#ifndef SLUICE_TESTS_TESTING_BURN_H_
#define SLUICE_TESTS_TESTING_BURN_H_

#include <cstdint>

#include "runtime/node_stats.h"
#include "sluice/dataset.h"

namespace sluice::testing {

// Burns about `us` microseconds of this thread's CPU.
inline void Burn(int64_t us) {
  const int64_t end = ThreadCpuNs() + us * 1000;
  volatile int64_t x = 0;
  while (ThreadCpuNs() < end) {
    for (int i = 0; i < 200; ++i) x = x + i;
  }
}

// A map named "burn" that burns `us` microseconds per element and returns it unchanged.
inline Function Burner(int64_t us) {
  return Function::Map("burn", [us](Element e, FunctionContext&) -> Result<Element> {
    Burn(us);
    return e;
  });
}

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_TESTING_BURN_H_
