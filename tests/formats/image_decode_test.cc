// Image decoding: formats/image_codec.h (DecodeJpeg, DecodeJpegWindow, DecodePng, ...)
// against PIL, partial JPEG decoding against whole decodes, the decode kernels
// (decode_jpeg, decode_png, decode_image, decode_and_random_crop), bad input, and
// conformance through Map.
//
// Tolerances:
//  * decode_jpeg / DecodeJpeg vs PIL (same libjpeg-turbo, ISLOW IDCT, fancy upsampling):
//    exact, gray output (libjpeg's Y channel) and CMYK conversion included.
//  * DecodePng vs PIL: exact (16-bit: the high byte).
//  * DecodeJpegWindow at scale n/8 vs the crop of the whole image decoded at n/8: exact;
//    at 1/2, 1/4, 1/8 the whole decode equals PIL's draft() decode exactly.
//  * decode_and_random_crop with dct_scaling=false vs decode_jpeg -> crop -> resize:
//    exact. With dct_scaling: exact vs "decode the whole image at the chosen scale ->
//    crop the documented region -> resize". Against the full-resolution path, on a smooth
//    500x375 image: a mean absolute difference under 1.5 levels per crop when the
//    reference crops the same region in full-size pixels (the IDCT's downscaling vs the
//    triangle filter), and under 4.5 levels on average over 8 crops against the
//    sampled window itself: the region's edges sit up to half a scaled pixel off the
//    sampled window (up to ~0.5 output pixel), which on this image's 56-pixel-period
//    waves dominates the difference.
#include <gtest/gtest.h>

#include <thread>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <sstream>

#include "formats/image_codec.h"
#include "ops/image/image_util.h"
#include "testing/conformance.h"
#include "testing/python_reference.h"

namespace sluice {
namespace {

using testing::MaxAbsDiff;
using testing::MeanAbsDiff;

struct Case {
  std::string name;
  std::string kind;  // "jpeg" or "png"
  std::string bytes;
};

// The reference images, made once per test binary by tests/reference/.
class Reference {
 public:
  static Reference& Get() {
    static Reference* ref = new Reference();
    return *ref;
  }
  bool ok() const { return ok_; }
  const std::vector<Case>& cases() const { return cases_; }
  const Case& Find(const std::string& name) const {
    for (const Case& c : cases_) {
      if (c.name == name) return c;
    }
    ADD_FAILURE() << "no reference case " << name;
    static const Case* none = new Case();
    return *none;
  }
  // NAME.SUFFIX.npy
  Tensor Npy(const std::string& name, const std::string& suffix) const {
    return testing::ReadNpy(dir_->File(name + "." + suffix + ".npy"));
  }
  bool Has(const std::string& name, const std::string& suffix) const {
    return std::ifstream(dir_->File(name + "." + suffix + ".npy")).good();
  }

