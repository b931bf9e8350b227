// Executor: where operators run their CPU work (function calls, batch copies).
//
// A pipeline (one top-level Iterator) owns one ThreadPool whose size is the pipeline's CPU
// budget; every parallel operator in it submits work to that pool, so the budget bounds the
// CPU the pipeline's functions use no matter how many operators it has (tf.data's shared
// inter-op pool). InlineExecutor runs each task at once on the submitting thread: tests use
// it to get parallel operators without concurrency.
//
// The rule that keeps the pool deadlock-free: a task never blocks on the pipeline (it never
// calls an iterator's GetNext, never waits for another task). Operators pull their inputs on
// their own threads (see async_buffer.h, the parallel interleave) and submit only the pure
// work to the pool.
//
// Thread-safety: Schedule may be called from any thread.
#ifndef SLUICE_RUNTIME_EXECUTOR_H_
#define SLUICE_RUNTIME_EXECUTOR_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "core/mutex.h"

namespace sluice {

class Executor {
 public:
  virtual ~Executor() = default;
  // Runs `task` eventually (on a pool thread, or right away for InlineExecutor). Tasks
  // scheduled before the executor is destroyed all run.
  virtual void Schedule(std::function<void()> task) = 0;
  // How many tasks can run at once.
  virtual int num_threads() const = 0;
};

// A fixed-size pool of threads named `name` (visible in top/perf/gdb).
class ThreadPool final : public Executor {
 public:
  ThreadPool(int num_threads, std::string name);
  // Runs the tasks still queued, then joins the threads.
  ~ThreadPool() override;

  void Schedule(std::function<void()> task) override;
  int num_threads() const override { return static_cast<int>(threads_.size()); }

 private:
  void WorkerLoop();

  Mutex mu_;
  CondVar cv_;
  std::deque<std::function<void()>> queue_ GUARDED_BY(mu_);
  bool stop_ GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

class InlineExecutor final : public Executor {
 public:
  void Schedule(std::function<void()> task) override { task(); }
  int num_threads() const override { return 1; }
};

// Names the calling thread (truncated to the 15 characters Linux allows).
void SetCurrentThreadName(const std::string& name);

}  // namespace sluice

#endif  // SLUICE_RUNTIME_EXECUTOR_H_
