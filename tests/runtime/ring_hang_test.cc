// The Prefetch ring's sleep/wake protocol under stress, with a watchdog: a lost wake-up
// must fail the test with a clear message (and a stack dump when gdb is at hand), never
// hang CTest.
//
//  * EventCount with a stale notifier: one waiter sleeps until a counter moves, a real
//    notifier moves it once per round and waits for the waiter's answer, and another
//    thread calls Notify() all the time with nothing changed (as Prefetch's consumer does
//    when the ring falls to half: its Notify may land on a later wait of the runner than
//    the one it was meant for). Such a stale Notify that consumed a registration between
//    PrepareWait's store of the flag and its read of the epoch left the waiter asleep
//    with a key that no later Notify could change (the hang seen in `sluice bench
//    autotune`). With that PrepareWait this test failed on every run, within 6 s; the
//    pipelines below caught it only in about one run in four, on a loaded machine.
//  * Pipelines of the hang's shape and smaller ones (range -> map -> batch ->
//    prefetch(1), prefetch(1) over prefetch(1), map_and_batch under prefetch, capacity 1
//    and 2, a tiny memory budget, autotune off and on), many short epochs each.
//
// Bounded: about 3 s for the EventCount test and 12 s for the pipelines by default.
// SLUICE_RING_SOAK_SECONDS=<s> runs each for that long instead (e.g. beside
// a loaded machine, which widens the races); SLUICE_RING_SHAPE=<substring> keeps the
// pipelines whose name has it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/spsc_ring.h"
#include "sluice/dataset.h"

