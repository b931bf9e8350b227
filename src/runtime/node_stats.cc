#include "runtime/node_stats.h"

#include <algorithm>

#include "sluice/element.h"

namespace sluice {

int64_t ElementBytes(const Element& e) {
  int64_t n = 0;
  for (const Tensor& t : e.tensors()) n += static_cast<int64_t>(t.nbytes());
  return n;
}

void NodeStats::RecordSample(int64_t cpu_ns, int64_t wall_ns, const Element* produced) {
  const int32_t p = period.load(std::memory_order_relaxed);
  Add(counted_calls, p);
  Add(sampled_calls, 1);
  Add(sampled_cpu_ns, cpu_ns);
  Add(sampled_wall_ns, wall_ns);
  Add(weighted_cpu_ns, cpu_ns * p);
  Add(weighted_wall_ns, wall_ns * p);
  if (produced != nullptr) {
    const int64_t bytes = ElementBytes(*produced);
    Add(sampled_elements, 1);
    Add(sampled_bytes, bytes);
    Add(weighted_elements, p);
    Add(weighted_bytes, bytes * p);
  }
  // Next period: timing should cost about kTargetOverhead of this node's time.
  const int64_t n = sampled_calls.load(std::memory_order_relaxed);
  const double mean_wall =
      std::max<double>(1.0, static_cast<double>(sampled_wall_ns.load(std::memory_order_relaxed)) /
                                static_cast<double>(n));
  double target = static_cast<double>(kSampleCostNs) / (kTargetOverhead * mean_wall);
  // The first few calls are always timed so estimates exist early.
  if (n < 4) target = 1;
  target = std::clamp(target, 1.0, static_cast<double>(kMaxPeriod));
  jitter_state = jitter_state * 1664525u + 1013904223u;
  const double jitter = 0.5 + static_cast<double>(jitter_state >> 8) / static_cast<double>(1u << 24);
  const int32_t next = std::max<int32_t>(1, static_cast<int32_t>(target * jitter));
  period.store(next, std::memory_order_relaxed);
  countdown.store(next, std::memory_order_relaxed);
}

int64_t NodeStats::InflightExcessWallNs(int64_t now_ns) const {
  const int64_t start = timed_call_start_ns.load(std::memory_order_relaxed);
  if (start <= 0 || now_ns <= start) return 0;
  const int64_t n = sampled_calls.load(std::memory_order_relaxed);
  const int64_t mean = n > 0 ? sampled_wall_ns.load(std::memory_order_relaxed) / n : 0;
  return std::max<int64_t>(0, now_ns - start - mean);
}

int64_t NodeStats::EstimatedCalls() const {
  const int64_t partial = period.load(std::memory_order_relaxed) -
                          countdown.load(std::memory_order_relaxed);
  return counted_calls.load(std::memory_order_relaxed) + std::max<int64_t>(partial, 0);
}

namespace {
int64_t Scale(int64_t sampled_sum, int64_t samples, int64_t total) {
  if (samples <= 0) return 0;
  return static_cast<int64_t>(static_cast<double>(sampled_sum) / static_cast<double>(samples) *
                              static_cast<double>(total));
}
}  // namespace

int64_t NodeStats::EstimatedInclusiveCpuNs() const {
  return Scale(weighted_cpu_ns.load(std::memory_order_relaxed),
               counted_calls.load(std::memory_order_relaxed), EstimatedCalls());
}

int64_t NodeStats::EstimatedWallNs() const {
  return Scale(weighted_wall_ns.load(std::memory_order_relaxed),
               counted_calls.load(std::memory_order_relaxed), EstimatedCalls());
}

int64_t NodeStats::EstimatedBytesProduced() const {
  return Scale(weighted_bytes.load(std::memory_order_relaxed),
               weighted_elements.load(std::memory_order_relaxed),
               elements_produced.load(std::memory_order_relaxed));
}

int64_t NodeStats::EstimatedTaskCpuNs() const {
  return Scale(task_sampled_cpu_ns.load(std::memory_order_relaxed),
               task_sampled.load(std::memory_order_relaxed),
               task_calls.load(std::memory_order_relaxed));
}

void NodeTotals::Retire(const IteratorStats& row) {
  iterators.fetch_add(1, std::memory_order_relaxed);
  elements_produced.fetch_add(row.elements_produced, std::memory_order_relaxed);
  elements_consumed.fetch_add(row.elements_consumed, std::memory_order_relaxed);
  elements_skipped.fetch_add(row.elements_skipped, std::memory_order_relaxed);
  cpu_ns.fetch_add(row.cpu_ns, std::memory_order_relaxed);
  wall_ns.fetch_add(row.wall_ns, std::memory_order_relaxed);
  bytes_produced.fetch_add(row.bytes_produced, std::memory_order_relaxed);
  bytes_consumed.fetch_add(row.bytes_consumed, std::memory_order_relaxed);
  file_bytes_read.fetch_add(row.file_bytes_read, std::memory_order_relaxed);
}

void NodeTotals::AddTo(IteratorStats* row) const {
  row->elements_produced += elements_produced.load(std::memory_order_relaxed);
  row->elements_consumed += elements_consumed.load(std::memory_order_relaxed);
  row->elements_skipped += elements_skipped.load(std::memory_order_relaxed);
  row->cpu_ns += cpu_ns.load(std::memory_order_relaxed);
  row->wall_ns += wall_ns.load(std::memory_order_relaxed);
  row->bytes_produced += bytes_produced.load(std::memory_order_relaxed);
  row->bytes_consumed += bytes_consumed.load(std::memory_order_relaxed);
  row->file_bytes_read += file_bytes_read.load(std::memory_order_relaxed);
}

int64_t StaticElementBytes(const ElementSpec& spec) {
  if (spec.unknown) return -1;
  // Past 2^62 bytes (a spec no element can fill; an IDX file of 0 rows may declare one)
  // the size counts as unknown, so that budgets never add or multiply overflowing sizes.
  constexpr int64_t kMaxBytes = int64_t{1} << 62;
  int64_t total = 0;
  for (const TensorSpec& t : spec.components) {
    if (t.dtype == DType::kString || !t.shape.fully_defined()) return -1;
    int64_t n = static_cast<int64_t>(DTypeSize(t.dtype));
    for (int64_t d : t.shape.dims()) {
      if (__builtin_mul_overflow(n, d, &n) || n > kMaxBytes) return -1;
    }
    total += n;
    if (total > kMaxBytes) return -1;
  }
  return total;
}

}  // namespace sluice
