// Reference comparisons against Python libraries (PIL, torchvision, numpy).
//
// A test writes its inputs as .npy files (or any file), runs a script under
// tests/reference/ with Debian's /usr/bin/python3 (which sees python3-pil, -numpy,
// -torch, -torchvision; `make test` installs them), and reads the script's .npy outputs
// back. A missing interpreter or module fails the test with the script's stderr: the
// reference is part of the test, not optional.
#ifndef SLUICE_TESTS_TESTING_PYTHON_REFERENCE_H_
#define SLUICE_TESTS_TESTING_PYTHON_REFERENCE_H_

#include <string>
#include <vector>

#include "sluice/tensor.h"

namespace sluice::testing {

// The interpreter reference scripts run under.
inline constexpr const char* kPython = "/usr/bin/python3";

// Runs SourceDir()/tests/reference/<script> with `args` (each shell-quoted); fails the
// test (ADD_FAILURE, returns false) when it exits non-zero, printing its output.
bool RunReferenceScript(const std::string& script, const std::vector<std::string>& args);

// Writes/reads a numeric tensor as a NumPy .npy file (format 1.0, little-endian,
// C order). Supported dtypes: bool, uint8, int8, int16, int32, int64, float32, float64.
void WriteNpy(const std::string& path, const Tensor& t);
Tensor ReadNpy(const std::string& path);  // fails the test and returns Tensor() on error

// The largest |a - b| over all elements (both converted to double); fails the test and
// returns +inf when dtypes or shapes differ.
double MaxAbsDiff(const Tensor& a, const Tensor& b);
// The mean |a - b|.
double MeanAbsDiff(const Tensor& a, const Tensor& b);

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_TESTING_PYTHON_REFERENCE_H_