 private:
  Reference() : dir_(std::make_unique<testing::TempDir>()) {
    ok_ = testing::RunReferenceScript("image_decode_reference.py", {dir_->path()});
    if (!ok_) return;
    std::istringstream list(testing::ReadFile(dir_->File("cases.txt")));
    std::string name, kind;
    while (list >> name >> kind) {
      cases_.push_back(
          {name, kind,
           testing::ReadFile(dir_->File(name + (kind == "jpeg" ? ".jpg" : ".png")))});
    }
  }
  std::unique_ptr<testing::TempDir> dir_;
  bool ok_ = false;
  std::vector<Case> cases_;
};

#define REQUIRE_REFERENCE()           \
  ASSERT_TRUE(Reference::Get().ok()); \
  ASSERT_GE(Reference::Get().cases().size(), 15u)

// A copy of rows [y, y+h) and columns [x, x+w) of an HWC uint8 image.
Tensor Crop(const Tensor& img, int64_t y, int64_t x, int64_t h, int64_t w) {
  const int64_t c = img.dim(2);
  Tensor out(DType::kUInt8, Shape{h, w, c});
  for (int64_t r = 0; r < h; ++r) {
    std::memcpy(out.mutable_data<uint8_t>() + r * w * c,
                img.data<uint8_t>() + ((y + r) * img.dim(1) + x) * c, w * c);
  }
  return out;
}

int64_t CeilScaled(int64_t v, int n) { return (v * n + 7) / 8; }

Tensor Resize(const Tensor& img, int64_t out_h, int64_t out_w, bool antialias = true) {
  const int64_t c = img.dim(2);
  Tensor out(DType::kUInt8, Shape{out_h, out_w, c});
  ResizeBilinearU8(img.data<uint8_t>(), img.dim(1) * c, c,
                   ImageWindow{0, 0, img.dim(0), img.dim(1)}, out.mutable_data<uint8_t>(),
                   out_h, out_w, antialias);
  return out;
}

Result<Tensor> ApplyKernel(const Function& fn, Tensor input, uint64_t seed = 0,
                           int64_t position = 0) {
  FunctionContext ctx(seed, position);
  SLUICE_ASSIGN_OR_RETURN(Element out, fn(Element{std::move(input)}, ctx));
  if (out.size() != 1) return InternalError("expected one component");
  return out[0];
}

Function Kernel(const std::string& name, AttrMap attrs = {}) {
  auto fn = Function::Kernel(name, std::move(attrs));
  EXPECT_TRUE(fn.ok()) << fn.status();
  return fn.ok() ? *fn : Function();
}

const JpegDecodeOptions kRgb{.channels = 3};
const JpegDecodeOptions kGray{.channels = 1};

// ---------------------------------------------------------------------------------------
// Headers and formats.

TEST(ImageDecodeTest, DetectsFormatsAndReadsHeaders) {
  REQUIRE_REFERENCE();
  const std::map<std::string, int> png_channels = {
      {"png_rgb", 3},        {"png_rgba", 4},    {"png_gray", 1},
      {"png_gray_alpha", 2}, {"png_palette", 3}, {"png_palette_trns", 4},
      {"png_1bit", 1},       {"png_gray16", 1},  {"png_rgb16", 3}};
  for (const Case& c : Reference::Get().cases()) {
    SCOPED_TRACE(c.name);
    Tensor ref = Reference::Get().Npy(c.name, "rgb");
    if (c.kind == "jpeg") {
      EXPECT_EQ(DetectImageFormat(c.bytes), ImageFormat::kJpeg);
      auto info = ReadJpegInfo(c.bytes);
      ASSERT_TRUE(info.ok()) << info.status();
      EXPECT_EQ(info->height, ref.dim(0));
      EXPECT_EQ(info->width, ref.dim(1));
      int expected = c.name.starts_with("gray") ? 1 : c.name.starts_with("cmyk") ? 4 : 3;
      EXPECT_EQ(info->channels, expected);
      EXPECT_FALSE(ReadPngInfo(c.bytes).ok());
    } else {
      EXPECT_EQ(DetectImageFormat(c.bytes), ImageFormat::kPng);
      auto info = ReadPngInfo(c.bytes);
      ASSERT_TRUE(info.ok()) << info.status();
      EXPECT_EQ(info->height, ref.dim(0));
      EXPECT_EQ(info->width, ref.dim(1));
      EXPECT_EQ(info->channels, png_channels.at(c.name));
      EXPECT_FALSE(ReadJpegInfo(c.bytes).ok());
    }
  }
  EXPECT_EQ(DetectImageFormat(""), ImageFormat::kUnknown);
  EXPECT_EQ(DetectImageFormat("\xFF\xD8"), ImageFormat::kUnknown);
  EXPECT_EQ(DetectImageFormat("GIF89a......"), ImageFormat::kUnknown);
}

// ---------------------------------------------------------------------------------------
// Whole-image decoding against PIL.

TEST(ImageDecodeTest, JpegMatchesPilExactly) {
  REQUIRE_REFERENCE();
  int checked = 0;
  for (const Case& c : Reference::Get().cases()) {
    if (c.kind != "jpeg") continue;
    SCOPED_TRACE(c.name);
    for (const auto& [opts, suffix] :
         {std::pair{kRgb, "rgb"}, std::pair{kGray, "gray"}}) {
      Tensor ref = Reference::Get().Npy(c.name, suffix);
      auto img = DecodeJpeg(c.bytes, opts);
      ASSERT_TRUE(img.ok()) << img.status();
      EXPECT_EQ(img->shape(), ref.shape());
      EXPECT_EQ(MaxAbsDiff(*img, ref), 0) << suffix;
      // The libjpeg path (a window covering the whole image) decodes the same pixels.
      auto whole =
          DecodeJpegWindow(c.bytes, ImageWindow{0, 0, ref.dim(0), ref.dim(1)}, 8, opts);
      ASSERT_TRUE(whole.ok()) << whole.status();
      EXPECT_TRUE(whole->ContentEquals(*img)) << suffix;
      ++checked;
    }
  }
  EXPECT_GE(checked, 18);
}

TEST(ImageDecodeTest, FastIdctAndPlainUpsamplingStayClose) {
  REQUIRE_REFERENCE();
  const Case& c = Reference::Get().Find("rgb_257x131_q75_420");
  auto accurate = DecodeJpeg(c.bytes);
  auto fast = DecodeJpeg(c.bytes, {.channels = 3, .fast_idct = true});
  auto plain = DecodeJpeg(c.bytes, {.channels = 3, .fancy_upsampling = false});
  ASSERT_TRUE(accurate.ok() && fast.ok() && plain.ok());
  // Different arithmetic, nearly the same picture.
  EXPECT_GT(MaxAbsDiff(*fast, *accurate), 0);
  EXPECT_LT(MeanAbsDiff(*fast, *accurate), 1.5);
  EXPECT_LE(MaxAbsDiff(*fast, *accurate), 16);
  EXPECT_GT(MaxAbsDiff(*plain, *accurate), 0);
  EXPECT_LT(MeanAbsDiff(*plain, *accurate), 3.0);
  // TurboJPEG's flags and the libjpeg path's settings agree.
  for (const JpegDecodeOptions& o :
       {JpegDecodeOptions{.channels = 3, .fast_idct = true},
        JpegDecodeOptions{.channels = 3, .fancy_upsampling = false},
        JpegDecodeOptions{.channels = 1, .fast_idct = true}}) {
    auto tj = DecodeJpeg(c.bytes, o);
    auto lj = DecodeJpegWindow(c.bytes, ImageWindow{0, 0, 131, 257}, 8, o);
    ASSERT_TRUE(tj.ok() && lj.ok());
    EXPECT_TRUE(tj->ContentEquals(*lj));
  }
}

TEST(ImageDecodeTest, PngMatchesPilExactly) {
  REQUIRE_REFERENCE();
  int checked = 0;
  for (const Case& c : Reference::Get().cases()) {
    if (c.kind != "png") continue;
    SCOPED_TRACE(c.name);
    for (const auto& [channels, suffix] : {std::pair{3, "rgb"}, std::pair{1, "gray"}}) {
      Tensor ref = Reference::Get().Npy(c.name, suffix);
      auto img = DecodePng(c.bytes, channels);
      ASSERT_TRUE(img.ok()) << img.status();
      EXPECT_EQ(img->shape(), ref.shape());
      EXPECT_EQ(MaxAbsDiff(*img, ref), 0) << suffix;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 18);
}

// ---------------------------------------------------------------------------------------
// Partial decoding.

std::vector<ImageWindow> Windows(int64_t h, int64_t w, uint64_t seed) {
  std::vector<ImageWindow> out = {
      {0, 0, h, w},  // everything
      {1, 3, std::min<int64_t>(5, h - 1), std::min<int64_t>(7, w - 3)},
      {h / 3 + 1, w / 3 + 1, h / 3, w / 3},  // odd offsets in the middle
      {h - std::min<int64_t>(h, 9), w - std::min<int64_t>(w, 13), std::min<int64_t>(h, 9),
       std::min<int64_t>(w, 13)},  // bottom-right corner
      {0, w - 1, h, 1},            // last column
      {h - 1, 0, 1, w},            // last row
      {h / 2, 0, (h + 1) / 2, w},  // bottom half, full width
  };
  Rng rng(seed);
  for (int i = 0; i < 12; ++i) {
    int64_t wh = 1 + rng.UniformInt(h), ww = 1 + rng.UniformInt(w);
    out.push_back({static_cast<int64_t>(rng.UniformInt(h - wh + 1)),
                   static_cast<int64_t>(rng.UniformInt(w - ww + 1)), wh, ww});
  }
  return out;
}

TEST(ImageDecodeTest, WindowAtFullScaleIsTheCropOfTheWholeDecode) {
  REQUIRE_REFERENCE();
  for (const Case& c : Reference::Get().cases()) {
    if (c.kind != "jpeg") continue;
    for (const JpegDecodeOptions& o :
         {kRgb, kGray, JpegDecodeOptions{.channels = 3, .fancy_upsampling = false},
          JpegDecodeOptions{.channels = 3, .fast_idct = true}}) {
      SCOPED_TRACE(c.name + " channels " + std::to_string(o.channels) +
                   (o.fancy_upsampling ? "" : " plain upsampling") +
                   (o.fast_idct ? " fast" : ""));
      auto full = DecodeJpeg(c.bytes, o);
      ASSERT_TRUE(full.ok()) << full.status();
      for (const ImageWindow& w : Windows(full->dim(0), full->dim(1), 11)) {
        auto win = DecodeJpegWindow(c.bytes, w, 8, o);
        ASSERT_TRUE(win.ok()) << win.status();
        ASSERT_EQ(win->shape(), (Shape{w.height, w.width, o.channels}));
        EXPECT_TRUE(win->ContentEquals(Crop(*full, w.y, w.x, w.height, w.width)))
            << "window y=" << w.y << " x=" << w.x << " h=" << w.height << " w=" << w.width
            << " max diff " << MaxAbsDiff(*win, Crop(*full, w.y, w.x, w.height, w.width));
      }
    }
  }
}

TEST(ImageDecodeTest, ScaledDecodeMatchesPilDraft) {
  REQUIRE_REFERENCE();
  int checked = 0;
  for (const Case& c : Reference::Get().cases()) {
    if (c.kind != "jpeg") continue;
    for (int k : {2, 4, 8}) {
      if (!Reference::Get().Has(c.name, "s" + std::to_string(k))) continue;
      SCOPED_TRACE(c.name + " 1/" + std::to_string(k));
      Tensor ref = Reference::Get().Npy(c.name, "s" + std::to_string(k));
      auto info = ReadJpegInfo(c.bytes);
      ASSERT_TRUE(info.ok());
      auto img =
          DecodeJpegWindow(c.bytes, ImageWindow{0, 0, info->height, info->width}, 8 / k);
      ASSERT_TRUE(img.ok()) << img.status();
      EXPECT_EQ(img->shape(), ref.shape());
      EXPECT_EQ(MaxAbsDiff(*img, ref), 0);
      ++checked;
    }
  }
  EXPECT_GE(checked, 12);
}

TEST(ImageDecodeTest, ScaledWindowIsTheCropOfTheScaledDecode) {
  REQUIRE_REFERENCE();
  for (const Case& c : Reference::Get().cases()) {
    if (c.kind != "jpeg") continue;
    auto info = ReadJpegInfo(c.bytes);
    ASSERT_TRUE(info.ok());
    for (int n = 1; n <= 8; ++n) {
      for (const JpegDecodeOptions& o : {kRgb, kGray}) {
        SCOPED_TRACE(c.name + " scale " + std::to_string(n) + "/8 channels " +
                     std::to_string(o.channels));
        auto whole =
            DecodeJpegWindow(c.bytes, ImageWindow{0, 0, info->height, info->width}, n, o);
        ASSERT_TRUE(whole.ok()) << whole.status();
        ASSERT_EQ(whole->shape(), (Shape{CeilScaled(info->height, n),
                                         CeilScaled(info->width, n), o.channels}));
        for (const ImageWindow& w : Windows(info->height, info->width, 100 + n)) {
          auto win = DecodeJpegWindow(c.bytes, w, n, o);
          ASSERT_TRUE(win.ok()) << win.status();
          const int64_t sh = CeilScaled(w.height, n), sw = CeilScaled(w.width, n);
          ASSERT_EQ(win->shape(), (Shape{sh, sw, o.channels}));
          Tensor expected = Crop(*whole, w.y * n / 8, w.x * n / 8, sh, sw);
          EXPECT_TRUE(win->ContentEquals(expected))
              << "window y=" << w.y << " x=" << w.x << " h=" << w.height
              << " w=" << w.width << " max diff " << MaxAbsDiff(*win, expected);
        }
      }
    }
  }
}

TEST(ImageDecodeTest, RegionHoldsTheWindowWithoutTheColumnCopy) {
  REQUIRE_REFERENCE();
  int wider = 0;
  for (const Case& c : Reference::Get().cases()) {
    if (c.kind != "jpeg") continue;
    auto info = ReadJpegInfo(c.bytes);
    ASSERT_TRUE(info.ok());
    for (int n : {2, 8}) {
      for (const ImageWindow& w : Windows(info->height, info->width, 300 + n)) {
        SCOPED_TRACE(c.name + " scale " + std::to_string(n) + "/8 window y=" +
                     std::to_string(w.y) + " x=" + std::to_string(w.x) + " h=" +
                     std::to_string(w.height) + " w=" + std::to_string(w.width));
        auto win = DecodeJpegWindow(c.bytes, w, n);
        auto region = DecodeJpegRegion(c.bytes, w, n);
        ASSERT_TRUE(win.ok() && region.ok());
        const ImageWindow& rw = region->window;
        ASSERT_EQ(rw.y, 0);
        ASSERT_EQ(rw.height, region->pixels.dim(0));
        ASSERT_EQ(rw.height, win->dim(0));
        ASSERT_EQ(rw.width, win->dim(1));
        ASSERT_LE(rw.x + rw.width, region->pixels.dim(1));
        wider += region->pixels.dim(1) > rw.width ? 1 : 0;
        EXPECT_TRUE(Crop(region->pixels, 0, rw.x, rw.height, rw.width).ContentEquals(*win));
      }
    }
  }
  EXPECT_GT(wider, 0);  // the region path is exercised, not only whole rows
}

TEST(ImageDecodeTest, WindowArgumentsAreChecked) {
  REQUIRE_REFERENCE();
  const Case& c = Reference::Get().Find("rgb_64x48_q75_420");  // 48 x 64
  constexpr int64_t kBig = std::numeric_limits<int64_t>::max();
  for (const ImageWindow& w :
       {ImageWindow{0, 0, 0, 10}, ImageWindow{0, 0, 10, 0}, ImageWindow{-1, 0, 10, 10},
        ImageWindow{0, -1, 10, 10}, ImageWindow{40, 0, 9, 10}, ImageWindow{0, 60, 10, 5},
        ImageWindow{0, 0, 49, 64}, ImageWindow{kBig, 0, 10, 10},
        ImageWindow{1, 0, kBig, 10}, ImageWindow{0, 1, 10, kBig}}) {
    auto r = DecodeJpegWindow(c.bytes, w, 8);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("jpeg: window"), std::string::npos) << r.status();
  }
  for (int n : {0, 9, -3}) {
    auto r = DecodeJpegWindow(c.bytes, ImageWindow{0, 0, 8, 8}, n);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("scale"), std::string::npos);
  }
  for (int ch : {0, 2, 4}) {
    EXPECT_EQ(DecodeJpeg(c.bytes, {.channels = ch}).status().code(),
              StatusCode::kInvalidArgument);
    EXPECT_EQ(DecodePng("\x89PNG\r\n\x1a\n", ch).status().code(),
              StatusCode::kInvalidArgument);
  }
}

// ---------------------------------------------------------------------------------------
// Kernels.

TEST(ImageDecodeTest, DecodeKernelsMatchTheCodec) {
  REQUIRE_REFERENCE();
  const Case& jpg = Reference::Get().Find("rgb_257x131_q95_444");
  const Case& png = Reference::Get().Find("png_palette");
  Function dj = Kernel("decode_jpeg");
  Function dj1 = Kernel("decode_jpeg", {{"channels", int64_t{1}}});
  Function djf = Kernel("decode_jpeg", {{"dct_method", std::string("INTEGER_FAST")}});
  Function dp = Kernel("decode_png");
  Function di = Kernel("decode_image", {{"channels", int64_t{1}}});
  EXPECT_FALSE(dj.is_random());
  EXPECT_TRUE(dj.serializable());

  auto a = ApplyKernel(dj, Tensor::Scalar(jpg.bytes));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(MaxAbsDiff(*a, Reference::Get().Npy(jpg.name, "rgb")), 0);
  auto b = ApplyKernel(dj1, Tensor::Scalar(jpg.bytes));
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(MaxAbsDiff(*b, Reference::Get().Npy(jpg.name, "gray")), 0);
  auto f = ApplyKernel(djf, Tensor::Scalar(jpg.bytes));
  ASSERT_TRUE(f.ok());
  EXPECT_TRUE(
      f->ContentEquals(*DecodeJpeg(jpg.bytes, {.channels = 3, .fast_idct = true})));
  auto p = ApplyKernel(dp, Tensor::Scalar(png.bytes));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(MaxAbsDiff(*p, Reference::Get().Npy(png.name, "rgb")), 0);
  auto i1 = ApplyKernel(di, Tensor::Scalar(jpg.bytes));
  auto i2 = ApplyKernel(di, Tensor::Scalar(png.bytes));
  ASSERT_TRUE(i1.ok() && i2.ok());
  EXPECT_EQ(MaxAbsDiff(*i1, Reference::Get().Npy(jpg.name, "gray")), 0);
  EXPECT_EQ(MaxAbsDiff(*i2, Reference::Get().Npy(png.name, "gray")), 0);
  // decode_jpeg does not take PNG, nor decode_png JPEG.
  EXPECT_FALSE(ApplyKernel(dj, Tensor::Scalar(png.bytes)).ok());
  EXPECT_FALSE(ApplyKernel(dp, Tensor::Scalar(jpg.bytes)).ok());

  // The component attribute and pass-through of the others; the static spec.
  Function dj_c1 = Kernel("decode_jpeg", {{"component", int64_t{1}}});
  FunctionContext ctx(0, 0);
  auto e = dj_c1(Element{Tensor::Scalar<int64_t>(7), Tensor::Scalar(jpg.bytes)}, ctx);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ((*e)[0].scalar<int64_t>(), 7);
  EXPECT_TRUE((*e)[1].ContentEquals(*a));
  ElementSpec in{{TensorSpec{DType::kInt64, {}}, TensorSpec{DType::kString, {}}}};
  auto spec = dj_c1.OutputSpec(in);
  ASSERT_TRUE(spec.has_value() && spec->ok());
  EXPECT_EQ((**spec)[1], (TensorSpec{DType::kUInt8, PartialShape{-1, -1, 3}}));
  EXPECT_EQ((**spec)[0], in[0]);
  auto bad_spec = dj.OutputSpec(in);  // component 0 is int64
  ASSERT_TRUE(bad_spec.has_value());
  EXPECT_FALSE(bad_spec->ok());
}

TEST(ImageDecodeTest, KernelAttributesAreChecked) {
  struct Bad {
    std::string kernel;
    AttrMap attrs;
    std::string needle;
  };
  const std::vector<Bad> bad = {
      {"decode_jpeg", {{"channels", int64_t{4}}}, "channels"},
      {"decode_jpeg", {{"channels", std::string("3")}}, "channels"},
      {"decode_jpeg", {{"dct_method", std::string("FLOAT")}}, "dct_method"},
      {"decode_png", {{"component", int64_t{-1}}}, "component"},
      {"decode_image", {{"channels", int64_t{2}}}, "channels"},
      {"decode_and_random_crop", {{"size", int64_t{0}}}, "size"},
      {"decode_and_random_crop", {{"size", std::vector<int64_t>{224}}}, "size"},
      {"decode_and_random_crop", {{"scale", std::vector<double>{0.5, 0.1}}}, "scale"},
      {"decode_and_random_crop", {{"scale", std::vector<double>{0.5, 1.5}}}, "scale"},
      {"decode_and_random_crop", {{"ratio", std::vector<double>{0.0, 1.0}}}, "ratio"},
      {"decode_and_random_crop", {{"antialias", int64_t{1}}}, "antialias"},
  };
  for (const Bad& b : bad) {
    auto fn = Function::Kernel(b.kernel, b.attrs);
    ASSERT_FALSE(fn.ok()) << b.kernel << " " << b.needle;
    EXPECT_EQ(fn.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(fn.status().message().find(b.kernel), std::string::npos) << fn.status();
    EXPECT_NE(fn.status().message().find(b.needle), std::string::npos) << fn.status();
  }
  EXPECT_TRUE(Function::Kernel("decode_and_random_crop", {{"size", int64_t{32}}}).ok());
  EXPECT_TRUE(
      Function::Kernel("decode_and_random_crop", {{"size", std::vector<int64_t>{32, 48}},
                                                  {"scale", std::vector<int64_t>{1, 1}}})
          .ok());
}

// decode_and_random_crop's documented choice: the smallest n in {1, 2, 4} whose rounded
// region (rows [round(y*n/8), round((y+h)*n/8)), columns alike) covers the output,
// else 8.
struct ScaledRegion {
  int n;
  int64_t y, x, height, width;  // in pixels of the image scaled by n/8
};
int64_t RoundScaled(int64_t v, int n) { return (v * n * 2 + 8) / 16; }
ScaledRegion ExpectedRegion(const ImageWindow& w, int64_t oh, int64_t ow) {
  for (int n = 1; n < 8; n *= 2) {
    ScaledRegion r{n, RoundScaled(w.y, n), RoundScaled(w.x, n), 0, 0};
    r.height = RoundScaled(w.y + w.height, n) - r.y;
    r.width = RoundScaled(w.x + w.width, n) - r.x;
    if (r.height >= oh && r.width >= ow) return r;
  }
  return {8, w.y, w.x, w.height, w.width};
}

TEST(ImageDecodeTest, RandomCropIsDeterministicPerPosition) {
  REQUIRE_REFERENCE();
  const Case& c = Reference::Get().Find("rgb_500x375_q90_420_smooth");
  Function fn =
      Kernel("decode_and_random_crop", {{"size", std::vector<int64_t>{64, 48}}});
  EXPECT_TRUE(fn.is_random());
  auto spec = fn.OutputSpec(ElementSpec{{TensorSpec{DType::kString, {}}}});
  ASSERT_TRUE(spec.has_value() && spec->ok());
  EXPECT_EQ((**spec)[0], (TensorSpec{DType::kUInt8, PartialShape{64, 48, 3}}));
  std::vector<Tensor> outs;
  for (int64_t pos = 0; pos < 6; ++pos) {
    auto a = ApplyKernel(fn, Tensor::Scalar(c.bytes), 42, pos);
    auto b = ApplyKernel(fn, Tensor::Scalar(c.bytes), 42, pos);
    ASSERT_TRUE(a.ok() && b.ok()) << a.status();
    EXPECT_EQ(a->shape(), (Shape{64, 48, 3}));
    EXPECT_TRUE(a->ContentEquals(*b));
    outs.push_back(*a);
  }
  int distinct = 0;
  for (size_t i = 1; i < outs.size(); ++i) distinct += !outs[i].ContentEquals(outs[0]);
  EXPECT_GE(distinct, 4);
  auto other_seed = ApplyKernel(fn, Tensor::Scalar(c.bytes), 43, 0);
  ASSERT_TRUE(other_seed.ok());
  EXPECT_FALSE(other_seed->ContentEquals(outs[0]));
}

TEST(ImageDecodeTest, RandomCropEqualsDecodeCropResize) {
  REQUIRE_REFERENCE();
  struct Config {
    std::string image;
    std::vector<int64_t> size;
    int channels;
    bool antialias;
  };
  int scaled = 0;
  for (const Config& cfg : {Config{"rgb_500x375_q90_420_smooth", {56, 64}, 3, true},
                            Config{"rgb_500x375_q90_420_smooth", {24, 24}, 3, true},
                            Config{"rgb_500x375_q90_420_smooth", {40, 30}, 1, false},
                            Config{"rgb_300x203_q85_420_progressive", {32, 32}, 3, true},
                            Config{"cmyk_65x33_q90", {16, 8}, 3, true},
                            Config{"rgb_17x9_q75_420", {32, 32}, 3, true}}) {
    const Case& c = Reference::Get().Find(cfg.image);
    const bool smooth = cfg.image == "rgb_500x375_q90_420_smooth";
    auto info = ReadJpegInfo(c.bytes);
    ASSERT_TRUE(info.ok());
    JpegDecodeOptions opts{.channels = cfg.channels};
    auto full = DecodeJpeg(c.bytes, opts);
    ASSERT_TRUE(full.ok());
    for (bool dct_scaling : {false, true}) {
      Function fn = Kernel("decode_and_random_crop", {{"size", cfg.size},
                                                      {"channels", int64_t{cfg.channels}},
                                                      {"antialias", cfg.antialias},
                                                      {"dct_scaling", dct_scaling}});
      double sum_mean = 0;
      for (int64_t pos = 0; pos < 8; ++pos) {
        SCOPED_TRACE(cfg.image + " position " + std::to_string(pos) +
                     (dct_scaling ? " dct_scaling" : ""));
        auto got = ApplyKernel(fn, Tensor::Scalar(c.bytes), 5, pos);
        ASSERT_TRUE(got.ok()) << got.status();
        ASSERT_EQ(got->shape(), (Shape{cfg.size[0], cfg.size[1], cfg.channels}));
        // The same window, drawn from the same generator.
        FunctionContext ctx(5, pos);
        ImageWindow w = SampleRandomResizedCrop(info->height, info->width, {0.08, 1.0},
                                                {0.75, 4.0 / 3.0}, ctx.rng());
        Tensor reference = Resize(Crop(*full, w.y, w.x, w.height, w.width), cfg.size[0],
                                  cfg.size[1], cfg.antialias);
        if (!dct_scaling) {
          EXPECT_TRUE(got->ContentEquals(reference)) << MaxAbsDiff(*got, reference);
          continue;
        }
        const ScaledRegion sr = ExpectedRegion(w, cfg.size[0], cfg.size[1]);
        const int n = sr.n;
        scaled += n < 8;
        auto whole = DecodeJpegWindow(
            c.bytes, ImageWindow{0, 0, info->height, info->width}, n, opts);
        ASSERT_TRUE(whole.ok());
        Tensor at_scale = Resize(Crop(*whole, sr.y, sr.x, sr.height, sr.width),
                                 cfg.size[0], cfg.size[1], cfg.antialias);
        EXPECT_TRUE(got->ContentEquals(at_scale)) << "scale " << n;
        sum_mean += MeanAbsDiff(*got, reference);
        // At these scales the full-size window the region stands for is whole pixels:
        // what is left is the IDCT's downscaling vs the triangle filter's.
        if (smooth) {
          const int64_t k = 8 / n;
          const int64_t y1 = std::min(info->height, (sr.y + sr.height) * k);
          const int64_t x1 = std::min(info->width, (sr.x + sr.width) * k);
          Tensor snapped =
              Resize(Crop(*full, sr.y * k, sr.x * k, y1 - sr.y * k, x1 - sr.x * k),
                     cfg.size[0], cfg.size[1], cfg.antialias);
          EXPECT_LT(MeanAbsDiff(*got, snapped), 1.5) << "scale " << n;
        }
      }
      if (dct_scaling && smooth) {
        EXPECT_LT(sum_mean / 8, 4.5) << cfg.size[0] << "x" << cfg.size[1];
      }
    }
  }
  EXPECT_GT(scaled, 8);  // the scaled path was exercised
}

TEST(ImageDecodeTest, RandomCropTakesPng) {
  REQUIRE_REFERENCE();
  const Case& c = Reference::Get().Find("png_rgb");
  Function fn = Kernel("decode_and_random_crop", {{"size", int64_t{16}}});
  auto got = ApplyKernel(fn, Tensor::Scalar(c.bytes), 1, 2);
  ASSERT_TRUE(got.ok()) << got.status();
  FunctionContext ctx(1, 2);
  ImageWindow w =
      SampleRandomResizedCrop(31, 57, {0.08, 1.0}, {0.75, 4.0 / 3.0}, ctx.rng());
  Tensor full = Reference::Get().Npy(c.name, "rgb");
  EXPECT_TRUE(
      got->ContentEquals(Resize(Crop(full, w.y, w.x, w.height, w.width), 16, 16)));
}

// ---------------------------------------------------------------------------------------
// Bad input: clear errors, never a crash.

// The first `n` bytes.
std::string Cut(const std::string& s, size_t n) { return s.substr(0, n); }

// Offset of the first byte of entropy-coded data (after the SOS segment).
size_t ScanStart(const std::string& jpg) {
  for (size_t i = 2; i + 3 < jpg.size(); ++i) {
    if (static_cast<uint8_t>(jpg[i]) == 0xFF &&
        static_cast<uint8_t>(jpg[i + 1]) == 0xDA) {
      size_t len =
          (static_cast<uint8_t>(jpg[i + 2]) << 8) | static_cast<uint8_t>(jpg[i + 3]);
      return i + 2 + len;
    }
  }
  ADD_FAILURE() << "no SOS marker";
  return jpg.size();
}

// Codec errors start with `prefix` ("jpeg: ..."); kernel errors contain it after the
// function context that Function adds ("in function 'decode_jpeg': decode_jpeg: ...").
void ExpectError(const Result<Tensor>& r, StatusCode code, const std::string& prefix,
                 const std::string& needle = "") {
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), code) << r.status();
  const Status status = r.status();
  const std::string& msg = status.message();
  const bool codec = prefix.starts_with("jpeg:") || prefix.starts_with("png:");
  if (codec) {
    EXPECT_TRUE(msg.starts_with(prefix)) << r.status();
  } else {
    EXPECT_NE(msg.find(prefix), std::string::npos) << r.status();
  }
  EXPECT_NE(msg.find(needle), std::string::npos) << r.status();
}

