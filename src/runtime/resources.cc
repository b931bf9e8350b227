#include "runtime/resources.h"
#include "runtime/exception_status.h"

#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "sluice/dataset.h"

namespace sluice {
namespace {

// Reads the first line of a file; "" when it cannot be read.
std::string ReadLine(const char* path) {
  std::ifstream f(path);
  std::string line;
  if (f) std::getline(f, line);
  return line;
}

// The cgroup CPU quota in cores, or 0 when there is none.
double CgroupCpuQuota() {
  std::istringstream v2(ReadLine("/sys/fs/cgroup/cpu.max"));
  std::string quota;
  double period = 0;
  if (v2 >> quota >> period && quota != "max" && period > 0) {
    return std::stod(quota) / period;
  }
  std::string q1 = ReadLine("/sys/fs/cgroup/cpu/cpu.cfs_quota_us");
  std::string p1 = ReadLine("/sys/fs/cgroup/cpu/cpu.cfs_period_us");
  if (!q1.empty() && !p1.empty()) {
    double q = std::stod(q1), p = std::stod(p1);
    if (q > 0 && p > 0) return q / p;
  }
  return 0;
}

int64_t ParseInt(const std::string& s) {
  if (s.empty() || s == "max") return 0;
  try {
    return std::stoll(s);
  } SLUICE_RETHROW_FORCED_UNWIND catch (...) {
    return 0;
  }
}

}  // namespace

int AvailableCores() {
  int n = 0;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) n = CPU_COUNT(&set);
  if (n <= 0) n = static_cast<int>(std::thread::hardware_concurrency());
  const double quota = CgroupCpuQuota();
  if (quota > 0) n = std::min(n, static_cast<int>(std::ceil(quota)));
  return std::max(n, 1);
}

MemoryFacts ReadMemoryFacts() {
  MemoryFacts m;
  {
    std::ifstream f("/proc/meminfo");
    std::string key;
    int64_t kb = 0;
    std::string unit;
    while (f >> key >> kb >> unit) {
      if (key == "MemAvailable:") {
        m.mem_available = kb * 1024;
        break;
      }
    }
  }
  struct rlimit rl;
  if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
      rl.rlim_cur < (rlim_t{1} << 62)) {
    m.rlimit_as = static_cast<int64_t>(rl.rlim_cur);
    std::ifstream statm("/proc/self/statm");  // first field: VmSize in pages
    int64_t pages = 0;
    if (statm >> pages) m.address_space = pages * sysconf(_SC_PAGESIZE);
  }
  m.cgroup_limit = ParseInt(ReadLine("/sys/fs/cgroup/memory.max"));
  m.cgroup_usage = ParseInt(ReadLine("/sys/fs/cgroup/memory.current"));
  if (m.cgroup_limit <= 0) {
    m.cgroup_limit = ParseInt(ReadLine("/sys/fs/cgroup/memory/memory.limit_in_bytes"));
    m.cgroup_usage = ParseInt(ReadLine("/sys/fs/cgroup/memory/memory.usage_in_bytes"));
    if (m.cgroup_limit >= (int64_t{1} << 60)) m.cgroup_limit = 0;  // v1 "unlimited"
  }
  return m;
}

Status CheckBufferMemory(std::string_view what, int64_t batch_size,
                         int64_t input_cardinality, int64_t rows_read,
                         const Element& row) {
  int64_t rows = batch_size;
  if (input_cardinality >= 0) {
    rows = std::min(batch_size, input_cardinality);
  } else if (input_cardinality != kInfiniteCardinality) {
    rows = std::min(batch_size, 2 * rows_read);
  }
  // A held row: its Element, each tensor with its buffer header, and the batch's copy.
  int64_t row_bytes = sizeof(Element);
  for (const Tensor& t : row.tensors()) {
    row_bytes += sizeof(Tensor) + 128 + 2 * static_cast<int64_t>(t.nbytes());
    if (t.dtype() == DType::kString)
      row_bytes += 2 * t.num_elements() * sizeof(std::string);
  }
  return CheckRowsFitMemory(what, batch_size, rows, row_bytes);
}

Status CheckRowsFitMemory(std::string_view what, int64_t size, int64_t rows,
                          int64_t row_bytes) {
  const int64_t avail = AvailableMemory();
  if (avail <= 0 || rows <= avail / row_bytes) return Status::OK();
  return ResourceExhaustedError(std::string(what) + " of " + std::to_string(size) +
                                " elements of about " + std::to_string(row_bytes) +
                                " bytes each needs more than the " +
                                std::to_string(avail) + " bytes of memory available");
}


int64_t AvailableMemoryFrom(const MemoryFacts& f) {
  int64_t avail = -1;  // -1: nothing known yet
  auto cap = [&avail](int64_t v) {
    v = std::max<int64_t>(v, 0);
    avail = avail < 0 ? v : std::min(avail, v);
  };
  if (f.mem_available > 0) cap(f.mem_available);
  if (f.rlimit_as > 0) cap(f.rlimit_as - f.address_space);
  if (f.cgroup_limit > 0) cap(f.cgroup_limit - f.cgroup_usage);
  return std::max<int64_t>(avail, 0);
}

int64_t AvailableMemory() { return AvailableMemoryFrom(ReadMemoryFacts()); }

}  // namespace sluice
