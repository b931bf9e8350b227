// Fuzzes the image codecs (formats/image_codec.h): DecodeJpeg, DecodeJpegWindow with a
// window and scale derived from the input, ReadPngInfo and DecodePng. The whole input is
// the encoded image; its last four bytes also choose the options and the window (the
// decoders ignore bytes after the end of an image, so the seeds stay valid images).
// Errors are fine; crashes, leaks, hangs, huge allocations, messages without the codec's
// prefix, wrong output shapes, and a window that differs from the crop of a successful
// whole decode are not.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "formats/image_codec.h"

namespace {

using sluice::ImageWindow;
using sluice::JpegDecodeOptions;
using sluice::Result;
using sluice::Shape;
using sluice::Tensor;

// Larger images are skipped (time and memory per input stay small); the limit itself is
// covered by the unit tests.
constexpr int64_t kMaxFuzzPixels = int64_t{1} << 22;

void CheckError(const sluice::Status& s, std::string_view prefix) {
  if (s.ok()) return;
  if (s.message().compare(0, prefix.size(), prefix) != 0) __builtin_trap();
}

void CheckImage(const Result<Tensor>& r, int64_t h, int64_t w, int channels,
                std::string_view prefix) {
  if (!r.ok()) return CheckError(r.status(), prefix);
  if (r->dtype() != sluice::DType::kUInt8 || r->shape() != Shape{h, w, channels}) {
    __builtin_trap();
  }
}

void FuzzJpeg(std::string_view data, const uint8_t* p) {
  auto info = sluice::ReadJpegInfo(data);
  if (!info.ok()) {
    CheckError(info.status(), "jpeg: ");
    return;
  }
  const int64_t h = info->height, w = info->width;
  if (h <= 0 || w <= 0 || h * w > kMaxFuzzPixels) return;
  JpegDecodeOptions opts;
  opts.channels = (p[0] & 1) ? 1 : 3;
  opts.fast_idct = (p[0] & 2) != 0;
  opts.fancy_upsampling = (p[0] & 4) == 0;
  const int scale = 1 + ((p[0] >> 3) & 7);
  auto full = sluice::DecodeJpeg(data, opts);
  CheckImage(full, h, w, opts.channels, "jpeg: ");

  ImageWindow win;
  win.y = h * p[1] / 256;
  win.x = w * p[2] / 256;
  win.height = 1 + (h - win.y - 1) * p[3] / 255;
  win.width = 1 + (w - win.x - 1) * (255 - p[3]) / 255;
  auto part = sluice::DecodeJpegWindow(data, win, scale, opts);
  CheckImage(part, (win.height * scale + 7) / 8, (win.width * scale + 7) / 8,
             opts.channels, "jpeg: ");
  // At full scale a window is exactly the crop of the whole decode.
  if (scale == 8 && full.ok() && part.ok()) {
    const int64_t c = opts.channels;
    for (int64_t r = 0; r < win.height; ++r) {
      if (std::memcmp(part->data<uint8_t>() + r * win.width * c,
                      full->data<uint8_t>() + ((win.y + r) * w + win.x) * c,
                      win.width * c) != 0) {
        __builtin_trap();
      }
    }
  }
}

void FuzzPng(std::string_view data, const uint8_t* p) {
  auto info = sluice::ReadPngInfo(data);
  if (!info.ok()) {
    CheckError(info.status(), "png: ");
    return;
  }
  if (info->height * info->width > kMaxFuzzPixels) return;
  const int channels = (p[0] & 1) ? 1 : 3;
  CheckImage(sluice::DecodePng(data, channels), info->height, info->width, channels,
             "png: ");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  uint8_t params[4] = {0, 0, 0, 128};
  if (size >= 4) std::memcpy(params, data + size - 4, 4);
  switch (sluice::DetectImageFormat(bytes)) {
    case sluice::ImageFormat::kJpeg:
      FuzzJpeg(bytes, params);
      break;
    case sluice::ImageFormat::kPng:
      FuzzPng(bytes, params);
      break;
    case sluice::ImageFormat::kUnknown:
      // Both decoders must refuse cleanly.
      CheckError(sluice::DecodeJpeg(bytes).status(), "jpeg: ");
      CheckError(sluice::DecodePng(bytes).status(), "png: ");
      break;
  }
  return 0;
}
