// Image transformation kernels (ops/image/image_kernels.cc, image_util.h) against PIL and
// torchvision on the same inputs (tests/reference/image_transforms.py), the random crop's
// distribution against torchvision's get_params, determinism of the random kernels,
// conformance through Map, specs and bad-input errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "ops/image/image_util.h"
#include "sluice/dataset.h"
#include "testing/conformance.h"
#include "testing/python_reference.h"

namespace sluice {
namespace {

using testing::CheckDataset;
using testing::MaxAbsDiff;
using testing::ReadNpy;
using testing::TempDir;
using testing::WriteNpy;

// Smooth gradients, noise and saturated blocks (0 and 255), so rounding and clipping both
// matter.
Tensor MakeImage(int64_t h, int64_t w, int64_t c, uint64_t seed) {
  Rng rng(seed);
  Tensor t(DType::kUInt8, Shape{h, w, c});
  uint8_t* p = t.mutable_data<uint8_t>();
  for (int64_t y = 0; y < h; ++y) {
    for (int64_t x = 0; x < w; ++x) {
      for (int64_t ch = 0; ch < c; ++ch) {
        double v = 128 + 110 * std::sin(0.11 * x + 0.07 * y + ch) + (rng.Uniform() - 0.5) * 90;
        if ((x / 7 + y / 5) % 11 == 0) v = ch % 2 ? 255 : 0;
        p[(y * w + x) * c + ch] = static_cast<uint8_t>(std::clamp(std::round(v), 0.0, 255.0));
      }
    }
  }
  return t;
}

Tensor MakeFloatImage(int64_t h, int64_t w, int64_t c, uint64_t seed) {
  Rng rng(seed);
  Tensor t(DType::kFloat32, Shape{h, w, c});
  for (int64_t i = 0; i < t.num_elements(); ++i) t.mutable_data<float>()[i] = rng.UniformFloat();
  return t;
}

Tensor ToFloat32(const Tensor& u8) {
  Tensor t(DType::kFloat32, u8.shape());
  for (int64_t i = 0; i < u8.num_elements(); ++i) {
    t.mutable_data<float>()[i] = u8.data<uint8_t>()[i];
  }
  return t;
}

Tensor ResizeU8(const Tensor& img, ImageWindow w, int64_t oh, int64_t ow, bool antialias,
                bool flip = false) {
  const int64_t c = img.dim(2);
  Tensor out(DType::kUInt8, Shape{oh, ow, c});
  ResizeBilinearU8(img.data<uint8_t>(), img.dim(1) * c, c, w, out.mutable_data<uint8_t>(), oh,
                   ow, antialias, flip);
  return out;
}

Tensor ResizeF32(const Tensor& img, ImageWindow w, int64_t oh, int64_t ow, bool antialias) {
  const int64_t c = img.dim(2);
  Tensor out(DType::kFloat32, Shape{oh, ow, c});
  ResizeBilinearF32(img.data<float>(), img.dim(1) * c, c, w, out.mutable_data<float>(), oh, ow,
                    antialias);
  return out;
}

Tensor Flipped(const Tensor& img) {
  Tensor out(img.dtype(), img.shape());
  FlipLeftRight(img.data<uint8_t>(), out.mutable_data<uint8_t>(), img.dim(0), img.dim(1),
                img.dim(2) * static_cast<int64_t>(DTypeSize(img.dtype())));
  return out;
}

// max |a - b| / max(1, |b|).
double MaxScaledDiff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  EXPECT_EQ(a.dtype(), DType::kFloat32);
  EXPECT_EQ(b.dtype(), DType::kFloat32);
  if (a.shape() != b.shape()) return INFINITY;
  double m = 0;
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    const double x = a.data<float>()[i], y = b.data<float>()[i];
    m = std::max(m, std::fabs(x - y) / std::max(1.0, std::fabs(y)));
  }
  return m;
}

// Restores the SIMD paths at scope exit.
class SimdSetting {
 public:
  explicit SimdSetting(bool on) { SetImageSimdEnabledForTesting(on); }
  ~SimdSetting() { SetImageSimdEnabledForTesting(true); }
};

// One run of the reference script over many operations.
class Reference {
 public:
  std::string Input(const Tensor& t) {
    const std::string path = dir_.File("in" + std::to_string(n_++) + ".npy");
    WriteNpy(path, t);
    return path;
  }
  // Adds "op args... OUT"; returns OUT.
  std::string Op(const std::string& op_and_args) {
    const std::string out = dir_.File("out" + std::to_string(n_++) + ".npy");
    manifest_ += op_and_args + " " + out + "\n";
    return out;
  }
  bool Run() {
    const std::string path = dir_.File("manifest.txt");
    testing::WriteFile(path, manifest_);
    return testing::RunReferenceScript("image_transforms.py", {path});
  }

 private:
  TempDir dir_;
  std::string manifest_;
  int n_ = 0;
};

std::string Str(int64_t v) { return std::to_string(v); }
std::string WindowArgs(const ImageWindow& w) {
  return Str(w.y) + " " + Str(w.x) + " " + Str(w.height) + " " + Str(w.width);
}

Function Kernel(std::string_view name, AttrMap attrs = {}) {
  auto f = Function::Kernel(name, std::move(attrs));
  EXPECT_TRUE(f.ok()) << f.status();
  return f.ok() ? *f : Function();
}

Result<Element> Call(const Function& f, Element e, uint64_t seed = 0, int64_t position = 0) {
  FunctionContext ctx(seed, position);
  return f(std::move(e), ctx);
}

Tensor CallOne(const Function& f, const Tensor& t, uint64_t seed = 0, int64_t position = 0) {
  auto r = Call(f, Element{t}, seed, position);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? (*r)[0] : Tensor();
}

// ---- ResizeBilinearU8 vs PIL ----

struct ResizeCase {
  int64_t h, w, c;
  ImageWindow window;
  int64_t oh, ow;
};

