#include <time.h>

#include <atomic>
#include <fstream>
#include <sstream>
#include <string>

#include "runtime/span.h"

namespace sluice::span_clock_internal {
namespace {

constexpr int64_t kWindowNs = 1000000;          // re-anchor every millisecond
constexpr int64_t kRefineAfterNs = 50000000;    // refine the scale past 50 ms of baseline

int64_t MonoNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

#if defined(__x86_64__)
struct Pair {
  uint64_t tsc;
  int64_t ns;
};

// A (tsc, ns) pair read back to back: the narrowest of a few brackets.
Pair ReadPair() {
  Pair best{0, 0};
  uint64_t width = ~uint64_t{0};
  for (int i = 0; i < 8; ++i) {
    const uint64_t t0 = __rdtsc();
    const int64_t ns = MonoNs();
    const uint64_t t1 = __rdtsc();
    if (t1 - t0 < width) {
      width = t1 - t0;
      best = {t0 + (t1 - t0) / 2, ns};
    }
  }
  return best;
}

bool TscDrivesTheClock() {
  std::ifstream cs("/sys/devices/system/clocksource/clocksource0/current_clocksource");
  std::string source;
  if (!(cs >> source) || source != "tsc") return false;
  std::ifstream cpu("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpu, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line);
    bool constant = false, nonstop = false;
    for (std::string w; words >> w;) {
      constant |= w == "constant_tsc";
      nonstop |= w == "nonstop_tsc";
    }
    return constant && nonstop;
  }
  return false;
}

struct Calibration {
  bool usable = false;
  Pair origin{0, 0};
};

std::atomic<double> process_ns_per_tick{0};

Calibration Calibrate() {
  Calibration c;
  if (!TscDrivesTheClock()) return c;
  c.origin = ReadPair();
  Pair p = c.origin;
  while (p.ns - c.origin.ns < 2000000) p = ReadPair();
  if (p.tsc <= c.origin.tsc) return c;
  process_ns_per_tick.store(static_cast<double>(p.ns - c.origin.ns) /
                            static_cast<double>(p.tsc - c.origin.tsc));
  c.usable = true;
  return c;
}
#endif

}  // namespace

int64_t Reanchor(uint64_t tsc) {
  ThreadState& s = tls;
#if defined(__x86_64__)
  static const Calibration calibration = Calibrate();
  if (calibration.usable) {
    const Pair p = ReadPair();
    const Pair& o = calibration.origin;
    double scale = process_ns_per_tick.load(std::memory_order_relaxed);
    if (p.ns - o.ns > kRefineAfterNs && p.tsc > o.tsc) {
      scale = static_cast<double>(p.ns - o.ns) / static_cast<double>(p.tsc - o.tsc);
      process_ns_per_tick.store(scale, std::memory_order_relaxed);
    }
    s.ns_per_tick = scale;
    s.tsc_base = p.tsc;
    s.ns_base = p.ns;
    s.window = static_cast<uint64_t>(kWindowNs / scale);
    // `tsc` was read before the pair: the time it stands for is at most p.ns.
    int64_t ns = p.ns - static_cast<int64_t>(static_cast<double>(p.tsc - tsc) * scale);
    if (tsc > p.tsc) ns = p.ns;
    if (ns < s.last) ns = s.last;
    s.last = ns;
    return ns;
  }
#endif
  (void)tsc;
  int64_t ns = MonoNs();
  if (ns < s.last) ns = s.last;
  s.last = ns;
  return ns;
}

}  // namespace sluice::span_clock_internal
