// Tracing: a short run of the pipeline with the stats plane sampled every few
// milliseconds, counters folded onto graph nodes, and the machine's facts.
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "core/env.h"
#include "graph/dataset_access.h"
#include "graph/op_def.h"
#include "graph/registry.h"
#include "plumber/plumber_internal.h"
#include "runtime/async_buffer.h"
#include "runtime/node_stats.h"
#include "runtime/resources.h"
#include "sluice/plumber.h"
#include "sluice/serialize.h"

namespace sluice::plumber {
namespace {

using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

int64_t ProcessCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

// Sums counters per graph node across snapshots, surviving iterators that are rebuilt
// (a Repeat's input each epoch): a counter that went back restarted from zero.
class Accumulator {
 public:
  explicit Accumulator(size_t nodes) : sums_(nodes) {}

  void Add(const PipelineStats& snap) {
    std::vector<int64_t> owner(snap.nodes.size(), -1);
    for (size_t i = 0; i < snap.nodes.size(); ++i) {
      const IteratorStats& s = snap.nodes[i];
      owner[i] = s.node_id >= 0 ? s.node_id : (s.parent >= 0 ? owner[s.parent] : -1);
      if (owner[i] < 0 || owner[i] >= static_cast<int64_t>(sums_.size())) continue;
      IteratorStats& last = last_[s.prefix];
      // cpu_ns and bytes are estimates that may move back a little; elements are exact.
      const bool restarted = s.elements_produced < last.elements_produced;
      const IteratorStats base = restarted ? IteratorStats{} : last;
      Sum& sum = sums_[owner[i]];
      if (s.node_id >= 0) {
        sum.elements += s.elements_produced - base.elements_produced;
        sum.bytes_produced += s.bytes_produced - base.bytes_produced;
        sum.bytes_consumed += s.bytes_consumed - base.bytes_consumed;
        sum.wall_ns += s.wall_ns - base.wall_ns;
        sum.parallelism = std::max(sum.parallelism, s.parallelism);
        sum.buffer_limit = std::max(sum.buffer_limit, s.buffer_limit);
      }
      sum.cpu_ns += s.cpu_ns - base.cpu_ns;
      sum.file_bytes_read += s.file_bytes_read - base.file_bytes_read;
      last = s;
    }
  }

  struct Sum {
    int64_t elements = 0, cpu_ns = 0, wall_ns = 0, bytes_produced = 0, bytes_consumed = 0,
            file_bytes_read = 0, parallelism = 0, buffer_limit = 0;
  };
  const std::vector<Sum>& sums() const { return sums_; }

