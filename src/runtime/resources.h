// What the process may use: cores and memory, respecting affinity and cgroup limits.
#ifndef SLUICE_RUNTIME_RESOURCES_H_
#define SLUICE_RUNTIME_RESOURCES_H_

#include <cstdint>
#include <string_view>

#include "sluice/element.h"
#include "sluice/status.h"

namespace sluice {

// Cores this process may run on: the CPU affinity mask (taskset), further capped by a
// cgroup v2 (cpu.max) or v1 (cfs_quota_us / cfs_period_us) quota, rounded up. At least 1.
int AvailableCores();
// Bytes of memory this process may still use: AvailableMemoryFrom(ReadMemoryFacts()).
// 0 when unknown.
int64_t AvailableMemory();

// Batches, windows and shuffle buffers hold up to a size taken from an attribute
// (batch(10**9) over an endless input), which must not drive memory on its own. Call
// with the first element held (held == 1) and again as `held` grows:
// BatchMemoryCheckDue(held, size) says when: only for sizes above 1024, at the first
// element and then at powers of two (so the cost is nil). The elements still expected
// are min(size, input_cardinality) when the cardinality is known or infinite, else as
// many again as are held. ResourceExhausted ("<what> of <size> elements of about <n>
// bytes each needs more than the <m> bytes of memory available") when they do not fit
// in AvailableMemory() (no check when that is unknown). `what` is e.g. "a batch".
Status CheckBufferMemory(std::string_view what, int64_t size, int64_t input_cardinality,
                         int64_t held, const Element& row);
// The same check when the rows' count and size are known up front (a batch that gathers
// its rows): `rows` rows of `row_bytes` (> 0) each, reported as <what> of <size> elements.
Status CheckRowsFitMemory(std::string_view what, int64_t size, int64_t rows,
                          int64_t row_bytes);
inline bool BatchMemoryCheckDue(int64_t rows_read, int64_t batch_size) {
  if (batch_size <= 1024) return false;
  return rows_read == 1 || (rows_read >= 1024 && (rows_read & (rows_read - 1)) == 0);
}
// Rows to reserve for a batch of `batch_size`: capped, so the reservation itself is never
// the allocation that fails.
inline int64_t BatchReserve(int64_t batch_size) {
  return batch_size < 1024 ? batch_size : 1024;
}

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
