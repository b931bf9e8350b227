// JPEG and PNG decoding (formats/image_codec.h).
//
// Whole JPEGs go through TurboJPEG (one decompress handle per thread); windows, DCT
// scaling, CMYK and layouts TurboJPEG 2.1 refuses (unusual subsampling) go through the
// libjpeg API. Both libraries report errors by longjmp: every function that calls setjmp
// below keeps only trivially destructible objects alive, and owns nothing that needs
// freeing (pixel memory is allocated by the callers, outside the setjmp regions).
#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

// jpeglib.h needs FILE and size_t declared before it.
// clang-format off
#include <jpeglib.h>
#include <jerror.h>
#include <png.h>
#include <turbojpeg.h>
// clang-format on

#include "formats/image_codec.h"

namespace sluice {
namespace {

constexpr unsigned char kPngSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

Status TooLarge(std::string_view who, int64_t height, int64_t width) {
  return ResourceExhaustedError(std::string(who) + ": image of " +
                                std::to_string(height) + "x" + std::to_string(width) +
                                " pixels exceeds the limit of " +
                                std::to_string(kMaxImagePixels) + " pixels");
}

// libjpeg's ITU-R 601 luma (rgb_gray in jdcolor.c; PIL's "L" uses the same constants).
inline uint8_t Luma(int r, int g, int b) {
  return static_cast<uint8_t>((r * 19595 + g * 38470 + b * 7471 + 32768) >> 16);
}
// PIL's MULDIV255: round(a * b / 255).
inline int MulDiv255(int a, int b) {
  int t = a * b + 128;
  return ((t >> 8) + t) >> 8;
}

// CMYK (as libjpeg outputs it) to RGB or gray. Adobe files store inverted CMYK (the
// Photoshop convention, which PIL and TensorFlow follow): R = C' * K' / 255 there.
void ConvertCmykRow(const uint8_t* in, int64_t n, bool inverted, int channels,
                    uint8_t* out) {
  for (int64_t i = 0; i < n; ++i, in += 4) {
    int c = in[0], m = in[1], y = in[2], k = in[3];
    if (!inverted) c = 255 - c, m = 255 - m, y = 255 - y, k = 255 - k;
    int r = MulDiv255(c, k), g = MulDiv255(m, k), b = MulDiv255(y, k);
    if (channels == 3) {
      out[0] = static_cast<uint8_t>(r);
      out[1] = static_cast<uint8_t>(g);
      out[2] = static_cast<uint8_t>(b);
      out += 3;
    } else {
      *out++ = Luma(r, g, b);
    }
  }
}

Status CheckJpegInput(std::string_view data) {
  if (data.empty()) return InvalidArgumentError("jpeg: empty input");
  if (data.size() < 2 || static_cast<uint8_t>(data[0]) != 0xFF ||
      static_cast<uint8_t>(data[1]) != 0xD8) {
    return InvalidArgumentError("jpeg: not a JPEG file (no SOI marker)");
  }
  return Status::OK();
}

Status CheckChannels(std::string_view who, int channels) {
  if (channels != 1 && channels != 3) {
    return InvalidArgumentError(std::string(who) + ": channels must be 1 or 3, got " +
                                std::to_string(channels));
  }
  return Status::OK();
}

// ---------------------------------------------------------------------------------------
// libjpeg API.

struct JpegError {
  jpeg_error_mgr pub;
  jmp_buf jump;
  int code;
  bool warning;
  char message[JMSG_LENGTH_MAX];
};

void JpegErrorExit(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegError*>(cinfo->err);
  err->pub.format_message(cinfo, err->message);
  err->code = err->pub.msg_code;
  err->warning = false;
  longjmp(err->jump, 1);
}

// Warnings (level < 0) are corruption: stop at the first one. Trace messages are dropped.
// The one exception is "N extraneous bytes before marker": junk between segments that the
// decoder skips without losing a pixel (real ImageNet files have it; TensorFlow and PIL
// decode them).
void JpegEmitMessage(j_common_ptr cinfo, int level) {
  if (level >= 0) return;
  auto* err = reinterpret_cast<JpegError*>(cinfo->err);
  if (err->pub.msg_code == JWRN_EXTRANEOUS_DATA) return;
  err->pub.format_message(cinfo, err->message);
  err->code = err->pub.msg_code;
  err->warning = true;
  longjmp(err->jump, 1);
}

void JpegOutputMessage(j_common_ptr) {}

Status JpegStatus(const JpegError& e) {
  const std::string msg = e.message;
  if (e.warning) return DataLossError("jpeg: corrupt data: " + msg);
  switch (e.code) {
    case JERR_NO_SOI:
      return InvalidArgumentError("jpeg: not a JPEG file: " + msg);
    case JERR_BAD_PRECISION:
    case JERR_CONVERSION_NOTIMPL:
    case JERR_NOT_COMPILED:
    case JERR_NOTIMPL:
    case JERR_ARITH_NOTIMPL:
    case JERR_CCIR601_NOTIMPL:
    case JERR_IMAGE_TOO_BIG:
    case JERR_EMPTY_IMAGE:
    case JERR_BAD_J_COLORSPACE:
    case JERR_SOF_UNSUPPORTED:
      return InvalidArgumentError("jpeg: unsupported: " + msg);
    case JERR_OUT_OF_MEMORY:
      return ResourceExhaustedError("jpeg: " + msg);
    default:
      return DataLossError("jpeg: corrupt data: " + msg);
  }
}

// A libjpeg decompressor; Create() must succeed before any other use.
struct JpegDecoder {
  jpeg_decompress_struct cinfo;
  JpegError err;
  bool created = false;

