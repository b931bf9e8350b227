// Image codecs: JPEG on libjpeg-turbo (the TurboJPEG API for whole images and encoding,
// the libjpeg API for partial decoding), PNG on libpng.
//
// Pixels are uint8 HWC tensors [height, width, channels] with channels 1 (gray) or 3
// (RGB), rows packed.
//
// Bad input never crashes: every function returns InvalidArgument (not an image of this
// format, unsupported layout), DataLoss (corrupt or truncated data: libjpeg warnings such
// as "premature end of data" count as corruption, unlike libjpeg's default of filling
// gray; only "extraneous bytes before marker", junk between segments that costs no pixel,
// is tolerated, as TensorFlow and PIL do) or ResourceExhausted (dimensions whose decoded size exceeds kMaxImagePixels).
// Messages start with "jpeg:" / "png:" and carry the library's own words; callers add
// which element or file it was.
//
// Thread-safety: all functions are reentrant; TurboJPEG handles are per thread.
#ifndef SLUICE_FORMATS_IMAGE_CODEC_H_
#define SLUICE_FORMATS_IMAGE_CODEC_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "sluice/tensor.h"

namespace sluice {

// Images larger than this many pixels are refused before any pixel memory is allocated
// (a 64-byte header can claim 65500 x 65500).
inline constexpr int64_t kMaxImagePixels = int64_t{1} << 28;  // 268M pixels

enum class ImageFormat { kUnknown, kJpeg, kPng };
// Sniffs the magic bytes.
ImageFormat DetectImageFormat(std::string_view data);

struct ImageInfo {
  int64_t height = 0;
  int64_t width = 0;
  int channels = 0;  // as stored: 1 gray, 3 color (YCbCr/RGB), 4 CMYK (JPEG) or RGBA (PNG)
};

// JPEG.
struct JpegDecodeOptions {
  int channels = 3;         // 1 (gray) or 3 (RGB); CMYK/gray sources are converted
  bool fast_idct = false;   // JDCT_IFAST ("INTEGER_FAST") instead of JDCT_ISLOW
  bool fancy_upsampling = true;  // smooth chroma upsampling (libjpeg's and PIL's default)
};
Result<ImageInfo> ReadJpegInfo(std::string_view data);
// The pixels equal PIL's decode exactly (PIL uses the same libjpeg-turbo with ISLOW and
// fancy upsampling; gray output of a color JPEG is libjpeg's Y channel; CMYK is converted
// as PIL does, Adobe-inverted when the file has an Adobe marker). Any libjpeg warning
// fails the decode, "Corrupt JPEG data: N extraneous bytes before marker" included.
Result<Tensor> DecodeJpeg(std::string_view data, const JpegDecodeOptions& opts = {});

// A rectangle of an image, in pixels of the full-size image.
struct ImageWindow {
  int64_t y = 0, x = 0, height = 0, width = 0;
};
// Decodes only `window` (within the image), at scale `scale_num`/8 (1..8) using
// libjpeg-turbo's DCT scaling: rows above the window are skipped (jpeg_skip_scanlines),
// columns outside it are not IDCT'd (jpeg_crop_scanline), rows below are not read.
// The result is [ceil(window.height*s), ceil(window.width*s), channels] for s = num/8,
// starting at row floor(window.y*s), column floor(window.x*s) of the image scaled by s:
// exactly the same pixels as decoding the whole image at that scale and cropping. Data
// below or right of the window is never read, so corruption there goes unnoticed.
Result<Tensor> DecodeJpegWindow(std::string_view data, const ImageWindow& window,
                                int scale_num, const JpegDecodeOptions& opts = {});

// DecodeJpegWindow without its final column copy, for callers that read a window of
// the result anyway (decode_and_random_crop resizes it): `pixels` holds the decoded rows
// with whatever columns libjpeg produced around the window (a few, to iMCU edges; their
// contents are unspecified) and `window` says where the requested pixels are in it.
struct JpegRegion {
  Tensor pixels;        // uint8 [rows, columns, channels]
  ImageWindow window;   // y = 0, height = rows
};
Result<JpegRegion> DecodeJpegRegion(std::string_view data, const ImageWindow& window,
                                    int scale_num, const JpegDecodeOptions& opts = {});

// Encodes uint8 HWC pixels (channels 1 or 3). `subsampling`: "444", "422" or "420".
Result<std::string> EncodeJpeg(const Tensor& pixels, int quality,
                               std::string_view subsampling = "420");

// PNG (8-bit output; 16-bit sources are reduced to their high byte, palettes expanded,
// alpha dropped, gAMA ignored; color to gray is ITU-R 601 luma as in PIL's "L"). The
// pixels equal PIL's decode exactly.
Result<ImageInfo> ReadPngInfo(std::string_view data);
Result<Tensor> DecodePng(std::string_view data, int channels = 3);
Result<std::string> EncodePng(const Tensor& pixels);

}  // namespace sluice

#endif  // SLUICE_FORMATS_IMAGE_CODEC_H_
