// Stress test of iterator lifetimes in parallel pipelines (the T3 acceptance test):
// "1,000 iterators created and destroyed mid-stream at random points, with slow and
// failing functions, finishes with no leak (ASan/LSan) and no hang."
//
// A seeded std::mt19937 draws, for each iteration, a pipeline shape (parallel map ordered
// and not, prefetch, parallel interleave, map_and_batch, parallel filter and batch, and
// the sequential shuffle, batch, repeat, zip, interleave around them), Options
// (cpu_budget 1..4, sometimes inline execution, sometimes a tiny or unlimited RAM
// budget), a number of GetNext calls (0..50), and whether to Save/Restore mid-way and
// whether to Cancel from another thread while a consumer thread is in GetNext. Then the
// iterator is destroyed wherever it stands. Every user function sleeps 0..3 ms on some
// elements and fails (DataLoss, kInjected) on "poisoned" elements, chosen by a hash of
// the value.
//
// What must hold (each check can fail):
//  * every shape builds (a shape that does not, whatever the reason, fails the test; none
//    is left out or skipped) and, in a run of 200 iterations or more, every shape is drawn;
//  * every GetNext returns an element, the end, or an error that is either an injected one
//    or - only once Cancel() was called - Cancelled; no element holds a poisoned value
//    (a failed element is never passed on); after the end, GetNext keeps returning the
//    end;
//  * Save() succeeds mid-stream and Restore() into a fresh iterator (with the same or other
//    Options) succeeds; for shapes whose operators all keep their order, the
//    restored iterator yields exactly what the saved one goes on to yield (elements and
//    error messages); a Save() racing Cancel() returns OK or Cancelled;
//  * Cancel() (from another thread, with Snapshot() calls racing it) ends the consumer's
//    GetNext, and a GetNext after Cancel returns Cancelled;
//  * destruction returns within kMaxDestroyMs (background threads joined);
//  * no iteration runs longer than the hang limit: a watchdog thread aborts the process
//    with the iteration's parameters (a hang must not turn into a CI timeout without a
//    clue);
//  * run under ASan/LSan and TSan: no leak, no race (the sanitizers do the checking).
//
// Environment: SLUICE_STRESS_ITERATIONS (default 1000), SLUICE_STRESS_SEED (default
// 20240611), SLUICE_STRESS_HANG_SECONDS (default 10).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "api/dataset_internal.h"
#include "sluice/dataset.h"

