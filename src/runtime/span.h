// The per-element span hook of the stats plane: when a SpanRecorder is attached to a
// pipeline (Options::span_recorder), every iterator of its tree reports each GetNext
// call as a Span on the thread that made the call. With no recorder attached the hook
// costs one predictable branch per GetNext: nothing is timed or recorded. The profiler
// (src/profiler/) implements recorders; tests use counting ones.
//
// Cost with a recorder attached: two reads of SpanClockNs per call (below: about 10 ns
// each where the TSC drives the kernel's clock, else clock_gettime's 20-30 ns), plus
// what Record does. The hook calls Begin only for recorders that ask for it (calls_begin), and hands
// Record a per-iterator cache slot (Span::cache) so a recorder can keep what it resolved
// from the prefix (an operator id) without a per-span lookup.
//
// Thread-safety: Record is called concurrently from every thread that drives an iterator
// of the pipeline (the consumer, prefetch runners, pool workers); implementations must be
// thread-safe and fast (buffer, do not block).
#ifndef SLUICE_RUNTIME_SPAN_H_
#define SLUICE_RUNTIME_SPAN_H_

#include <atomic>
#include <cstdint>
#include <string_view>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace sluice {

namespace span_clock_internal {
struct ThreadState {
  uint64_t tsc_base = 0;
  uint64_t window = 0;  // ticks after tsc_base that need a re-anchor (0: every call)
  int64_t ns_base = 0;
  int64_t last = 0;
  double ns_per_tick = 0;
};
inline thread_local ThreadState tls;
// Anchors the calling thread at `tsc` and returns the time (CLOCK_MONOTONIC).
int64_t Reanchor(uint64_t tsc);
}  // namespace span_clock_internal

// The clock of span timestamps: CLOCK_MONOTONIC nanoseconds, non-decreasing per thread.
// Where the kernel's clocksource is an invariant TSC (x86-64: clocksource "tsc",
// constant_tsc and nonstop_tsc), a call is one rdtsc scaled from a per-thread anchor: the
// thread re-reads CLOCK_MONOTONIC every millisecond, and the ticks-to-ns scale is measured
// once (2 ms) and refined from every re-anchor against the first, so a reading stays
// within tens of ns of clock_gettime's. Elsewhere it is clock_gettime(CLOCK_MONOTONIC).
inline int64_t SpanClockNs() {
#if defined(__x86_64__)
  span_clock_internal::ThreadState& s = span_clock_internal::tls;
  const uint64_t t = __rdtsc();
  if (t - s.tsc_base >= s.window) [[unlikely]] return span_clock_internal::Reanchor(t);
  int64_t ns = s.ns_base + static_cast<int64_t>(static_cast<double>(t - s.tsc_base) *
                                                s.ns_per_tick);
  if (ns < s.last) ns = s.last;
  s.last = ns;
  return ns;
#else
  return span_clock_internal::Reanchor(0);
#endif
}

// One GetNext call of one iterator.
struct Span {
  int64_t node_id = -1;      // IteratorStats::node_id of the iterator
  std::string_view prefix;   // the iterator's place in the tree (valid during Record only)
  std::string_view op;       // the op, e.g. "Map" (valid during Record only)
  int64_t index = 0;         // the call's position: elements produced before it
  int64_t start_ns = 0;      // CLOCK_MONOTONIC
  int64_t end_ns = 0;
  bool produced = false;     // an element came out (false: end of data or an error)
  bool error = false;
  // Not a GetNext: a piece of a parallel operator's work run on the pool (its function on
  // one input), reported as "<prefix>/fn" with op "<Op>:fn" and the input's position.
  bool work = false;
  // A slot owned by the reporting iterator for the recorder's use, or null (work spans).
  // It starts at -1 and is only ever handed to the one recorder attached to that iterator
  // (an iterator's recorder never changes); relaxed atomic, as pool threads may share it.
  std::atomic<int64_t>* cache = nullptr;
};

class SpanRecorder {
 public:
  virtual ~SpanRecorder() = default;
  virtual void Record(const Span& span) = 0;
  // Called on the same thread just before the GetNext whose span Record then reports, so
  // a recorder can read per-thread counters at operator boundaries (calls nest like the
  // spans). Default: nothing.
  virtual void Begin() {}
  // Whether Begin does anything: the per-element hook skips the call when false. Fixed
  // for the recorder's lifetime (read when iterators call it).
  bool calls_begin() const { return calls_begin_; }
  // Asked twice when an iterator is made: for its GetNext spans (prefix: its place in the
  // tree; parent_op: the op of the iterator that made it, "" for a root) and for the
  // spans of its pool work (prefix "<prefix>/fn", parent_op: its own op). False leaves
  // the iterator without that hook, so it costs nothing at all per element (a recorder
  // that keeps only some iterators' spans). Default: every iterator, all work.
  virtual bool Wants(std::string_view prefix, std::string_view parent_op) const {
    return true;
  }

 protected:
  // Recorders whose Begin is a no-op set this false (in their constructor).
  bool calls_begin_ = true;
};

// The recorder attached to iterators whose options name none (null: none). Set by a
// global profiler session (include/sluice/profiler.h); read when an iterator is made.
SpanRecorder* GlobalSpanRecorder();
void SetGlobalSpanRecorder(SpanRecorder* recorder);

}  // namespace sluice

#endif  // SLUICE_RUNTIME_SPAN_H_