std::string Describe(const ResizeCase& k) {
  return Str(k.h) + "x" + Str(k.w) + "x" + Str(k.c) + " window {" + WindowArgs(k.window) +
         "} -> " + Str(k.oh) + "x" + Str(k.ow);
}

TEST(ImageResizeTest, U8MatchesPilCropResizeExactly) {
  const std::vector<ResizeCase> cases = {
      {375, 500, 3, {0, 0, 375, 500}, 224, 224},     // the ImageNet case, downscale
      {375, 500, 3, {40, 87, 301, 263}, 224, 224},   // window at an offset
      {64, 48, 3, {0, 0, 64, 48}, 150, 97},          // upscale
      {90, 120, 3, {5, 11, 71, 93}, 224, 224},       // upscale of a window
      {300, 200, 3, {100, 20, 151, 179}, 37, 301},   // down vertically, up horizontally
      {101, 77, 1, {13, 7, 50, 61}, 33, 29},         // gray
      {57, 43, 4, {3, 2, 50, 39}, 20, 61},           // 4 channels
      {31, 29, 2, {0, 0, 31, 29}, 12, 40},           // 2 channels
      {50, 50, 3, {0, 0, 50, 50}, 50, 21},           // horizontal pass only
      {50, 50, 3, {0, 0, 50, 50}, 19, 50},           // vertical pass only
      {1, 300, 3, {0, 0, 1, 300}, 1, 7},             // one row
      {20, 1000, 3, {0, 0, 20, 1000}, 3, 5},         // factor 200: many taps
      {33, 35, 3, {0, 0, 33, 35}, 33, 35},           // same size (a copy)
      {7, 9, 3, {1, 1, 5, 6}, 1, 1},                 // to a single pixel
      {60, 350, 3, {0, 0, 60, 350}, 17, 100},        // 4 tap pairs horizontally
      {40, 300, 4, {1, 5, 38, 290}, 40, 60},         // 4 channels, many taps
  };
  Reference ref;
  std::vector<Tensor> images;
  std::vector<std::string> outs;
  for (const ResizeCase& k : cases) {
    images.push_back(MakeImage(k.h, k.w, k.c, k.h * 1000 + k.w));
    const std::string in = ref.Input(images.back());
    outs.push_back(ref.Op("pil_crop_resize " + in + " " + WindowArgs(k.window) + " " +
                          Str(k.oh) + " " + Str(k.ow)));
  }
  ASSERT_TRUE(ref.Run());
  for (bool simd : {true, false}) {
    SimdSetting setting(simd);
    for (size_t i = 0; i < cases.size(); ++i) {
      const ResizeCase& k = cases[i];
      SCOPED_TRACE(Describe(k) + (simd ? " simd" : " portable"));
      const Tensor want = ReadNpy(outs[i]);
      const Tensor got = ResizeU8(images[i], k.window, k.oh, k.ow, /*antialias=*/true);
      EXPECT_EQ(MaxAbsDiff(got, want), 0.0);
      // flip mirrors the same result.
      const Tensor flipped = ResizeU8(images[i], k.window, k.oh, k.ow, true, /*flip=*/true);
      EXPECT_EQ(MaxAbsDiff(flipped, Flipped(want)), 0.0);
    }
  }
}

// The vectorized passes against the portable ones on random shapes, windows, sizes and
// flips: identical bytes (rows resampled in pairs and alone, loads near a row's end,
// outputs past the last group of four, tap counts from 1 to hundreds).
TEST(ImageResizeTest, SimdMatchesPortableOnRandomCases) {
  if (!ImageSimdActive()) GTEST_SKIP() << "no AVX2 on this CPU";
  Rng rng(77);
  for (int i = 0; i < 300; ++i) {
    const int64_t c = 3 + static_cast<int64_t>(rng.UniformInt(2));
    const int64_t h = 1 + static_cast<int64_t>(rng.UniformInt(60));
    const int64_t w = 1 + static_cast<int64_t>(rng.UniformInt(400));
    const int64_t wh = 1 + static_cast<int64_t>(rng.UniformInt(h));
    const int64_t ww = 1 + static_cast<int64_t>(rng.UniformInt(w));
    const ImageWindow win{static_cast<int64_t>(rng.UniformInt(h - wh + 1)),
                          static_cast<int64_t>(rng.UniformInt(w - ww + 1)), wh, ww};
    // Every fifth case keeps the height (no vertical pass: rows go straight to the
    // output, two at a time, the last one alone when the count is odd).
    const int64_t oh = i % 5 == 0 ? wh : 1 + static_cast<int64_t>(rng.UniformInt(40));
    const int64_t ow = 1 + static_cast<int64_t>(rng.UniformInt(300));
    const bool aa = rng.UniformInt(4) != 0, flip = rng.UniformInt(2) != 0;
    const Tensor img = MakeImage(h, w, c, i);
    Tensor fast, slow;
    {
      SimdSetting on(true);
      fast = ResizeU8(img, win, oh, ow, aa, flip);
    }
    {
      SimdSetting off(false);
      slow = ResizeU8(img, win, oh, ow, aa, flip);
    }
    ASSERT_TRUE(fast.ContentEquals(slow))
        << h << "x" << w << "x" << c << " window {" << WindowArgs(win) << "} -> " << oh << "x"
        << ow << (aa ? " antialias" : "") << (flip ? " flip" : "") << " max diff "
        << MaxAbsDiff(fast, slow);
  }
}

// The resize kernel is the same resampler on the whole image (uint8), and a window of a
// bigger image gives the same pixels as that window cut out first.
TEST(ImageResizeTest, KernelAndWindowsAgreeWithTheResampler) {
  const Tensor img = MakeImage(80, 120, 3, 5);
  const Tensor got =
      CallOne(Kernel("resize", {{"size", std::vector<int64_t>{45, 37}}}), img);
  EXPECT_EQ(MaxAbsDiff(got, ResizeU8(img, {0, 0, 80, 120}, 45, 37, true)), 0.0);
  // Cut a window out by hand.
  const ImageWindow w{17, 29, 41, 66};
  Tensor cut(DType::kUInt8, Shape{w.height, w.width, 3});
  for (int64_t y = 0; y < w.height; ++y) {
    std::memcpy(cut.mutable_data<uint8_t>() + y * w.width * 3,
                img.data<uint8_t>() + ((w.y + y) * 120 + w.x) * 3, w.width * 3);
  }
  EXPECT_EQ(MaxAbsDiff(ResizeU8(img, w, 30, 50, true),
                       ResizeU8(cut, {0, 0, w.height, w.width}, 30, 50, true)),
            0.0);
}