 private:
  std::vector<Sum> sums_;
  std::map<std::string, IteratorStats> last_;
};

bool IsParallelizableOp(const std::string& op) {
  return op == "Map" || op == "ParallelMap" || op == "Filter" || op == "ParallelFilter" ||
         op == "Batch" || op == "ParallelBatch" || op == "MapAndBatch" ||
         op == "Interleave" || op == "ParallelInterleave";
}

// Input files named by a node's string attributes: existing files, glob matches, and the
// regular files under a directory (bounded).
void CollectFiles(Env* env, const AttrValue& v, std::map<std::string, int64_t>* sizes) {
  std::vector<std::string> names;
  if (auto* s = std::get_if<std::string>(&v)) names.push_back(*s);
  if (auto* l = std::get_if<std::vector<std::string>>(&v)) names = *l;
  for (const std::string& n : names) {
    if (n.empty() || n.size() > 4096) continue;
    std::vector<std::string> paths;
    if (n.find_first_of("*?[") != std::string::npos) {
      auto g = env->Glob(n);
      if (g.ok()) paths = *g;
    } else {
      paths.push_back(n);
    }
    std::vector<std::string> stack;
    for (const std::string& p : paths) {
      auto st = env->Stat(p);
      if (!st.ok()) continue;
      if (st->type == FileType::kRegular) (*sizes)[p] = static_cast<int64_t>(st->size);
      if (st->type == FileType::kDirectory) stack.push_back(p);
    }
    while (!stack.empty() && sizes->size() < 200000) {
      std::string dir = stack.back();
      stack.pop_back();
      auto children = env->GetChildren(dir);
      if (!children.ok()) continue;
      for (const DirEntry& e : *children) {
        std::string p = dir + "/" + e.name;
        if (e.type == FileType::kDirectory) stack.push_back(p);
        if (e.type != FileType::kRegular) continue;
        auto st = env->Stat(p);
        if (st.ok()) (*sizes)[p] = static_cast<int64_t>(st->size);
      }
    }
  }
}

// Reads `files` through `env` with `readers` threads for about `seconds`: bytes/s.
double MeasureReadBandwidth(Env* env, const std::vector<std::string>& files, int readers,
                            double seconds) {
  if (files.empty()) return 0;
  std::atomic<int64_t> total{0};
  std::atomic<bool> stop{false};
  const auto start = Clock::now();
  auto work = [&](int r) {
    std::string buf(1 << 20, '\0');
    for (size_t k = r; !stop.load(); k += readers) {
      auto f = env->NewRandomAccessFile(files[k % files.size()]);
      if (!f.ok()) return;
      uint64_t off = 0;
      while (!stop.load()) {
        auto n = (*f)->Read(off, buf.data(), buf.size());
        if (!n.ok() || *n == 0) break;
        off += *n;
        total += static_cast<int64_t>(*n);
        if (Clock::now() - start > std::chrono::duration<double>(seconds)) stop = true;
      }
      if (k >= files.size() * 4 && readers == 1) break;  // small data: enough samples
      if (Clock::now() - start > std::chrono::duration<double>(seconds)) stop = true;
    }
  };
  std::vector<std::thread> threads;
  for (int r = 0; r < readers; ++r) threads.emplace_back(work, r);
  for (auto& t : threads) t.join();
  const double s = std::chrono::duration<double>(Clock::now() - start).count();
  return s > 0 ? total.load() / s : 0;
}

// CPU per element of one handoff: Range -> parallel map (1 call) vs a sequential map. The
// function works longer than a group's target (runtime/async_buffer.h, "Groups"), so each
// element crosses threads on its own, as it does for the maps the planner makes parallel
// (their work is what makes them worth it) and for an element through a Prefetch; an
// identity function would be grouped and measure a fraction of that.
double MeasureHandoffNs() {
  constexpr int64_t kN = 1000;
  constexpr int64_t kWorkNs = 2 * AsyncBufferIterator::kGroupTargetNs;
  Function busy = Function::Map(
      "busy", [](Element e, FunctionContext&) -> Result<Element> {
        // This thread's CPU, not the wall clock: on a busy machine a preempted spin would
        // use less CPU in one run than the other and the difference would be noise.
        const int64_t until = ThreadCpuNs() + kWorkNs;
        while (ThreadCpuNs() < until) {
        }
        return e;
      });
  auto cpu_of = [&](const Dataset& ds) -> double {
    Options o;
    o.optimization.apply_default_optimizations = false;
    o.autotune.enabled = false;
    auto it = ds.MakeIterator(o);
    if (!it.ok()) return -1;
    const int64_t start = ProcessCpuNs();
    while (true) {
      auto e = (*it)->GetNext();
      if (!e.ok() || !*e) break;
    }
    return static_cast<double>(ProcessCpuNs() - start);
  };
  const double seq = cpu_of(Dataset::Range(kN).Map(busy));
  const double par = cpu_of(Dataset::Range(kN).Map(busy, 1, true));
  if (seq < 0 || par < 0) return 0;
  return std::max(0.0, (par - seq) / kN);
}

// CPU of one read of the thread CPU clock (what the stats plane reads around a timed call).
double MeasureTimerNs() {
  constexpr int kN = 20000;
  const int64_t start = ThreadCpuNs();
  int64_t last = start;
  for (int i = 0; i < kN; ++i) last = ThreadCpuNs();
  return static_cast<double>(last - start) / kN;
}

double MeasureClockNs() {
  constexpr int kN = 20000;
  volatile int64_t sink = 0;
  const int64_t start = ThreadCpuNs();
  for (int i = 0; i < kN; ++i) sink = Clock::now().time_since_epoch().count();
  return static_cast<double>(ThreadCpuNs() - start) / kN;
}

}  // namespace

// Run time and run-queue wait (ns) of each thread of this process.
SchedTimes ReadSchedstat() {
  SchedTimes out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    std::ifstream f(e.path() / "schedstat");
    int64_t run = 0, wait = 0;
    if (f >> run >> wait) out[std::atoll(e.path().filename().c_str())] = {run, wait};
  }
  return out;
}

// Threads that ran at least this share of the busiest thread's run time count.
constexpr double kBusyThreadShare = 0.5;