TEST(ImageDecodeTest, TruncatedJpegIsDataLoss) {
  REQUIRE_REFERENCE();
  Function dj = Kernel("decode_jpeg");
  Function crop =
      Kernel("decode_and_random_crop",
             {{"size", int64_t{8}}, {"scale", std::vector<double>{1.0, 1.0}}});
  for (const std::string name : {"rgb_257x131_q75_420", "rgb_300x203_q85_420_progressive",
                                 "gray_257x131_q90", "cmyk_65x33_q90"}) {
    const std::string& jpg = Reference::Get().Find(name).bytes;
    const size_t scan = ScanStart(jpg);
    for (size_t cut : {size_t{3}, size_t{20}, size_t{100}, scan - 1, scan, scan + 10,
                       (scan + jpg.size()) / 2, jpg.size() - 40}) {
      SCOPED_TRACE(name + " cut at " + std::to_string(cut) + " of " +
                   std::to_string(jpg.size()));
      const std::string data = Cut(jpg, cut);
      ExpectError(DecodeJpeg(data), StatusCode::kDataLoss, "jpeg: corrupt data: ");
      ExpectError(ApplyKernel(dj, Tensor::Scalar(data)), StatusCode::kDataLoss,
                  "decode_jpeg: component 0: jpeg: corrupt data: ");
      // A window does not read what lies below or right of it: the last cut may only
      // remove data that the (centered, full-height) window never needs.
      if (cut < jpg.size() - 40) {
        ExpectError(ApplyKernel(crop, Tensor::Scalar(data)), StatusCode::kDataLoss,
                    "decode_and_random_crop: component 0: jpeg: corrupt data: ");
      }
      auto info = ReadJpegInfo(jpg);
      ASSERT_TRUE(info.ok());
      ExpectError(DecodeJpegWindow(data, ImageWindow{0, 0, info->height, info->width}, 8),
                  StatusCode::kDataLoss, "jpeg: corrupt data: ");
    }
    // Cut inside the entropy-coded data: libjpeg's own words.
    ExpectError(DecodeJpeg(Cut(jpg, (scan + jpg.size()) / 2)), StatusCode::kDataLoss,
                "jpeg: corrupt data: ", "Premature end of JPEG file");
  }
  const std::string& jpg = Reference::Get().Find("rgb_64x48_q75_420").bytes;
  ExpectError(DecodeJpeg(Cut(jpg, 1)), StatusCode::kInvalidArgument,
              "jpeg: not a JPEG file");
  ExpectError(DecodeJpeg(Cut(jpg, jpg.size() - 2)), StatusCode::kDataLoss,
              "jpeg: corrupt data");
}

