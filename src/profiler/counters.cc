#include "profiler/counters.h"

#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace sluice::profiler {
namespace {

struct Def {
  uint32_t type;
  uint64_t config;
};

constexpr Def kDefs[kNumCounters] = {
    {PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK},
    {PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS},
    {PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES},
    {PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS},
    {PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
    {PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS},
    {PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES},
    {PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES},
    {PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND},
    {PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_BACKEND},
};

int OpenCounter(int id, int group) {
  perf_event_attr a;
  std::memset(&a, 0, sizeof a);
  a.size = sizeof a;
  a.type = kDefs[id].type;
  a.config = kDefs[id].config;
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  a.read_format = PERF_FORMAT_GROUP;
  return static_cast<int>(syscall(SYS_perf_event_open, &a, 0, -1, group, 0));
}

// Opens counters [first, last) as one group; returns the leader or -1 (errno set).
int OpenGroup(int first, int last, int* ids, int* n, int* fds, int* nfds) {
  int leader = -1;
  for (int id = first; id < last; ++id) {
    const int fd = OpenCounter(id, leader);
    if (fd < 0) continue;  // a member the CPU lacks (e.g. stall events) is left out
    if (leader < 0) leader = fd;
    ids[(*n)++] = id;
    fds[(*nfds)++] = fd;
  }
  return leader;
}

void ReadGroup(int fd, int n, const int* ids, uint64_t out[kNumCounters]) {
  if (fd < 0) return;
  uint64_t buf[1 + kNumCounters];
  const ssize_t got = read(fd, buf, sizeof(uint64_t) * (1 + n));
  if (got < static_cast<ssize_t>(sizeof(uint64_t))) return;
  const uint64_t nr = buf[0] < static_cast<uint64_t>(n) ? buf[0] : n;
  for (uint64_t i = 0; i < nr; ++i) out[ids[i]] = buf[1 + i];
}

}  // namespace

ThreadCounters::~ThreadCounters() {
  for (int i = 0; i < nfds_; ++i) close(fds_[i]);
}

Status ThreadCounters::Open() {
  sw_fd_ = OpenGroup(0, kNumSoftwareCounters, sw_ids_, &sw_n_, fds_, &nfds_);
  if (sw_fd_ < 0) {
    return ErrnoToStatus(errno,
                         "profiler: perf_event_open of software counters failed "
                         "(see /proc/sys/kernel/perf_event_paranoid)",
                         "");
  }
  hw_fd_ = OpenGroup(kNumSoftwareCounters, kNumCounters, hw_ids_, &hw_n_, fds_, &nfds_);
  return Status::OK();
}

void ThreadCounters::Read(uint64_t out[kNumCounters]) const {
  std::memset(out, 0, sizeof(uint64_t) * kNumCounters);
  ReadGroup(sw_fd_, sw_n_, sw_ids_, out);
  ReadGroup(hw_fd_, hw_n_, hw_ids_, out);
}

const std::string& ThreadCounters::HardwareUnavailableReason() {
  static const std::string reason = [] {
    const int fd = OpenCounter(4, -1);  // cycles
    if (fd >= 0) {
      close(fd);
      return std::string();
    }
    return std::string(
               "hardware counters unavailable on this machine (perf_event_open "
               "of cpu cycles: ") +
           std::strerror(errno) + "); software counters only";
  }();
  return reason;
}

}  // namespace sluice::profiler