namespace sluice {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kInjected[] = "sluice-stress injected failure";
constexpr int64_t kMaxDestroyMs = 2000;
constexpr int kMaxCallsPerIteration = 50;
constexpr int kRestoreCompareCalls = 8;

int64_t EnvInt(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  return std::strtoll(v, nullptr, 10);
}

uint64_t Mix(uint64_t x) {  // splitmix64 finalizer
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// About one value in 16 is poisoned: every function of the test fails on it.
bool Poisoned(int64_t v) { return Mix(static_cast<uint64_t>(v)) % 16 == 1; }

// Sleeps 0..3 ms for about one value in four (by value and salt, so both ordered and
// racing elements are slow now and then).
void MaybeSleep(int64_t v, uint64_t salt) {
  const uint64_t h = Mix(static_cast<uint64_t>(v) ^ (salt * 0x5851f42d4c957f2dull));
  if (h % 4 == 0) std::this_thread::sleep_for(std::chrono::microseconds((h >> 8) % 3001));
}

Status Injected(const std::string& fn, int64_t v) {
  return DataLossError(std::string(kInjected) + " in " + fn + " at " + std::to_string(v));
}

// element -> element: slow sometimes, fails on poisoned values, returns its input.
Function SlowFailingMap(const std::string& name, uint64_t salt) {
  return Function::Map(name, [name, salt](Element e, FunctionContext&) -> Result<Element> {
    const int64_t v = e[0].scalar<int64_t>();
    MaybeSleep(v, salt);
    if (Poisoned(v)) return Injected(name, v);
    return e;
  });
}

// Keeps values not divisible by 3; slow sometimes; fails on poisoned values.
Function SlowFailingPredicate(const std::string& name, uint64_t salt) {
  return Function::Predicate(name, [name, salt](const Element& e, FunctionContext&) -> Result<bool> {
    const int64_t v = e[0].scalar<int64_t>();
    MaybeSleep(v, salt);
    if (Poisoned(v)) return Injected(name, v);
    return v % 3 != 0;
  });
}

// v -> Range(v*100, v*100 + 1..8) mapped by a slow failing function (a parallel one with
// its own prefetch when `parallel_inner`); fails on poisoned v.
Function InnerDatasets(const std::string& name, bool parallel_inner) {
  return Function::DatasetFunction(
      name, [name, parallel_inner](Element e, FunctionContext&) -> Result<Dataset> {
        const int64_t v = e[0].scalar<int64_t>();
        if (Poisoned(v)) return Injected(name, v);
        const int64_t n = 1 + static_cast<int64_t>(Mix(static_cast<uint64_t>(v)) % 8);
        Dataset d = Dataset::Range(v * 100, v * 100 + n);
        if (parallel_inner) return d.Map(SlowFailingMap(name + "_inner", 5), 2, true).Prefetch(1);
        return d.Map(SlowFailingMap(name + "_inner", 5));
      });
}

struct PipelineShape {
  std::string name;
  // Every operator keeps its order: a restored iterator must match the saved one exactly.
  bool ordered = true;
  std::function<Dataset()> build;
};

constexpr int64_t kLong = int64_t{1} << 20;

std::vector<PipelineShape> Shapes() {
  std::vector<PipelineShape> s;
  s.push_back({"ParallelMapOrdered+Prefetch", true, [] {
                 return Dataset::Range(kLong).Map(SlowFailingMap("m", 1), 3, true).Prefetch(2);
               }});
  s.push_back({"Shuffle+ParallelMapUnordered+Batch", false, [] {
                 return Dataset::Range(kLong)
                     .Shuffle(16, 7)
                     .Map(SlowFailingMap("m", 2), kAutotune, false)
                     .Batch(4);
               }});
  s.push_back({"Repeat+ParallelMap+Map+PrefetchAutotune", true, [] {
                 return Dataset::Range(40)
                     .Repeat()
                     .Map(SlowFailingMap("m1", 3), 2, true)
                     .Map(SlowFailingMap("m2", 4))
                     .Prefetch(kAutotune);
               }});
  s.push_back({"ChainedBuffers", false, [] {
                 return Dataset::Range(300)
                     .Map(SlowFailingMap("m1", 6), 2, false)
                     .Prefetch(4)
                     .Map(SlowFailingMap("m2", 7), 4, true)
                     .Batch(3)
                     .Shuffle(8, 11)
                     .Prefetch(2);
               }});
  s.push_back({"ZipOfParallelBranches", false, [] {
                 Dataset a = Dataset::Range(kLong).Map(SlowFailingMap("a", 8), 2, true).Prefetch(3);
                 Dataset b = Dataset::Range(kLong).Map(SlowFailingMap("b", 9), 3, false);
                 return Dataset::Zip({a, b}).Batch(2).Prefetch(1);
               }});
  s.push_back({"InterleaveOfParallelInners", true, [] {
                 return Dataset::Range(60).Interleave(InnerDatasets("f", true), 3, 2).Prefetch(2);
               }});
  s.push_back({"ShortFinite", true, [] {
                 return Dataset::Range(12).Map(SlowFailingMap("m", 10), 4, true).Batch(5).Prefetch(8);
               }});
  s.push_back({"ParallelInterleaveOrdered", true, [] {
                 return Dataset::Range(1 << 16)
                     .Interleave(InnerDatasets("f", false), 4, 2, 4, true)
                     .Prefetch(2);
               }});
  s.push_back({"ParallelInterleaveUnordered+Repeat", false, [] {
                 return Dataset::Range(30)
                     .Interleave(InnerDatasets("f", false), 8, 1, kAutotune, false)
                     .Repeat(3)
                     .Prefetch(1);
               }});
  s.push_back({"MapAndBatchOrdered", true, [] {
                 return Dataset::Range(kLong)
                     .MapAndBatch(SlowFailingMap("m", 11), 8, 3, false, true)
                     .Prefetch(2);
               }});
  s.push_back({"Shuffle+MapAndBatchUnorderedDropRemainder", false, [] {
                 return Dataset::Range(100).Shuffle(10, 3).MapAndBatch(SlowFailingMap("m", 12), 7,
                                                                         kAutotune, true, false);
               }});
  s.push_back({"ParallelFilter+ParallelBatchOrdered", true, [] {
                 return Dataset::Range(kLong)
                     .Filter(SlowFailingPredicate("p", 13), 3, true)
                     .Batch(4, false, 2, true)
                     .Prefetch(1);
               }});
  s.push_back({"ParallelMap+ParallelFilterUnordered+ParallelBatch", false, [] {
                 return Dataset::Range(500)
                     .Map(SlowFailingMap("m", 14), 2, true)
                     .Filter(SlowFailingPredicate("p", 15), kAutotune, false)
                     .Batch(5, true, 3, false);
               }});
  return s;
}

// "" when `r` is an allowed GetNext outcome, else what is wrong with it.
std::string Unexpected(const Result<std::optional<Element>>& r, bool cancel_called) {
  if (!r.ok()) {
    const Status& s = r.status();
    if (s.code() == StatusCode::kDataLoss && s.message().find(kInjected) != std::string::npos) {
      return "";
    }
    if (s.code() == StatusCode::kCancelled && cancel_called) return "";
    return "unexpected error: " + s.ToString();
  }
  if (!r->has_value()) return "";
  for (const Tensor& t : (**r).tensors()) {
    if (t.dtype() != DType::kInt64) return "unexpected dtype in " + (**r).DebugString();
    for (int64_t v : t.flat<int64_t>()) {
      if (Poisoned(v)) return "a failed (poisoned) value was passed on: " + (**r).DebugString();
    }
  }
  return "";
}

// Same outcome: both the same element, both the end, or the same error.
bool SameOutcome(const Result<std::optional<Element>>& a, const Result<std::optional<Element>>& b) {
  if (a.ok() != b.ok()) return false;
  if (!a.ok()) return a.status() == b.status();
  if (a->has_value() != b->has_value()) return false;
  return !a->has_value() || (**a).ContentEquals(**b);
}

std::string Describe(const Result<std::optional<Element>>& r) {
  if (!r.ok()) return r.status().ToString();
  return r->has_value() ? (**r).DebugString() : "<end>";
}

// Aborts the process when one iteration runs longer than `limit` (a hang), naming it.
class Watchdog {
 public:
  explicit Watchdog(std::chrono::seconds limit) : limit_(limit), thread_([this] { Loop(); }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void Begin(std::string what) {
    std::lock_guard<std::mutex> l(mu_);
    what_ = std::move(what);
    start_ = Clock::now();
    active_ = true;
  }
  void End() {
    std::lock_guard<std::mutex> l(mu_);
    active_ = false;
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> l(mu_);
    while (!stop_) {
      cv_.wait_for(l, std::chrono::milliseconds(100));
      if (active_ && Clock::now() - start_ > limit_) {
        std::fprintf(stderr,
                     "[stress] HANG: %s has run for more than %lld s; aborting (rerun with the "
                     "same SLUICE_STRESS_SEED and a debugger to see the threads)\n",
                     what_.c_str(), static_cast<long long>(limit_.count()));
        std::fflush(stderr);
        std::abort();
      }
    }
  }

  const std::chrono::seconds limit_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;    // GUARDED_BY(mu_)
  bool active_ = false;  // GUARDED_BY(mu_)
  Clock::time_point start_;  // GUARDED_BY(mu_)
  std::string what_;         // GUARDED_BY(mu_)
  std::thread thread_;
};

struct IterationPlan {
  int shape = 0;
  Options options;
  int calls = 0;      // GetNext calls before destruction (fewer if the end comes first)
  int save_at = -1;   // Save + Restore before call save_at; -1: none
  int cancel_at = -1;  // calls from cancel_at on run on a consumer thread that is cancelled
  int cancel_delay_us = 0;
  bool consumer_saves = false;  // the consumer also calls Save() while Cancel races it
  Options restore_options;      // of the iterator a checkpoint is restored into

  std::string ToString(const std::vector<PipelineShape>& shapes) const {
    std::ostringstream os;
    // Every field printed here is set by DrawOptions (restore_options: by DrawPlan).
    os << "shape=" << shapes[shape].name
       << " cpu_budget=" << options.autotune.cpu_budget.value_or(0)
       << " inline=" << options.inline_execution.value_or(false)
       << " ram_budget=" << options.autotune.ram_budget.value_or(0)
       << " deterministic=" << options.deterministic.value_or(true) << " calls=" << calls
       << " save_at=" << save_at << " cancel_at=" << cancel_at
       << " cancel_delay_us=" << cancel_delay_us << " consumer_saves=" << consumer_saves
       << " restore_options={cpu_budget="
       << restore_options.autotune.cpu_budget.value_or(0)
       << " inline=" << restore_options.inline_execution.value_or(false)
       << " ram_budget=" << restore_options.autotune.ram_budget.value_or(0) << "}";
    return os.str();
  }
};

int Uniform(std::mt19937& rng, int lo, int hi) {
  return std::uniform_int_distribution<int>(lo, hi)(rng);
}

Options DrawOptions(std::mt19937& rng) {
  Options o;
  o.autotune.cpu_budget = Uniform(rng, 1, 4);
  o.inline_execution = Uniform(rng, 0, 4) == 0;
  switch (Uniform(rng, 0, 3)) {
    // A few elements at most; not below 256 bytes, so that the shuffles (held buffers, which
    // fail rather than wait when they cannot fit; at most 8 x 24 bytes here) fit.
    case 0:
      o.autotune.ram_budget = Uniform(rng, 256, 4096);
      break;
    case 1:
      o.autotune.ram_budget = -1;
      break;  // unlimited
    default:
      o.autotune.ram_budget = 0;
      break;  // the default
  }
  o.deterministic = Uniform(rng, 0, 1) == 1;
  return o;
}

IterationPlan DrawPlan(std::mt19937& rng, const std::vector<int>& available) {
  auto uniform = [&rng](int lo, int hi) { return Uniform(rng, lo, hi); };
  IterationPlan p;
  p.shape = available[uniform(0, static_cast<int>(available.size()) - 1)];
  p.options = DrawOptions(rng);
  // A checkpoint does not depend on how the pipeline ran: restore it into an iterator
  // with other options as often as not.
  p.restore_options = uniform(0, 1) == 0 ? p.options : DrawOptions(rng);
  p.calls = uniform(0, kMaxCallsPerIteration);
  if (uniform(0, 4) == 0) p.save_at = uniform(0, p.calls);
  if (uniform(0, 3) == 0) {
    p.cancel_at = uniform(p.save_at < 0 ? 0 : p.save_at, p.calls);
    p.cancel_delay_us = uniform(0, 3000);
    p.consumer_saves = uniform(0, 2) == 0;
  }
  return p;
}

struct Totals {
  int64_t elements = 0, injected_errors = 0, cancelled = 0, ends = 0, saves = 0,
          restore_compared = 0, cancels = 0;
  int64_t max_destroy_us = 0;
};

void Tally(const Result<std::optional<Element>>& r, Totals* t) {
  if (!r.ok()) {
    ++(r.status().code() == StatusCode::kCancelled ? t->cancelled : t->injected_errors);
  } else if (r->has_value()) {
    ++t->elements;
  } else {
    ++t->ends;
  }
}

// Runs one iteration; gtest failures name `what`.
void RunIteration(const PipelineShape& shape, const Dataset& ds, const IterationPlan& plan,
                  const std::string& what, Totals* totals) {
  SCOPED_TRACE(what);
  auto made = MakeIteratorAsBuilt(ds, plan.options);
  ASSERT_TRUE(made.ok()) << made.status();
  std::unique_ptr<Iterator> it = std::move(made).value();

  int call = 0;
  bool ended = false;
  for (; call < plan.calls && !ended; ++call) {
    if (call == plan.save_at) {
      auto ckpt = it->Save();
      ASSERT_TRUE(ckpt.ok()) << "Save: " << ckpt.status();
      ++totals->saves;
      auto fresh = MakeIteratorAsBuilt(ds, plan.restore_options);
      ASSERT_TRUE(fresh.ok()) << fresh.status();
      Status restored = (*fresh)->Restore(*ckpt);
      ASSERT_TRUE(restored.ok()) << "Restore: " << restored;
      if (shape.ordered) {
        // Both go on in lockstep and must agree.
        for (int k = 0; k < kRestoreCompareCalls; ++k) {
          auto a = it->GetNext();
          auto b = (*fresh)->GetNext();
          ASSERT_EQ(Unexpected(a, false), "");
          ASSERT_EQ(Unexpected(b, false), "");
          ASSERT_TRUE(SameOutcome(a, b)) << "after restore, call " << k << ": saved iterator gave "
                                         << Describe(a) << ", restored one gave " << Describe(b);
          ++totals->restore_compared;
          if (a.ok() && !a->has_value()) break;
        }
      }
      it = std::move(fresh).value();  // the saved one is destroyed mid-stream here
    }
    if (call == plan.cancel_at) break;
    auto r = it->GetNext();
    ASSERT_EQ(Unexpected(r, false), "") << "call " << call;
    Tally(r, totals);
    if (r.ok() && !r->has_value()) {
      ended = true;
      auto again = it->GetNext();
      ASSERT_TRUE(again.ok() && !again->has_value()) << "after the end: " << Describe(again);
    }
  }

  if (plan.cancel_at >= 0 && !ended) {
    // The remaining calls run on a consumer thread; this thread reads stats and cancels.
    ++totals->cancels;
    Iterator* raw = it.get();
    std::atomic<bool> cancel_called{false};
    std::atomic<bool> started{false};
    std::string consumer_error;  // written by the consumer, read after join
    Totals consumer_totals;
    const int remaining = plan.calls - call;
    std::thread consumer([&] {
      started = true;
      for (int k = 0; k < remaining; ++k) {
        if (plan.consumer_saves && k % 3 == 1) {
          // Save pauses the buffers and waits for in-flight work; Cancel must end it too.
          auto ckpt = raw->Save();
          if (!ckpt.ok()) {
            if (ckpt.status().code() != StatusCode::kCancelled || !cancel_called.load()) {
              consumer_error = "Save: " + ckpt.status().ToString();
            }
            return;
          }
          ++consumer_totals.saves;
        }
        auto r = raw->GetNext();
        const bool cancelled_now = cancel_called.load();
        std::string bad = Unexpected(r, cancelled_now);
        if (!bad.empty()) {
          consumer_error = bad;
          return;
        }
        Tally(r, &consumer_totals);
        if (!r.ok() && r.status().code() == StatusCode::kCancelled) return;
        if (r.ok() && !r->has_value()) return;
      }
    });
    while (!started.load()) std::this_thread::yield();
    const auto deadline = Clock::now() + std::chrono::microseconds(plan.cancel_delay_us);
    do {
      PipelineStats s = raw->Snapshot();  // the stats plane races the consumer
      EXPECT_FALSE(s.nodes.empty());
      if (!s.nodes.empty()) {
        EXPECT_EQ(s.nodes[0].parent, -1);
      }
    } while (Clock::now() < deadline);
    cancel_called = true;
    raw->Cancel();
    consumer.join();
    EXPECT_EQ(consumer_error, "");
    totals->elements += consumer_totals.elements;
    totals->injected_errors += consumer_totals.injected_errors;
    totals->cancelled += consumer_totals.cancelled;
    totals->ends += consumer_totals.ends;
    totals->saves += consumer_totals.saves;
    // Cancellation is sticky: a later call returns Cancelled (every shape has a buffered
    // operator on the path to its root).
    auto after = it->GetNext();
    EXPECT_TRUE(!after.ok() && after.status().code() == StatusCode::kCancelled)
        << "GetNext after Cancel returned " << Describe(after);
  }

  const auto t0 = Clock::now();
  it.reset();
  const int64_t us =
      std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count();
  totals->max_destroy_us = std::max(totals->max_destroy_us, us);
  EXPECT_LT(us, kMaxDestroyMs * 1000) << "destruction took " << us / 1000 << " ms";
}

TEST(Stress, ThousandIteratorsDestroyedMidStream) {
  const int64_t iterations = EnvInt("SLUICE_STRESS_ITERATIONS", 1000);
  const uint64_t seed = static_cast<uint64_t>(EnvInt("SLUICE_STRESS_SEED", 20240611));
  const int64_t hang_s = EnvInt("SLUICE_STRESS_HANG_SECONDS", 10);

  std::vector<PipelineShape> shapes = Shapes();
  std::vector<Dataset> datasets;
  std::vector<int> available;
  for (size_t i = 0; i < shapes.size(); ++i) {
    datasets.push_back(shapes[i].build());
    ASSERT_TRUE(datasets.back().status().ok())
        << "shape " << shapes[i].name << " does not build: " << datasets.back().status();
    available.push_back(static_cast<int>(i));
  }

  std::mt19937 rng(static_cast<std::mt19937::result_type>(seed));
  Watchdog watchdog{std::chrono::seconds(hang_s)};
  Totals totals;
  std::vector<int64_t> per_shape(shapes.size(), 0);
  const auto start = Clock::now();
  for (int64_t i = 0; i < iterations; ++i) {
    const IterationPlan plan = DrawPlan(rng, available);
    const std::string what =
        "iteration " + std::to_string(i) + " (seed " + std::to_string(seed) + "): " +
        plan.ToString(shapes);
    watchdog.Begin(what);
    RunIteration(shapes[plan.shape], datasets[plan.shape], plan, what, &totals);
    watchdog.End();
    ++per_shape[plan.shape];
    if (::testing::Test::HasFatalFailure()) return;
  }
  const double secs = std::chrono::duration<double>(Clock::now() - start).count();
  std::fprintf(stderr,
               "[stress] %lld iterations in %.1f s over %zu shapes: %lld elements, %lld injected "
               "errors, %lld cancelled, %lld ends, %lld saves (%lld restored calls compared), "
               "%lld cancels; slowest destruction %.1f ms\n",
               static_cast<long long>(iterations), secs, available.size(),
               static_cast<long long>(totals.elements),
               static_cast<long long>(totals.injected_errors),
               static_cast<long long>(totals.cancelled), static_cast<long long>(totals.ends),
               static_cast<long long>(totals.saves),
               static_cast<long long>(totals.restore_compared),
               static_cast<long long>(totals.cancels), totals.max_destroy_us / 1000.0);
  for (size_t i = 0; i < shapes.size(); ++i) {
    std::fprintf(stderr, "[stress]   %-48s %lld iterations\n", shapes[i].name.c_str(),
                 static_cast<long long>(per_shape[i]));
  }
  // The schedule exercised what it is meant to (not a hard-coded count: a floor that a
  // broken pipeline, e.g. one that ends at once, would not reach).
  if (iterations >= 200) {
    EXPECT_GT(totals.elements, iterations);
    EXPECT_GT(totals.injected_errors, 0);
    EXPECT_GT(totals.cancelled, 0);
    EXPECT_GT(totals.restore_compared, 0);
    for (size_t i = 0; i < shapes.size(); ++i) {
      EXPECT_GT(per_shape[i], 0) << "shape " << shapes[i].name << " was never drawn";
    }
  }
}

// Each shape on its own: it builds (an op missing or misnamed fails here, it is never
// skipped), and one iterator driven for up to 200 calls with a 2-thread pool gives only
// allowed outcomes.
class ShapeTest : public ::testing::TestWithParam<int> {};

TEST_P(ShapeTest, BuildsAndRuns) {
  const PipelineShape shape = Shapes()[GetParam()];
  Dataset ds = shape.build();
  ASSERT_TRUE(ds.status().ok()) << shape.name << " does not build: " << ds.status();
  Options rt;
  rt.autotune.cpu_budget = 2;
  auto it = MakeIteratorAsBuilt(ds, rt);
  ASSERT_TRUE(it.ok()) << it.status();
  int64_t elements = 0;
  for (int k = 0; k < 200; ++k) {
    auto r = (*it)->GetNext();
    ASSERT_EQ(Unexpected(r, false), "") << shape.name << " call " << k;
    if (r.ok() && !r->has_value()) break;
    elements += r.ok() ? 1 : 0;
  }
  EXPECT_GT(elements, 0) << shape.name;
}

INSTANTIATE_TEST_SUITE_P(AllShapes, ShapeTest,
                         ::testing::Range(0, static_cast<int>(Shapes().size())),
                         [](const ::testing::TestParamInfo<int>& info) {
                           std::string n = Shapes()[info.param].name;
                           for (char& c : n) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return n;
                         });

}  // namespace
}  // namespace sluice