// Float resize vs torch on values in [0, 1].
constexpr double kFloatTolerance = 1e-4;

// Without antialias: torch.nn.functional.interpolate(bilinear, align_corners=False).
TEST(ImageResizeTest, WithoutAntialiasMatchesTorchInterpolate) {
  const std::vector<ResizeCase> cases = {
      {375, 500, 3, {0, 0, 375, 500}, 224, 224},
      {64, 48, 3, {0, 0, 64, 48}, 150, 97},
      {90, 120, 1, {5, 11, 71, 93}, 31, 200},
      {41, 43, 3, {2, 3, 37, 39}, 37, 13},
  };
  Reference ref;
  std::vector<Tensor> u8, f32;
  std::vector<std::string> out_u8, out_f32;
  for (const ResizeCase& k : cases) {
    u8.push_back(MakeImage(k.h, k.w, k.c, k.w));
    f32.push_back(MakeFloatImage(k.h, k.w, k.c, k.h));
    const std::string args =
        " " + WindowArgs(k.window) + " " + Str(k.oh) + " " + Str(k.ow) + " 0";
    out_u8.push_back(ref.Op("torch_resize " + ref.Input(u8.back()) + args));
    out_f32.push_back(ref.Op("torch_resize " + ref.Input(f32.back()) + args));
  }
  ASSERT_TRUE(ref.Run());
  for (bool simd : {true, false}) {
    SimdSetting setting(simd);
    for (size_t i = 0; i < cases.size(); ++i) {
      const ResizeCase& k = cases[i];
      SCOPED_TRACE(Describe(k) + (simd ? " simd" : " portable"));
      // float: the same filter; values in [0, 1]. torch computes source coordinates in
      // float32 (an ulp at 375 is 3e-5), which bounds the agreement: 2e-5 observed.
      EXPECT_LE(MaxAbsDiff(ResizeF32(f32[i], k.window, k.oh, k.ow, false), ReadNpy(out_f32[i])),
                kFloatTolerance);
      // uint8: torch's float result vs ours rounded after each pass: within 1.
      const Tensor got = ToFloat32(ResizeU8(u8[i], k.window, k.oh, k.ow, false));
      EXPECT_LE(MaxAbsDiff(got, ReadNpy(out_u8[i])), 1.0);
    }
  }
}

// With antialias: interpolate(antialias=True) is PIL's algorithm in float.
TEST(ImageResizeTest, FloatAntialiasMatchesTorchInterpolate) {
  const std::vector<ResizeCase> cases = {
      {375, 500, 3, {0, 0, 375, 500}, 224, 224},
      {375, 500, 3, {40, 87, 301, 263}, 224, 224},
      {64, 48, 3, {0, 0, 64, 48}, 150, 97},
      {300, 200, 1, {100, 20, 151, 179}, 37, 301},
      {20, 1000, 3, {0, 0, 20, 1000}, 3, 5},
  };
  Reference ref;
  std::vector<Tensor> f32, u8;
  std::vector<std::string> out_f32, out_u8;
  for (const ResizeCase& k : cases) {
    f32.push_back(MakeFloatImage(k.h, k.w, k.c, k.w + 1));
    u8.push_back(MakeImage(k.h, k.w, k.c, k.h + 1));
    const std::string args =
        " " + WindowArgs(k.window) + " " + Str(k.oh) + " " + Str(k.ow) + " 1";
    out_f32.push_back(ref.Op("torch_resize " + ref.Input(f32.back()) + args));
    out_u8.push_back(ref.Op("torch_resize " + ref.Input(u8.back()) + args));
  }
  ASSERT_TRUE(ref.Run());
  for (size_t i = 0; i < cases.size(); ++i) {
    const ResizeCase& k = cases[i];
    SCOPED_TRACE(Describe(k));
    // As above, torch's float32 coordinates: 1.7e-5 observed.
    EXPECT_LE(MaxAbsDiff(ResizeF32(f32[i], k.window, k.oh, k.ow, true), ReadNpy(out_f32[i])),
              kFloatTolerance);
    // The fixed-point uint8 path stays within 1 of the exact float result.
    EXPECT_LE(MaxAbsDiff(ToFloat32(ResizeU8(u8[i], k.window, k.oh, k.ow, true)),
                         ReadNpy(out_u8[i])),
              1.0);
  }
  // The float kernel (random_resized_crop's float path uses the same function).
  const Tensor got =
      CallOne(Kernel("resize", {{"size", std::vector<int64_t>{224, 224}}}), f32[0]);
  EXPECT_LE(MaxAbsDiff(got, ReadNpy(out_f32[0])), kFloatTolerance);
}

// ---- center_crop, flips, normalize, to_float vs torchvision ----

