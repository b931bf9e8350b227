// Image encoding (src/formats/image_codec.h): JPEG with the TurboJPEG API, PNG with
// libpng writing to memory.
#include <png.h>
#include <turbojpeg.h>

#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "formats/image_codec.h"

namespace sluice {
namespace {

// Checks that `pixels` is a non-empty uint8 HWC image with 1 or 3 channels that the
// codec can represent; `prefix` is "jpeg" or "png", `max_dim` the codec's side limit.
Status ValidatePixels(const Tensor& pixels, std::string_view prefix, int64_t max_dim) {
  std::string p(prefix);
  if (pixels.dtype() != DType::kUInt8) {
    return InvalidArgumentError(p + ": encode needs uint8 pixels, got " +
                                std::string(DTypeName(pixels.dtype())));
  }
  if (pixels.rank() != 3) {
    return InvalidArgumentError(p + ": encode needs an HWC image of rank 3, got shape " +
                                pixels.shape().ToString());
  }
  const int64_t h = pixels.dim(0), w = pixels.dim(1), c = pixels.dim(2);
  if (c != 1 && c != 3) {
    return InvalidArgumentError(p + ": encode needs 1 (gray) or 3 (RGB) channels, got " +
                                std::to_string(c) + " (shape " +
                                pixels.shape().ToString() + ")");
  }
  if (h <= 0 || w <= 0) {
    return InvalidArgumentError(p + ": cannot encode an empty image of shape " +
                                pixels.shape().ToString());
  }
  if (h > max_dim || w > max_dim) {
    return InvalidArgumentError(p + ": image of shape " + pixels.shape().ToString() +
                                " exceeds the format's limit of " +
                                std::to_string(max_dim) + " pixels per side");
  }
  if (h * w > kMaxImagePixels) {
    return ResourceExhaustedError(p + ": image of shape " + pixels.shape().ToString() +
                                  " has more than kMaxImagePixels pixels");
  }
  if (pixels.raw_data() == nullptr) {
    return InvalidArgumentError(p + ": image tensor has no data");
  }
  return Status::OK();
}

// One TurboJPEG compressor per thread, destroyed with the thread.
class TjCompressor {
 public:
  TjCompressor() : handle_(tjInitCompress()) {}
  ~TjCompressor() {
    if (handle_ != nullptr) tjDestroy(handle_);
  }
  TjCompressor(const TjCompressor&) = delete;
  TjCompressor& operator=(const TjCompressor&) = delete;
  tjhandle get() const { return handle_; }

