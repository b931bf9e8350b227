// Scan: conformance, the tf.data example, state checks.
#include <gtest/gtest.h>

#include "testing/conformance.h"

namespace sluice {
namespace {

using testing::CheckDataset;
using testing::CheckTransform;
using testing::Ints;
using testing::IntsOf;

// tf.data's example: scan_func = lambda state, i: (state + i, state + i).
Function RunningSum() {
  return Function::Map("running_sum", [](Element e, FunctionContext&) -> Result<Element> {
    int64_t s = e[0].scalar<int64_t>() + e[1].scalar<int64_t>();
    return Element{Tensor::Scalar<int64_t>(s), Tensor::Scalar<int64_t>(s)};
  });
}

TEST(ScanTest, DocExampleRunningSum) {
  Dataset ds = Dataset::Range(10).Scan(Element{Tensor::Scalar<int64_t>(0)}, RunningSum());
  CheckDataset(ds, Ints({0, 1, 3, 6, 10, 15, 21, 28, 36, 45}));
  EXPECT_EQ(ds.Cardinality(), 10);
  CheckTransform([](Dataset in) {
    return in.Scan(Element{Tensor::Scalar<int64_t>(0)}, RunningSum());
  });
}

TEST(ScanTest, SeveralStateComponentsAndOutputs) {
  // State (a, b) -> (b, a + b); outputs (a, element * a).
  Function fib = Function::Map(
      "fib",
      [](Element e, FunctionContext&) -> Result<Element> {
        int64_t a = e[0].scalar<int64_t>(), b = e[1].scalar<int64_t>();
        int64_t x = e[2].scalar<int64_t>();
        return Element({Tensor::Scalar<int64_t>(b), Tensor::Scalar<int64_t>(a + b),
                        Tensor::Scalar<int64_t>(a), Tensor::Scalar<int64_t>(x * a)},
                       MakeNames({"a", "b", "fib", "scaled"}));
      },
      {},
      [](const ElementSpec& in) -> Result<ElementSpec> {
        ElementSpec s{{{DType::kInt64, PartialShape{}},
                       {DType::kInt64, PartialShape{}},
                       {DType::kInt64, PartialShape{}},
                       {DType::kInt64, PartialShape{}}}};
        s.names = MakeNames({"a", "b", "fib", "scaled"});
        return s;
      });
  Dataset ds = Dataset::Range(7).Scan(
      Element{Tensor::Scalar<int64_t>(0), Tensor::Scalar<int64_t>(1)}, fib);
  std::vector<Element> expected;
  int64_t fibs[] = {0, 1, 1, 2, 3, 5, 8};
  for (int64_t i = 0; i < 7; ++i) {
    expected.push_back(
        Element{Tensor::Scalar<int64_t>(fibs[i]), Tensor::Scalar<int64_t>(i * fibs[i])});
  }
  CheckDataset(ds, expected);
  EXPECT_EQ(ds.element_spec().ToString(), "(fib: int64[], scaled: int64[])");
  auto got = testing::CollectOrDie(ds);
  ASSERT_TRUE(got[0].names());
  EXPECT_EQ(*got[0].names(), (std::vector<std::string>{"fib", "scaled"}));
}

TEST(ScanTest, VectorStateIsCheckpointed) {
  // The state is a vector: a histogram of x % 3; each output is the histogram so far.
  Function hist =
      Function::Map("hist", [](Element e, FunctionContext&) -> Result<Element> {
        Tensor h = e[0].Clone();
        h.mutable_data<int64_t>()[e[1].scalar<int64_t>() % 3] += 1;
        return Element{h, h};
      });
  Dataset ds =
      Dataset::Range(6).Scan(Element{Tensor::FromVector<int64_t>({0, 0, 0})}, hist);
  std::vector<Element> expected;
  std::vector<int64_t> h = {0, 0, 0};
  for (int i = 0; i < 6; ++i) {
    h[i % 3]++;
    expected.push_back(Element{Tensor::FromVector<int64_t>(h)});
  }
  CheckDataset(ds, expected);
}

TEST(ScanTest, RandomFunctionsReplay) {
  Function noisy = Function::Map(
      "noisy",
      [](Element e, FunctionContext& ctx) -> Result<Element> {
        int64_t s =
            e[0].scalar<int64_t>() + static_cast<int64_t>(ctx.rng().UniformInt(100));
        return Element{Tensor::Scalar<int64_t>(s), Tensor::Scalar<int64_t>(s)};
      },
      {.is_random = true});
  Dataset ds = Dataset::Range(20).Scan(Element{Tensor::Scalar<int64_t>(0)}, noisy);
  auto a = testing::CollectOrDie(ds);
  CheckDataset(ds, a);
}

TEST(ScanTest, StateMismatchNamesTheComponent) {
  Function wrong_dtype =
      Function::Map("wrong_dtype", [](Element e, FunctionContext&) -> Result<Element> {
        return Element{Tensor::Scalar<int32_t>(1), e[1]};
      });
  auto it = Dataset::Range(3)
                .Scan(Element{Tensor::Scalar<int64_t>(0)}, wrong_dtype)
                .MakeIterator();
  ASSERT_TRUE(it.ok());
  auto e = (*it)->GetNext();
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("state component 0"), std::string::npos)
      << e.status();
  EXPECT_NE(e.status().message().find("Scan"), std::string::npos) << e.status();
  EXPECT_NE(e.status().message().find("int32"), std::string::npos) << e.status();

