// The profiler end to end: a session around an iteration records spans, batches and
// counters, and its Chrome trace validates against the Trace Event Format (every span on
// a named track, every flow with both ends, timestamps monotonic per thread).
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "profiler/counters.h"
#include "profiler/event.h"
#include "profiler/recorder.h"
#include "sluice/dataset.h"
#include "sluice/profiler.h"

namespace sluice::profiler {
namespace {

using namespace std::chrono_literals;

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/profiler_" + name + "_" + std::to_string(::getpid());
}

Function Sleep(std::chrono::microseconds d) {
  return Function::Map("sleep", [d](Element e, FunctionContext&) -> Result<Element> {
    std::this_thread::sleep_for(d);
    return e;
  });
}

Function Work() {
  return Function::Map("work", [](Element e, FunctionContext&) -> Result<Element> {
    volatile double x = 1;
    for (int i = 0; i < 2000; ++i) x = x * 1.0000001 + 1e-9;
    return e;
  });
}

Options Plain(SpanRecorder* r) {
  Options o;
  o.span_recorder = r;
  o.optimization.apply_default_optimizations = false;
  o.autotune.enabled = false;
  return o;
}

// Runs `ds` to the end under a session; `between` runs after each element.
Summary Profile(
    const Dataset& ds, ProfileOptions po, const std::function<void()>& between = [] {}) {
  auto session = Session::Start(po);
  EXPECT_TRUE(session.ok()) << session.status();
  {
    auto it = ds.MakeIterator(Plain((*session)->recorder()));
    EXPECT_TRUE(it.ok()) << it.status();
    while (true) {
      auto next = (*it)->GetNext();
      EXPECT_TRUE(next.ok()) << next.status();
      if (!next.ok() || !*next) break;
      between();
    }
  }
  EXPECT_TRUE((*session)->Stop().ok());
  return (*session)->summary();
}

const OperatorSummary* Find(const Summary& s, const std::string& prefix) {
  for (const OperatorSummary& op : s.operators) {
    if (op.prefix == prefix) return &op;
  }
  return nullptr;
}

// Checks the trace against the Trace Event Format's rules; returns the number of slices.
int ValidateTrace(const std::string& path, int* flows) {
  std::ifstream f(path);
  nlohmann::json j = nlohmann::json::parse(f);
  std::set<std::pair<int64_t, int64_t>> named;  // (pid, tid) with a thread_name
  std::map<std::pair<int64_t, int64_t>, double> last_ts;
  std::map<int64_t, std::pair<int, int>> flow_ends;
  int slices = 0;
  for (const auto& e : j.at("traceEvents")) {
    const std::string ph = e.at("ph");
    const auto track =
        std::make_pair(e.at("pid").get<int64_t>(), e.at("tid").get<int64_t>());
    if (ph == "M") {
      if (e.at("name") == "thread_name") named.insert(track);
      continue;
    }
    const double ts = e.at("ts").get<double>();
    EXPECT_GE(ts, 0);
    if (ph != "C") {
      EXPECT_TRUE(named.count(track)) << "event on an unnamed track: " << e.dump();
      auto [it, fresh] = last_ts.try_emplace(track, ts);
      EXPECT_GE(ts, it->second) << "not monotonic on its thread: " << e.dump();
      it->second = ts;
    }
    if (ph == "X") {
      ++slices;
      EXPECT_GE(e.at("dur").get<double>(), 0);
    } else if (ph == "s") {
      ++flow_ends[e.at("id").get<int64_t>()].first;
    } else if (ph == "f") {
      ++flow_ends[e.at("id").get<int64_t>()].second;
      EXPECT_EQ(e.at("bp"), "e");
    } else {
      EXPECT_EQ(ph, "C") << e.dump();
    }
  }
  for (const auto& [id, ends] : flow_ends) {
    EXPECT_EQ(ends.first, 1) << "flow " << id;
    EXPECT_EQ(ends.second, 1) << "flow " << id;
  }
  *flows = static_cast<int>(flow_ends.size());
  return slices;
}

TEST(ProfilerSession, TraceOfAKnownPipelineValidates) {
  const std::string trace = TempPath("trace.json");
  ProfileOptions po;
  po.trace_path = trace;
  Summary s = Profile(Dataset::Range(200).Map(Work()).Batch(8).Prefetch(2), po);
  int flows = 0;
  const int slices = ValidateTrace(trace, &flows);
  // Per element: Range and Map (200 + the end call each), per batch: Batch and the root.
  EXPECT_EQ(slices, 201 + 201 + 26 + 26);
  EXPECT_EQ(flows, 25);  // one per batch: ready on the prefetch thread -> taken
  EXPECT_EQ(s.batches.count, 25);
  EXPECT_EQ(s.batches.out_of_order, 0);
  EXPECT_EQ(s.event_bytes, s.events * 32);
  ASSERT_NE(Find(s, "Root/Batch[0]/Map[0]"), nullptr);
  EXPECT_EQ(Find(s, "Root/Batch[0]/Map[0]")->op, "Map");
  EXPECT_EQ(Find(s, "Root/Batch[0]/Map[0]")->self.count, 201);
  EXPECT_GE(s.threads, 2);  // the consumer and the prefetch thread
  std::remove(trace.c_str());
}

TEST(ProfilerSession, SamplingModes) {
  const Dataset ds = Dataset::Range(400).Map(Work()).Batch(10).Prefetch(2);
  ProfileOptions po;
  po.sampling = Sampling::kOneInN;
  po.sample_every = 10;
  Summary one_in_ten = Profile(ds, po);
  ASSERT_NE(Find(one_in_ten, "Root/Batch[0]/Map[0]"), nullptr);
  // Indexes 0, 10, ..., 390 and the end-of-data call (index 400).
  EXPECT_EQ(Find(one_in_ten, "Root/Batch[0]/Map[0]")->self.count, 41);
  EXPECT_EQ(one_in_ten.batches.count, 40);

  po.sampling = Sampling::kBatchesOnly;
  Summary batches = Profile(ds, po);
  EXPECT_EQ(Find(batches, "Root/Batch[0]/Map[0]"), nullptr);
  EXPECT_EQ(Find(batches, "Root/Batch[0]/Map[0]/Range[0]"), nullptr);
  EXPECT_EQ(batches.batches.count, 40);
  EXPECT_EQ(batches.events, 2 * 41);  // root and its input, 40 batches + the end call

  po.sample_every = 0;
  po.sampling = Sampling::kOneInN;
  EXPECT_FALSE(Session::Start(po).ok());

  // Batches only: the other iterators are made without the hook (no cost at all).
  Recorder batches_only({Sampling::kBatchesOnly, 1, false});
  EXPECT_TRUE(batches_only.Wants("Root", ""));
  EXPECT_TRUE(batches_only.Wants("Root/Batch[0]", "Prefetch"));
  EXPECT_FALSE(batches_only.Wants("Root/Map[0]", "Batch"));  // an element, not a batch
  EXPECT_FALSE(batches_only.Wants("Root/Batch[0]/Map[0]", "Batch"));
  EXPECT_FALSE(batches_only.Wants("Root/MapAndBatch[0]/fn", "MapAndBatch"));
  Recorder all({Sampling::kAll, 1, false});
  EXPECT_TRUE(all.Wants("Root/Batch[0]/Map[0]", "Batch"));
  EXPECT_TRUE(all.Wants("Root/MapAndBatch[0]/fn", "MapAndBatch"));
}

// Counts every call of the hook (GetNext and pool work spans, Begin), with the profiler
// recorder's choice of iterators (Wants).
class HookCounter : public SpanRecorder {
 public:
  explicit HookCounter(Sampling sampling) : policy_({sampling, 1, false}) {}
  void Record(const Span& s) override {
    std::lock_guard<std::mutex> l(mu_);
    ++calls_[std::string(s.prefix)];
  }
  void Begin() override { begins_.fetch_add(1); }
  bool Wants(std::string_view prefix, std::string_view parent_op) const override {
    return policy_.Wants(prefix, parent_op);
  }
  std::map<std::string, int64_t> calls() {
    std::lock_guard<std::mutex> l(mu_);
    return calls_;
  }
  int64_t begins() const { return begins_.load(); }

