// CPU hints for the code that hands data between cores.
//
// CpuRelax: the spin-wait hint (x86 PAUSE, Arm YIELD), for every polling loop: it frees
// the core's pipeline for its sibling hyperthread and keeps the loop from flooding the
// memory system with speculative loads.
//
// PrefetchForWrite: asks for a cache line in the state a store needs (exclusive), ahead
// of the store. A line the other core wrote last (a recycled block, a ring slot the
// consumer emptied) is a miss on the first store to it; the read prefetch that
// __builtin_prefetch(p, 1) compiles to without -mprfchw fetched it shared, so the store
// still waited for the other core's copy to be invalidated: two trips instead of one.
// PREFETCHW where the CPU has it (x86 CPUID 0x80000001 ECX bit 8, every Intel core
// since Broadwell and every AMD one), the plain prefetch elsewhere.
//
// Thread-safety: any thread.
#ifndef SLUICE_CORE_CPU_H_
#define SLUICE_CORE_CPU_H_

namespace sluice {

namespace internal {
bool HasPrefetchW();
extern const bool kHasPrefetchW;
}  // namespace internal

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

inline void PrefetchForWrite(const void* p) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (internal::kHasPrefetchW) {
    asm volatile("prefetchw %0" : : "m"(*static_cast<const char*>(p)));
    return;
  }
#endif
  __builtin_prefetch(p, 1);
}

}  // namespace sluice

#endif  // SLUICE_CORE_CPU_H_