// Each busy thread's share run / (run + wait), averaged weighted by run time: the threads
// that do the work count, not those that mostly sleep and pay a scheduling delay per
// wake-up (a pool worker woken per element, the stats sampler: their ratio is wake-up
// latency, not the share a runnable thread gets; counting them made a bottleneck thread
// that got 0.6 of a core read as 0.35).
double Availability(const SchedTimes& before, const SchedTimes& after) {
  std::vector<std::pair<double, double>> ran;  // (run, wait) of each thread that ran
  double busiest = 0;
  for (const auto& [tid, v] : after) {
    auto it = before.find(tid);
    const auto base = it == before.end() ? std::pair<int64_t, int64_t>{0, 0} : it->second;
    const double run = static_cast<double>(v.first - base.first);
    const double wait = static_cast<double>(v.second - base.second);
    if (run <= 0) continue;
    ran.emplace_back(run, std::max(0.0, wait));
    busiest = std::max(busiest, run);
  }
  double run_total = 0, weighted = 0;
  for (const auto& [run, wait] : ran) {
    if (run < kBusyThreadShare * busiest) continue;
    run_total += run;
    weighted += run * (run / (run + wait));
  }
  return run_total > 0 ? std::clamp(weighted / run_total, 0.05, 1.0) : 1.0;
}

std::vector<TraceNode> DescribeGraph(const Dataset& ds) {
  std::vector<TraceNode> out;
  const DatasetPtr& root = NodeOf(ds);
  if (!root) return out;
  NodeIdMap ids = GraphNodeIds(root);
  for (const DatasetPtr& n : GraphNodesInIdOrder(root)) {
    TraceNode t;
    t.id = ids.at(n.get());
    t.op = n->op();
    t.name = n->op();
    if (!n->functions().empty()) t.name += "(" + n->functions()[0].name() + ")";
    for (const DatasetPtr& in : n->inputs()) t.inputs.push_back(ids.at(in.get()));
    const OpDef* def = FindOpDef(*n);
    if (def) {
      t.source = def->traits().source;
      t.random = def->traits().random;
      t.async = def->traits().async;
    }
    bool cheap = !n->functions().empty();
    if (t.op == "ListFiles") {  // random only when it shuffles
      auto sh = n->attrs().find("shuffle");
      if (sh != n->attrs().end() && std::holds_alternative<bool>(sh->second)) {
        t.random = std::get<bool>(sh->second);
      }
    }
    for (const Function& f : n->functions()) {
      t.random = t.random || f.is_random();
      t.stateful_function = t.stateful_function || f.traits().stateful;
      cheap = cheap && f.traits().cheap;
    }
    // A cheap function (a view) costs less than a handoff: never worth a thread.
    t.parallelizable = IsParallelizableOp(t.op) && !t.stateful_function &&
                       !(cheap && (t.op == "Map" || t.op == "Filter"));
    auto it = n->attrs().find("num_parallel_calls");
    if (it != n->attrs().end()) {
      if (auto* v = std::get_if<int64_t>(&it->second)) t.parallelism_attr = *v;
    }
    t.cardinality = n->Cardinality();
    out.push_back(std::move(t));
  }
  return out;
}