 private:
  Recorder policy_;
  std::mutex mu_;
  std::map<std::string, int64_t> calls_;
  std::atomic<int64_t> begins_{0};
};

std::map<std::string, int64_t> HookCalls(const Dataset& ds, Sampling sampling,
                                         int64_t* begins = nullptr) {
  HookCounter counter(sampling);
  {
    auto it = ds.MakeIterator(Plain(&counter));
    EXPECT_TRUE(it.ok()) << it.status();
    while (true) {
      auto next = (*it)->GetNext();
      EXPECT_TRUE(next.ok()) << next.status();
      if (!next.ok() || !*next) break;
    }
  }
  if (begins != nullptr) *begins = counter.begins();
  return counter.calls();
}

// Batches only pays nothing per element: no hook call for any iterator below the batch
// level and none for a parallel op's per-element work, whatever the root is.
TEST(ProfilerSession, BatchesOnlyCallsNoPerElementHook) {
  using Calls = std::map<std::string, int64_t>;
  // A synchronous root: its input runs once per element, so only the root is hooked.
  const Dataset sync_root = Dataset::Range(64).Map(Work()).Map(Work()).Batch(8);
  EXPECT_EQ(HookCalls(sync_root, Sampling::kBatchesOnly), (Calls{{"Root", 9}}));
  // The ImageNet pipeline's shape: a parallel map-and-batch under a prefetch root. The
  // batch iterator is the production side (hooked); its per-element work is not.
  int64_t begins = -1;
  const Dataset prefetch_root =
      Dataset::Range(64).Map(Work(), 2).MapAndBatch(Work(), 8, 2).Prefetch(2);
  EXPECT_EQ(HookCalls(prefetch_root, Sampling::kBatchesOnly, &begins),
            (Calls{{"Root", 9}, {"Root/MapAndBatch[0]", 9}}));
  EXPECT_EQ(begins, 18);  // Begin before each hooked GetNext only, none per element
  // Full tracing hooks everything, pool work included (the counter sees it all).
  const Calls all = HookCalls(prefetch_root, Sampling::kAll);
  EXPECT_GE(all.at("Root/MapAndBatch[0]/fn"), 8);  // one per part of a batch
  EXPECT_EQ(all.at("Root/MapAndBatch[0]/ParallelMap[0]/fn"), 64);
  EXPECT_EQ(all.at("Root/MapAndBatch[0]/ParallelMap[0]/Range[0]"), 65);
}

TEST(ProfilerSession, SleepingOperatorShowsItsTime) {
  // The op measures how long it really slept (the machine is shared: a 20 ms sleep may
  // overrun); the summary must show that time within 5%.
  auto slept_ns = std::make_shared<std::atomic<int64_t>>(0);
  Function sleep =
      Function::Map("sleep", [slept_ns](Element e, FunctionContext&) -> Result<Element> {
        const auto t0 = std::chrono::steady_clock::now();
        std::this_thread::sleep_for(20ms);
        *slept_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(
                         std::chrono::steady_clock::now() - t0)
                         .count();
        return e;
      });
  ProfileOptions po;
  Summary s = Profile(Dataset::Range(20).Map(sleep).Prefetch(1), po);
  const OperatorSummary* map = Find(s, "Root/Map[0]");
  ASSERT_NE(map, nullptr);
  // 20 sleeps and the end-of-data call (which does not run the function).
  EXPECT_EQ(map->self.count, 21);
  EXPECT_NEAR(map->self.total_ns, static_cast<double>(*slept_ns), 0.05 * *slept_ns);
  EXPECT_GE(map->self.p50_ns, 20e6);
  EXPECT_LT(map->self.p50_ns, 40e6);
  // The rest is the root's: the consumer waiting on the prefetch buffer as long.
  EXPECT_GT(map->share_of_time, 0.45);
  EXPECT_EQ(map->share_under_10ms, 1.0 / 21);
}

TEST(ProfilerSession, ParallelOpsReportTheirFunctionCalls) {
  ProfileOptions po;
  po.counters = true;
  Function touch = Function::Map("touch", [](Element e, FunctionContext&) -> Result<Element> {
    constexpr size_t kBytes = 4 << 20;
    void* p = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
                   0);
    if (p == MAP_FAILED) return InternalError("mmap");
    for (size_t i = 0; i < kBytes; i += 4096) static_cast<volatile char*>(p)[i] = 1;
    munmap(p, kBytes);
    std::this_thread::sleep_for(2ms);
    return e;
  });
  Summary s = Profile(Dataset::Range(20).Map(touch, 2).Prefetch(2), po);
  const OperatorSummary* fn = Find(s, "Root/ParallelMap[0]/fn");
  ASSERT_NE(fn, nullptr);
  EXPECT_EQ(fn->op, "ParallelMap:fn");
  EXPECT_EQ(fn->self.count, 20);  // one span per call, on the pool's threads
  EXPECT_GE(fn->self.p50_ns, 2e6);
  EXPECT_GE(fn->counters_per_element.at("page_faults"), 200);
  const OperatorSummary* pmap = Find(s, "Root/ParallelMap[0]");
  ASSERT_NE(pmap, nullptr);
  EXPECT_TRUE(pmap->async);  // its consumer side is waiting, its work is the fn row
  EXPECT_EQ(pmap->wait.count, 21);
  EXPECT_EQ(pmap->self.count, 0);
  const OperatorSummary* waits = Find(s, "Root/ParallelMap[0]");
  ASSERT_NE(waits, nullptr);
  EXPECT_LT(waits->counters_per_element.count("page_faults")
                ? waits->counters_per_element.at("page_faults")
                : 0.0,
            20);
}

