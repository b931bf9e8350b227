// The op and kernel cases: one small pipeline per registered op and per registered kernel,
// shared by every test that must cover all of them (serialization round trips, the OpDef
// meta-test, ...). A new op or kernel adds its case here; those tests fail until it does.
#ifndef SLUICE_TESTS_TESTING_OP_CASES_H_
#define SLUICE_TESTS_TESTING_OP_CASES_H_

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "graph/dataset_node.h"
#include "sluice/dataset.h"
#include "testing/conformance.h"

namespace sluice::testing {

// Small files every case may use, written once per test.
class Files {
 public:
  Files();
  std::string File(const std::string& name) const { return dir_.File(name); }
  const std::string& png() const { return png_; }
  const std::string& jpeg() const { return jpeg_; }

  // A 12x16 RGB gradient.
  static Tensor Image();

 private:
  TempDir dir_;
  std::string png_, jpeg_;
};

// A registered kernel (fails the test when it cannot be made).
Function K(std::string_view name, AttrMap attrs = {});
// All elements (fails the test on error).
std::vector<Element> Collect(const Dataset& ds);
// Same count, equal contents and names, in order.
void ExpectSameElements(const std::vector<Element>& a, const std::vector<Element>& b);
bool GraphHasOp(const DatasetPtr& n, std::string_view op);
bool GraphHasKernel(const DatasetPtr& n, std::string_view kernel);

using Case = std::function<Dataset(const Files&)>;
// One small pipeline per registered op, keyed by op name.
const std::map<std::string, Case>& OpCases();
// One pipeline per registered kernel, keyed by kernel name.
const std::map<std::string, Case>& KernelCases();

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_TESTING_OP_CASES_H_