TEST(ImageDecodeTest, ExtraneousBytesBetweenSegmentsAreTolerated) {
  REQUIRE_REFERENCE();
  for (const std::string name : {"rgb_257x131_q75_420", "gray_257x131_q90", "cmyk_65x33_q90"}) {
    SCOPED_TRACE(name);
    const std::string& jpg = Reference::Get().Find(name).bytes;
    const size_t sos = jpg.find("\xFF\xDA");
    ASSERT_NE(sos, std::string::npos);
    // Junk before the SOS marker: libjpeg warns "3 extraneous bytes before marker 0xda"
    // and skips it; no pixel changes.
    const std::string junk = jpg.substr(0, sos) + std::string("\x12\x34\x56", 3) + jpg.substr(sos);
    auto clean = DecodeJpeg(jpg);
    auto dirty = DecodeJpeg(junk);
    ASSERT_TRUE(clean.ok()) << clean.status();
    ASSERT_TRUE(dirty.ok()) << dirty.status();
    EXPECT_TRUE(dirty->ContentEquals(*clean));
    auto info = ReadJpegInfo(jpg);
    ASSERT_TRUE(info.ok());
    auto window = DecodeJpegWindow(junk, ImageWindow{3, 5, info->height - 3, info->width - 5}, 8);
    ASSERT_TRUE(window.ok()) << window.status();
    // Corruption after the junk is still an error.
    ExpectError(DecodeJpeg(Cut(junk, (sos + junk.size()) / 2)), StatusCode::kDataLoss,
                "jpeg: corrupt data: ");
  }
}

