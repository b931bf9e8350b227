#include "runtime/spsc_ring.h"


#if defined(__linux__)
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace sluice {
namespace asymmetric_fence {

std::atomic<bool> heavy_ready{false};

namespace {
// Registers the process for expedited private membarriers (once); false when the kernel
// (or a sandbox) does not offer them.
bool Register() {
#if defined(__linux__) && defined(__NR_membarrier)
  const long cmds = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
  if (cmds < 0 || (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return false;
  return syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
#else
  return false;
#endif
}
}  // namespace

void HeavyBarrier() {
  static const bool registered = [] {
    const bool ok = Register();
    // From here on a LightBarrier may skip the hardware fence: every HeavyBarrier after
    // this store issues the membarrier (a LightBarrier that still reads false fences).
    if (ok) heavy_ready.store(true, std::memory_order_seq_cst);
    return ok;
  }();
  std::atomic_thread_fence(std::memory_order_seq_cst);
#if defined(__linux__) && defined(__NR_membarrier)
  if (registered && syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0) {
    return;
  }
#endif
  // Unreachable once registered (the call does not fail after registration); a plain
  // fence is all there is otherwise, and then every LightBarrier fences too.
  (void)registered;
}

}  // namespace asymmetric_fence
}  // namespace sluice