Result<Trace> TracePipeline(const Dataset& ds, const TraceOptions& opts) {
  SLUICE_RETURN_IF_ERROR(ds.status());
  Trace trace;
  trace.nodes = DescribeGraph(ds);
  auto graph = SerializeDataset(ds, GraphFormat::kJson);
  if (graph.ok()) {
    trace.graph_json = *graph;
  } else {
    trace.graph_error = graph.status().ToString();
  }
  Env* base = opts.env ? opts.env : (ds.options().env ? ds.options().env : Env::Default());
  CountingEnv counting(base);
  Options extra;
  extra.env = &counting;
  extra.optimization.apply_default_optimizations = false;
  extra.autotune.enabled = false;
  if (opts.cpu_budget > 0) extra.autotune.cpu_budget = opts.cpu_budget;
  // A copy of the graph runs, so the user's next pass over `ds` is still its first.
  SLUICE_ASSIGN_OR_RETURN(Dataset copy, CloneGraph(ds));
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<Iterator> it, copy.MakeIterator(extra));

  // Input files and their sizes, before the run (ListFiles patterns, directories).
  for (const DatasetPtr& n : GraphNodesInIdOrder(NodeOf(ds))) {
    for (const auto& [name, value] : n->attrs()) CollectFiles(base, value, &trace.file_sizes);
  }

  // A sampler thread folds snapshots every 5 ms (warm-up included), so an iterator that
  // is rebuilt (a Repeat's input each epoch) is seen before it catches up with the old
  // one's counts, even while the consumer waits in a long GetNext.
  Accumulator acc(trace.nodes.size());
  const Accumulator empty = acc;
  std::mutex acc_mu;
  // Stopping wakes the sampler at once: a join that waited out its sleep would stretch
  // the window (and its CPU: the pipeline reads ahead meanwhile) by up to 5 ms.
  struct SamplerStop {
    std::mutex mu;
    std::condition_variable cv;
    bool stop = false;
    void Set() {
      {
        std::lock_guard<std::mutex> l(mu);
        stop = true;
      }
      cv.notify_all();
    }
  } stop_sampler;
  Iterator* raw = it.get();
  std::thread sampler([&] {
    std::unique_lock<std::mutex> wait(stop_sampler.mu);
    while (!stop_sampler.stop) {
      wait.unlock();
      PipelineStats snap = raw->Snapshot();
      {
        std::lock_guard<std::mutex> l(acc_mu);
        acc.Add(snap);
      }
      wait.lock();
      stop_sampler.cv.wait_for(wait, std::chrono::milliseconds(5),
                               [&] { return stop_sampler.stop; });
    }
  });
  struct Joiner {
    SamplerStop* stop;
    std::thread* t;
    ~Joiner() {
      stop->Set();
      if (t->joinable()) t->join();
    }
  } joiner{&stop_sampler, &sampler};

  const auto run_start = Clock::now();
  const int64_t cpu_run_start = ProcessCpuNs();
  auto warm_end = run_start + std::chrono::duration<double>(opts.warmup_seconds);
  bool done = false;
  int64_t produced = 0;
  while (!done && Clock::now() < warm_end) {
    SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, it->GetNext());
    if (!e) done = true;
  }
  Accumulator start_acc = empty;
  {
    std::lock_guard<std::mutex> l(acc_mu);
    acc.Add(it->Snapshot());
    // A pipeline that ended during the warm-up is measured over its whole run.
    if (!done) start_acc = acc;
  }
  const auto window_start = done ? run_start : Clock::now();
  const int64_t cpu_start = done ? cpu_run_start : ProcessCpuNs();
  const uint64_t read_start = done ? 0 : counting.TotalBytesRead();
  const auto sched_start = ReadSchedstat();
  const auto window_end = window_start + std::chrono::duration<double>(opts.seconds);
  int64_t in_next_ns = 0;
  while (!done) {
    const auto t0 = Clock::now();
    if (t0 >= window_end) break;
    SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, it->GetNext());
    const auto t1 = Clock::now();
    in_next_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count();
    if (!e) break;
    ++produced;
    if (opts.consumer_seconds_per_element > 0) {
      std::this_thread::sleep_for(
          std::chrono::duration<double>(opts.consumer_seconds_per_element));
    }
    if (opts.max_elements > 0 && produced >= opts.max_elements) break;
  }
  const double availability = Availability(sched_start, ReadSchedstat());
  stop_sampler.Set();
  sampler.join();
  PipelineStats end = it->Snapshot();
  acc.Add(end);
  const auto window_stop = Clock::now();
  trace.process_cpu_ns = ProcessCpuNs() - cpu_start;
  trace.duration_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(window_stop - window_start).count();
  trace.consumer_ns = std::max<int64_t>(0, trace.duration_ns - in_next_ns);
  trace.window_file_bytes = static_cast<int64_t>(counting.TotalBytesRead() - read_start);
  trace.ram_budget = end.ram_budget;
  const int64_t cpu_budget = end.cpu_budget;
  it.reset();

  for (size_t i = 0; i < trace.nodes.size(); ++i) {
    const auto& s = acc.sums()[i];
    const auto& b = start_acc.sums()[i];
    TraceNode& n = trace.nodes[i];
    n.elements = s.elements - b.elements;
    n.cpu_ns = s.cpu_ns - b.cpu_ns;
    n.wall_ns = s.wall_ns - b.wall_ns;
    n.bytes_produced = s.bytes_produced - b.bytes_produced;
    n.bytes_consumed = s.bytes_consumed - b.bytes_consumed;
    n.file_bytes_read = s.file_bytes_read - b.file_bytes_read;
    n.parallelism = s.parallelism;
    n.buffer_limit = s.buffer_limit;
    n.total_elements = s.elements;
    n.total_bytes_produced = s.bytes_produced;
  }
  for (const auto& [path, bytes] : counting.BytesReadPerFile()) {
    trace.file_bytes_read[path] = static_cast<int64_t>(bytes);
    if (!trace.file_sizes.count(path)) {
      auto st = base->Stat(path);
      if (st.ok()) trace.file_sizes[path] = static_cast<int64_t>(st->size);
    }
  }

  MachineFacts& m = trace.machine;
  m.cores = cpu_budget > 0 ? cpu_budget : AvailableCores();
  m.memory_bytes = AvailableMemory();
  m.cpu_availability = availability;
  m.handoff_ns = MeasureHandoffNs();
  m.timer_ns = MeasureTimerNs();
  m.clock_ns = MeasureClockNs();
  if (opts.measure_bandwidth && !trace.file_bytes_read.empty()) {
    std::vector<std::string> files;
    for (const auto& [path, bytes] : trace.file_bytes_read) files.push_back(path);
    m.parallel_readers = std::min<int64_t>(std::max<int64_t>(m.cores, 2), 8);
    m.sequential_read_bps = MeasureReadBandwidth(base, files, 1, 0.15);
    m.parallel_read_bps =
        MeasureReadBandwidth(base, files, static_cast<int>(m.parallel_readers), 0.15);
  }
  return trace;
}