TEST(ImageKernelsTest, CenterCropMatchesTorchvision) {
  const Tensor u8 = MakeImage(37, 41, 3, 1);
  const Tensor f32 = MakeFloatImage(37, 41, 1, 2);
  // Odd and even margins (round half to even), padding on one side or both, identity.
  const std::vector<std::pair<int64_t, int64_t>> sizes = {
      {20, 20}, {21, 30}, {36, 41}, {50, 20}, {37, 60}, {50, 60}, {37, 41}, {1, 1}, {34, 38}};
  Reference ref;
  const std::string in_u8 = ref.Input(u8), in_f32 = ref.Input(f32);
  std::vector<std::string> out_u8, out_f32;
  for (auto [h, w] : sizes) {
    out_u8.push_back(ref.Op("center_crop " + in_u8 + " " + Str(h) + " " + Str(w)));
    out_f32.push_back(ref.Op("center_crop " + in_f32 + " " + Str(h) + " " + Str(w)));
  }
  ASSERT_TRUE(ref.Run());
  for (size_t i = 0; i < sizes.size(); ++i) {
    auto [h, w] = sizes[i];
    SCOPED_TRACE("crop " + Str(h) + "x" + Str(w));
    Function crop = Kernel("center_crop", {{"size", std::vector<int64_t>{h, w}}});
    const Tensor got = CallOne(crop, u8);
    ASSERT_EQ(got.shape(), (Shape{h, w, 3}));
    EXPECT_EQ(MaxAbsDiff(got, ReadNpy(out_u8[i])), 0.0);
    EXPECT_EQ(MaxAbsDiff(CallOne(crop, f32), ReadNpy(out_f32[i])), 0.0);
  }
  // An int size is a square.
  EXPECT_EQ(CallOne(Kernel("center_crop", {{"size", int64_t{20}}}), u8).shape(),
            (Shape{20, 20, 3}));
}

TEST(ImageKernelsTest, FlipMatchesTorchvision) {
  std::vector<Tensor> images;
  for (int64_t w : {1, 2, 5, 6, 7, 11, 12, 13, 224}) images.push_back(MakeImage(3, w, 3, w));
  images.push_back(MakeImage(4, 9, 1, 3));
  images.push_back(MakeImage(4, 9, 4, 4));
  images.push_back(MakeFloatImage(5, 7, 3, 5));
  Reference ref;
  std::vector<std::string> outs;
  for (const Tensor& t : images) outs.push_back(ref.Op("hflip " + ref.Input(t)));
  ASSERT_TRUE(ref.Run());
  Function flip = Kernel("flip_left_right");
  Function always = Kernel("random_flip_left_right", {{"probability", 1.0}});
  for (bool simd : {true, false}) {
    SimdSetting setting(simd);
    for (size_t i = 0; i < images.size(); ++i) {
      SCOPED_TRACE(images[i].shape().ToString() + (simd ? " simd" : " portable"));
      const Tensor want = ReadNpy(outs[i]);
      EXPECT_EQ(MaxAbsDiff(CallOne(flip, images[i]), want), 0.0);
      EXPECT_EQ(MaxAbsDiff(CallOne(always, images[i], 1, static_cast<int64_t>(i)), want), 0.0);
    }
  }
}

TEST(ImageKernelsTest, NormalizeMatchesToTensorAndNormalize) {
  const std::vector<double> mean = {0.485, 0.456, 0.406}, stdv = {0.229, 0.224, 0.225};
  const Tensor rgb = MakeImage(224, 224, 3, 9);
  const Tensor odd = MakeImage(13, 7, 3, 10);  // 91 pixels: SIMD steps and a tail
  const Tensor gray = MakeImage(20, 30, 1, 11);
  const Tensor f32 = MakeFloatImage(21, 17, 3, 12);
  Reference ref;
  const std::string in_rgb = ref.Input(rgb), in_odd = ref.Input(odd), in_gray = ref.Input(gray),
                    in_f32 = ref.Input(f32);
  const std::string m3 = "0.485,0.456,0.406 0.229,0.224,0.225";
  const std::string rgb_chw = ref.Op("normalize " + in_rgb + " CHW " + m3);
  const std::string rgb_hwc = ref.Op("normalize " + in_rgb + " HWC " + m3);
  const std::string odd_chw = ref.Op("normalize " + in_odd + " CHW " + m3);
  const std::string gray_chw = ref.Op("normalize " + in_gray + " CHW 0.5 0.25");
  const std::string f32_hwc = ref.Op("normalize " + in_f32 + " HWC " + m3);
  const std::string f32_chw = ref.Op("normalize " + in_f32 + " CHW 0.5 0.2");
  const std::string to_tensor = ref.Op("to_tensor " + in_rgb);
  ASSERT_TRUE(ref.Run());

  auto normalize = [](std::vector<double> m, std::vector<double> s, std::string layout) {
    return Kernel("normalize", {{"mean", m}, {"std", s}, {"layout", layout}});
  };
  // Tolerance: 1e-6 relative (absolute below 1); both sides round in float32, torch
  // divides by 255 and by std where we multiply by reciprocals.
  constexpr double kTol = 1e-6;
  for (bool simd : {true, false}) {
    SimdSetting setting(simd);
    SCOPED_TRACE(simd ? "simd" : "portable");
    const Tensor chw = CallOne(normalize(mean, stdv, "CHW"), rgb);
    EXPECT_EQ(chw.shape(), (Shape{3, 224, 224}));
    EXPECT_LE(MaxScaledDiff(chw, ReadNpy(rgb_chw)), kTol);
    EXPECT_LE(MaxScaledDiff(CallOne(normalize(mean, stdv, "HWC"), rgb), ReadNpy(rgb_hwc)), kTol);
    EXPECT_LE(MaxScaledDiff(CallOne(normalize(mean, stdv, "CHW"), odd), ReadNpy(odd_chw)), kTol);
    EXPECT_LE(MaxScaledDiff(CallOne(normalize({0.5}, {0.25}, "CHW"), gray), ReadNpy(gray_chw)),
              kTol);
    EXPECT_LE(MaxScaledDiff(CallOne(normalize(mean, stdv, "HWC"), f32), ReadNpy(f32_hwc)), kTol);
    // One mean/std for all channels.
    EXPECT_LE(MaxScaledDiff(CallOne(normalize({0.5}, {0.2}, "CHW"), f32), ReadNpy(f32_chw)),
              kTol);
  }
  // The default layout is CHW; an explicit scale replaces 1/255.
  EXPECT_EQ(CallOne(Kernel("normalize", {{"mean", mean}, {"std", stdv}}), rgb).shape(),
            (Shape{3, 224, 224}));
  const Tensor scaled = CallOne(
      Kernel("normalize", {{"mean", std::vector<double>{1.0}}, {"std", std::vector<double>{2.0}},
                           {"scale", 0.5}, {"layout", std::string("HWC")}}),
      rgb);
  for (int i : {0, 1, 1000, 150527}) {
    EXPECT_FLOAT_EQ(scaled.data<float>()[i], (rgb.data<uint8_t>()[i] * 0.5f - 1.0f) / 2.0f);
  }
  // to_float: ToTensor's x / 255 exactly; floats pass through; an explicit scale.
  EXPECT_EQ(MaxAbsDiff(CallOne(Kernel("to_float"), rgb), ReadNpy(to_tensor)), 0.0);
  EXPECT_EQ(MaxAbsDiff(CallOne(Kernel("to_float"), f32), f32), 0.0);
  Tensor i16 = Tensor::FromVector<int16_t>({-300, 0, 7, 255, 30000});
  EXPECT_TRUE(CallOne(Kernel("to_float", {{"scale", 0.5}}), i16)
                  .ContentEquals(Tensor::FromVector<float>({-150, 0, 3.5, 127.5, 15000})));
}

