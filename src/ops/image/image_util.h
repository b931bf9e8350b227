// Pixel kernels shared by the image ops (src/ops/image/*): crop windows, resampling,
// normalization. Images are HWC tensors [height, width, channels].
//
// Thread-safety: pure functions (the resamplers keep per-thread scratch buffers).
#ifndef SLUICE_OPS_IMAGE_IMAGE_UTIL_H_
#define SLUICE_OPS_IMAGE_IMAGE_UTIL_H_

#include <array>
#include <cstdint>

#include "formats/image_codec.h"  // ImageWindow
#include "sluice/random.h"
#include "sluice/tensor.h"

namespace sluice {

// torchvision's RandomResizedCrop.get_params: up to 10 attempts drawing an area fraction
// uniformly from `scale` and a log-uniform aspect ratio from `ratio`; the first window that
// fits wins (its offset uniform). Otherwise the center fallback: the whole image clamped to
// the ratio range, centered. The window is always non-empty and inside the image.
// Requires height, width >= 1 and 0 < ratio[0] <= ratio[1]; sides are rounded half to even
// like Python's round(). Draws 2 Uniform() per attempt and 2 UniformInt() on success.
ImageWindow SampleRandomResizedCrop(int64_t height, int64_t width, std::array<double, 2> scale,
                                    std::array<double, 2> ratio, Rng& rng);

// torchvision's CenterCrop window (for crops not larger than the image; rounding as in
// torchvision: top = round((h - ch) / 2), half to even).
ImageWindow CenterCropWindow(int64_t height, int64_t width, int64_t crop_height,
                             int64_t crop_width);

// Resamples `window` of a uint8 HWC image to [out_height, out_width, c] with a triangle
// (bilinear) filter, separably, in PIL's ImagingResample way: pixel centers at +0.5; with
// `antialias` the filter support widens by the downscale factor (PIL's and torchvision's
// antialiased bilinear); without, it is plain bilinear (torch.nn.functional.interpolate,
// align_corners=False). Edge taps are renormalized (equivalent to clamping the source).
// Rows of `src` are `src_row_stride` bytes apart. `flip` mirrors the output horizontally
// at no extra cost. Writes to `dst` (packed rows).
//
// Only pixels inside `window` are read: the result is bit-identical to PIL's
// `img.crop(window).resize((out_width, out_height), Image.BILINEAR)` (what torchvision's
// resized_crop does), including PIL's 22-bit fixed-point coefficients and the rounding to
// uint8 between the horizontal and the vertical pass. (PIL's resize(box=window) differs at
// the window's border: its taps may reach pixels outside the box.) A pass whose size does
// not change is skipped, as in PIL. Without antialias it stays within +-1 of torch's
// uint8 interpolate.
//
// The horizontal pass is streamed: only the rows the vertical filter touches are
// resampled, into a per-thread ring of max-taps rows, so the working set stays in L1.
// On x86-64 CPUs with AVX2 the passes run vectorized (3 and 4 channels horizontally, any
// channel count vertically) with results identical to the portable code.
// Requires channels >= 1, a non-empty window inside the image, out sizes >= 1.
void ResizeBilinearU8(const uint8_t* src, int64_t src_row_stride, int64_t channels,
                      const ImageWindow& window, uint8_t* dst, int64_t out_height,
                      int64_t out_width, bool antialias, bool flip = false);

// The float32 version of ResizeBilinearU8: the same filter weights (as float), float
// accumulation, no rounding or clamping. `src_row_stride` is in floats. Matches
// torch.nn.functional.interpolate(mode="bilinear", align_corners=False, antialias=...) to
// float rounding.
void ResizeBilinearF32(const float* src, int64_t src_row_stride, int64_t channels,
                       const ImageWindow& window, float* dst, int64_t out_height,
                       int64_t out_width, bool antialias, bool flip = false);

// Mirrors each row of an HWC image [height, width, pixel_bytes / element size]:
// dst pixel (y, x) = src pixel (y, width - 1 - x). `pixel_bytes` is channels * dtype size;
// rows are packed. src and dst must not overlap.
void FlipLeftRight(const uint8_t* src, uint8_t* dst, int64_t height, int64_t width,
                   int64_t pixel_bytes);

// out = (x * scale - mean[c]) * inv_std[c] as float32, from uint8 or float32 HWC pixels
// (`num_pixels` pixels of `channels` values). With `chw` the output is planar
// ([channels, num_pixels]), else interleaved like the input. mean/inv_std have `channels`
// entries. Vectorized (AVX2) for uint8 RGB.
void NormalizeU8(const uint8_t* src, int64_t num_pixels, int64_t channels, float scale,
                 const float* mean, const float* inv_std, bool chw, float* dst);
void NormalizeF32(const float* src, int64_t num_pixels, int64_t channels, float scale,
                  const float* mean, const float* inv_std, bool chw, float* dst);

// Testing hook: with false, every function above takes its portable (non-SIMD) path, so
// tests can check both paths against the same references. Process-wide; do not flip it
// while other threads resample.
void SetImageSimdEnabledForTesting(bool enabled);
// True when the SIMD paths are compiled in, the CPU supports them and they are enabled.
bool ImageSimdActive();

}  // namespace sluice

#endif  // SLUICE_OPS_IMAGE_IMAGE_UTIL_H_