// ---- JSON ----

std::string TraceToJson(const Trace& t) {
  json j;
  j["version"] = t.version;
  j["graph_json"] = t.graph_json;
  j["graph_error"] = t.graph_error;
  j["machine"] = {{"cores", t.machine.cores},
                  {"memory_bytes", t.machine.memory_bytes},
                  {"sequential_read_bps", t.machine.sequential_read_bps},
                  {"parallel_read_bps", t.machine.parallel_read_bps},
                  {"parallel_readers", t.machine.parallel_readers},
                  {"cpu_availability", t.machine.cpu_availability},
                  {"handoff_ns", t.machine.handoff_ns},
                  {"timer_ns", t.machine.timer_ns},
                  {"clock_ns", t.machine.clock_ns}};
  j["duration_ns"] = t.duration_ns;
  j["process_cpu_ns"] = t.process_cpu_ns;
  j["consumer_ns"] = t.consumer_ns;
  j["ram_budget"] = t.ram_budget;
  j["window_file_bytes"] = t.window_file_bytes;
  j["nodes"] = json::array();
  for (const TraceNode& n : t.nodes) {
    j["nodes"].push_back({{"id", n.id},
                          {"op", n.op},
                          {"name", n.name},
                          {"inputs", n.inputs},
                          {"source", n.source},
                          {"random", n.random},
                          {"stateful_function", n.stateful_function},
                          {"parallelizable", n.parallelizable},
                          {"async", n.async},
                          {"parallelism_attr", n.parallelism_attr},
                          {"cardinality", n.cardinality},
                          {"elements", n.elements},
                          {"cpu_ns", n.cpu_ns},
                          {"wall_ns", n.wall_ns},
                          {"bytes_produced", n.bytes_produced},
                          {"bytes_consumed", n.bytes_consumed},
                          {"file_bytes_read", n.file_bytes_read},
                          {"parallelism", n.parallelism},
                          {"buffer_limit", n.buffer_limit},
                          {"total_elements", n.total_elements},
                          {"total_bytes_produced", n.total_bytes_produced}});
  }
  j["file_sizes"] = t.file_sizes;
  j["file_bytes_read"] = t.file_bytes_read;
  return j.dump(1);
}