TEST(ProfilerSession, SlowConsumerShowsDelay) {
  ProfileOptions po;
  Summary s = Profile(Dataset::Range(30).Prefetch(4), po,
                      [] { std::this_thread::sleep_for(5ms); });
  EXPECT_EQ(s.batches.count, 30);
  EXPECT_GT(s.batches.delay.p50_ns, 3e6);  // ready long before the consumer takes it
  EXPECT_LT(s.batches.wait.p50_ns, 1e6);
}

TEST(ProfilerSession, SlowProducerShowsWait) {
  ProfileOptions po;
  Summary s = Profile(Dataset::Range(30).Map(Sleep(5ms)).Prefetch(4), po);
  EXPECT_EQ(s.batches.count, 30);
  EXPECT_GT(s.batches.wait.p50_ns, 3e6);   // the consumer waits for each batch
  EXPECT_LT(s.batches.delay.p50_ns, 1e6);  // taken as soon as it is ready
  // The Prefetch's own time on the consumer's side is waiting, not work: split.
  const OperatorSummary* root = Find(s, "Root");
  ASSERT_NE(root, nullptr);
  EXPECT_TRUE(root->async);
  EXPECT_GT(root->wait.total_ns, 25 * 3e6);
  EXPECT_EQ(root->self.count, 0);  // a Prefetch's work is its input's row
  EXPECT_EQ(root->share_of_time, 0);
  const OperatorSummary* map = Find(s, "Root/Map[0]");
  ASSERT_NE(map, nullptr);
  EXPECT_FALSE(map->async);  // its input runs inside its spans
  EXPECT_EQ(map->wait.count, 0);
  EXPECT_GT(map->self.p50_ns, 4e6);
}