  JpegDecoder() {
    std::memset(&cinfo, 0, sizeof(cinfo));
    cinfo.err = jpeg_std_error(&err.pub);
    err.pub.error_exit = JpegErrorExit;
    err.pub.emit_message = JpegEmitMessage;
    err.pub.output_message = JpegOutputMessage;
    err.code = 0;
    err.warning = false;
    err.message[0] = '\0';
  }
  ~JpegDecoder() {
    if (created) jpeg_destroy_decompress(&cinfo);
  }
  JpegDecoder(const JpegDecoder&) = delete;
  JpegDecoder& operator=(const JpegDecoder&) = delete;
};

// The setjmp phases. Each returns false with d->err filled on a libjpeg error.
bool JpegCreate(JpegDecoder* d) {
  if (setjmp(d->err.jump)) return false;
  jpeg_create_decompress(&d->cinfo);
  d->created = true;
  return true;
}

bool JpegReadHeader(JpegDecoder* d, const uint8_t* data, size_t size) {
  if (setjmp(d->err.jump)) return false;
  jpeg_mem_src(&d->cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&d->cinfo, TRUE);
  return true;
}

bool JpegConfigure(JpegDecoder* d, int scale_num, J_COLOR_SPACE out_space, bool fast_idct,
                   bool fancy_upsampling) {
  if (setjmp(d->err.jump)) return false;
  jpeg_decompress_struct& c = d->cinfo;
  c.scale_num = static_cast<unsigned int>(scale_num);
  c.scale_denom = 8;
  c.out_color_space = out_space;
  c.dct_method = fast_idct ? JDCT_IFAST : JDCT_ISLOW;
  c.do_fancy_upsampling = fancy_upsampling ? TRUE : FALSE;
  jpeg_calc_output_dimensions(&c);
  return true;
}

// What to decode, in output (scaled) pixels, and where to put it.
struct JpegRowPlan {
  JDIMENSION y, x, height, width;  // the window
  JDIMENSION crop_x, crop_width;   // the columns requested from jpeg_crop_scanline
  int channels;                    // of `out`
  bool cmyk, cmyk_inverted;
  // Row r of the result goes to out + r * out_stride. Without CMYK, rows are decoded there
  // directly with every column libjpeg produces (up to out_columns of them), and the
  // window starts at column *left; with CMYK, only the window's columns are stored
  // (converted) and *left is 0.
  uint8_t* out;
  size_t out_stride;
  JDIMENSION out_columns;
  JDIMENSION* left;
};

// jpeg_crop_scanline moves the left edge down to an iMCU column boundary, at most
// (max_h_samp_factor <= 4) x (DCT scaled size <= 8) - 1 columns: room for the columns it adds.
constexpr JDIMENSION kMaxCropGrowth = 31;

bool JpegDecodeRows(JpegDecoder* d, const JpegRowPlan* p) {
  if (setjmp(d->err.jump)) return false;
  jpeg_decompress_struct& c = d->cinfo;
  jpeg_start_decompress(&c);
  JDIMENSION xoff = p->crop_x, width = p->crop_width;
  if (width < c.output_width) jpeg_crop_scanline(&c, &xoff, &width);
  const JDIMENSION left = p->x - xoff;  // crop_scanline moves xoff down to an iMCU edge
  if (p->y > 0 && jpeg_skip_scanlines(&c, p->y) != p->y) ERREXIT(&c, JERR_BAD_STATE);
  const int in_components = c.output_components;
  JSAMPARRAY scratch = nullptr;
  if (p->cmyk) {
    scratch = (*c.mem->alloc_sarray)(reinterpret_cast<j_common_ptr>(&c), JPOOL_IMAGE,
                                     width * static_cast<JDIMENSION>(in_components), 1);
    *p->left = 0;
  } else {
    // Never write past the buffer, whatever the library decided.
    if (width > p->out_columns || in_components != p->channels) ERREXIT(&c, JERR_BAD_STATE);
    *p->left = left;
  }
  for (JDIMENSION r = 0; r < p->height; ++r) {
    uint8_t* dst = p->out + r * p->out_stride;
    JSAMPROW row = p->cmyk ? scratch[0] : dst;
    if (jpeg_read_scanlines(&c, &row, 1) != 1) ERREXIT(&c, JERR_BAD_STATE);
    if (p->cmyk) {
      ConvertCmykRow(row + static_cast<size_t>(left) * in_components, p->width,
                     p->cmyk_inverted, p->channels, dst);
    }
  }
  jpeg_abort_decompress(&c);
  return true;
}

// Decodes `window` (full-size pixels; null: the whole image) at scale_num/8.
Result<JpegRegion> DecodeWithLibjpeg(std::string_view data, const ImageWindow* window,
                                     int scale_num, const JpegDecodeOptions& opts) {
  SLUICE_RETURN_IF_ERROR(CheckJpegInput(data));
  SLUICE_RETURN_IF_ERROR(CheckChannels("jpeg", opts.channels));
  if (scale_num < 1 || scale_num > 8) {
    return InvalidArgumentError("jpeg: scale must be n/8 with n in 1..8, got " +
                                std::to_string(scale_num) + "/8");
  }
  JpegDecoder d;
  if (!JpegCreate(&d)) return JpegStatus(d.err);
  if (!JpegReadHeader(&d, reinterpret_cast<const uint8_t*>(data.data()), data.size())) {
    return JpegStatus(d.err);
  }
  jpeg_decompress_struct& c = d.cinfo;
  const int64_t height = c.image_height, width = c.image_width;
  if (height * width > kMaxImagePixels) return TooLarge("jpeg", height, width);

  ImageWindow win = window ? *window : ImageWindow{0, 0, height, width};
  if (win.y < 0 || win.x < 0 || win.height <= 0 || win.width <= 0 ||
      win.y > height - win.height || win.x > width - win.width) {
    return InvalidArgumentError(
        "jpeg: window (y=" + std::to_string(win.y) + ", x=" + std::to_string(win.x) +
        ", height=" + std::to_string(win.height) +
        ", width=" + std::to_string(win.width) + ") is empty or not inside the " +
        std::to_string(height) + "x" + std::to_string(width) + " image");
  }
  const bool cmyk = c.jpeg_color_space == JCS_CMYK || c.jpeg_color_space == JCS_YCCK;
  J_COLOR_SPACE out_space = cmyk                 ? JCS_CMYK
                            : opts.channels == 1 ? JCS_GRAYSCALE
                                                 : JCS_RGB;
  if (!JpegConfigure(&d, scale_num, out_space, opts.fast_idct, opts.fancy_upsampling)) {
    return JpegStatus(d.err);
  }
  // The window in scaled pixels: top-left floor(.. * s), size ceil(.. * s). Inside the
  // scaled image because floor(a) + ceil(b) <= ceil(a + b).
  const int64_t n = scale_num;
  JpegRowPlan plan;
  plan.y = static_cast<JDIMENSION>(win.y * n / 8);
  plan.x = static_cast<JDIMENSION>(win.x * n / 8);
  plan.height = static_cast<JDIMENSION>((win.height * n + 7) / 8);
  plan.width = static_cast<JDIMENSION>((win.width * n + 7) / 8);
  if (plan.y + plan.height > c.output_height || plan.x + plan.width > c.output_width) {
    return InternalError("jpeg: scaled window outside the scaled image");
  }
  // Fancy (triangle) chroma upsampling reads one neighbour on each side: ask for a column
  // more on the left and two more on the right, so the pixels we keep are computed as in
  // a full decode, not as edge pixels of the cropped row.
  plan.crop_x = plan.x > 0 ? plan.x - 1 : 0;
  plan.crop_width =
      std::min<JDIMENSION>(plan.x + plan.width + 2, c.output_width) - plan.crop_x;
  plan.channels = opts.channels;
  plan.cmyk = cmyk;
  plan.cmyk_inverted = c.saw_Adobe_marker;
  plan.out_columns =
      cmyk ? plan.width
           : std::min<JDIMENSION>(plan.crop_width + kMaxCropGrowth, c.output_width);

  JpegRegion region;
  SLUICE_ASSIGN_OR_RETURN(
      region.pixels,
      Tensor::Allocate(DType::kUInt8, Shape{plan.height, plan.out_columns, plan.channels}));
  plan.out = region.pixels.mutable_data<uint8_t>();
  plan.out_stride = static_cast<size_t>(plan.out_columns) * plan.channels;
  JDIMENSION left = 0;
  plan.left = &left;
  if (!JpegDecodeRows(&d, &plan)) return JpegStatus(d.err);
  region.window = ImageWindow{0, left, plan.height, plan.width};
  return region;
}

// DecodeWithLibjpeg's window as a packed tensor (the region itself when it spans whole
// rows, as for a whole image).
Result<Tensor> DecodePackedWithLibjpeg(std::string_view data, const ImageWindow* window,
                                       int scale_num, const JpegDecodeOptions& opts) {
  SLUICE_ASSIGN_OR_RETURN(JpegRegion region, DecodeWithLibjpeg(data, window, scale_num, opts));
  const Tensor& t = region.pixels;
  const ImageWindow& w = region.window;
  if (w.x == 0 && w.width == t.dim(1)) return std::move(region.pixels);
  const int64_t ch = t.dim(2);
  SLUICE_ASSIGN_OR_RETURN(Tensor out,
                          Tensor::Allocate(DType::kUInt8, Shape{w.height, w.width, ch}));
  const uint8_t* src = t.data<uint8_t>() + w.x * ch;
  uint8_t* dst = out.mutable_data<uint8_t>();
  const size_t row = static_cast<size_t>(w.width * ch), stride = t.dim(1) * ch;
  for (int64_t r = 0; r < w.height; ++r) std::memcpy(dst + r * row, src + r * stride, row);
  return out;
}

// ---------------------------------------------------------------------------------------
// TurboJPEG: one decompress handle per thread, destroyed with the thread. A handle that
// saw an error is replaced: TurboJPEG 2.1 can leave it in a state where the next
// tjDecompressHeader3 succeeds without setting the dimensions (width 0), and
// tjDecompress2 then writes the whole image into a buffer sized for none (found by
// valgrind when a parallel decode map met a truncated JPEG and then a good one on the same
// thread).

class TjHandle {
 public:
  TjHandle() : handle_(tjInitDecompress()) {}
  ~TjHandle() {
    if (handle_ != nullptr) tjDestroy(handle_);
  }
  TjHandle(const TjHandle&) = delete;
  TjHandle& operator=(const TjHandle&) = delete;
  tjhandle get() const { return handle_; }
  void Reset() {
    if (handle_ != nullptr) tjDestroy(handle_);
    handle_ = tjInitDecompress();
  }

