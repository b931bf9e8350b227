#include "core/cpu.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#endif

namespace sluice::internal {

bool HasPrefetchW() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0x80000001u, &a, &b, &c, &d) == 0) return false;
  return (c & (1u << 8)) != 0;  // PRFCHW (3DNowPrefetch)
#else
  return false;
#endif
}

const bool kHasPrefetchW = HasPrefetchW();

}  // namespace sluice::internal