// ---- the random crop's window ----

struct WindowStats {
  std::vector<double> area_fraction;
  double mean_area = 0, mean_log_aspect = 0, mean_center_y = 0, mean_center_x = 0;
  double whole_image = 0;
};

WindowStats Stats(const std::vector<ImageWindow>& ws, int64_t h, int64_t w) {
  WindowStats s;
  for (const ImageWindow& win : ws) {
    const double a = static_cast<double>(win.height * win.width) / static_cast<double>(h * w);
    s.area_fraction.push_back(a);
    s.mean_area += a;
    s.mean_log_aspect += std::log(static_cast<double>(win.width) / win.height);
    s.mean_center_y += (win.y + win.height / 2.0) / h;
    s.mean_center_x += (win.x + win.width / 2.0) / w;
    s.whole_image += win.height == h && win.width == w;
  }
  const double n = static_cast<double>(ws.size());
  s.mean_area /= n;
  s.mean_log_aspect /= n;
  s.mean_center_y /= n;
  s.mean_center_x /= n;
  s.whole_image /= n;
  std::sort(s.area_fraction.begin(), s.area_fraction.end());
  return s;
}

// Two-sample Kolmogorov-Smirnov distance of sorted samples.
double KsDistance(const std::vector<double>& a, const std::vector<double>& b) {
  size_t i = 0, j = 0;
  double d = 0;
  while (i < a.size() && j < b.size()) {
    const double x = std::min(a[i], b[j]);
    while (i < a.size() && a[i] <= x) ++i;
    while (j < b.size() && b[j] <= x) ++j;
    d = std::max(d, std::fabs(static_cast<double>(i) / a.size() - static_cast<double>(j) / b.size()));
  }
  return d;
}

TEST(RandomResizedCropTest, WindowsAreInsideAndRespectScaleAndRatio) {
  struct Case {
    int64_t h, w;
    std::array<double, 2> scale, ratio;
  };
  const std::vector<Case> cases = {
      {375, 500, {0.08, 1.0}, {3.0 / 4, 4.0 / 3}},
      {500, 375, {0.08, 1.0}, {3.0 / 4, 4.0 / 3}},
      {300, 300, {0.3, 0.5}, {2.0, 3.0}},  // wide windows only
      {300, 300, {0.1, 0.2}, {0.2, 0.4}},  // tall windows only
      {7, 5, {0.08, 1.0}, {3.0 / 4, 4.0 / 3}},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(Str(k.h) + "x" + Str(k.w));
    const double area = static_cast<double>(k.h * k.w);
    int fallbacks = 0;
    for (int i = 0; i < 3000; ++i) {
      Rng rng(77, i);
      const ImageWindow win = SampleRandomResizedCrop(k.h, k.w, k.scale, k.ratio, rng);
      ASSERT_GE(win.y, 0);
      ASSERT_GE(win.x, 0);
      ASSERT_GE(win.height, 1);
      ASSERT_GE(win.width, 1);
      ASSERT_LE(win.y + win.height, k.h);
      ASSERT_LE(win.x + win.width, k.w);
      // The centered fallback of these cases is the ratio-clamped image; count it apart.
      const bool centered = win.y == (k.h - win.height) / 2 && win.x == (k.w - win.width) / 2;
      const double hw = static_cast<double>(win.height), ww = static_cast<double>(win.width);
      const bool in_ratio = (ww + 0.5) / (hw - 0.5) >= k.ratio[0] &&
                            (ww - 0.5) / (hw + 0.5) <= k.ratio[1];
      const bool in_scale = (ww + 0.5) * (hw + 0.5) >= k.scale[0] * area &&
                            (ww - 0.5) * (hw - 0.5) <= k.scale[1] * area;
      if (!(in_ratio && in_scale)) {
        // Only a fallback may leave the ranges, and it is centered.
        EXPECT_TRUE(centered) << win.y << " " << win.x << " " << win.height << " " << win.width;
        ++fallbacks;
      }
    }
    // 10 attempts make fallbacks rare in these cases (the tiny image aside).
    if (k.h > 10) {
      EXPECT_LT(fallbacks, 30);
    }
  }
}

