// Per-thread perf_event_open counters (Linux): software events (task clock, page faults,
// context switches, CPU migrations) and, where the machine exposes them, hardware events
// (cycles, instructions, cache and branch misses, front-end and back-end stalls).
//
// Each group counts the calling thread only, user space only (exclude_kernel, so an
// unprivileged process with perf_event_paranoid <= 2 may open it), and is read with one
// read() per group. Values are cumulative since Open; callers take differences.
//
// Thread-safety: an object belongs to the thread that opened it (it counts that thread).
#ifndef SLUICE_PROFILER_COUNTERS_H_
#define SLUICE_PROFILER_COUNTERS_H_

#include <cstdint>
#include <string>

#include "profiler/event.h"

namespace sluice::profiler {

class ThreadCounters {
 public:
  ThreadCounters() = default;
  ~ThreadCounters();
  ThreadCounters(const ThreadCounters&) = delete;
  ThreadCounters& operator=(const ThreadCounters&) = delete;

  // Opens the groups for the calling thread. Software counters failing to open is an
  // error; hardware ones failing leaves hardware_available() false.
  Status Open();
  bool software_available() const { return sw_fd_ >= 0; }
  bool hardware_available() const { return hw_fd_ >= 0; }
  // Cumulative values in CounterId order (kCounterNames); unavailable counters read 0.
  void Read(uint64_t out[kNumCounters]) const;

  // Why hardware counters are unavailable on this machine ("" when they are), probed
  // once per process.
  static const std::string& HardwareUnavailableReason();

 private:
  int sw_fd_ = -1;
  int hw_fd_ = -1;
  int sw_n_ = 0;
  int hw_n_ = 0;
  int sw_ids_[kNumCounters] = {};  // CounterId of each group member, in group order
  int hw_ids_[kNumCounters] = {};
  int fds_[2 * kNumCounters] = {};
  int nfds_ = 0;
};

}  // namespace sluice::profiler

#endif  // SLUICE_PROFILER_COUNTERS_H_
