// What the process may use: cores and memory, respecting affinity and cgroup limits.
#ifndef SLUICE_RUNTIME_RESOURCES_H_
#define SLUICE_RUNTIME_RESOURCES_H_

#include <cstdint>

namespace sluice {

// Cores this process may run on: the CPU affinity mask (taskset), further capped by a
// cgroup v2 (cpu.max) or v1 (cfs_quota_us / cfs_period_us) quota, rounded up. At least 1.
int AvailableCores();
// Bytes of memory this process may still use: AvailableMemoryFrom(ReadMemoryFacts()).
// 0 when unknown.
int64_t AvailableMemory();

// What bounds the memory this process may use; 0 in a field means unknown / no limit.
struct MemoryFacts {
  int64_t mem_available = 0;  // MemAvailable of /proc/meminfo
  int64_t rlimit_as = 0;      // the RLIMIT_AS soft limit (RLIM_INFINITY: 0)
  int64_t address_space = 0;  // the process's current virtual size (VmSize)
  int64_t cgroup_limit = 0;   // cgroup v2 memory.max, else v1 memory.limit_in_bytes
  int64_t cgroup_usage = 0;   // memory.current (v2) / memory.usage_in_bytes (v1)
};
// The facts of this process (reads /proc and /sys/fs/cgroup).
MemoryFacts ReadMemoryFacts();
// The smallest of: MemAvailable; the RLIMIT_AS limit minus the address space in use; the
// cgroup limit minus its usage (each headroom at least 0). Pure. 0 when nothing is known.
int64_t AvailableMemoryFrom(const MemoryFacts& f);

}  // namespace sluice

#endif  // SLUICE_RUNTIME_RESOURCES_H_