 private:
  tjhandle handle_;
};

TjHandle& ThreadDecompressor() {
  thread_local TjHandle handle;
  return handle;
}

// ---------------------------------------------------------------------------------------
// libpng.

struct PngReader {
  png_structp png = nullptr;
  png_infop info = nullptr;
  const uint8_t* data = nullptr;
  size_t size = 0;
  size_t pos = 0;
  char message[256] = {0};

  ~PngReader() {
    if (png != nullptr) png_destroy_read_struct(&png, info ? &info : nullptr, nullptr);
  }
};

void PngErrorFn(png_structp png, png_const_charp msg) {
  auto* r = static_cast<PngReader*>(png_get_error_ptr(png));
  std::snprintf(r->message, sizeof(r->message), "%s", msg ? msg : "unknown error");
  png_longjmp(png, 1);
}

// Warnings (bad ancillary chunks, known sRGB profile quirks) do not affect the pixels.
void PngWarningFn(png_structp, png_const_charp) {}

void PngReadFn(png_structp png, png_bytep out, png_size_t n) {
  auto* r = static_cast<PngReader*>(png_get_io_ptr(png));
  if (n > r->size - r->pos) png_error(png, "unexpected end of data (truncated file)");
  std::memcpy(out, r->data + r->pos, n);
  r->pos += n;
}

Status PngCorrupt(const PngReader& r) {
  return DataLossError(std::string("png: corrupt data: ") + r.message);
}

Status PngOpen(PngReader* r, std::string_view data) {
  if (data.empty()) return InvalidArgumentError("png: empty input");
  if (data.size() < 8 || std::memcmp(data.data(), kPngSignature, 8) != 0) {
    return InvalidArgumentError("png: not a PNG file (bad signature)");
  }
  r->data = reinterpret_cast<const uint8_t*>(data.data());
  r->size = data.size();
  r->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, r, PngErrorFn, PngWarningFn);
  if (r->png == nullptr) return ResourceExhaustedError("png: cannot create a reader");
  r->info = png_create_info_struct(r->png);
  if (r->info == nullptr) return ResourceExhaustedError("png: cannot create a reader");
  png_set_read_fn(r->png, r, PngReadFn);
  return Status::OK();
}

bool PngReadInfo(PngReader* r) {
  if (setjmp(png_jmpbuf(r->png))) return false;
  png_read_info(r->png, r->info);
  return true;
}

// Sets up 8-bit output without alpha, RGB when `rgb` (gray sources are expanded), and
// reads every row.
bool PngReadRows(PngReader* r, bool rgb, png_bytep* rows, size_t row_bytes) {
  if (setjmp(png_jmpbuf(r->png))) return false;
  png_structp png = r->png;
  png_set_expand(png);    // palette -> RGB, gray < 8 bits -> 8 bits, tRNS -> alpha
  png_set_strip_16(png);  // keep the high byte
  png_set_strip_alpha(png);
  if (rgb && (png_get_color_type(png, r->info) & PNG_COLOR_MASK_COLOR) == 0) {
    png_set_gray_to_rgb(png);
  }
  png_read_update_info(png, r->info);
  if (png_get_rowbytes(png, r->info) != row_bytes) png_error(png, "unexpected row size");
  png_read_image(png, rows);
  return true;
}

}  // namespace

