// FaultEnv: an Env (src/core/env.h) that injects faults into chosen files, for tests of
// how readers and writers cope with a misbehaving file system.
//
//   FaultEnv env;                                   // wraps Env::Default()
//   env.Set(path, {.eio_after = 100});              // reads past byte 100 fail (EIO)
//   Options o;
//   o.env = &env;
//   auto it = MakeIteratorAsBuilt(ds, o);
//
// A fault applies to the file whose path equals the key, else to every path that starts
// with it (Cache temp files have generated names). Files without a fault pass through.
//
// Thread-safety: Set before the pipeline runs; reads may then come from any thread.
#ifndef SLUICE_TESTS_TESTING_FAULT_ENV_H_
#define SLUICE_TESTS_TESTING_FAULT_ENV_H_

#include <errno.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "api/dataset_internal.h"
#include "core/env.h"

namespace sluice::testing {

struct FileFault {
  // Reads at or past this byte offset fail with EIO (a read spanning it returns the bytes
  // before it first). -1: never.
  int64_t eio_after = -1;
  // Each read returns at most this many bytes (short reads). 0: no limit.
  size_t max_read = 0;
  // Each read sleeps this long first (a slow disk).
  int64_t delay_us = 0;
  // The file ends here when read, though opening reported its full size (it shrank
  // between stat and read). -1: no.
  int64_t shrink_to = -1;
  // Opening fails with EIO.
  bool fail_open = false;
  // Appends fail with ENOSPC once this many bytes were written. -1: never.
  int64_t write_fail_after = -1;
};

class FaultEnv : public EnvWrapper {
 public:
  explicit FaultEnv(Env* base = Env::Default()) : EnvWrapper(base) {}

  void Set(const std::string& path, FileFault fault) {
    std::lock_guard<std::mutex> l(mu_);
    faults_[path] = fault;
  }
  // Reads served through faulty files (counted per call).
  int64_t faulty_reads() const { return faulty_reads_.load(); }

  Result<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
      const std::string& path) override {
    const FileFault* f = Find(path);
    if (f != nullptr && f->fail_open) return ErrnoToStatus(EIO, "cannot open", path);
    SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file,
                            target()->NewRandomAccessFile(path));
    if (f == nullptr) return file;
    return std::unique_ptr<RandomAccessFile>(new FaultyFile(std::move(file), *f, this));
  }

  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path,
                                                        bool exclusive) override {
    SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file,
                            target()->NewWritableFile(path, exclusive));
    const FileFault* f = Find(path);
    if (f == nullptr || f->write_fail_after < 0) return file;
    return std::unique_ptr<WritableFile>(
        new FaultyWritableFile(std::move(file), f->write_fail_after));
  }

 private:
  class FaultyFile : public RandomAccessFile {
   public:
    FaultyFile(std::unique_ptr<RandomAccessFile> base, FileFault f, FaultEnv* env)
        : RandomAccessFile(base->name()), base_(std::move(base)), f_(f), env_(env) {}
    Result<size_t> Read(uint64_t offset, char* dst, size_t n) override {
      env_->faulty_reads_.fetch_add(1);
      if (f_.delay_us > 0)
        std::this_thread::sleep_for(std::chrono::microseconds(f_.delay_us));
      if (f_.eio_after >= 0) {
        if (offset >= static_cast<uint64_t>(f_.eio_after)) {
          return ErrnoToStatus(
              EIO, "cannot read at byte offset " + std::to_string(offset) + " of file",
              name());
        }
        n = std::min<uint64_t>(n, static_cast<uint64_t>(f_.eio_after) - offset);
      }
      if (f_.shrink_to >= 0) {
        if (offset >= static_cast<uint64_t>(f_.shrink_to)) return size_t{0};
        n = std::min<uint64_t>(n, static_cast<uint64_t>(f_.shrink_to) - offset);
      }
      if (f_.max_read > 0) n = std::min(n, f_.max_read);
      return base_->Read(offset, dst, n);
    }
    uint64_t Size() const override { return base_->Size(); }

   private:
    std::unique_ptr<RandomAccessFile> base_;
    const FileFault f_;
    FaultEnv* env_;
  };

  class FaultyWritableFile : public WritableFile {
   public:
    FaultyWritableFile(std::unique_ptr<WritableFile> base, int64_t fail_after)
        : WritableFile(base->name()), base_(std::move(base)), left_(fail_after) {}
    Status Append(std::string_view data) override {
      if (static_cast<int64_t>(data.size()) > left_) {
        return ErrnoToStatus(ENOSPC, "cannot write", name());
      }
      left_ -= static_cast<int64_t>(data.size());
      return base_->Append(data);
    }
    Status Sync() override { return base_->Sync(); }
    Status Close() override { return base_->Close(); }

   private:
    std::unique_ptr<WritableFile> base_;
    int64_t left_;
  };

  const FileFault* Find(const std::string& path) {
    std::lock_guard<std::mutex> l(mu_);
    auto it = faults_.find(path);
    if (it != faults_.end()) return &it->second;
    for (const auto& [key, f] : faults_) {
      if (path.compare(0, key.size(), key) == 0) return &f;
    }
    return nullptr;
  }

  std::mutex mu_;
  std::map<std::string, FileFault> faults_;  // GUARDED_BY(mu_); entries never erased
  std::atomic<int64_t> faulty_reads_{0};
};

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_TESTING_FAULT_ENV_H_
