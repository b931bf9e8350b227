// Fuzzes the Idx source: the input is written to a temporary file (plain or, when it
// starts with the gzip magic, gzipped IDX) and read row by row, with a checkpoint
// restored half-way. Errors are fine; crashes, hangs, huge allocations and rows that
// break the spec are not.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "sluice/dataset.h"

namespace {

// Rows read per input at most, before and after the checkpoint (a header may announce
// 2^32 empty rows). Rows past the first few take no new paths; at 16,384 the fuzzer
// spent ~100 ms on an input with many rows and ran ~1 input/s over its seeds, against
// ~400/s at 256.
constexpr int64_t kMaxRows = 256;

const std::string& TempPath() {
  static const std::string* path = [] {
    const char* dir = std::getenv("TMPDIR");
    std::string tmpl =
        std::string(dir && *dir ? dir : "/tmp") + "/sluice_idx_fuzz_XXXXXX";
    int fd = mkstemp(tmpl.data());
    if (fd < 0) __builtin_trap();
    close(fd);
    std::atexit([] { unlink(TempPath().c_str()); });
    return new std::string(tmpl);
  }();
  return *path;
}

void WriteAll(const std::string& path, const uint8_t* data, size_t size) {
  int fd = open(path.c_str(), O_WRONLY | O_TRUNC);
  if (fd < 0) __builtin_trap();
  size_t done = 0;
  while (done < size) {
    ssize_t n = write(fd, data + done, size - done);
    if (n <= 0) __builtin_trap();
    done += static_cast<size_t>(n);
  }
  close(fd);
}

// Reads up to `limit` rows, checking each against the spec; returns how many were read.
int64_t Drain(sluice::Iterator* it, const sluice::ElementSpec& spec, int64_t limit) {
  int64_t n = 0;
  while (n < limit) {
    auto e = it->GetNext();
    if (!e.ok()) {
      if (e.status().message().empty()) __builtin_trap();
      ++n;  // counted, so an iterator that failed forever would still stop here
      continue;
    }
    if (!*e) break;
    if (!spec.Check(**e).ok()) __builtin_trap();
    ++n;
  }
  return n;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = TempPath();
  WriteAll(path, data, size);
  sluice::Dataset ds = sluice::Dataset::Idx(path);
  if (!ds.ok()) return 0;
  const int64_t rows = ds.Cardinality();
  if (rows < 0) __builtin_trap();
  auto it = ds.MakeIterator();
  if (!it.ok()) __builtin_trap();
  const int64_t half = std::min<int64_t>(rows / 2, kMaxRows);
  Drain(it->get(), ds.element_spec(), half);
  auto ckpt = (*it)->Save();
  if (!ckpt.ok()) __builtin_trap();
  Drain(it->get(), ds.element_spec(), kMaxRows);

  auto restored = ds.MakeIterator();
  if (!restored.ok() || !(*restored)->Restore(*ckpt).ok()) __builtin_trap();
  Drain(restored->get(), ds.element_spec(), kMaxRows);
  return 0;
}