ImageFormat DetectImageFormat(std::string_view data) {
  if (data.size() >= 3 && static_cast<uint8_t>(data[0]) == 0xFF &&
      static_cast<uint8_t>(data[1]) == 0xD8 && static_cast<uint8_t>(data[2]) == 0xFF) {
    return ImageFormat::kJpeg;
  }
  if (data.size() >= 8 && std::memcmp(data.data(), kPngSignature, 8) == 0) {
    return ImageFormat::kPng;
  }
  return ImageFormat::kUnknown;
}

Result<ImageInfo> ReadJpegInfo(std::string_view data) {
  SLUICE_RETURN_IF_ERROR(CheckJpegInput(data));
  JpegDecoder d;
  if (!JpegCreate(&d)) return JpegStatus(d.err);
  if (!JpegReadHeader(&d, reinterpret_cast<const uint8_t*>(data.data()), data.size())) {
    return JpegStatus(d.err);
  }
  ImageInfo info;
  info.height = d.cinfo.image_height;
  info.width = d.cinfo.image_width;
  info.channels = d.cinfo.num_components;
  return info;
}

Result<Tensor> DecodeJpeg(std::string_view data, const JpegDecodeOptions& opts) {
  SLUICE_RETURN_IF_ERROR(CheckJpegInput(data));
  SLUICE_RETURN_IF_ERROR(CheckChannels("jpeg", opts.channels));
  TjHandle& handle = ThreadDecompressor();
  tjhandle tj = handle.get();
  if (tj == nullptr) return DecodePackedWithLibjpeg(data, nullptr, 8, opts);
  const auto* buf = reinterpret_cast<const unsigned char*>(data.data());
  const auto size = static_cast<unsigned long>(data.size());
  int width = 0, height = 0, subsamp = 0, colorspace = 0;
  // TurboJPEG 2.1 refuses subsamplings it has no name for and cannot convert CMYK: the
  // libjpeg path decodes those, and classifies header errors precisely.
  if (tjDecompressHeader3(tj, buf, size, &width, &height, &subsamp, &colorspace) != 0) {
    handle.Reset();
    return DecodePackedWithLibjpeg(data, nullptr, 8, opts);
  }
  // Never pass 0 to tjDecompress2: it would mean "the image's own size", whatever we
  // allocated.
  if (width <= 0 || height <= 0 || colorspace == TJCS_CMYK || colorspace == TJCS_YCCK) {
    return DecodePackedWithLibjpeg(data, nullptr, 8, opts);
  }
  if (int64_t{height} * width > kMaxImagePixels) return TooLarge("jpeg", height, width);
  SLUICE_ASSIGN_OR_RETURN(
      Tensor out, Tensor::Allocate(DType::kUInt8, Shape{height, width, opts.channels}));
  int flags = TJFLAG_STOPONWARNING;
  if (opts.fast_idct) flags |= TJFLAG_FASTDCT;
  if (!opts.fancy_upsampling) flags |= TJFLAG_FASTUPSAMPLE;
  if (tjDecompress2(tj, buf, size, out.mutable_data<uint8_t>(), width, 0, height,
                    opts.channels == 1 ? TJPF_GRAY : TJPF_RGB, flags) != 0) {
    // TurboJPEG stops at any warning without saying which: the libjpeg path tells the
    // harmless one (extraneous bytes) from corruption.
    const bool warning = tjGetErrorCode(tj) == TJERR_WARNING;
    // The header parsed, so what fails now (a warning or a fatal error) is the data.
    const std::string message = std::string("jpeg: corrupt data: ") + tjGetErrorStr2(tj);
    handle.Reset();
    if (warning) return DecodePackedWithLibjpeg(data, nullptr, 8, opts);
    return DataLossError(message);
  }
  return out;
}

