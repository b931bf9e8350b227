// What the process may use: cores and memory, respecting affinity and cgroup limits.
#ifndef SLUICE_RUNTIME_RESOURCES_H_
#define SLUICE_RUNTIME_RESOURCES_H_

#include <cstdint>

namespace sluice {

// Cores this process may run on: the CPU affinity mask (taskset), further capped by a
// cgroup v2 (cpu.max) or v1 (cfs_quota_us / cfs_period_us) quota, rounded up. At least 1.
int AvailableCores();
// Bytes of memory this process may still use: MemAvailable from /proc/meminfo, capped by a
// cgroup memory limit minus current usage. 0 when unknown.
int64_t AvailableMemory();

}  // namespace sluice

#endif  // SLUICE_RUNTIME_RESOURCES_H_
