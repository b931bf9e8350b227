// Pixel kernels shared by the image ops (src/ops/image/*): crop windows, resampling,
// normalization. Images are HWC tensors [height, width, channels].
//
// Thread-safety: pure functions.
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
ImageWindow SampleRandomResizedCrop(int64_t height, int64_t width, std::array<double, 2> scale,
                                    std::array<double, 2> ratio, Rng& rng);

// torchvision's CenterCrop window (for crops not larger than the image; rounding as in
// torchvision: top = round((h - ch) / 2)).
ImageWindow CenterCropWindow(int64_t height, int64_t width, int64_t crop_height,
                             int64_t crop_width);

// Resamples `window` of a uint8 HWC image to [out_height, out_width, c] with a triangle
// (bilinear) filter, separably, in PIL's ImagingResample way: pixel centers at +0.5; with
// `antialias` the filter support widens by the downscale factor (PIL's and torchvision's
// antialiased bilinear); without, it is plain bilinear (torch.nn.functional.interpolate,
// align_corners=False). Edge taps are renormalized (equivalent to clamping the source).
// Rows of `src` are `src_row_stride` bytes apart. `flip` mirrors the output horizontally
// at no extra cost. Writes to `dst` (packed rows).
void ResizeBilinearU8(const uint8_t* src, int64_t src_row_stride, int64_t channels,
                      const ImageWindow& window, uint8_t* dst, int64_t out_height,
                      int64_t out_width, bool antialias, bool flip = false);

}  // namespace sluice

#endif  // SLUICE_OPS_IMAGE_IMAGE_UTIL_H_