Result<Tensor> DecodeJpegWindow(std::string_view data, const ImageWindow& window,
                                int scale_num, const JpegDecodeOptions& opts) {
  return DecodePackedWithLibjpeg(data, &window, scale_num, opts);
}

Result<JpegRegion> DecodeJpegRegion(std::string_view data, const ImageWindow& window,
                                    int scale_num, const JpegDecodeOptions& opts) {
  return DecodeWithLibjpeg(data, &window, scale_num, opts);
}

Result<ImageInfo> ReadPngInfo(std::string_view data) {
  PngReader r;
  SLUICE_RETURN_IF_ERROR(PngOpen(&r, data));
  if (!PngReadInfo(&r)) return PngCorrupt(r);
  ImageInfo info;
  info.height = png_get_image_height(r.png, r.info);
  info.width = png_get_image_width(r.png, r.info);
  switch (png_get_color_type(r.png, r.info)) {
    case PNG_COLOR_TYPE_GRAY:
      info.channels = 1;
      break;
    case PNG_COLOR_TYPE_GRAY_ALPHA:
      info.channels = 2;
      break;
    case PNG_COLOR_TYPE_PALETTE:
      info.channels = png_get_valid(r.png, r.info, PNG_INFO_tRNS) ? 4 : 3;
      break;
    case PNG_COLOR_TYPE_RGB:
      info.channels = 3;
      break;
    default:
      info.channels = 4;
      break;
  }
  return info;
}

