// When an async op at the root of a pipeline pays off: the one rule that both the static
// pass (optimizer/inject_prefetch.cc, through optimizer/cost_model.h) and the tuner's
// inline decision (autotune/autotuner.cc) apply, so the two cannot disagree.
//
// A Prefetch does no work of its own and runs its input on one thread: all it can gain is
// overlap between the work it moves off the consumer's thread (its input's GetNext, per
// element) and the consumer's own time per element (what the caller does between two
// GetNext calls). Per element, inline costs work + consumer; async costs
// max(work, consumer) + handoff. So async is faster only when
//
//     min(work moved, consumer's own time) > handoff
//
// (with a margin for measurement, kRootAsyncLine below).
//
// Cases (2 cores; docs/autotune.md, "A Prefetch at the root"):
//  - a bare loop (benchmarks, `sluice bench`, a Python loop that only counts batches)
//    has ~0 consumer time: over a synchronous input the root prefetch stays inline
//    whatever its input costs; the consumer would only sleep and be woken for each
//    element (the text row of bench/small_elements.py lost 29% that way);
//  - a training step (ms per batch) over a synchronous batch of decoded images (ms per
//    batch): both are far above the handoff, so the prefetch goes async and the batch is
//    assembled during the step;
//  - a cheap input (in-memory slices, small batches): the work is below the handoff, so
//    it stays inline whatever the consumer does.
//
// Over an input that already runs async (a ParallelMap, MapAndBatch or parallel
// interleave whose work is on the pool), the work a root prefetch moves off the consumer
// is only a handoff, so this rule would always keep it inline; but there it is a second
// buffer between the pool's workers and the consumer's scheduling. On the loaded 2-core
// machine keeping it inline cost `sluice bench text` (root prefetch over a parallel
// interleave, bare loop) 20-35% in two of three interleaved A/B runs, so the tuner
// leaves that case to the work rule (async when the input's CPU per element, the pool's
// included, exceeds a handoff), as before this rule.
// Figures are ns per element; kUnknownNs stands for "not known": an unknown figure may be
// above the handoff, so it never vetoes (the static pass, which cannot know the
// consumer, injects the prefetch and leaves the measured decision to the tuner).
//
// Thread-safety: pure functions.
#ifndef SLUICE_RUNTIME_ASYNC_PAYOFF_H_
#define SLUICE_RUNTIME_ASYNC_PAYOFF_H_

#include <algorithm>
#include <limits>

#include "runtime/async_buffer.h"

namespace sluice {

inline constexpr double kUnknownNs = -1;

// The time per element that running asynchronously can save: min(work, consumer), an
// unknown figure counting as unbounded; kUnknownNs when both are unknown.
inline double RootAsyncGainNs(double work_ns, double consumer_ns) {
  const double inf = std::numeric_limits<double>::infinity();
  const double gain = std::min(work_ns < 0 ? inf : work_ns, consumer_ns < 0 ? inf : consumer_ns);
  return gain == inf ? kUnknownNs : gain;
}

// The line the gain must clear, in handoffs. The consumer's time is measured as wall time
// outside GetNext, which reads 3-6 us per element for a bare C++ loop on a loaded 2-core
// machine (the timer's own calls, preemption, the window's edges): a line of one handoff
// (5 us) would split bare loops at random.
inline constexpr double kRootAsyncLine = 2;

// Whether an async op at the root (a Prefetch) is worth its handoff: the gain is unknown
// (may be above) or above kRootAsyncLine handoffs.
inline bool RootAsyncPaysOff(double work_ns, double consumer_ns,
                             double handoff_ns = AsyncBufferIterator::kHandoffNs) {
  const double gain = RootAsyncGainNs(work_ns, consumer_ns);
  return gain < 0 || gain > kRootAsyncLine * handoff_ns;
}

}  // namespace sluice

#endif  // SLUICE_RUNTIME_ASYNC_PAYOFF_H_