TEST(ProfilerSession, GlobalSessionAttachesToNewIteratorsOnly) {
  ProfileOptions po;
  po.attach_globally = true;
  auto session = Session::Start(po);
  ASSERT_TRUE(session.ok()) << session.status();
  EXPECT_FALSE(Session::Start(po).ok());  // one global session at a time
  Options o;
  o.optimization.apply_default_optimizations = false;
  auto it = Dataset::Range(10).MakeIterator(o);
  ASSERT_TRUE(it.ok());
  while ((*(*it)->GetNext()).has_value()) {
  }
  ASSERT_TRUE((*session)->Stop().ok());
  EXPECT_EQ((*session)->summary().batches.count, 10);
  // After Stop nothing attaches.
  auto later = Dataset::Range(10).MakeIterator(o);
  ASSERT_TRUE(later.ok());
  while ((*(*later)->GetNext()).has_value()) {
  }
  EXPECT_EQ((*session)->summary().batches.count, 10);
  auto again = Session::Start(po);
  EXPECT_TRUE(again.ok());
}

TEST(ProfilerSession, CountersAttributedPerOperator) {
  constexpr size_t kBytes = 4 << 20;
  Function touch =
      Function::Map("touch", [](Element e, FunctionContext&) -> Result<Element> {
        void* p = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) return InternalError("mmap");
        for (size_t i = 0; i < kBytes; i += 4096) static_cast<volatile char*>(p)[i] = 1;
        munmap(p, kBytes);
        return e;
      });
  ProfileOptions po;
  po.counters = true;
  Summary s = Profile(Dataset::Range(20).Map(touch).Map(Work()).Prefetch(2), po);
  const OperatorSummary* toucher = Find(s, "Root/Map[0]/Map[0]");
  const OperatorSummary* worker = Find(s, "Root/Map[0]");
  ASSERT_NE(toucher, nullptr);
  ASSERT_NE(worker, nullptr);
  // 1024 fresh pages per element in the toucher's own time; none in the outer map's.
  // At least 200 even when transparent huge pages map several pages per fault.
  EXPECT_GE(toucher->counters_per_element.at("page_faults"), 200);
  EXPECT_LT(worker->counters_per_element.count("page_faults")
                ? worker->counters_per_element.at("page_faults")
                : 0.0,
            20);
  EXPECT_GT(worker->counters.at("task_clock_ns"), 0);
  const std::string& hw = ThreadCounters::HardwareUnavailableReason();
  bool noted = false;
  for (const std::string& n : s.notes) noted |= n == hw;
  EXPECT_EQ(noted, !hw.empty());  // said once when unavailable
  if (hw.empty()) {
    EXPECT_GT(toucher->counters.count("cycles"), 0u);
  }
}

TEST(ProfilerSession, CorruptEventFileIsAClearError) {
  const std::string path = TempPath("bad.events");
  {
    std::ofstream f(path, std::ios::binary);
    f << "SLUICE-PROFILE-EVENTS-1\nE\x01";
  }
  auto r = ExportEventFiles({path}, "");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().ToString().find(path), std::string::npos) << r.status();
  EXPECT_NE(r.status().ToString().find("offset"), std::string::npos) << r.status();
  {
    std::ofstream f(path, std::ios::binary);
    f << "not events";
  }
  EXPECT_FALSE(ExportEventFiles({path}, "").ok());
  std::remove(path.c_str());
}

}  // namespace
}  // namespace sluice::profiler