Result<Tensor> DecodePng(std::string_view data, int channels) {
  SLUICE_RETURN_IF_ERROR(CheckChannels("png", channels));
  PngReader r;
  SLUICE_RETURN_IF_ERROR(PngOpen(&r, data));
  if (!PngReadInfo(&r)) return PngCorrupt(r);
  const int64_t height = png_get_image_height(r.png, r.info);
  const int64_t width = png_get_image_width(r.png, r.info);
  if (height * width > kMaxImagePixels) return TooLarge("png", height, width);
  const bool color = (png_get_color_type(r.png, r.info) & PNG_COLOR_MASK_COLOR) != 0;
  // Color to gray: decode RGB, then PIL's "L" conversion (libpng's rgb_to_gray rounds
  // differently).
  const bool to_gray = channels == 1 && color;
  const int decoded_channels = to_gray ? 3 : channels;
  SLUICE_ASSIGN_OR_RETURN(
      Tensor out, Tensor::Allocate(DType::kUInt8, Shape{height, width, channels}));
  Tensor rgb;
  if (to_gray) {
    SLUICE_ASSIGN_OR_RETURN(rgb,
                            Tensor::Allocate(DType::kUInt8, Shape{height, width, 3}));
  }
  uint8_t* pixels = to_gray ? rgb.mutable_data<uint8_t>() : out.mutable_data<uint8_t>();
  const size_t row_bytes = static_cast<size_t>(width) * decoded_channels;
  std::vector<png_bytep> rows(height);
  for (int64_t i = 0; i < height; ++i) rows[i] = pixels + i * row_bytes;
  if (!PngReadRows(&r, decoded_channels == 3, rows.data(), row_bytes))
    return PngCorrupt(r);
  if (to_gray) {
    uint8_t* dst = out.mutable_data<uint8_t>();
    const int64_t n = height * width;
    for (int64_t i = 0; i < n; ++i, pixels += 3)
      dst[i] = Luma(pixels[0], pixels[1], pixels[2]);
  }
  return out;
}

}  // namespace sluice