TEST(ImageDecodeTest, CorruptJpegNeverCrashes) {
  REQUIRE_REFERENCE();
  const std::string& jpg = Reference::Get().Find("rgb_257x131_q75_420").bytes;
  const size_t scan = ScanStart(jpg);
  // A marker where entropy-coded data belongs.
  std::string marker = jpg;
  marker[scan + 50] = static_cast<char>(0xFF);
  marker[scan + 51] = static_cast<char>(0xC4);
  ExpectError(DecodeJpeg(marker), StatusCode::kDataLoss, "jpeg: corrupt data: ");
  ExpectError(DecodeJpegWindow(marker, ImageWindow{0, 0, 131, 257}, 4),
              StatusCode::kDataLoss, "jpeg: corrupt data: ");
  // Random bit flips anywhere: a clean error or an image of the right shape, both paths.
  Rng rng(99);
  int errors = 0;
  for (int i = 0; i < 300; ++i) {
    std::string data = jpg;
    for (int k = 0; k < 1 + i % 4; ++k) {
      data[rng.UniformInt(data.size())] ^= static_cast<char>(1 << rng.UniformInt(8));
    }
    auto a = DecodeJpeg(data);
    auto b = DecodeJpegWindow(data, ImageWindow{17, 33, 60, 101}, 1 + i % 8);
    for (const Status& s : {a.status(), b.status()}) {
      if (s.ok()) continue;
      ++errors;
      EXPECT_TRUE(s.code() == StatusCode::kDataLoss ||
                  s.code() == StatusCode::kInvalidArgument ||
                  s.code() == StatusCode::kResourceExhausted)
          << s;
      EXPECT_TRUE(s.message().starts_with("jpeg: ")) << s;
    }
    if (a.ok()) {
      EXPECT_EQ(a->dim(2), 3);
    }
  }
  EXPECT_GT(errors, 30);
}

