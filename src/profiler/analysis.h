// From recorded events to what the exports show: spans with their own (self) time,
// batches with wait and delay, and the summary per operator.
//
// Self time: on each thread spans nest (a synchronous operator's span contains its
// inputs' spans); an operator's own time is its span minus its direct children's. With
// 1-in-N sampling a child may be missing, so the parent's own time is overstated then.
//
// Batches: batch k's consumer side is a root span (or a kAsked event) with index k, its
// production side a span of the root's first input (or a kReady event) with index k. The
// n-th occurrence of k on one side pairs with the n-th on the other (a second iterator or
// epoch restarts the indexes). out_of_order counts batches that became ready before a
// batch of a lower index did.
#ifndef SLUICE_PROFILER_ANALYSIS_H_
#define SLUICE_PROFILER_ANALYSIS_H_

#include <string>
#include <vector>

#include "profiler/event.h"
#include "sluice/profiler.h"

namespace sluice::profiler {

struct SpanRecord {
  int32_t thread = 0;  // EventLog::threads index
  int32_t name = -1;   // EventLog::names index
  int64_t index = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t self_ns = 0;
  uint8_t flags = 0;
};

struct BatchRecord {
  int64_t index = 0;
  int64_t asked_ns = -1;  // -1: side not recorded
  int64_t taken_ns = -1;
  int64_t produce_start_ns = -1;
  int64_t ready_ns = -1;
  int32_t consumer_thread = -1;
  int32_t producer_thread = -1;
  bool out_of_order = false;
  bool complete() const { return taken_ns >= 0 && ready_ns >= 0; }
};

struct Analysis {
  EventLog log;
  std::vector<SpanRecord> spans;  // sorted by thread, then start
  std::vector<BatchRecord> batches;
  Summary summary;
  int64_t origin_ns = 0;  // earliest event: trace time 0
};

Analysis Analyze(EventLog log);

// Writes the Chrome Trace Event JSON of `a` to `path`.
Status WriteChromeTrace(const Analysis& a, const std::string& path);

}  // namespace sluice::profiler

#endif  // SLUICE_PROFILER_ANALYSIS_H_
