// Model: an analytical performance model of a live pipeline, built from one snapshot of
// the stats plane (Iterator::Snapshot) and the pipeline's AUTOTUNE knobs, in the spirit of
// tf.data's (Murray et al., VLDB 2021, section 4.3), with these choices:
//
//  * Work. Every node's exclusive CPU per element of the root ("work", ns) is
//    cpu_ns / root elements produced. Visit ratios come out of the counts; no per-op
//    ratio rules are needed.
//  * Stages. A synchronous node runs on the thread of its nearest asynchronous ancestor
//    (or the consumer's, for the nodes above the first one): each asynchronous node A
//    owns a stage whose serial part is the work of the synchronous nodes it pulls through.
//    An AsyncBuffer (parallel map, batch, prefetch...) overlaps its runner with pool work:
//    T_A = max(work_A / p_A, serial_A). A parallel interleave runs its input chain on its
//    workers: T_A = (work_A + serial_A) / p_A. The consumer stage is the consumer's own
//    time per element (measured: time outside GetNext) plus the work above the first
//    asynchronous node. A stage that reads from no asynchronous node (a source chain, so
//    I/O waits belong to it) uses the larger of its CPU and its measured wall time.
//  * Buffers. Each asynchronous node's buffer is an M/M/1/K queue between its stage
//    (producer) and its consumer's stage, K = the slots not taken by work in flight; it
//    loses throughput by the blocking probability P_K, which larger buffers shrink.
//  * Output period (ns per root element) = max(softmax_q(T_s), C / cpu_budget) x the
//    buffers' losses, where softmax_q is the q-norm (q = 8) of the stage periods, a
//    smooth max (two equal bottlenecks both count, so a hill climb never stalls on a
//    plateau), and C / cpu_budget is the saturation bound: past it, parallelism brings
//    nothing because the CPUs are all busy.
//  * Memory. Buffered bytes = sum over buffering nodes of slots x bytes per element (from
//    the stats plane), with the slots a knob value implies (KnobSpec::slots) or the node's
//    fixed buffer_limit.
//
// Thread-safety: immutable after Build; const methods are thread-safe.
#ifndef SLUICE_AUTOTUNE_MODEL_H_
#define SLUICE_AUTOTUNE_MODEL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/tunable.h"
#include "sluice/dataset.h"

namespace sluice {

class Model {
 public:
  // `knobs` are the live knobs; values passed to Period/BufferedBytes are indexed like it.
  // consumer_ns: the consumer's own time per root element (0 if unknown).
  static Model Build(const PipelineStats& stats, const std::vector<KnobState>& knobs,
                     double consumer_ns);

  // Whether the root produced enough elements for the figures to mean something.
  bool ready() const { return ready_; }
  // Whether knob k's node has produced output (its work and sizes are measured).
  bool knob_ready(size_t k) const { return knob_node_[k] >= 0 && nodes_[knob_node_[k]].ready; }
  // The exclusive CPU per root element (ns) of knob k's node; 0 when it is not measured.
  double knob_work(size_t k) const {
    return knob_ready(k) ? nodes_[knob_node_[k]].work : 0;
  }
  // Modelled ns per root element at knob values v.
  double Period(const std::vector<int64_t>& v) const;
  // The pool threads the model expects busy at once at knob values v: the sum over
  // asynchronous ops of min(parallelism, own work / period). The saturation bound keeps it
  // at or below the CPU budget.
  double BusyThreads(const std::vector<int64_t>& v) const;
  // Modelled bytes held in buffers at knob values v.
  double BufferedBytes(const std::vector<int64_t>& v) const;
  // The saturation bound C / cpu_budget (ns per root element).
  double SaturationPeriod() const { return total_work_ / cpu_budget_; }
  // Total CPU work per root element (ns).
  double total_work() const { return total_work_; }
  int64_t cpu_budget() const { return static_cast<int64_t>(cpu_budget_); }

 private:
  struct Node {
    std::string name;
    int parent = -1;
    int stage = -1;      // index of the async node whose thread runs it; -1: consumer's
    bool async = false;
    bool interleave = false;
    bool ready = false;  // produced something
    bool reads_async = false;  // its stage reads from an async node below
    double work = 0;     // exclusive CPU ns per root element
    double wall = 0;     // inclusive wall ns per root element (callers' time in GetNext)
    double bytes = 0;    // bytes per element it produces
    int64_t fixed_parallelism = 1;
    int64_t fixed_slots = 0;
    int par_knob = -1, buf_knob = -1;
  };
  double Parallelism(const Node& n, const std::vector<int64_t>& v) const;
  double Slots(const Node& n, const std::vector<int64_t>& v) const;

  std::vector<Node> nodes_;
  std::vector<KnobState> knobs_;
  std::vector<int> knob_node_;  // node index of each knob; -1 when not in the snapshot
  double consumer_ns_ = 0;
  double total_work_ = 0;
  double cpu_budget_ = 1;
  bool ready_ = false;
};

// M/M/1/K blocking probability at load rho = arrival rate / service rate.
double BlockingProbability(double rho, int64_t k);

}  // namespace sluice

#endif  // SLUICE_AUTOTUNE_MODEL_H_