TEST(ImageDecodeTest, UnsupportedJpegProcessIsInvalidArgument) {
  REQUIRE_REFERENCE();
  // Baseline SOF0 relabelled as lossless SOF3, which libjpeg-turbo 2.1 does not decode.
  std::string jpg = Reference::Get().Find("rgb_64x48_q75_420").bytes;
  const size_t sof = jpg.find("\xFF\xC0");
  ASSERT_NE(sof, std::string::npos);
  jpg[sof + 1] = static_cast<char>(0xC3);
  ExpectError(DecodeJpeg(jpg), StatusCode::kInvalidArgument,
              "jpeg: unsupported: ", "SOF type 0xc3");
  ExpectError(DecodeJpegWindow(jpg, ImageWindow{0, 0, 8, 8}, 8),
              StatusCode::kInvalidArgument, "jpeg: unsupported: ");
  EXPECT_EQ(ReadJpegInfo(jpg).status().code(), StatusCode::kInvalidArgument);
}

// A JPEG whose SOF says 65500 x 65500.
std::string HugeJpeg(std::string jpg) {
  for (size_t i = 2; i + 8 < jpg.size(); ++i) {
    const auto m = static_cast<uint8_t>(jpg[i + 1]);
    if (static_cast<uint8_t>(jpg[i]) == 0xFF && (m == 0xC0 || m == 0xC1 || m == 0xC2)) {
      jpg[i + 5] = jpg[i + 7] = static_cast<char>(0xFF);
      jpg[i + 6] = jpg[i + 8] = static_cast<char>(0xDC);
      return jpg;
    }
  }
  ADD_FAILURE() << "no SOF marker";
  return jpg;
}

