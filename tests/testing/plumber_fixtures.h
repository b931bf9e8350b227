// Fixtures for the bottleneck doctor's tests (tests/plumber/): functions that burn a known
// amount of CPU, record files of known sizes, and an Env whose reads share a fixed
// bandwidth (a slow disk).
//
// Thread-safety: ThrottledEnv may be read from any thread; the rest are plain functions.
#ifndef SLUICE_TESTS_TESTING_PLUMBER_FIXTURES_H_
#define SLUICE_TESTS_TESTING_PLUMBER_FIXTURES_H_

#include <time.h>

#include <chrono>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/env.h"
#include "formats/tfrecord.h"
#include "sluice/dataset.h"

namespace sluice::testing {

inline int64_t ThreadCpuNowNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

// Spins until this thread has used `ns` of CPU (independent of other load).
inline void BurnCpu(int64_t ns) {
  const int64_t end = ThreadCpuNowNs() + ns;
  volatile uint64_t x = 0;
  while (ThreadCpuNowNs() < end) {
    for (int i = 0; i < 200; ++i) x = x + i;
  }
}

// An element -> element function that burns `ns` of CPU and passes the element on.
// `stateful` marks it as a function that must run alone (as Python callables are).
inline Function BurnFunction(std::string name, int64_t ns, bool stateful = false) {
  FunctionTraits t;
  t.stateful = stateful;
  return Function::Map(
      std::move(name),
      [ns](Element e, FunctionContext&) -> Result<Element> {
        BurnCpu(ns);
        return e;
      },
      t);
}

// Writes files[i] as a TFRecord file of counts[i] records of `record_bytes` bytes each
// under `dir`; returns the paths.
inline std::vector<std::string> WriteRecordFiles(const std::string& dir,
                                                 const std::vector<int>& counts,
                                                 size_t record_bytes) {
  std::filesystem::create_directories(dir);
  std::vector<std::string> paths;
  for (size_t f = 0; f < counts.size(); ++f) {
    std::string path = dir + "/part-" + std::to_string(100 + f) + ".tfrecord";
    auto w = TFRecordWriter::Open(path);
    if (!w.ok()) return {};
    for (int r = 0; r < counts[f]; ++r) {
      std::string rec(record_bytes, static_cast<char>('a' + (r + f) % 26));
      if (!(*w)->Write(rec).ok()) return {};
    }
    if (!(*w)->Close().ok()) return {};
    paths.push_back(path);
  }
  return paths;
}

// A disk of `bytes_per_second` shared by all readers: each read waits for its turn and
// for its bytes' transfer time.
class ThrottledEnv : public EnvWrapper {
 public:
  explicit ThrottledEnv(double bytes_per_second, Env* base = Env::Default())
      : EnvWrapper(base), bps_(bytes_per_second) {}

  Result<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
      const std::string& path) override {
    SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> f,
                            target()->NewRandomAccessFile(path));
    return std::unique_ptr<RandomAccessFile>(new File(std::move(f), this));
  }

 private:
  using Clock = std::chrono::steady_clock;
  class File : public RandomAccessFile {
   public:
    File(std::unique_ptr<RandomAccessFile> base, ThrottledEnv* env)
        : RandomAccessFile(base->name()), base_(std::move(base)), env_(env) {}
    Result<size_t> Read(uint64_t offset, char* dst, size_t n) override {
      SLUICE_ASSIGN_OR_RETURN(size_t got, base_->Read(offset, dst, n));
      env_->Wait(got);
      return got;
    }
    uint64_t Size() const override { return base_->Size(); }

   private:
    std::unique_ptr<RandomAccessFile> base_;
    ThrottledEnv* env_;
  };

  void Wait(size_t bytes) {
    Clock::time_point done;
    {
      std::lock_guard<std::mutex> l(mu_);
      const auto now = Clock::now();
      if (next_ < now) next_ = now;
      next_ += std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double>(bytes / bps_));
      done = next_;
    }
    std::this_thread::sleep_until(done);
  }

  const double bps_;
  std::mutex mu_;
  Clock::time_point next_{};
};

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_TESTING_PLUMBER_FIXTURES_H_