 private:
  tjhandle handle_;
};

// libpng error plumbing: errors longjmp back to EncodePngRows with the message saved.
struct PngWriteState {
  std::string* out;
  char error[256];
};

void PngError(png_structp png, png_const_charp msg) {
  auto* state = static_cast<PngWriteState*>(png_get_error_ptr(png));
  std::snprintf(state->error, sizeof(state->error), "%s", msg);
  png_longjmp(png, 1);
}

void PngWarning(png_structp, png_const_charp) {}

void PngWrite(png_structp png, png_bytep data, png_size_t length) {
  auto* state = static_cast<PngWriteState*>(png_get_io_ptr(png));
  state->out->append(reinterpret_cast<const char*>(data), length);
}

void PngFlush(png_structp) {}

// The libpng calls, in a frame holding only trivially destructible locals (longjmp skips
// destructors). Returns false with state->error set on failure.
bool EncodePngRows(const uint8_t* pixels, uint32_t height, uint32_t width, int channels,
                   png_bytepp rows, PngWriteState* state) {
  png_structp png =
      png_create_write_struct(PNG_LIBPNG_VER_STRING, state, PngError, PngWarning);
  if (png == nullptr) {
    std::snprintf(state->error, sizeof(state->error), "png_create_write_struct failed");
    return false;
  }
  png_infop info = png_create_info_struct(png);
  if (info == nullptr) {
    png_destroy_write_struct(&png, nullptr);
    std::snprintf(state->error, sizeof(state->error), "png_create_info_struct failed");
    return false;
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    return false;
  }
  png_set_write_fn(png, state, PngWrite, PngFlush);
  png_set_IHDR(png, info, width, height, 8,
               channels == 1 ? PNG_COLOR_TYPE_GRAY : PNG_COLOR_TYPE_RGB,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  const size_t stride = static_cast<size_t>(width) * channels;
  for (uint32_t y = 0; y < height; ++y) {
    rows[y] = const_cast<png_bytep>(pixels + y * stride);
  }
  png_set_rows(png, info, rows);
  png_write_png(png, info, PNG_TRANSFORM_IDENTITY, nullptr);
  png_destroy_write_struct(&png, &info);
  return true;
}

}  // namespace

Result<std::string> EncodeJpeg(const Tensor& pixels, int quality,
                               std::string_view subsampling) {
  SLUICE_RETURN_IF_ERROR(ValidatePixels(pixels, "jpeg", 65535));
  if (quality < 1 || quality > 100) {
    return InvalidArgumentError("jpeg: quality must be in 1..100, got " +
                                std::to_string(quality));
  }
  int subsamp;
  if (subsampling == "444") {
    subsamp = TJSAMP_444;
  } else if (subsampling == "422") {
    subsamp = TJSAMP_422;
  } else if (subsampling == "420") {
    subsamp = TJSAMP_420;
  } else {
    return InvalidArgumentError(
        "jpeg: subsampling must be \"444\", \"422\" or \"420\", got \"" +
        std::string(subsampling) + "\"");
  }
  const int height = static_cast<int>(pixels.dim(0));
  const int width = static_cast<int>(pixels.dim(1));
  const int channels = static_cast<int>(pixels.dim(2));
  int pixel_format = TJPF_RGB;
  if (channels == 1) {
    pixel_format = TJPF_GRAY;
    subsamp = TJSAMP_GRAY;
  }

  thread_local TjCompressor compressor;
  if (compressor.get() == nullptr) {
    return InternalError(std::string("jpeg: tjInitCompress failed: ") +
                         tjGetErrorStr2(nullptr));
  }
  // Compress into a per-thread buffer of the worst-case size (no reallocation), then
  // copy.
  thread_local std::vector<unsigned char> scratch;
  const unsigned long bound = tjBufSize(width, height, subsamp);
  if (bound == static_cast<unsigned long>(-1)) {
    return InvalidArgumentError(std::string("jpeg: tjBufSize: ") +
                                tjGetErrorStr2(nullptr));
  }
  if (scratch.size() < bound) scratch.resize(bound);
  unsigned char* dst = scratch.data();
  unsigned long size = bound;
  if (tjCompress2(compressor.get(), pixels.data<uint8_t>(), width, /*pitch=*/0, height,
                  pixel_format, &dst, &size, subsamp, quality,
                  TJFLAG_NOREALLOC | TJFLAG_ACCURATEDCT) != 0) {
    return InternalError(std::string("jpeg: tjCompress2: ") +
                         tjGetErrorStr2(compressor.get()));
  }
  std::string out(reinterpret_cast<const char*>(dst), size);
  // Give back the memory of one huge image rather than keeping it for the thread's life.
  if (scratch.size() > (size_t{64} << 20)) std::vector<unsigned char>().swap(scratch);
  return out;
}

Result<std::string> EncodePng(const Tensor& pixels) {
  // PNG allows 2^31-1 per side; kMaxImagePixels bounds the product.
  SLUICE_RETURN_IF_ERROR(ValidatePixels(pixels, "png", int64_t{1} << 30));
  std::string out;
  out.reserve(static_cast<size_t>(pixels.num_elements() / 2 + 1024));
  PngWriteState state{&out, {0}};
  std::vector<png_bytep> rows(static_cast<size_t>(pixels.dim(0)));
  if (!EncodePngRows(pixels.data<uint8_t>(), static_cast<uint32_t>(pixels.dim(0)),
                     static_cast<uint32_t>(pixels.dim(1)),
                     static_cast<int>(pixels.dim(2)), rows.data(), &state)) {
    return InternalError(std::string("png: encode failed: ") + state.error);
  }
  return out;
}

}  // namespace sluice