TEST(RandomResizedCropTest, ExtremeImagesTakeTheCenteredFallback) {
  for (int i = 0; i < 100; ++i) {
    Rng rng(3, i);
    // Too tall for any 3/4..4/3 window of >= 8% of the area: w = 10, h = round(10 / 0.75).
    const ImageWindow tall = SampleRandomResizedCrop(1000, 10, {0.08, 1.0}, {0.75, 4.0 / 3}, rng);
    EXPECT_EQ(tall.y, (1000 - 13) / 2);
    EXPECT_EQ(tall.x, 0);
    EXPECT_EQ(tall.height, 13);
    EXPECT_EQ(tall.width, 10);
    // Too wide: h = 10, w = round(10 * 4 / 3).
    const ImageWindow wide = SampleRandomResizedCrop(10, 1000, {0.08, 1.0}, {0.75, 4.0 / 3}, rng);
    EXPECT_EQ(wide.y, 0);
    EXPECT_EQ(wide.x, (1000 - 13) / 2);
    EXPECT_EQ(wide.height, 10);
    EXPECT_EQ(wide.width, 13);
  }
  // A scale range no window can reach: the whole image (its ratio is within range).
  Rng rng(1);
  const ImageWindow whole = SampleRandomResizedCrop(40, 50, {1.5, 2.0}, {0.75, 4.0 / 3}, rng);
  EXPECT_EQ(whole.y, 0);
  EXPECT_EQ(whole.x, 0);
  EXPECT_EQ(whole.height, 40);
  EXPECT_EQ(whole.width, 50);
  // A ratio far from the image's: clamped, and never empty.
  const ImageWindow thin = SampleRandomResizedCrop(3, 400, {1.5, 2.0}, {0.001, 0.002}, rng);
  EXPECT_EQ(thin.height, 3);
  EXPECT_EQ(thin.width, 1);
}

TEST(RandomResizedCropTest, DistributionMatchesTorchvisionGetParams) {
  constexpr int64_t kH = 375, kW = 500, kN = 20000;
  Reference ref;
  const std::string out = ref.Op("rrc_params " + Str(kH) + " " + Str(kW) +
                                 " 0.08 1.0 0.75 1.3333333333333333 " + Str(kN) + " 7");
  ASSERT_TRUE(ref.Run());
  const Tensor params = ReadNpy(out);
  ASSERT_EQ(params.shape(), (Shape{kN, 4}));
  std::vector<ImageWindow> theirs, ours;
  for (int64_t i = 0; i < kN; ++i) {
    const int64_t* p = params.data<int64_t>() + 4 * i;
    theirs.push_back({p[0], p[1], p[2], p[3]});
    Rng rng(12345, i);
    ours.push_back(SampleRandomResizedCrop(kH, kW, {0.08, 1.0}, {0.75, 4.0 / 3}, rng));
  }
  const WindowStats a = Stats(ours, kH, kW), b = Stats(theirs, kH, kW);
  // Standard errors of the differences: area 0.0027, log aspect 0.0017, centers 0.002.
  EXPECT_NEAR(a.mean_area, b.mean_area, 0.012);
  EXPECT_NEAR(a.mean_log_aspect, b.mean_log_aspect, 0.008);
  EXPECT_NEAR(a.mean_center_y, b.mean_center_y, 0.01);
  EXPECT_NEAR(a.mean_center_x, b.mean_center_x, 0.01);
  EXPECT_NEAR(a.whole_image, b.whole_image, 0.005);
  // KS critical distance at alpha = 0.001 for 20000 + 20000 samples: 0.0195.
  EXPECT_LT(KsDistance(a.area_fraction, b.area_fraction), 0.0195);
  // And the check has teeth: a narrower scale range is far away.
  std::vector<ImageWindow> narrow;
  for (int64_t i = 0; i < kN; ++i) {
    Rng rng(12345, i);
    narrow.push_back(SampleRandomResizedCrop(kH, kW, {0.2, 1.0}, {0.75, 4.0 / 3}, rng));
  }
  EXPECT_GT(KsDistance(Stats(narrow, kH, kW).area_fraction, b.area_fraction), 0.05);
}

// ---- random kernels ----

TEST(ImageKernelsTest, RandomResizedCropIsDeterministicPerSeedAndPosition) {
  const Tensor img = MakeImage(60, 80, 3, 21);
  Function rrc = Kernel("random_resized_crop", {{"size", int64_t{32}}});
  EXPECT_TRUE(rrc.is_random());
  const Tensor a = CallOne(rrc, img, 5, 3), b = CallOne(rrc, img, 5, 3);
  EXPECT_EQ(a.shape(), (Shape{32, 32, 3}));
  EXPECT_TRUE(a.ContentEquals(b));
  // Exactly the window drawn from Rng(seed, position), resampled.
  Rng rng(5, 3);
  const ImageWindow w = SampleRandomResizedCrop(60, 80, {0.08, 1.0}, {0.75, 4.0 / 3}, rng);
  EXPECT_TRUE(a.ContentEquals(ResizeU8(img, w, 32, 32, true)));
  // Different positions, different crops.
  std::set<std::string> distinct;
  for (int64_t pos = 0; pos < 20; ++pos) distinct.insert(CallOne(rrc, img, 5, pos).DebugString(40));
  EXPECT_GE(distinct.size(), 18u);
  EXPECT_FALSE(CallOne(rrc, img, 6, 3).ContentEquals(a));
  // The float path draws the same window.
  const Tensor f = CallOne(rrc, ToFloat32(img), 5, 3);
  EXPECT_EQ(f.dtype(), DType::kFloat32);
  EXPECT_LE(MaxAbsDiff(f, ResizeF32(ToFloat32(img), w, 32, 32, true)), 0.0);
  // Without antialias and with a [h, w] size.
  Function plain = Kernel("random_resized_crop", {{"size", std::vector<int64_t>{20, 30}},
                                                  {"antialias", false},
                                                  {"scale", std::vector<double>{0.5, 0.5}},
                                                  {"ratio", std::vector<double>{1.5, 1.5}}});
  Rng rng2(9, 4);
  const ImageWindow w2 = SampleRandomResizedCrop(60, 80, {0.5, 0.5}, {1.5, 1.5}, rng2);
  // Half of 60x80 at ratio 1.5: w = sqrt(2400 * 1.5) = 60, h = sqrt(2400 / 1.5) = 40.
  EXPECT_EQ(w2.height, 40);
  EXPECT_EQ(w2.width, 60);
  EXPECT_TRUE(CallOne(plain, img, 9, 4).ContentEquals(ResizeU8(img, w2, 20, 30, false)));
}

