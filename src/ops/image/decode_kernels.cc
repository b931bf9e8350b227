// Image decoding kernels: decode_jpeg, decode_png, decode_image and the fused
// decode_and_random_crop (tf.image.decode_and_crop_jpeg + RandomResizedCrop, what
// tf.data and DALI run for ImageNet training).
//
// Each replaces the string scalar component `component` (the encoded bytes) with a uint8
// tensor [height, width, channels]; other components pass through.
//
//   decode_jpeg(channels=3, dct_method="INTEGER_ACCURATE"|"INTEGER_FAST", component=0)
//   decode_png(channels=3, component=0)
//   decode_image(channels=3, dct_method=..., component=0): JPEG or PNG, by magic bytes
//   decode_and_random_crop(size=[224, 224] (int or list of 2), scale=[0.08, 1.0],
//       ratio=[0.75, 1.3333333], channels=3, antialias=true, dct_method=...,
//       dct_scaling=true, component=0)  -- random
//
// decode_and_random_crop samples torchvision's RandomResizedCrop window from the header
// alone (SampleRandomResizedCrop, drawing from ctx.rng()), decodes only that window and
// resizes it to `size` with the (antialiased) triangle filter. With dct_scaling the
// window is decoded at the smallest DCT scale n/8, n in {1, 2, 4}, at which it still
// covers `size`: the decoded region is rows [round(y*n/8), round((y+h)*n/8)) and the same
// for columns (edges within half a scaled pixel of the sampled window); n = 8 when no
// such scale covers `size`. (Scales 3/8, 5/8, 6/8, 7/8 are left out: libjpeg-turbo
// decodes them slower than 8/8.) PNG input is decoded whole and cropped (no partial PNG
// decoding).
//
// Errors name the kernel and component, e.g.
//   "decode_jpeg: component 0: jpeg: corrupt data: Premature end of JPEG file".
#include <algorithm>
#include <array>
#include <utility>

#include "formats/image_codec.h"
#include "graph/attr.h"
#include "ops/image/image_util.h"
#include "ops/ops.h"

