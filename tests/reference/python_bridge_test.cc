// The Python bridge the reference tests stand on: .npy written here is read by numpy and
// back, through the real interpreter.
#include "testing/python_reference.h"

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include "testing/conformance.h"

namespace sluice::testing {
namespace {

TEST(PythonReferenceTest, NpyRoundTripsThroughNumpy) {
  TempDir dir;
  Tensor in(DType::kFloat32, Shape{2, 3, 4});
  for (int i = 0; i < 24; ++i) in.mutable_data<float>()[i] = 0.5f * i - 3;
  WriteNpy(dir.File("in.npy"), in);
  ASSERT_TRUE(RunReferenceScript("npy_roundtrip.py", {dir.File("in.npy"), dir.File("out.npy")}));
  Tensor out = ReadNpy(dir.File("out.npy"));
  ASSERT_EQ(out.dtype(), DType::kFloat32);
  ASSERT_EQ(out.shape(), (Shape{2, 3, 4}));
  for (int i = 0; i < 24; ++i) EXPECT_EQ(out.data<float>()[i], 2 * in.data<float>()[i]);
  EXPECT_EQ(MaxAbsDiff(out, out), 0);
  EXPECT_GT(MaxAbsDiff(out, in), 5);
}

TEST(PythonReferenceTest, UInt8AndScalarShapes) {
  TempDir dir;
  Tensor in(DType::kUInt8, Shape{5});
  for (int i = 0; i < 5; ++i) in.mutable_data<uint8_t>()[i] = static_cast<uint8_t>(10 * i);
  WriteNpy(dir.File("in.npy"), in);
  ASSERT_TRUE(RunReferenceScript("npy_roundtrip.py", {dir.File("in.npy"), dir.File("out.npy")}));
  Tensor out = ReadNpy(dir.File("out.npy"));
  ASSERT_EQ(out.shape(), (Shape{5}));
  EXPECT_EQ(out.data<uint8_t>()[4], 80);
}

TEST(PythonReferenceTest, FailingScriptFailsTheTest) {
  EXPECT_NONFATAL_FAILURE(RunReferenceScript("npy_roundtrip.py", {"/nonexistent.npy", "/tmp/x.npy"}),
                          "reference script failed");
}

}  // namespace
}  // namespace sluice::testing
