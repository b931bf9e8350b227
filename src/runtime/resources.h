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
// Bytes of memory this process may still use: MemAvailable from /proc/meminfo, capped by a
// cgroup memory limit minus current usage. 0 when unknown.
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
inline bool BatchMemoryCheckDue(int64_t rows_read, int64_t batch_size) {
  if (batch_size <= 1024) return false;
  return rows_read == 1 || (rows_read >= 1024 && (rows_read & (rows_read - 1)) == 0);
}
// Rows to reserve for a batch of `batch_size`: capped, so the reservation itself is never
// the allocation that fails.
inline int64_t BatchReserve(int64_t batch_size) {
  return batch_size < 1024 ? batch_size : 1024;
}

}  // namespace sluice

#endif  // SLUICE_RUNTIME_RESOURCES_H_