TEST(ImageKernelsTest, RandomFlipIsDeterministicPerSeedAndPosition) {
  const Tensor img = MakeImage(5, 9, 3, 22);
  const Tensor mirrored = Flipped(img);
  Function flip = Kernel("random_flip_left_right");
  EXPECT_TRUE(flip.is_random());
  EXPECT_FALSE(Kernel("flip_left_right").is_random());
  int flipped = 0;
  for (int64_t pos = 0; pos < 400; ++pos) {
    const Tensor a = CallOne(flip, img, 11, pos);
    EXPECT_TRUE(a.ContentEquals(CallOne(flip, img, 11, pos)));
    const bool f = a.ContentEquals(mirrored);
    EXPECT_TRUE(f || a.ContentEquals(img));
    // The decision is Rng(seed, position).Uniform() < 0.5.
    EXPECT_EQ(f, Rng(11, pos).Uniform() < 0.5);
    flipped += f;
  }
  EXPECT_GT(flipped, 150);
  EXPECT_LT(flipped, 250);
  Function never = Kernel("random_flip_left_right", {{"probability", 0.0}});
  for (int64_t pos = 0; pos < 50; ++pos) EXPECT_TRUE(CallOne(never, img, 1, pos).ContentEquals(img));
}

// ---- through the runtime ----

TEST(ImageKernelsTest, ConformanceThroughMap) {
  constexpr int64_t kN = 6;
  Tensor images(DType::kUInt8, Shape{kN, 40, 50, 3});
  for (int64_t i = 0; i < kN; ++i) {
    const Tensor one = MakeImage(40, 50, 3, 100 + i);
    std::memcpy(images.mutable_data<uint8_t>() + i * one.num_elements(), one.data<uint8_t>(),
                one.num_elements());
  }
  std::vector<int64_t> labels_v;
  for (int64_t i = 0; i < kN; ++i) labels_v.push_back(10 * i);
  const Tensor labels = Tensor::FromVector<int64_t>(labels_v);
  const Dataset src = Dataset::FromTensorSlices(Element{labels, images});

  // (label, image): the image is component 1; the label passes through.
  Function rrc = Kernel("random_resized_crop",
                        {{"size", std::vector<int64_t>{24, 32}}, {"component", int64_t{1}}});
  Function flip = Kernel("random_flip_left_right", {{"component", int64_t{1}}});
  Function crop = Kernel("center_crop", {{"size", int64_t{20}}, {"component", int64_t{1}}});
  Function norm = Kernel("normalize", {{"mean", std::vector<double>{0.5, 0.4, 0.3}},
                                       {"std", std::vector<double>{0.2, 0.25, 0.3}},
                                       {"component", int64_t{1}}});
  const Dataset ds = Dataset::FromOp("Map", {{"seed", int64_t{99}}}, {src}, {rrc});
  const Dataset flipped = Dataset::FromOp("Map", {{"seed", int64_t{7}}}, {ds}, {flip});
  const Dataset chain = flipped.Map(crop).Map(norm);
  ASSERT_TRUE(chain.ok()) << chain.status();
  EXPECT_EQ(chain.element_spec().ToString(), "(int64[], float32[3, 20, 20])");

  std::vector<Element> want_rrc, want_chain;
  for (int64_t k = 0; k < kN; ++k) {
    Element e{labels.SubTensor(k), images.SubTensor(k)};
    auto a = Call(rrc, e, 99, k);
    ASSERT_TRUE(a.ok()) << a.status();
    want_rrc.push_back(*a);
    auto b = Call(flip, *a, 7, k);
    ASSERT_TRUE(b.ok());
    auto c = Call(crop, *b);
    ASSERT_TRUE(c.ok());
    auto d = Call(norm, *c);
    ASSERT_TRUE(d.ok());
    EXPECT_EQ((*d)[0].scalar<int64_t>(), 10 * k);
    want_chain.push_back(*d);
  }
  CheckDataset(ds, want_rrc);
  CheckDataset(chain, want_chain);
  // Parallel map gives the same elements (randomness keyed by position).
  const Dataset parallel = Dataset::FromOp(
      "ParallelMap", {{"seed", int64_t{99}}, {"num_parallel_calls", int64_t{3}},
                      {"deterministic", int64_t{1}}},
      {src}, {rrc});
  ASSERT_TRUE(parallel.ok()) << parallel.status();
  CheckDataset(parallel, want_rrc);
}

TEST(ImageKernelsTest, SpecsFollowTheKernels) {
  const Tensor images = Tensor::Zeros(DType::kUInt8, Shape{2, 30, 40, 3});
  const Dataset src = Dataset::FromTensorSlices(Element{images});
  auto spec = [&](const char* name, AttrMap attrs) {
    Dataset ds = src.Map(Kernel(name, std::move(attrs)));
    EXPECT_TRUE(ds.ok()) << ds.status();
    return ds.ok() ? ds.element_spec().ToString() : std::string();
  };
  EXPECT_EQ(spec("resize", {{"size", std::vector<int64_t>{224, 200}}}), "(uint8[224, 200, 3])");
  EXPECT_EQ(spec("random_resized_crop", {{"size", int64_t{64}}}), "(uint8[64, 64, 3])");
  EXPECT_EQ(spec("center_crop", {{"size", std::vector<int64_t>{10, 50}}}), "(uint8[10, 50, 3])");
  EXPECT_EQ(spec("flip_left_right", {}), "(uint8[30, 40, 3])");
  EXPECT_EQ(spec("normalize", {{"mean", std::vector<double>{0.5}}, {"std", std::vector<double>{0.5}}}),
            "(float32[3, 30, 40])");
  EXPECT_EQ(spec("normalize", {{"mean", std::vector<double>{0.5}},
                               {"std", std::vector<double>{0.5}},
                               {"layout", std::string("HWC")}}),
            "(float32[30, 40, 3])");
  EXPECT_EQ(spec("to_float", {}), "(float32[30, 40, 3])");
  // Static errors surface when the pipeline is built.
  Dataset bad = Dataset::Range(3).Map(Kernel("resize", {{"size", int64_t{8}}}));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("resize: component 0: dtype must be uint8 or float32"),
            std::string::npos)
      << bad.status();
  Dataset mismatch = src.Map(Kernel("normalize", {{"mean", std::vector<double>{0.5, 0.5}},
                                                  {"std", std::vector<double>{0.5}}}));
  ASSERT_FALSE(mismatch.ok());
  EXPECT_NE(mismatch.status().message().find("'mean' has 2 values"), std::string::npos)
      << mismatch.status();
}