  Function wrong_shape =
      Function::Map("wrong_shape", [](Element e, FunctionContext&) -> Result<Element> {
        return Element{e[0], Tensor::FromVector<int64_t>({1, 2}), e[2]};
      });
  auto r = Dataset::Range(3)
               .Scan(Element{Tensor::Scalar<int64_t>(0),
                             Tensor::FromVector<int64_t>({1, 2, 3})},
                     wrong_shape)
               .Collect();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("state component 1"), std::string::npos)
      << r.status();

  Function too_few = Function::Map(
      "too_few",
      [](Element e, FunctionContext&) -> Result<Element> { return Element{e[0]}; });
  auto f =
      Dataset::Range(3)
          .Scan(Element{Tensor::Scalar<int64_t>(0), Tensor::Scalar<int64_t>(0)}, too_few)
          .Collect();
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("fewer"), std::string::npos) << f.status();
  // A declared spec that contradicts the state fails when the dataset is built.
  Function declared = Function::Map(
      "declared", [](Element e, FunctionContext&) -> Result<Element> { return e; }, {},
      [](const ElementSpec&) -> Result<ElementSpec> {
        return ElementSpec{
            {{DType::kFloat32, PartialShape{}}, {DType::kInt64, PartialShape{}}}};
      });
  Dataset bad = Dataset::Range(3).Scan(Element{Tensor::Scalar<int64_t>(0)}, declared);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("state component 0"), std::string::npos)
      << bad.status();
}

TEST(ScanTest, FunctionErrorLeavesStateAndMovesOn) {
  Function picky =
      Function::Map("picky", [](Element e, FunctionContext&) -> Result<Element> {
        if (e[1].scalar<int64_t>() == 2) return InvalidArgumentError("no twos");
        int64_t s = e[0].scalar<int64_t>() + e[1].scalar<int64_t>();
        return Element{Tensor::Scalar<int64_t>(s), Tensor::Scalar<int64_t>(s)};
      });
  auto it =
      Dataset::Range(5).Scan(Element{Tensor::Scalar<int64_t>(0)}, picky).MakeIterator();
  ASSERT_TRUE(it.ok());
  std::vector<int64_t> got;
  int errors = 0;
  for (int i = 0; i < 10; ++i) {
    auto e = (*it)->GetNext();
    if (!e.ok()) {
      ++errors;
      continue;
    }
    if (!*e) break;
    got.push_back(testing::IntOf(**e));
  }
  EXPECT_EQ(errors, 1);
  EXPECT_EQ(got, (std::vector<int64_t>{0, 1, 4, 8}));
}

}  // namespace
}  // namespace sluice
