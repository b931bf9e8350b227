#include "runtime/spsc_ring.h"

#include <cstdlib>

#if defined(__linux__)
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace sluice {
namespace asymmetric_fence {

namespace {
// Registers the process for expedited private membarriers; false when the kernel (or a
// sandbox) does not offer them, or SLUICE_NO_MEMBARRIER is set.
bool Register() {
  if (std::getenv("SLUICE_NO_MEMBARRIER") != nullptr) return false;
#if defined(__linux__) && defined(__NR_membarrier)
  const long cmds = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
  if (cmds < 0 || (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return false;
  return syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
#else
  return false;
#endif
}
}  // namespace

bool Available() {
  static const bool registered = Register();
  return registered;
}

void HeavyBarrier() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
#if defined(__linux__) && defined(__NR_membarrier)
  // After registration the call does not fail; were it to, the asymmetric mode would
  // be unsafe, so it is not worth going on.
  if (Available() &&
      syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0) {
    std::abort();
  }
#endif
}

}  // namespace asymmetric_fence
}  // namespace sluice
