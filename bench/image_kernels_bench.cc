// Pixel kernels on the ImageNet hot path: bilinear resize of a crop to 224x224 RGB, flip,
// normalize to CHW float. Each benchmark runs with the AVX2 paths (simd:1) and the
// portable code (simd:0); time per call is the figure (one 224x224x3 output).
//
//   ./build/image_kernels_bench --benchmark_format=json
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>

#include "ops/image/image_util.h"
#include "sluice/dataset.h"

namespace sluice {
namespace {

Tensor Image(int64_t h, int64_t w, int64_t c) {
  Tensor t(DType::kUInt8, Shape{h, w, c});
  Rng rng(1);
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    t.mutable_data<uint8_t>()[i] = static_cast<uint8_t>(rng.Next32());
  }
  return t;
}

struct Simd {
  explicit Simd(const benchmark::State& s) { SetImageSimdEnabledForTesting(s.range(0) != 0); }
  ~Simd() { SetImageSimdEnabledForTesting(true); }
};

// A 375x500 window (a whole 500x375 ImageNet-sized image) or a 300x300 crop -> 224x224.
void BM_ResizeU8(benchmark::State& state) {
  Simd simd(state);
  const int64_t wh = state.range(1), ww = state.range(2);
  const Tensor img = Image(wh, ww, 3);
  Tensor out(DType::kUInt8, Shape{224, 224, 3});
  for (auto _ : state) {
    ResizeBilinearU8(img.data<uint8_t>(), ww * 3, 3, {0, 0, wh, ww},
                     out.mutable_data<uint8_t>(), 224, 224, /*antialias=*/true);
    benchmark::DoNotOptimize(out.mutable_data<uint8_t>());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ResizeU8)
    ->ArgNames({"simd", "h", "w"})
    ->Args({1, 375, 500})
    ->Args({0, 375, 500})
    ->Args({1, 300, 300})
    ->Args({0, 300, 300})
    ->Args({1, 112, 150})  // an upscale
    ->Unit(benchmark::kMicrosecond);

void BM_ResizeF32(benchmark::State& state) {
  Tensor img(DType::kFloat32, Shape{375, 500, 3});
  for (int64_t i = 0; i < img.num_elements(); ++i) img.mutable_data<float>()[i] = i % 255;
  Tensor out(DType::kFloat32, Shape{224, 224, 3});
  for (auto _ : state) {
    ResizeBilinearF32(img.data<float>(), 500 * 3, 3, {0, 0, 375, 500}, out.mutable_data<float>(),
                      224, 224, true);
    benchmark::DoNotOptimize(out.mutable_data<float>());
  }
}
BENCHMARK(BM_ResizeF32)->Unit(benchmark::kMicrosecond);

void BM_FlipU8(benchmark::State& state) {
  Simd simd(state);
  const Tensor img = Image(224, 224, 3);
  Tensor out(DType::kUInt8, Shape{224, 224, 3});
  for (auto _ : state) {
    FlipLeftRight(img.data<uint8_t>(), out.mutable_data<uint8_t>(), 224, 224, 3);
    benchmark::DoNotOptimize(out.mutable_data<uint8_t>());
  }
}
BENCHMARK(BM_FlipU8)->ArgNames({"simd"})->Arg(1)->Arg(0)->Unit(benchmark::kMicrosecond);

void BM_NormalizeU8Chw(benchmark::State& state) {
  Simd simd(state);
  const Tensor img = Image(224, 224, 3);
  Tensor out(DType::kFloat32, Shape{3, 224, 224});
  const float mean[3] = {0.485f, 0.456f, 0.406f};
  const float inv[3] = {1 / 0.229f, 1 / 0.224f, 1 / 0.225f};
  for (auto _ : state) {
    NormalizeU8(img.data<uint8_t>(), 224 * 224, 3, 1.0f / 255, mean, inv, /*chw=*/true,
                out.mutable_data<float>());
    benchmark::DoNotOptimize(out.mutable_data<float>());
  }
}
BENCHMARK(BM_NormalizeU8Chw)->ArgNames({"simd"})->Arg(1)->Arg(0)->Unit(benchmark::kMicrosecond);

// The same into the rows of a batch of 128 images (77 MB), one row after another, as
// MapAndBatch's output slots are written: the destination is never in cache.
void BM_NormalizeU8ChwIntoBatch(benchmark::State& state) {
  const Tensor img = Image(224, 224, 3);
  constexpr int64_t kRows = 128, kRow = 3 * 224 * 224;
  Tensor out(DType::kFloat32, Shape{kRows, 3, 224, 224});
  std::fill_n(out.mutable_data<float>(), kRows * kRow, 0.0f);  // fault every page in
  const float mean[3] = {0.485f, 0.456f, 0.406f};
  const float inv[3] = {1 / 0.229f, 1 / 0.224f, 1 / 0.225f};
  int64_t row = 0;
  for (auto _ : state) {
    NormalizeU8(img.data<uint8_t>(), 224 * 224, 3, 1.0f / 255, mean, inv, /*chw=*/true,
                out.mutable_data<float>() + row * kRow);
    row = (row + 1) % kRows;
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_NormalizeU8ChwIntoBatch)->Unit(benchmark::kMicrosecond);

// The kernels as a map function calls them (validation, output allocation included).
void BM_Kernel(benchmark::State& state, const char* name, AttrMap attrs, int64_t h, int64_t w) {
  auto f = Function::Kernel(name, std::move(attrs));
  if (!f.ok()) {
    state.SkipWithError(f.status().ToString().c_str());
    return;
  }
  const Tensor img = Image(h, w, 3);
  int64_t pos = 0;
  for (auto _ : state) {
    FunctionContext ctx(1, pos++);
    auto out = (*f)(Element{img}, ctx);
    benchmark::DoNotOptimize(out);
  }
}
BENCHMARK_CAPTURE(BM_Kernel, random_resized_crop, "random_resized_crop",
                  AttrMap{{"size", int64_t{224}}}, 375, 500)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Kernel, random_flip_left_right, "random_flip_left_right", AttrMap{}, 224,
                  224)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Kernel, normalize, "normalize",
                  AttrMap{{"mean", std::vector<double>{0.485, 0.456, 0.406}},
                          {"std", std::vector<double>{0.229, 0.224, 0.225}}},
                  224, 224)
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace sluice

BENCHMARK_MAIN();