Result<Trace> TraceFromJson(std::string_view text, std::string_view source) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return DataLossError(std::string(source) + ": not a JSON object");
  }
  std::string field;
  Trace t;
  try {
    field = "version";
    t.version = j.at("version").get<int>();
    if (t.version != 1) {
      return DataLossError(std::string(source) + ": unsupported trace version " +
                           std::to_string(t.version));
    }
    field = "graph_json";
    t.graph_json = j.value("graph_json", "");
    t.graph_error = j.value("graph_error", "");
    field = "machine";
    const json& m = j.at("machine");
    t.machine.cores = m.at("cores").get<int64_t>();
    t.machine.memory_bytes = m.at("memory_bytes").get<int64_t>();
    t.machine.sequential_read_bps = m.at("sequential_read_bps").get<double>();
    t.machine.parallel_read_bps = m.at("parallel_read_bps").get<double>();
    t.machine.parallel_readers = m.at("parallel_readers").get<int64_t>();
    t.machine.cpu_availability = m.value("cpu_availability", 1.0);
    t.machine.handoff_ns = m.value("handoff_ns", 0.0);
    t.machine.timer_ns = m.value("timer_ns", 0.0);
    t.machine.clock_ns = m.value("clock_ns", 0.0);
    if (!(t.machine.clock_ns >= 0 && t.machine.clock_ns < 1e6)) {
      return DataLossError(std::string(source) + ": machine.clock_ns out of [0, 1e6)");
    }
    if (!(t.machine.cpu_availability > 0 && t.machine.cpu_availability <= 1)) {
      return DataLossError(std::string(source) + ": machine.cpu_availability out of (0, 1]");
    }
    for (const char* f : {"duration_ns", "process_cpu_ns", "consumer_ns", "ram_budget",
                          "window_file_bytes"}) {
      field = f;
      (void)j.at(f).get<int64_t>();
    }
    t.duration_ns = j["duration_ns"].get<int64_t>();
    t.process_cpu_ns = j["process_cpu_ns"].get<int64_t>();
    t.consumer_ns = j["consumer_ns"].get<int64_t>();
    t.ram_budget = j["ram_budget"].get<int64_t>();
    t.window_file_bytes = j["window_file_bytes"].get<int64_t>();
    const json& nodes = j.at("nodes");
    for (size_t i = 0; i < nodes.size(); ++i) {
      field = "nodes[" + std::to_string(i) + "]";
      const json& n = nodes.at(i);
      TraceNode x;
      x.id = n.at("id").get<int64_t>();
      if (x.id != static_cast<int64_t>(i)) {
        return DataLossError(std::string(source) + ": " + field + ": id " +
                             std::to_string(x.id) + " out of order");
      }
      x.op = n.at("op").get<std::string>();
      x.name = n.at("name").get<std::string>();
      x.inputs = n.at("inputs").get<std::vector<int64_t>>();
      for (int64_t in : x.inputs) {
        if (in < 0 || in >= x.id) {
          return DataLossError(std::string(source) + ": " + field + ": input " +
                               std::to_string(in) + " is not an earlier node");
        }
      }
      x.source = n.at("source").get<bool>();
      x.random = n.at("random").get<bool>();
      x.stateful_function = n.at("stateful_function").get<bool>();
      x.parallelizable = n.at("parallelizable").get<bool>();
      x.async = n.at("async").get<bool>();
      x.parallelism_attr = n.at("parallelism_attr").get<int64_t>();
      x.cardinality = n.at("cardinality").get<int64_t>();
      x.elements = n.at("elements").get<int64_t>();
      x.cpu_ns = n.at("cpu_ns").get<int64_t>();
      x.wall_ns = n.at("wall_ns").get<int64_t>();
      x.bytes_produced = n.at("bytes_produced").get<int64_t>();
      x.bytes_consumed = n.at("bytes_consumed").get<int64_t>();
      x.file_bytes_read = n.at("file_bytes_read").get<int64_t>();
      x.parallelism = n.at("parallelism").get<int64_t>();
      x.buffer_limit = n.at("buffer_limit").get<int64_t>();
      x.total_elements = n.at("total_elements").get<int64_t>();
      x.total_bytes_produced = n.at("total_bytes_produced").get<int64_t>();
      t.nodes.push_back(std::move(x));
    }
    field = "file_sizes";
    t.file_sizes = j.at("file_sizes").get<std::map<std::string, int64_t>>();
    field = "file_bytes_read";
    t.file_bytes_read = j.at("file_bytes_read").get<std::map<std::string, int64_t>>();
  } catch (const json::exception& e) {
    return DataLossError(std::string(source) + ": field '" + field + "': " + e.what());
  }
  if (t.nodes.empty()) return DataLossError(std::string(source) + ": no nodes");
  return t;
}

Status SaveTrace(const Trace& trace, const std::string& path) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << TraceToJson(trace);
  f.close();
  if (!f) return InternalError("cannot write trace file '" + path + "'");
  return Status::OK();
}

Result<Trace> LoadTrace(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return NotFoundError("cannot open trace file '" + path + "'");
  std::stringstream ss;
  ss << f.rdbuf();
  return TraceFromJson(ss.str(), path);
}

}  // namespace sluice::plumber