namespace sluice {
namespace {

using Clock = std::chrono::steady_clock;

double SoakSeconds(double default_seconds) {
  const char* s = std::getenv("SLUICE_RING_SOAK_SECONDS");
  return s != nullptr && std::atof(s) > 0 ? std::atof(s) : default_seconds;
}

// Prints every thread's stack (best effort: gdb may be missing or ptrace refused).
void DumpStacks() {
  if (access("/usr/bin/gdb", X_OK) != 0) return;
  const std::string cmd = "timeout 60 /usr/bin/gdb -p " + std::to_string(getpid()) +
                          " -batch -nx -ex 'thread apply all bt' 1>&2 2>/dev/null";
  std::fflush(stderr);
  [[maybe_unused]] int rc = std::system(cmd.c_str());
}

// What a hung test leaves behind: its threads stay blocked, so the state they use is
// shared with them and never freed.
struct WakeState {
  EventCount ec;
  std::atomic<int64_t> posted{0};  // rounds the notifier started
  std::atomic<int64_t> seen{0};    // rounds the waiter saw
  std::atomic<bool> stop{false};
  std::atomic<bool> exited{false};  // the waiter saw `stop`
};

TEST(EventCountStress, StaleNotifiesNeverLoseAWake) {
  auto st = std::make_shared<WakeState>();
  const auto end = Clock::now() + std::chrono::duration<double>(SoakSeconds(3.0));
  constexpr auto kHangLimit = std::chrono::seconds(5);
  std::thread waiter([st] {
    int64_t seen = 0;
    while (!st->stop.load()) {
      const uint32_t key = st->ec.PrepareWait();
      const int64_t posted = st->posted.load();
      if (posted != seen || st->stop.load()) {
        st->ec.CancelWait();
        seen = posted;
        st->seen.store(seen);
        continue;
      }
      st->ec.Wait(key);
    }
    st->exited.store(true);
  });
  std::thread stale([st] {
    while (!st->stop.load()) st->ec.Notify();  // nothing changed: a stale wake
  });
  int64_t round = 0;
  bool hung = false;
  while (Clock::now() < end) {
    ++round;
    st->posted.store(round);
    st->ec.Notify();
    const auto limit = Clock::now() + kHangLimit;
    while (st->seen.load() < round && Clock::now() < limit) std::this_thread::yield();
    if (st->seen.load() < round) {
      hung = true;
      break;
    }
  }
  st->stop.store(true);
  stale.join();
  if (!hung) {
    // The stop is one more change the waiter must wake for.
    st->ec.Notify();
    const auto limit = Clock::now() + kHangLimit;
    while (!st->exited.load() && Clock::now() < limit) std::this_thread::yield();
    hung = !st->exited.load();
  }
  if (hung) {
    std::fprintf(
        stderr,
        "EventCountStress: the waiter slept through round %lld (or the stop after "
        "it) for %lld s although the change was made and Notify ran: a lost "
        "wake-up\n",
        static_cast<long long>(round), static_cast<long long>(kHangLimit.count()));
    DumpStacks();
    waiter.detach();  // asleep for good; it holds `st`
    FAIL() << "lost wake-up in EventCount at round " << round;
  }
  waiter.join();
  EXPECT_GT(round, 10) << "the stress ran too few rounds to mean anything";
}

struct Shape {
  std::string name;
  Dataset ds;
  int64_t expected;  // elements per epoch
  bool autotune;
  int64_t ram_budget;  // 0: default
};

Function Identity() {
  return Function::Map("identity",
                       [](Element e, FunctionContext&) -> Result<Element> { return e; });
}

// Elements of the Fashion-MNIST pipeline's size class: a [28, 28] float row per value.
Function Image() {
  return Function::Map("image", [](Element e, FunctionContext&) -> Result<Element> {
    Tensor t(DType::kFloat32, {28, 28});
    float* p = t.mutable_data<float>();
    const float v = static_cast<float>(e[0].scalar<int64_t>());
    for (int64_t i = 0; i < 28 * 28; ++i) p[i] = v;
    return Element({std::move(t), e[0]});
  });
}

std::vector<Shape> Shapes() {
  constexpr int64_t kN = 300;
  std::vector<Shape> s;
  for (int64_t cap : {1, 2}) {
    const std::string c = std::to_string(cap);
    s.push_back({"range.map.batch.prefetch(" + c + ")",
                 Dataset::Range(kN).Map(Identity()).Batch(8).Prefetch(cap), (kN + 7) / 8,
                 false, 0});
    s.push_back({"range.map.prefetch(" + c + ").prefetch(" + c + ")",
                 Dataset::Range(kN).Map(Identity()).Prefetch(cap).Prefetch(cap), kN,
                 false, 0});
    s.push_back(
        {"image.map_and_batch(2).prefetch(" + c + ")",
         Dataset::Range(kN).Map(Image()).MapAndBatch(Identity(), 16, 2).Prefetch(cap),
         (kN + 15) / 16, false, 0});
    s.push_back(
        {"image.map_and_batch(2).prefetch(" + c + "), 64 KiB budget",
         Dataset::Range(kN).Map(Image()).MapAndBatch(Identity(), 16, 2).Prefetch(cap),
         (kN + 15) / 16, false, 64 << 10});
    s.push_back({"image.prefetch(" + c + ").prefetch(" + c + "), 8 KiB budget",
                 Dataset::Range(kN).Map(Image()).Prefetch(cap).Prefetch(cap), kN, false,
                 8 << 10});
    s.push_back({"range.map.batch.prefetch(" + c + "), autotune",
                 Dataset::Range(kN).Map(Identity()).Batch(8).Prefetch(cap), (kN + 7) / 8,
                 true, 0});
  }
  s.push_back(
      {"image.map_and_batch(AUTOTUNE).prefetch(AUTOTUNE), autotune",
       Dataset::Range(kN).Map(Image()).MapAndBatch(Identity(), 16).Prefetch(kAutotune),
       (kN + 15) / 16, true, 0});
  return s;
}

// One epoch's progress, shared with the thread that runs it.
struct EpochState {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::atomic<int64_t> got{0};
  std::string error;
  std::unique_ptr<Iterator> it;
};

TEST(PrefetchRingStress, ManyShortEpochsNeverHang) {
  std::vector<Shape> shapes = Shapes();
  if (const char* only = std::getenv("SLUICE_RING_SHAPE"); only != nullptr) {
    std::erase_if(shapes,
                  [&](const Shape& s) { return s.name.find(only) == std::string::npos; });
    ASSERT_FALSE(shapes.empty()) << "no pipeline matches SLUICE_RING_SHAPE=" << only;
  }
  const double per_shape = SoakSeconds(12.0) / static_cast<double>(shapes.size());
  constexpr auto kHangLimit = std::chrono::seconds(10);
  for (const Shape& shape : shapes) {
    Options o;
    o.optimization.apply_default_optimizations = false;
    o.autotune.enabled = shape.autotune;
    o.autotune.cpu_budget = 2;
    if (shape.ram_budget > 0) o.autotune.ram_budget = shape.ram_budget;
    const auto end = Clock::now() + std::chrono::duration<double>(per_shape);
    int64_t epochs = 0;
    do {
      ++epochs;
      auto es = std::make_shared<EpochState>();
      auto it = shape.ds.MakeIterator(o);
      ASSERT_TRUE(it.ok()) << shape.name << ": " << it.status().ToString();
      es->it = std::move(*it);
      std::thread runner([es] {
        std::string error;
        while (true) {
          auto e = es->it->GetNext();
          if (!e.ok()) {
            error = e.status().ToString();
            break;
          }
          if (!e->has_value()) break;
          es->got.fetch_add(1);
        }
        std::lock_guard<std::mutex> l(es->mu);
        es->error = error;
        es->done = true;
        es->cv.notify_all();
      });
      std::unique_lock<std::mutex> l(es->mu);
      if (!es->cv.wait_for(l, kHangLimit, [&] { return es->done; })) {
        l.unlock();
        std::fprintf(stderr,
                     "PrefetchRingStress: '%s' epoch %lld stuck in GetNext for %lld s "
                     "after %lld of %lld elements\n",
                     shape.name.c_str(), static_cast<long long>(epochs),
                     static_cast<long long>(kHangLimit.count()),
                     static_cast<long long>(es->got.load()),
                     static_cast<long long>(shape.expected));
        DumpStacks();
        runner.detach();  // blocked for good; it holds `es`
        FAIL() << shape.name << ": hang in epoch " << epochs << " after "
               << es->got.load() << " elements";
      }
      l.unlock();
      runner.join();
      ASSERT_EQ(es->error, "") << shape.name << " epoch " << epochs;
      ASSERT_EQ(es->got.load(), shape.expected) << shape.name << " epoch " << epochs;
      es->it.reset();
    } while (Clock::now() < end);
    std::fprintf(stderr, "[ring stress] %s: %lld epochs\n", shape.name.c_str(),
                 static_cast<long long>(epochs));
  }
}

}  // namespace
}  // namespace sluice
