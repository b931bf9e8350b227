#include "runtime/executor.h"

#include <pthread.h>

namespace sluice {

void SetCurrentThreadName(const std::string& name) {
  pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
}

ThreadPool::ThreadPool(int num_threads, std::string name) {
  if (num_threads < 1) num_threads = 1;
  threads_.reserve(num_threads);
  for (int i = 0; i < num_threads; ++i) {
    threads_.emplace_back([this, name] {
      SetCurrentThreadName(name);
      WorkerLoop();
    });
  }
}

ThreadPool::~ThreadPool() {
  {
    MutexLock l(&mu_);
    stop_ = true;
  }
  cv_.SignalAll();
  for (std::thread& t : threads_) t.join();
}

void ThreadPool::Schedule(std::function<void()> task) {
  {
    MutexLock l(&mu_);
    queue_.push_back(std::move(task));
  }
  cv_.Signal();
}

void ThreadPool::WorkerLoop() {
  MutexLock l(&mu_);
  while (true) {
    cv_.Wait(&mu_, [this]() REQUIRES(mu_) { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stop_ and drained
    std::function<void()> task = std::move(queue_.front());
    queue_.pop_front();
    l.Unlock();
    task();
    task = nullptr;  // destroy captures outside the lock
    l.Lock();
  }
}

}  // namespace sluice
