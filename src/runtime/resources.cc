#include "runtime/resources.h"

#include <sched.h>

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
  } catch (...) {
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

int64_t AvailableMemory() {
  int64_t avail = 0;
  std::ifstream f("/proc/meminfo");
  std::string key;
  int64_t kb = 0;
  std::string unit;
  while (f >> key >> kb >> unit) {
    if (key == "MemAvailable:") {
      avail = kb * 1024;
      break;
    }
  }
  int64_t limit = ParseInt(ReadLine("/sys/fs/cgroup/memory.max"));
  int64_t usage = ParseInt(ReadLine("/sys/fs/cgroup/memory.current"));
  if (limit <= 0) {
    limit = ParseInt(ReadLine("/sys/fs/cgroup/memory/memory.limit_in_bytes"));
    usage = ParseInt(ReadLine("/sys/fs/cgroup/memory/memory.usage_in_bytes"));
    if (limit >= (int64_t{1} << 60)) limit = 0;  // v1 "unlimited"
  }
  if (limit > 0) {
    const int64_t cg = std::max<int64_t>(limit - usage, 0);
    avail = avail > 0 ? std::min(avail, cg) : cg;
  }
  return avail;
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
  const int64_t avail = AvailableMemory();
  if (avail <= 0 || rows <= avail / row_bytes) return Status::OK();
  return ResourceExhaustedError(std::string(what) + " of " + std::to_string(batch_size) +
                                " elements of about " + std::to_string(row_bytes) +
                                " bytes each needs more than the " +
                                std::to_string(avail) + " bytes of memory available");
}

}  // namespace sluice
