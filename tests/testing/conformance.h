// The operator conformance fixture (tf.data's ITERATOR_SAVE_AND_RESTORE_TEST_P, widened).
//
// CheckDataset runs a dataset through the whole iterator contract:
//  * GetNext yields `expected` (in order, or as a multiset when !ordered), then nullopt,
//    and keeps returning nullopt after the end;
//  * Cardinality() equals the count when known, and is never wrong;
//  * at every position k: save, restore into a fresh iterator, and the rest equals what the
//    saved iterator itself goes on to produce (and equals expected[k..] when ordered);
//  * a checkpoint survives serialization and a corrupted checkpoint is rejected.
// CheckTransform adds, for a transformation T:
//  * error propagation: T(input failing at element k) surfaces the injected error, and the
//    iterator stays safe to call afterwards (no crash, no hang);
//  * empty input: T(empty) yields `expected_on_empty` (default: nothing).
#ifndef SLUICE_TESTS_TESTING_CONFORMANCE_H_
#define SLUICE_TESTS_TESTING_CONFORMANCE_H_

#include <functional>
#include <vector>

#include "sluice/dataset.h"

namespace sluice::testing {

struct ConformanceOptions {
  bool ordered = true;
  // Every iterator of the dataset yields the same sequence (false for reshuffling ops).
  bool same_each_iteration = true;
  bool check_save_restore = true;
  int64_t save_restore_stride = 1;
  // How every iterator of the check runs (pool size, inline execution, budgets).
  Options runtime;
};

void CheckDataset(const Dataset& ds, const std::vector<Element>& expected,
                  const ConformanceOptions& opts = {});

using Transform = std::function<Dataset(Dataset)>;
// Error propagation and empty-input checks for a transformation.
void CheckTransform(const Transform& t, const std::vector<Element>& expected_on_empty = {});

// Range(n) whose element at position k fails with "injected failure at k".
Dataset FailingAt(int64_t n, int64_t k);

// All elements of `ds`; fails the test on error.
std::vector<Element> CollectOrDie(const Dataset& ds);
// Elements (int64 scalar) for each value.
std::vector<Element> Ints(const std::vector<int64_t>& values);
// The int64 scalar of a one-component element.
int64_t IntOf(const Element& e);
std::vector<int64_t> IntsOf(const std::vector<Element>& es);

// A temporary directory removed at destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Writes `contents` to `path` (fails the test on error).
void WriteFile(const std::string& path, const std::string& contents);
std::string ReadFile(const std::string& path);
// The `sluice` CLI built beside the running test binary.
std::string SluiceBinary();
// Waits up to `timeout_ms` for `file` to hold a port number (what `sluice dispatcher` and
// `sluice worker` write with --port-file once serving); the port, or 0 at the timeout.
int WaitForPortFile(const std::string& file, int64_t timeout_ms);
// The repository root (SLUICE_SOURCE_DIR, set by CTest), for test data.
std::string SourceDir();

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_TESTING_CONFORMANCE_H_