namespace sluice {
namespace {

enum class Codec { kJpeg, kPng, kAny };

struct DecodeConfig {
  std::string kernel;
  int64_t component = 0;
  int channels = 3;
  JpegDecodeOptions jpeg;
};

Result<DecodeConfig> ReadDecodeConfig(const AttrMap& attrs, const std::string& kernel,
                                      bool has_dct) {
  DecodeConfig c;
  c.kernel = kernel;
  SLUICE_ASSIGN_OR_RETURN(c.component, GetAttrOr<int64_t>(attrs, kernel, "component", 0));
  if (c.component < 0) {
    return InvalidArgumentError(kernel + ": attribute 'component' must be >= 0, got " +
                                std::to_string(c.component));
  }
  SLUICE_ASSIGN_OR_RETURN(int64_t channels,
                          GetAttrOr<int64_t>(attrs, kernel, "channels", 3));
  if (channels != 1 && channels != 3) {
    return InvalidArgumentError(kernel + ": attribute 'channels' must be 1 or 3, got " +
                                std::to_string(channels));
  }
  c.channels = static_cast<int>(channels);
  c.jpeg.channels = c.channels;
  if (has_dct) {
    SLUICE_ASSIGN_OR_RETURN(
        std::string dct,
        GetAttrOr<std::string>(attrs, kernel, "dct_method", "INTEGER_ACCURATE"));
    if (dct == "INTEGER_FAST") {
      c.jpeg.fast_idct = true;
    } else if (dct != "INTEGER_ACCURATE" && !dct.empty()) {
      return InvalidArgumentError(
          kernel +
          ": attribute 'dct_method' must be \"INTEGER_ACCURATE\" or "
          "\"INTEGER_FAST\", got \"" +
          dct + "\"");
    }
  }
  return c;
}

// The encoded bytes of e[c.component].
Result<const std::string*> EncodedInput(const Element& e, const DecodeConfig& c) {
  if (static_cast<size_t>(c.component) >= e.size()) {
    return InvalidArgumentError(c.kernel + ": component " + std::to_string(c.component) +
                                " does not exist in an element of " +
                                std::to_string(e.size()) + " components");
  }
  const Tensor& t = e[c.component];
  if (t.dtype() != DType::kString || t.rank() != 0) {
    return InvalidArgumentError(c.kernel + ": component " + std::to_string(c.component) +
                                " must be a string scalar (encoded image bytes), got " +
                                std::string(DTypeName(t.dtype())) + t.shape().ToString());
  }
  return &t.scalar<std::string>();
}

Status ComponentError(const DecodeConfig& c, const Status& s) {
  return s.WithContext(c.kernel + ": component " + std::to_string(c.component));
}

// The spec function: component becomes uint8 [h, w, channels] (h, w = -1: unknown).
Function::SpecFn DecodedSpec(DecodeConfig c, int64_t h, int64_t w) {
  return [c, h, w](const ElementSpec& in) -> Result<ElementSpec> {
    if (in.unknown) return in;
    if (static_cast<size_t>(c.component) >= in.size()) {
      return InvalidArgumentError(c.kernel + ": component " +
                                  std::to_string(c.component) + " does not exist in " +
                                  in.ToString());
    }
    const TensorSpec& s = in[c.component];
    if (s.dtype != DType::kString || (s.shape.rank_known() && s.shape.rank() != 0)) {
      return InvalidArgumentError(
          c.kernel + ": component " + std::to_string(c.component) +
          " must be a string scalar (encoded image bytes), got " + s.ToString());
    }
    ElementSpec out = in;
    out.components[c.component] =
        TensorSpec{DType::kUInt8, PartialShape{h, w, c.channels}};
    return out;
  };
}

Result<Tensor> DecodeAny(const std::string& data, Codec codec, const DecodeConfig& c) {
  switch (codec) {
    case Codec::kJpeg:
      return DecodeJpeg(data, c.jpeg);
    case Codec::kPng:
      return DecodePng(data, c.channels);
    case Codec::kAny:
      break;
  }
  switch (DetectImageFormat(data)) {
    case ImageFormat::kJpeg:
      return DecodeJpeg(data, c.jpeg);
    case ImageFormat::kPng:
      return DecodePng(data, c.channels);
    case ImageFormat::kUnknown:
      break;
  }
  return InvalidArgumentError(
      data.empty() ? "empty input" : "unknown image format (neither JPEG nor PNG)");
}

// The attributes ReadDecodeConfig reads.
KernelDef DecodeDef(std::string name, std::string summary, bool has_dct) {
  KernelDef d = KernelDef(std::move(name))
                    .Summary(std::move(summary))
                    .Attr("component", AttrType::kInt, int64_t{0},
                          "The component holding the encoded image (a string scalar).")
                    .Attr("channels", AttrType::kInt, int64_t{3}, "1 (grey) or 3 (RGB).");
  if (has_dct) {
    d.Attr("dct_method", AttrType::kString, std::string("INTEGER_ACCURATE"),
           "\"INTEGER_ACCURATE\" or \"INTEGER_FAST\" (JPEG's inverse DCT).");
  }
  return d;
}

void RegisterDecoder(Registry* r, const std::string& name, Codec codec,
                     const std::string& summary) {
  r->RegisterKernel(
      DecodeDef(name, summary, codec != Codec::kPng).Traits({.skippable = true}),
      [name, codec](const AttrMap& attrs) -> Result<Function> {
     SLUICE_ASSIGN_OR_RETURN(DecodeConfig c,
                             ReadDecodeConfig(attrs, name, codec != Codec::kPng));
     return MakeKernelFunction(
         name, attrs,
         [c, codec](Element e, FunctionContext&) -> Result<Element> {
           SLUICE_ASSIGN_OR_RETURN(const std::string* data, EncodedInput(e, c));
           auto img = DecodeAny(*data, codec, c);
           if (!img.ok()) return ComponentError(c, img.status());
           e[c.component] = std::move(img).value();
           return e;
         },
         {.is_random = false, .skippable = true}, DecodedSpec(c, -1, -1));
   });
}

// ---- decode_and_random_crop ----

constexpr char kRandomCrop[] = "decode_and_random_crop";

struct RandomCropConfig {
  DecodeConfig decode;
  int64_t out_h = 224, out_w = 224;
  std::array<double, 2> scale = {0.08, 1.0};
  std::array<double, 2> ratio = {0.75, 4.0 / 3.0};
  bool antialias = true;
  bool dct_scaling = true;
};

// A list of two numbers (ints accepted where floats are expected).
Result<std::array<double, 2>> PairAttr(const AttrMap& attrs, const char* name,
                                       std::array<double, 2> fallback) {
  auto it = attrs.find(name);
  if (it == attrs.end()) return fallback;
  std::vector<double> v;
  if (const auto* d = std::get_if<std::vector<double>>(&it->second)) {
    v = *d;
  } else if (const auto* i = std::get_if<std::vector<int64_t>>(&it->second)) {
    v.assign(i->begin(), i->end());
  }
  if (v.size() != 2 || !(v[0] > 0) || !(v[0] <= v[1])) {
    return InvalidArgumentError(std::string(kRandomCrop) + ": attribute '" + name +
                                "' must be a list of two numbers 0 < lo <= hi, got " +
                                AttrValueDebugString(it->second));
  }
  return std::array<double, 2>{v[0], v[1]};
}

Result<RandomCropConfig> ReadRandomCropConfig(const AttrMap& attrs) {
  RandomCropConfig c;
  SLUICE_ASSIGN_OR_RETURN(c.decode, ReadDecodeConfig(attrs, kRandomCrop, true));
  if (auto it = attrs.find("size"); it != attrs.end()) {
    std::vector<int64_t> size;
    if (const auto* i = std::get_if<int64_t>(&it->second)) {
      size = {*i, *i};
    } else if (const auto* l = std::get_if<std::vector<int64_t>>(&it->second)) {
      size = *l;
    }
    if (size.size() != 2 || size[0] <= 0 || size[1] <= 0 || size[0] > (1 << 16) ||
        size[1] > (1 << 16)) {
      return InvalidArgumentError(
          std::string(kRandomCrop) +
          ": attribute 'size' must be a positive int or a list of two "
          "(height, width) up to 65536, got " +
          AttrValueDebugString(it->second));
    }
    c.out_h = size[0];
    c.out_w = size[1];
  }
  SLUICE_ASSIGN_OR_RETURN(c.scale, PairAttr(attrs, "scale", c.scale));
  if (c.scale[1] > 1) {
    return InvalidArgumentError(
        std::string(kRandomCrop) + ": attribute 'scale' must lie in (0, 1], got [" +
        std::to_string(c.scale[0]) + ", " + std::to_string(c.scale[1]) + "]");
  }
  SLUICE_ASSIGN_OR_RETURN(c.ratio, PairAttr(attrs, "ratio", c.ratio));
  SLUICE_ASSIGN_OR_RETURN(c.antialias,
                          GetAttrOr<bool>(attrs, kRandomCrop, "antialias", true));
  SLUICE_ASSIGN_OR_RETURN(c.dct_scaling,
                          GetAttrOr<bool>(attrs, kRandomCrop, "dct_scaling", true));
  return c;
}

// The rows (or columns) [start, start + size) of the image scaled by n/8 that stand for
// [pos, pos + len) of the full-size image: both edges rounded to the nearest scaled
// pixel.
struct ScaledSpan {
  int64_t start, size;
};
ScaledSpan RoundedSpan(int64_t pos, int64_t len, int n) {
  const int64_t a = (pos * n * 2 + 8) / 16, b = ((pos + len) * n * 2 + 8) / 16;
  return {a, std::max<int64_t>(b - a, 1)};
}

// A full-size span that DecodeJpegWindow (which floors the start and ceils the size)
// maps onto `s` exactly; false when there is none inside [0, extent).
bool FullSpanFor(ScaledSpan s, int n, int64_t extent, int64_t* pos, int64_t* len) {
  const int64_t p = (s.start * 8 + n - 1) / n;
  const int64_t l = std::min(s.size * 8 / n, extent - p);
  if (p >= extent || l < 1 || p * n / 8 != s.start || (l * n + 7) / 8 != s.size)
    return false;
  *pos = p;
  *len = l;
  return true;
}

// The DCT scale n/8 and the window to decode for the sampled window `w`: the smallest n
// in {1, 2, 4} whose rounded scaled window still covers the output (8 when none does, or
// without dct_scaling). The decoded region then matches `w` to half a scaled pixel at
// each edge. libjpeg-turbo has SIMD IDCTs only for 1x1, 2x2, 4x4 and 8x8 blocks; its C
// IDCTs for n = 3, 5, 6, 7 (and their 2n chroma sizes) decode slower than 8/8.
std::pair<int, ImageWindow> ScaledWindow(const ImageWindow& w, int64_t height,
                                         int64_t width, int64_t out_h, int64_t out_w,
                                         bool dct_scaling) {
  for (int n = 1; dct_scaling && n < 8; n *= 2) {
    const ScaledSpan ys = RoundedSpan(w.y, w.height, n),
                     xs = RoundedSpan(w.x, w.width, n);
    if (ys.size < out_h || xs.size < out_w) continue;
    ImageWindow full;
    if (FullSpanFor(ys, n, height, &full.y, &full.height) &&
        FullSpanFor(xs, n, width, &full.x, &full.width)) {
      return {n, full};
    }
  }
  return {8, w};
}

// The result is output component c.decode.component of the call `ctx` (its output slot
// when offered, NewOutput in graph/function_internal.h).
Result<Tensor> DecodeAndRandomCrop(const std::string& data, const RandomCropConfig& c,
                                   FunctionContext& ctx) {
  const int64_t ch = c.decode.channels;
  SLUICE_ASSIGN_OR_RETURN(Tensor out, NewOutput(ctx, c.decode.component, DType::kUInt8,
                                                Shape{c.out_h, c.out_w, ch}));
  Rng& rng = ctx.rng();
  if (DetectImageFormat(data) == ImageFormat::kPng) {
    SLUICE_ASSIGN_OR_RETURN(ImageInfo info, ReadPngInfo(data));
    ImageWindow w =
        SampleRandomResizedCrop(info.height, info.width, c.scale, c.ratio, rng);
    SLUICE_ASSIGN_OR_RETURN(Tensor img, DecodePng(data, c.decode.channels));
    ResizeBilinearU8(img.data<uint8_t>(), img.dim(1) * ch, ch, w,
                     out.mutable_data<uint8_t>(), c.out_h, c.out_w, c.antialias);
    return out;
  }
  SLUICE_ASSIGN_OR_RETURN(ImageInfo info, ReadJpegInfo(data));
  if (info.height * info.width > kMaxImagePixels) {
    return ResourceExhaustedError("jpeg: image of " + std::to_string(info.height) + "x" +
                                  std::to_string(info.width) +
                                  " pixels exceeds the limit of " +
                                  std::to_string(kMaxImagePixels) + " pixels");
  }
  ImageWindow w = SampleRandomResizedCrop(info.height, info.width, c.scale, c.ratio, rng);
  const auto [n, decode_window] =
      ScaledWindow(w, info.height, info.width, c.out_h, c.out_w, c.dct_scaling);
  // Resized straight from libjpeg's rows: no copy of the window.
  SLUICE_ASSIGN_OR_RETURN(JpegRegion region,
                          DecodeJpegRegion(data, decode_window, n, c.decode.jpeg));
  const Tensor& px = region.pixels;
  ResizeBilinearU8(px.data<uint8_t>(), px.dim(1) * ch, ch, region.window,
                   out.mutable_data<uint8_t>(), c.out_h, c.out_w, c.antialias);
  return out;
}

void RegisterDecodeAndRandomCrop(Registry* r) {
  r->RegisterKernel(
      DecodeDef(kRandomCrop,
                "Decodes only a random window of a JPEG (RandomResizedCrop's window) and "
                "resizes it; other formats are decoded whole first.",
                true)
          .Attr("size", AttrType::kAny, std::vector<int64_t>{224, 224},
                "Output size: n (square) or [height, width], sides in [1, 65536].")
          .Attr("scale", AttrType::kFloatList, std::vector<double>{0.08, 1.0},
                "[min, max] fraction of the image's area, in (0, 1].")
          .Attr("ratio", AttrType::kFloatList, std::vector<double>{0.75, 4.0 / 3.0},
                "[min, max] aspect ratio (width / height).")
          .Attr("antialias", AttrType::kBool, true,
                "Widen the filter when downscaling (PIL's and torchvision's).")
          .Attr("dct_scaling", AttrType::kBool, true,
                "Let libjpeg scale by n/8 while decoding when the window shrinks a lot.")
          .Traits({.is_random = true, .skippable = true}),
      [](const AttrMap& attrs) -> Result<Function> {
     SLUICE_ASSIGN_OR_RETURN(RandomCropConfig c, ReadRandomCropConfig(attrs));
     return MakeKernelFunction(
         kRandomCrop, attrs,
         [c](Element e, FunctionContext& ctx) -> Result<Element> {
           SLUICE_ASSIGN_OR_RETURN(const std::string* data, EncodedInput(e, c.decode));
           auto img = DecodeAndRandomCrop(*data, c, ctx);
           if (!img.ok()) return ComponentError(c.decode, img.status());
           e[c.decode.component] = std::move(img).value();
           return e;
         },
         {.is_random = true, .skippable = true}, DecodedSpec(c.decode, c.out_h, c.out_w));
   });
}

}  // namespace

void RegisterImageDecodeKernels(Registry* r) {
  RegisterDecoder(r, "decode_jpeg", Codec::kJpeg, "Decodes a JPEG into uint8 [h, w, channels].");
  RegisterDecoder(r, "decode_png", Codec::kPng, "Decodes a PNG into uint8 [h, w, channels].");
  RegisterDecoder(r, "decode_image", Codec::kAny,
                  "Decodes a JPEG or a PNG (by its signature) into uint8 [h, w, channels].");
  RegisterDecodeAndRandomCrop(r);
}

}  // namespace sluice