// ---- bad input ----

TEST(ImageKernelsTest, BadAttributesAreRejectedAtConstruction) {
  struct Bad {
    const char* kernel;
    AttrMap attrs;
    std::vector<std::string> words;
  };
  const std::vector<Bad> cases = {
      {"resize", {}, {"resize", "missing attribute 'size'"}},
      {"resize", {{"size", std::vector<int64_t>{0, 5}}}, {"resize", "'size'", "[1, 65536]"}},
      {"resize", {{"size", std::vector<int64_t>{70000, 5}}}, {"resize", "'size'"}},
      {"resize", {{"size", std::vector<int64_t>{5, 5, 5}}}, {"resize", "'size'"}},
      {"resize", {{"size", std::string("big")}}, {"resize", "'size'"}},
      {"resize", {{"size", int64_t{8}}, {"component", int64_t{-1}}}, {"resize", "'component'"}},
      {"random_resized_crop",
       {{"size", int64_t{8}}, {"scale", std::vector<double>{0.5, 0.1}}},
       {"random_resized_crop", "'scale'"}},
      {"random_resized_crop",
       {{"size", int64_t{8}}, {"ratio", std::vector<double>{0.0, 1.0}}},
       {"random_resized_crop", "'ratio'"}},
      {"random_resized_crop",
       {{"size", int64_t{8}}, {"ratio", std::vector<double>{1.0}}},
       {"random_resized_crop", "'ratio'"}},
      {"center_crop", {{"size", int64_t{-3}}}, {"center_crop", "'size'"}},
      {"random_flip_left_right", {{"probability", 1.5}}, {"random_flip_left_right", "'probability'"}},
      {"normalize", {{"std", std::vector<double>{1.0}}}, {"normalize", "missing attribute 'mean'"}},
      {"normalize",
       {{"mean", std::vector<double>{0.5}}, {"std", std::vector<double>{0.2, 0.0, 0.1}}},
       {"normalize", "'std'", "non-zero"}},
      {"normalize",
       {{"mean", std::vector<double>{0.5}}, {"std", std::vector<double>{1}}, {"layout", std::string("NCHW")}},
       {"normalize", "'layout'"}},
      {"normalize",
       {{"mean", std::vector<double>{0.5}}, {"std", std::string("x")}},
       {"normalize", "'std'"}},
      {"to_float", {{"scale", std::string("x")}}, {"to_float", "'scale'"}},
  };
  for (const Bad& b : cases) {
    auto f = Function::Kernel(b.kernel, b.attrs);
    ASSERT_FALSE(f.ok()) << b.kernel;
    EXPECT_EQ(f.status().code(), StatusCode::kInvalidArgument) << f.status();
    for (const std::string& w : b.words) {
      EXPECT_NE(f.status().message().find(w), std::string::npos) << f.status() << " / " << w;
    }
  }
}

TEST(ImageKernelsTest, BadImagesAreRejectedWithTheComponent) {
  const Tensor rgb = MakeImage(6, 5, 3, 1);
  struct Bad {
    const char* kernel;
    AttrMap attrs;
    Element input;
    std::vector<std::string> words;
  };
  const AttrMap size{{"size", int64_t{4}}};
  const AttrMap norm{{"mean", std::vector<double>{0.5, 0.5}},
                     {"std", std::vector<double>{0.5, 0.5}}};
  const std::vector<Bad> cases = {
      {"resize", size, Element{Tensor::Zeros(DType::kUInt8, Shape{6, 5})},
       {"resize: component 0", "HWC", "[6, 5]"}},
      {"resize", size, Element{Tensor::Zeros(DType::kInt32, Shape{6, 5, 3})},
       {"resize: component 0", "dtype", "int32"}},
      {"resize", size, Element{Tensor::Zeros(DType::kUInt8, Shape{6, 5, 5})},
       {"resize: component 0", "channels"}},
      {"resize", size, Element{Tensor::Zeros(DType::kUInt8, Shape{0, 5, 3})},
       {"resize: component 0", "empty"}},
      {"random_resized_crop", size, Element{Tensor::Zeros(DType::kFloat64, Shape{6, 5, 3})},
       {"random_resized_crop: component 0", "dtype"}},
      {"center_crop", {{"size", int64_t{4}}, {"component", int64_t{1}}},
       Element{rgb, Tensor::Scalar(std::string("x"))},
       {"center_crop: component 1", "dtype"}},
      {"flip_left_right", {{"component", int64_t{2}}}, Element{rgb},
       {"flip_left_right", "'component' is 2", "1 components"}},
      {"random_flip_left_right", {}, Element{Tensor::Zeros(DType::kUInt8, Shape{3, 4, 3, 1})},
       {"random_flip_left_right: component 0", "HWC"}},
      {"normalize", norm, Element{rgb}, {"normalize", "'mean' has 2 values", "3 channels"}},
      {"normalize", norm, Element{Tensor::Zeros(DType::kInt16, Shape{6, 5, 2})},
       {"normalize: component 0", "dtype"}},
      {"to_float", {}, Element{Tensor::Scalar(std::string("x"))}, {"to_float: component 0", "dtype"}},
  };
  for (const Bad& b : cases) {
    Function f = Kernel(b.kernel, b.attrs);
    auto r = Call(f, b.input);
    ASSERT_FALSE(r.ok()) << b.kernel;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status();
    for (const std::string& w : b.words) {
      EXPECT_NE(r.status().message().find(w), std::string::npos) << r.status() << " / " << w;
    }
  }
}

}  // namespace
}  // namespace sluice