uint32_t Crc32(const std::string& s) {
  uint32_t crc = 0xFFFFFFFF;
  for (char ch : s) {
    crc ^= static_cast<uint8_t>(ch);
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320 & (0 - (crc & 1)));
  }
  return ~crc;
}

// A PNG whose IHDR says 65500 x 65500 (with a valid CRC).
std::string HugePng(std::string png) {
  for (int i : {16, 20}) {
    png[i] = 0, png[i + 1] = 0, png[i + 2] = static_cast<char>(0xFF),
    png[i + 3] = static_cast<char>(0xDC);
  }
  uint32_t crc = Crc32(png.substr(12, 17));
  for (int k = 0; k < 4; ++k) png[29 + k] = static_cast<char>(crc >> (24 - 8 * k));
  return png;
}

TEST(ImageDecodeTest, HugeDimensionsAreRefusedBeforeAllocating) {
  REQUIRE_REFERENCE();
  for (const std::string name :
       {"rgb_64x48_q75_420", "rgb_300x203_q85_420_progressive"}) {
    const std::string huge = HugeJpeg(Reference::Get().Find(name).bytes);
    auto info = ReadJpegInfo(huge);
    ASSERT_TRUE(info.ok()) << info.status();
    EXPECT_EQ(info->height, 65500);
    EXPECT_EQ(info->width, 65500);
    ExpectError(DecodeJpeg(huge), StatusCode::kResourceExhausted,
                "jpeg: image of 65500x65500");
    ExpectError(DecodeJpegWindow(huge, ImageWindow{0, 0, 10, 10}, 1),
                StatusCode::kResourceExhausted, "jpeg: image of 65500x65500");
    auto k = ApplyKernel(Kernel("decode_and_random_crop"), Tensor::Scalar(huge));
    ExpectError(k, StatusCode::kResourceExhausted,
                "decode_and_random_crop: component 0: jpeg:");
  }
  const std::string png = HugePng(Reference::Get().Find("png_rgb").bytes);
  auto info = ReadPngInfo(png);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->height, 65500);
  ExpectError(DecodePng(png), StatusCode::kResourceExhausted,
              "png: image of 65500x65500");
}

TEST(ImageDecodeTest, EmptyAndForeignInputs) {
  REQUIRE_REFERENCE();
  Function dj = Kernel("decode_jpeg");
  Function dp = Kernel("decode_png");
  Function di = Kernel("decode_image");
  Function crop = Kernel("decode_and_random_crop");
  ExpectError(ApplyKernel(dj, Tensor::Scalar("")), StatusCode::kInvalidArgument,
              "decode_jpeg: component 0: jpeg: empty input");
  ExpectError(ApplyKernel(dp, Tensor::Scalar("")), StatusCode::kInvalidArgument,
              "decode_png: component 0: png: empty input");
  ExpectError(ApplyKernel(di, Tensor::Scalar("")), StatusCode::kInvalidArgument,
              "decode_image: component 0: empty input");
  ExpectError(ApplyKernel(crop, Tensor::Scalar("")), StatusCode::kInvalidArgument,
              "decode_and_random_crop: component 0: jpeg: empty input");
  ExpectError(ApplyKernel(di, Tensor::Scalar("GIF89a\x01\x00\x01\x00")),
              StatusCode::kInvalidArgument,
              "decode_image: component 0: unknown image format");
  ExpectError(ApplyKernel(dj, Tensor::Scalar("hello")), StatusCode::kInvalidArgument,
              "decode_jpeg: component 0: jpeg: not a JPEG file");
  ExpectError(DecodePng("not a png at all"), StatusCode::kInvalidArgument,
              "png: not a PNG file");
  // PNG signature then garbage, a truncated PNG, a PNG with a broken IDAT.
  ExpectError(DecodePng(std::string("\x89PNG\r\n\x1a\n", 8) + "garbage garbage garbage"),
              StatusCode::kDataLoss, "png: corrupt data: ");
  const std::string& png = Reference::Get().Find("png_rgb").bytes;
  for (size_t cut :
       {size_t{8}, size_t{20}, size_t{40}, png.size() / 2, png.size() - 20}) {
    SCOPED_TRACE("png cut at " + std::to_string(cut));
    ExpectError(DecodePng(Cut(png, cut)), StatusCode::kDataLoss, "png: corrupt data: ");
    ExpectError(ApplyKernel(dp, Tensor::Scalar(Cut(png, cut))), StatusCode::kDataLoss,
                "decode_png: component 0: png: corrupt data: ");
  }
  std::string broken = png;
  for (size_t i = 60; i < 90 && i < broken.size(); ++i)
    broken[i] = static_cast<char>(0x5A);
  ExpectError(DecodePng(broken), StatusCode::kDataLoss, "png: corrupt data: ");
  Rng rng(3);
  for (int i = 0; i < 200; ++i) {
    std::string data = png;
    data[8 + rng.UniformInt(data.size() - 8)] ^=
        static_cast<char>(1 << rng.UniformInt(8));
    auto r = DecodePng(data);
    if (!r.ok()) {
      EXPECT_TRUE(r.status().message().starts_with("png: ")) << r.status();
    }
  }
}

TEST(ImageDecodeTest, WrongComponentTypeIsAClearError) {
  REQUIRE_REFERENCE();
  const std::string& jpg = Reference::Get().Find("rgb_64x48_q75_420").bytes;
  for (const std::string kernel :
       {"decode_jpeg", "decode_png", "decode_image", "decode_and_random_crop"}) {
    Function fn = Kernel(kernel);
    ExpectError(ApplyKernel(fn, Tensor::Scalar<int64_t>(3)), StatusCode::kInvalidArgument,
                kernel + ": component 0 must be a string scalar");
    ExpectError(ApplyKernel(fn, Tensor::FromStrings({jpg, jpg})),
                StatusCode::kInvalidArgument,
                kernel + ": component 0 must be a string scalar", "string[2]");
    Function c3 = Kernel(kernel, {{"component", int64_t{3}}});
    ExpectError(ApplyKernel(c3, Tensor::Scalar(jpg)), StatusCode::kInvalidArgument,
                kernel + ": component 3 does not exist");
  }
}

TEST(ImageDecodeTest, AFailedDecodeLeavesTheThreadsDecoderUsable) {
  // Each thread keeps one TurboJPEG handle. After an error TurboJPEG 2.1 could leave it in
  // a state where the next header read reported width 0, and the next decode overran its
  // buffer (ASan/valgrind see it; in a plain build it corrupted the heap later).
  REQUIRE_REFERENCE();
  const std::string& a = Reference::Get().Find("rgb_64x48_q75_420").bytes;
  const std::string& b = Reference::Get().Find("rgb_17x9_q75_420").bytes;
  Tensor want_a, want_b;
  std::thread([&] {  // a fresh thread: a fresh handle
    want_a = *DecodeJpeg(a);
    want_b = *DecodeJpeg(b);
  }).join();
  for (const std::string& bad : {Cut(a, a.size() / 2), Cut(a, 300), Cut(b, b.size() - 2),
                                 a.substr(0, 200) + std::string(400, '\xff')}) {
    std::thread([&] {
      EXPECT_FALSE(DecodeJpeg(bad).ok());
      auto got_b = DecodeJpeg(b);
      ASSERT_TRUE(got_b.ok()) << got_b.status();
      EXPECT_TRUE(got_b->ContentEquals(want_b));
      EXPECT_FALSE(DecodeJpeg(bad).ok());
      auto got_a = DecodeJpeg(a);
      ASSERT_TRUE(got_a.ok()) << got_a.status();
      EXPECT_TRUE(got_a->ContentEquals(want_a));
    }).join();
  }
}

TEST(ImageDecodeTest, IgnoreErrorsSkipsOnlyTheCorruptElement) {
  REQUIRE_REFERENCE();
  const std::string& a = Reference::Get().Find("rgb_64x48_q75_420").bytes;
  const std::string& b = Reference::Get().Find("rgb_17x9_q75_420").bytes;
  Dataset ds = Dataset::FromTensorSlices(
                   Element{Tensor::FromStrings({a, Cut(a, a.size() / 2), b, "", a})})
                   .Map(Kernel("decode_jpeg"))
                   .IgnoreErrors();
  auto got = ds.Collect();
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 3u);
  EXPECT_TRUE((*got)[0][0].ContentEquals(*DecodeJpeg(a)));
  EXPECT_TRUE((*got)[1][0].ContentEquals(*DecodeJpeg(b)));
  EXPECT_TRUE((*got)[2][0].ContentEquals(*DecodeJpeg(a)));
  // Without ignore_errors the pipeline reports the element's error and goes on.
  Dataset strict =
      Dataset::FromTensorSlices(Element{Tensor::FromStrings({Cut(a, 300), b})})
          .Map(Kernel("decode_jpeg"));
  auto it = strict.MakeIterator();
  ASSERT_TRUE(it.ok());
  auto first = (*it)->GetNext();
  ASSERT_FALSE(first.ok());
  EXPECT_EQ(first.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(first.status().message().find("decode_jpeg: component 0: jpeg: corrupt data"),
            std::string::npos)
      << first.status();
}

// ---------------------------------------------------------------------------------------
// Conformance.

TEST(ImageDecodeTest, MapDecodeJpegConforms) {
  REQUIRE_REFERENCE();
  std::vector<std::string> files;
  std::vector<Element> expected;
  for (const Case& c : Reference::Get().cases()) {
    if (c.kind != "jpeg") continue;
    files.push_back(c.bytes);
    expected.push_back(Element{Reference::Get().Npy(c.name, "rgb")});
  }
  Dataset ds = Dataset::FromTensorSlices(Element{Tensor::FromStrings(files)})
                   .Map(Kernel("decode_jpeg"));
  EXPECT_EQ(ds.element_spec()[0], (TensorSpec{DType::kUInt8, PartialShape{-1, -1, 3}}));
  testing::CheckDataset(ds, expected);
  testing::CheckDataset(Dataset::FromTensorSlices(Element{Tensor::FromStrings(files)})
                            .Map(Kernel("decode_jpeg"), 3),
                        expected);
}

TEST(ImageDecodeTest, MapRandomCropConforms) {
  REQUIRE_REFERENCE();
  const std::string& jpg = Reference::Get().Find("rgb_300x203_q85_420_progressive").bytes;
  Function fn =
      Kernel("decode_and_random_crop", {{"size", std::vector<int64_t>{20, 30}}});
  constexpr int64_t kSeed = 77;
  std::vector<Element> expected;
  for (int64_t pos = 0; pos < 5; ++pos) {
    auto e = ApplyKernel(fn, Tensor::Scalar(jpg), kSeed, pos);
    ASSERT_TRUE(e.ok());
    expected.push_back(Element{*e});
  }
  Dataset input = Dataset::FromTensorSlices(
      Element{Tensor::FromStrings(std::vector<std::string>(5, jpg))});
  // Map and the parallel Map with an explicit op seed (Dataset::Map resolves seeds
  // itself).
  Dataset ds = Dataset::FromOp("Map", {{"seed", kSeed}}, {input}, {fn});
  ASSERT_TRUE(ds.ok()) << ds.status();
  testing::CheckDataset(ds, expected);
  Dataset parallel = Dataset::FromOp("ParallelMap",
                                     {{"seed", kSeed},
                                      {"num_parallel_calls", int64_t{2}},
                                      {"deterministic", int64_t{1}}},
                                     {input}, {fn});
  ASSERT_TRUE(parallel.ok()) << parallel.status();
  testing::CheckDataset(parallel, expected);
}

}  // namespace
}  // namespace sluice
