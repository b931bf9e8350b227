// The ImageNet-like JPEG generator (src/datagen/imagenet_like.h).
#include "datagen/imagenet_like.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <numbers>
#include <optional>
#include <regex>
#include <thread>
#include <vector>

#include "core/env.h"
#include "formats/image_codec.h"
#include "formats/tfrecord.h"
#include "runtime/resources.h"
#include "sluice/io.h"
#include "sluice/random.h"

namespace sluice {
namespace {

namespace fs = std::filesystem;

// Salts that separate the generator's streams from other users of the same seed.
constexpr uint64_t kImageSalt = 0x696d6167656e6574ULL;    // "imagenet"
constexpr uint64_t kShuffleSalt = 0x73687566666c6521ULL;  // "shuffle!"

// sin(2*pi*k/4096): the only trigonometry used per pixel (fixed, so renders do not depend
// on libm's vectorized variants).
constexpr int kSinBits = 12;
const float* SinTable() {
  static const std::array<float, 1 << kSinBits>* table = [] {
    auto* t = new std::array<float, 1 << kSinBits>;
    for (int i = 0; i < (1 << kSinBits); ++i) {
      (*t)[i] =
          static_cast<float>(std::sin(2.0 * std::numbers::pi * i / (1 << kSinBits)));
    }
    return t;
  }();
  return table->data();
}
// sin(2*pi*cycles).
inline float SinCycles(const float* table, float cycles) {
  const float frac = cycles - std::floor(cycles);
  return table[static_cast<int>(frac * (1 << kSinBits)) & ((1 << kSinBits) - 1)];
}

double UniformIn(Rng& rng, double lo, double hi) {
  return lo + (hi - lo) * rng.Uniform();
}
double LogUniformIn(Rng& rng, double lo, double hi) {
  return std::exp(UniformIn(rng, std::log(lo), std::log(hi)));
}

// HSV (all in [0, 1]) to RGB in [0, 255].
std::array<float, 3> HsvToRgb(double h, double s, double v) {
  const double hh = (h - std::floor(h)) * 6;
  const int i = static_cast<int>(hh) % 6;
  const double f = hh - std::floor(hh);
  const double p = v * (1 - s), q = v * (1 - s * f), t = v * (1 - s * (1 - f));
  double r, g, b;
  switch (i) {
    case 0:
      r = v, g = t, b = p;
      break;
    case 1:
      r = q, g = v, b = p;
      break;
    case 2:
      r = p, g = v, b = t;
      break;
    case 3:
      r = p, g = q, b = v;
      break;
    case 4:
      r = t, g = p, b = v;
      break;
    default:
      r = v, g = p, b = q;
      break;
  }
  return {static_cast<float>(r * 255), static_cast<float>(g * 255),
          static_cast<float>(b * 255)};
}

// The class's hue, spread around the color wheel by the golden ratio.
double ClassHue(int64_t label) {
  const double h = static_cast<double>(label) * 0.6180339887498949;
  return h - std::floor(h);
}

// A color near the class hue (or any color, one time in three).
std::array<float, 3> DrawColor(Rng& rng, int64_t label) {
  const double hue =
      rng.Uniform() < 0.67 ? ClassHue(label) + 0.08 * rng.Normal() : rng.Uniform();
  return HsvToRgb(hue, UniformIn(rng, 0.15, 0.85), UniformIn(rng, 0.2, 0.95));
}

ImagenetLikeImage DrawParams(Rng& rng, int64_t num_classes, int64_t index) {
  ImagenetLikeImage p;
  p.index = index;
  p.label = index % num_classes;
  p.width =
      std::clamp<int64_t>(std::llround(440.0 * std::exp(0.2 * rng.Normal())), 250, 800);
  const double pick = rng.Uniform();
  double aspect;
  if (pick < 0.40) {
    aspect = 4.0 / 3;
  } else if (pick < 0.55) {
    aspect = 3.0 / 4;
  } else if (pick < 0.70) {
    aspect = 1.0;
  } else if (pick < 0.85) {
    aspect = 3.0 / 2;
  } else if (pick < 0.90) {
    aspect = 2.0 / 3;
  } else {
    aspect = LogUniformIn(rng, 0.6, 2.0);
  }
  aspect *= std::exp(0.03 * rng.Normal());
  p.height =
      std::clamp<int64_t>(std::llround(static_cast<double>(p.width) / aspect), 200, 800);
  const int64_t q = rng.Uniform() < 0.7 ? std::llround(90.0 + 2.5 * rng.Normal())
                                        : 75 + static_cast<int64_t>(rng.UniformInt(23));
  p.quality = static_cast<int>(std::clamp<int64_t>(q, 75, 97));
  p.channels = rng.Uniform() < 0.02 ? 1 : 3;
  return p;
}

// The image being drawn: three float planes (R, G, B), row-major, `w` floats per row.
struct Canvas {
  int64_t h = 0, w = 0;
  float* plane[3] = {nullptr, nullptr, nullptr};
  float* row(int c, int64_t y) const { return plane[c] + y * w; }
};

// Bilinear interpolation of a coarse grid along x for one row: out[x] for x in [0, w),
// from `line` (grid values along the row, already interpolated in y) spaced `cell` apart.
struct GridAxis {
  std::vector<int32_t> i0;
  std::vector<float> f;
  GridAxis(int64_t n, double cell) : i0(n), f(n) {
    for (int64_t x = 0; x < n; ++x) {
      const double g = x / cell;
      i0[x] = static_cast<int32_t>(g);
      f[x] = static_cast<float>(g - i0[x]);
    }
  }
  void Interpolate(const float* line, float* __restrict out) const {
    for (size_t x = 0; x < i0.size(); ++x) {
      out[x] = line[i0[x]] + f[x] * (line[i0[x] + 1] - line[i0[x]]);
    }
  }
};

// A coarse random grid (values from `draw`) covering h x w at `cell` pixels per cell;
// Row(y) fills a row of its bilinear interpolation.
class CoarseField {
 public:
  template <typename Draw>
  CoarseField(int64_t h, int64_t w, double cell, Draw draw)
      : cell_(cell),
        gw_(static_cast<int64_t>(w / cell) + 2),
        gh_(static_cast<int64_t>(h / cell) + 2),
        grid_(gw_ * gh_),
        line_(gw_),
        x_axis_(w, cell) {
    for (float& g : grid_) g = draw();
  }
  void Row(int64_t y, float* __restrict out) {
    const double gy = y / cell_;
    const int64_t y0 = static_cast<int64_t>(gy);
    const float fy = static_cast<float>(gy - y0);
    const float* r0 = &grid_[y0 * gw_];
    const float* r1 = r0 + gw_;
    for (int64_t i = 0; i < gw_; ++i) line_[i] = r0[i] + fy * (r1[i] - r0[i]);
    x_axis_.Interpolate(line_.data(), out);
  }

 private:
  double cell_;
  int64_t gw_, gh_;
  std::vector<float> grid_, line_;
  GridAxis x_axis_;
};

// The image's texture: a periodic tile of kTile x kTile texels, three planes, zero mean
// and unit standard deviation (so amplitudes are in levels). Three octaves (per texel, a
// cell of about 2.5 texels and one of about 7); part of each value is shared by the
// channels (luminance), part per channel (color).
constexpr int kTileBits = 7;
constexpr int kTile = 1 << kTileBits;
constexpr int kTileMask = kTile - 1;

inline float ByteToUnit(uint32_t b) {
  return (static_cast<float>(b & 0xff) - 127.5f) / 127.5f;
}

struct Texture {
  std::vector<float> plane[3];
  const float* row(int c, int64_t y) const {
    return plane[c].data() + (y & kTileMask) * kTile;
  }
};

Texture MakeTexture(Rng& rng) {
  const float chroma = static_cast<float>(UniformIn(rng, 0.15, 0.5));
  auto texel = [&](float* out) {
    const uint32_t r = rng.Next32();
    const float l = ByteToUnit(r);
    for (int c = 0; c < 3; ++c)
      out[c] = (1 - chroma) * l + chroma * ByteToUnit(r >> (8 * (c + 1)));
  };
  Texture t;
  for (auto& p : t.plane) p.assign(kTile * kTile, 0.0f);
  const float w_white = static_cast<float>(UniformIn(rng, 0.4, 0.9));
  for (int i = 0; i < kTile * kTile; ++i) {
    float v[3];
    texel(v);
    for (int c = 0; c < 3; ++c) t.plane[c][i] = w_white * v[c];
  }
  static constexpr int kFine[] = {43, 51, 64};
  static constexpr int kCoarse[] = {16, 18, 21};
  const int grids[2] = {kFine[rng.UniformInt(3)], kCoarse[rng.UniformInt(3)]};
  const float weights[2] = {static_cast<float>(UniformIn(rng, 0.4, 1.0)),
                            static_cast<float>(UniformIn(rng, 0.5, 1.2))};
  for (int o = 0; o < 2; ++o) {
    const int g = grids[o];
    std::vector<float> grid(g * g * 3);
    for (int i = 0; i < g * g; ++i) texel(&grid[3 * i]);
    const float scale = static_cast<float>(g) / kTile;
    for (int y = 0; y < kTile; ++y) {
      const float gy = y * scale;
      const int y0 = static_cast<int>(gy), y1 = (y0 + 1) % g;
      const float fy = gy - y0;
      for (int x = 0; x < kTile; ++x) {
        const float gx = x * scale;
        const int x0 = static_cast<int>(gx), x1 = (x0 + 1) % g;
        const float fx = gx - x0;
        for (int c = 0; c < 3; ++c) {
          const float a = grid[3 * (y0 * g + x0) + c], b = grid[3 * (y0 * g + x1) + c];
          const float d = grid[3 * (y1 * g + x0) + c], e = grid[3 * (y1 * g + x1) + c];
          const float top = a + fx * (b - a), bottom = d + fx * (e - d);
          t.plane[c][y * kTile + x] += weights[o] * (top + fy * (bottom - top));
        }
      }
    }
  }
  double sum = 0, sum2 = 0;
  for (const auto& p : t.plane) {
    for (float v : p) {
      sum += v;
      sum2 += static_cast<double>(v) * v;
    }
  }
  const double count = 3.0 * kTile * kTile, mean = sum / count;
  const float inv_std = static_cast<float>(1.0 / std::sqrt(sum2 / count - mean * mean));
  const float fmean = static_cast<float>(mean);
  for (auto& p : t.plane) {
    for (float& v : p) v = (v - fmean) * inv_std;
  }
  return t;
}

// Paints one rotated ellipse or rectangle with shading, its own texture (the image's tile
// at an offset and zoom, with its own amplitude), optional stripes, and an antialiased
// edge of width `soft` pixels. Sizes (the semi-axis a) are a log-uniform fraction
// [min_size, max_size] of the image's shorter side.
void PaintShape(Rng& rng, const float* sin_table, const Texture& tex, const Canvas& img,
                int64_t label, double detail, double min_size, double max_size) {
  const int64_t h = img.h, w = img.w;
  const bool ellipse = rng.Uniform() < 0.55;
  const double cx = UniformIn(rng, -0.1, 1.1) * w, cy = UniformIn(rng, -0.1, 1.1) * h;
  const double a = std::min(w, h) * LogUniformIn(rng, min_size, max_size);
  const double b = a * LogUniformIn(rng, 0.4, 2.5);
  const double theta = rng.Uniform() * std::numbers::pi;
  const std::array<float, 3> color = DrawColor(rng, label);
  const double shade = UniformIn(rng, -45, 45);
  const float soft =
      static_cast<float>(rng.Uniform() < 0.6 ? 0.7 : LogUniformIn(rng, 1.5, 5));
  const float opacity =
      static_cast<float>(rng.Uniform() < 0.6 ? 1.0 : UniformIn(rng, 0.6, 1));
  const bool striped = rng.Uniform() < 0.3;
  const double period = LogUniformIn(rng, 3, 16);
  const double psi = rng.Uniform() * std::numbers::pi;
  const float stripe_amp = static_cast<float>(UniformIn(rng, 6, 28));
  const float tex_amp =
      static_cast<float>(std::min(75.0, LogUniformIn(rng, 18, 65) * detail));
  const int zoom = static_cast<int>(rng.UniformInt(2));
  const int64_t ox = static_cast<int64_t>(rng.UniformInt(kTile));
  const int64_t oy = static_cast<int64_t>(rng.UniformInt(kTile));

  const float ct = static_cast<float>(std::cos(theta)),
              st = static_cast<float>(std::sin(theta));
  const float sx = static_cast<float>(std::cos(psi) / period);
  const float sy = static_cast<float>(std::sin(psi) / period);
  const float fa = static_cast<float>(a), fb = static_cast<float>(b);
  const float inv_a = 1.0f / fa, inv_b = 1.0f / fb, min_ab = std::min(fa, fb);
  const float inv_soft = 1.0f / soft;
  const float shade_f = static_cast<float>(shade);
  const double reach = std::max(a, b) + soft + 1;
  const int64_t y_begin =
      std::max<int64_t>(0, static_cast<int64_t>(std::floor(cy - reach)));
  const int64_t y_end = std::min<int64_t>(h, static_cast<int64_t>(std::ceil(cy + reach)));
  const float fcx = static_cast<float>(cx), fcy = static_cast<float>(cy);
  // Per row, the x interval that can be covered: the shape grown by the edge and a pixel
  // and a half (the loop below still tests every pixel; this only skips empty space).
  const double margin = soft * 0.5 + 1.5;
  const double ea = 1.0 / (a * a), eb = 1.0 / (b * b);
  const double er = 1.0 + margin / std::min(a, b);
  const double qa = ct * ct * ea + st * st * eb;
  for (int64_t y = y_begin; y < y_end; ++y) {
    const double ddy = static_cast<double>(y) - cy;
    double lo, hi;
    if (ellipse) {
      const double qb = 2 * ddy * ct * st * (ea - eb);
      const double qc = ddy * ddy * (st * st * ea + ct * ct * eb) - er * er;
      const double disc = qb * qb - 4 * qa * qc;
      if (disc < 0) continue;
      const double root = std::sqrt(disc);
      lo = (-qb - root) / (2 * qa);
      hi = (-qb + root) / (2 * qa);
    } else {
      lo = -reach;
      hi = reach;
      // |dx ct + ddy st| <= a + margin and |ddy ct - dx st| <= b + margin.
      const double ra = a + margin, rb = b + margin;
      if (std::fabs(ct) > 1e-6) {
        const double l = (-ra - ddy * st) / ct, r = (ra - ddy * st) / ct;
        lo = std::max(lo, std::min(l, r));
        hi = std::min(hi, std::max(l, r));
      } else if (std::fabs(ddy * st) > ra) {
        continue;
      }
      if (std::fabs(st) > 1e-6) {
        const double l = (ddy * ct - rb) / st, r = (ddy * ct + rb) / st;
        lo = std::max(lo, std::min(l, r));
        hi = std::min(hi, std::max(l, r));
      } else if (std::fabs(ddy * ct) > rb) {
        continue;
      }
    }
    const int64_t x_begin =
        std::max<int64_t>(0, static_cast<int64_t>(std::floor(cx + lo)) - 1);
    const int64_t x_end =
        std::min<int64_t>(w, static_cast<int64_t>(std::ceil(cx + hi)) + 2);
    const float dy = static_cast<float>(y) - fcy;
    float* r0 = img.row(0, y);
    float* r1 = img.row(1, y);
    float* r2 = img.row(2, y);
    const int64_t ty = (y + oy) >> zoom;
    const float* t0 = tex.row(0, ty);
    const float* t1 = tex.row(1, ty);
    const float* t2 = tex.row(2, ty);
    for (int64_t x = x_begin; x < x_end; ++x) {
      const float dx = static_cast<float>(x) - fcx;
      const float u = dx * ct + dy * st, v = dy * ct - dx * st;
      float dist;
      if (ellipse) {
        const float nu = u * inv_a, nv = v * inv_b;
        dist = (1.0f - std::sqrt(nu * nu + nv * nv)) * min_ab;
      } else {
        dist = std::min(fa - std::fabs(u), fb - std::fabs(v));
      }
      float cov = dist * inv_soft + 0.5f;
      if (cov <= 0.0f) continue;
      cov = std::min(cov, 1.0f) * opacity;
      float add = shade_f * u * inv_a;
      if (striped) add += stripe_amp * SinCycles(sin_table, dx * sx + dy * sy);
      const int64_t tx = ((x + ox) >> zoom) & kTileMask;
      r0[x] += cov * (color[0] + add + tex_amp * t0[tx] - r0[x]);
      r1[x] += cov * (color[1] + add + tex_amp * t1[tx] - r1[x]);
      r2[x] += cov * (color[2] + add + tex_amp * t2[tx] - r2[x]);
    }
  }
}

// Adds `amp` * the tile to `row` (w floats), wrapping the tile every kTile pixels.
void AddTiled(float* __restrict row, const float* __restrict tile_row,
              const float* __restrict amp, int64_t w) {
  for (int64_t x0 = 0; x0 < w; x0 += kTile) {
    const int64_t n = std::min<int64_t>(kTile, w - x0);
    float* __restrict r = row + x0;
    const float* __restrict a = amp + x0;
    for (int64_t j = 0; j < n; ++j) r[j] += a[j] * tile_row[j];
  }
}

// Draws the image's content after its parameters, from the same stream.
Tensor Render(Rng& rng, const ImagenetLikeImage& p) {
  const int64_t h = p.height, w = p.width;
  const float* sin_table = SinTable();
  thread_local std::vector<float> buffer;
  buffer.resize(static_cast<size_t>(h * w * 3));
  Canvas img;
  img.h = h;
  img.w = w;
  for (int c = 0; c < 3; ++c) img.plane[c] = buffer.data() + c * h * w;
  // How busy this image is: scales the texture amplitudes and the number of shapes.
  const double detail = std::exp(0.4 * rng.Normal());
  const Texture tex = MakeTexture(rng);

  // Background: a gradient plus a few low-frequency sinusoids, near the class hue, with
  // the texture where a coarse mask lets it through.
  const std::array<float, 3> base = DrawColor(rng, p.label);
  std::array<float, 3> gx, gy;
  for (int c = 0; c < 3; ++c) {
    gx[c] = static_cast<float>(UniformIn(rng, -60, 60));
    gy[c] = static_cast<float>(UniformIn(rng, -60, 60));
  }
  const int waves = 2 + static_cast<int>(rng.UniformInt(3));
  std::vector<std::vector<float>> wx_sin(waves, std::vector<float>(w)),
      wx_cos(waves, std::vector<float>(w)), wy_sin(waves, std::vector<float>(h)),
      wy_cos(waves, std::vector<float>(h));
  std::vector<std::array<float, 3>> amp(waves);
  for (int k = 0; k < waves; ++k) {
    const double fx = UniformIn(rng, -2.5, 2.5) / w, fy = UniformIn(rng, -2.5, 2.5) / h;
    const double phase = rng.Uniform();
    const double a = UniformIn(rng, 8, 35);
    for (int c = 0; c < 3; ++c)
      amp[k][c] = static_cast<float>(a * (1 + 0.4 * rng.Normal()));
    for (int64_t x = 0; x < w; ++x) {
      const float t = static_cast<float>(fx * x + phase);
      wx_sin[k][x] = SinCycles(sin_table, t);
      wx_cos[k][x] = SinCycles(sin_table, t + 0.25f);
    }
    for (int64_t y = 0; y < h; ++y) {
      const float t = static_cast<float>(fy * y);
      wy_sin[k][y] = SinCycles(sin_table, t);
      wy_cos[k][y] = SinCycles(sin_table, t + 0.25f);
    }
  }
  const float bg_tex =
      static_cast<float>(std::min(75.0, LogUniformIn(rng, 18, 65) * detail));
  CoarseField mask_field(h, w, UniformIn(rng, 60, 160),
                         [&] { return static_cast<float>(UniformIn(rng, -0.2, 1.6)); });
  std::vector<float> xs(w), mask(w), wave(w);
  for (int64_t x = 0; x < w; ++x) xs[x] = static_cast<float>(x) / w - 0.5f;
  for (int64_t y = 0; y < h; ++y) {
    const float ys = static_cast<float>(y) / h - 0.5f;
    mask_field.Row(y, mask.data());
    for (int64_t x = 0; x < w; ++x)
      mask[x] = std::min(std::max(mask[x], 0.0f), 1.0f) * bg_tex;
    for (int c = 0; c < 3; ++c) {
      float* __restrict row = img.row(c, y);
      const float rb = base[c] + gy[c] * ys, g = gx[c];
      for (int64_t x = 0; x < w; ++x) row[x] = rb + g * xs[x];
      AddTiled(row, tex.row(c, y), mask.data(), w);
    }
    for (int k = 0; k < waves; ++k) {
      const float cy = wy_cos[k][y], sy = wy_sin[k][y];
      const float* __restrict sx = wx_sin[k].data();
      const float* __restrict cx = wx_cos[k].data();
      float* __restrict s = wave.data();
      for (int64_t x = 0; x < w; ++x)
        s[x] = sx[x] * cy + cx[x] * sy;  // sin(2pi(fx x+fy y+phase))
      for (int c = 0; c < 3; ++c) {
        float* __restrict row = img.row(c, y);
        const float a = amp[k][c];
        for (int64_t x = 0; x < w; ++x) row[x] += a * s[x];
      }
    }
  }

  // Shapes, painted back to front, then clutter: many small objects, the edges
  // photographs are full of.
  const int shapes = std::clamp(
      static_cast<int>(std::lround(4 + rng.UniformInt(8) * std::min(detail, 1.6))), 4,
      14);
  for (int i = 0; i < shapes; ++i) {
    PaintShape(rng, sin_table, tex, img, p.label, detail, 0.04, 0.4);
  }
  const int clutter =
      static_cast<int>(std::min(200.0, LogUniformIn(rng, 10, 120) * detail));
  for (int i = 0; i < clutter; ++i) {
    PaintShape(rng, sin_table, tex, img, p.label, detail, 0.008, 0.05);
  }

  // Lighting: a coarse octave of value noise over everything; film grain (luma),
  // triangular with peak amplitude 4..10 levels; quantization.
  const double light_amp = UniformIn(rng, 3, 10);
  CoarseField light(h, w, UniformIn(rng, 12, 40), [&] {
    return static_cast<float>(light_amp * (2.0 * rng.UniformFloat() - 1.0));
  });
  const float grain = static_cast<float>(UniformIn(rng, 4, 10)) / 255.0f;
  Tensor out(DType::kUInt8, Shape{h, w, p.channels});
  uint8_t* dst = out.mutable_data<uint8_t>();
  std::vector<float> add(w);
  std::vector<uint8_t> q(w * 3);
  for (int64_t y = 0; y < h; ++y) {
    light.Row(y, add.data());
    for (int64_t x = 0; x < w; x += 2) {
      const uint32_t bits = rng.Next32();
      add[x] += static_cast<float>(static_cast<int>(bits & 0xff) +
                                   static_cast<int>((bits >> 8) & 0xff) - 255) *
                grain;
      if (x + 1 < w) {
        add[x + 1] += static_cast<float>(static_cast<int>((bits >> 16) & 0xff) +
                                         static_cast<int>(bits >> 24) - 255) *
                      grain;
      }
    }
    uint8_t* out_row = dst + y * w * p.channels;
    if (p.channels == 3) {
      for (int c = 0; c < 3; ++c) {
        const float* __restrict row = img.row(c, y);
        uint8_t* __restrict qc = q.data() + c * w;
        for (int64_t x = 0; x < w; ++x) {
          const float v = std::min(std::max(row[x] + add[x], 0.0f), 255.0f) + 0.5f;
          qc[x] = static_cast<uint8_t>(static_cast<int>(v));
        }
      }
      for (int64_t x = 0; x < w; ++x) {
        out_row[3 * x] = q[x];
        out_row[3 * x + 1] = q[w + x];
        out_row[3 * x + 2] = q[2 * w + x];
      }
    } else {
      const float* r0 = img.row(0, y);
      const float* r1 = img.row(1, y);
      const float* r2 = img.row(2, y);
      for (int64_t x = 0; x < w; ++x) {
        const float l = 0.299f * r0[x] + 0.587f * r1[x] + 0.114f * r2[x] + add[x];
        out_row[x] = static_cast<uint8_t>(
            static_cast<int>(std::min(std::max(l, 0.0f), 255.0f) + 0.5f));
      }
    }
  }
  return out;
}

Rng ImageRng(uint64_t seed, int64_t index) {
  return Rng(HashCombine(seed, kImageSalt), static_cast<uint64_t>(index));
}

std::string RelativePath(int64_t label, int64_t index) {
  const std::string wnid = ImagenetWnid(label);
  return "train/" + wnid + "/" + wnid + "_" + std::to_string(index) + ".JPEG";
}

Status WriteWholeFile(const std::string& path, std::string_view data) {
  // Through the file-system seam (src/core/env.h).
  auto f = Env::Default()->NewWritableFile(path);
  Status s = f.ok() ? (*f)->Append(data) : f.status();
  if (s.ok()) s = (*f)->Close();
  if (!s.ok()) return UnavailableError("datagen: " + s.message());
  return Status::OK();
}

std::string SerializeExample(const std::string& jpeg, const ImagenetLikeImage& p) {
  io::ExampleBuilder ex;  // deterministic: features in key order
  ex.AddBytes("image/encoded", jpeg)
      .AddInt64("image/class/label", p.label)
      .AddInt64("image/height", p.height)
      .AddInt64("image/width", p.width);
  return ex.Serialize();
}

// Removes files of an earlier run that follow this generator's naming (and only those).
Status RemoveStaleFiles(const std::string& out_dir) {
  std::error_code ec;
  fs::remove(fs::path(out_dir) / "MANIFEST", ec);
  static const std::regex kShard("train-[0-9]{5}-of-[0-9]{5}");
  static const std::regex kClassDir("n[0-9]{8}");
  static const std::regex kJpeg("n[0-9]{8}_[0-9]+\\.JPEG");
  auto remove_matching = [&](const fs::path& dir, const std::regex& re) -> Status {
    if (!fs::is_directory(dir, ec)) return Status::OK();
    std::vector<fs::path> doomed;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      if (entry.is_regular_file(ec) &&
          std::regex_match(entry.path().filename().string(), re)) {
        doomed.push_back(entry.path());
      }
    }
    for (const fs::path& f : doomed) {
      if (!fs::remove(f, ec) && ec) {
        return UnavailableError("datagen: cannot remove stale " + f.string() + ": " +
                                ec.message());
      }
    }
    return Status::OK();
  };
  SLUICE_RETURN_IF_ERROR(remove_matching(fs::path(out_dir) / "tfrecord", kShard));
  const fs::path train = fs::path(out_dir) / "train";
  if (fs::is_directory(train, ec)) {
    for (const auto& entry : fs::directory_iterator(train, ec)) {
      if (entry.is_directory(ec) &&
          std::regex_match(entry.path().filename().string(), kClassDir)) {
        SLUICE_RETURN_IF_ERROR(remove_matching(entry.path(), kJpeg));
      }
    }
  }
  return Status::OK();
}

// One generated image, between a worker and the writer.
struct Generated {
  Status status;
  std::string jpeg;  // kept only when TFRecord shards are written
  ImagenetLikeImage params;
  std::string manifest_line;
};

}  // namespace

std::string ImagenetWnid(int64_t label) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "n%08lld", static_cast<long long>(label));
  return buf;
}

std::string TfrecordShardPath(const std::string& out_dir, int64_t shard,
                              int64_t num_shards) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), "/tfrecord/train-%05lld-of-%05lld",
                static_cast<long long>(shard), static_cast<long long>(num_shards));
  return out_dir + buf;
}

uint64_t Fnv1a64(std::string_view data) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : data) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

ImagenetLikeImage ImagenetLikeParams(uint64_t seed, int64_t num_classes, int64_t index) {
  Rng rng = ImageRng(seed, index);
  return DrawParams(rng, num_classes, index);
}

Tensor RenderImagenetLike(uint64_t seed, int64_t num_classes, int64_t index) {
  Rng rng = ImageRng(seed, index);
  const ImagenetLikeImage p = DrawParams(rng, num_classes, index);
  return Render(rng, p);
}

Result<std::string> EncodeImagenetLike(uint64_t seed, int64_t num_classes,
                                       int64_t index) {
  Rng rng = ImageRng(seed, index);
  const ImagenetLikeImage p = DrawParams(rng, num_classes, index);
  return EncodeJpeg(Render(rng, p), p.quality, "420");
}

Status GenerateImagenetLike(const std::string& out_dir, const ImagenetLikeOptions& opts,
                            DatagenProgressFn progress) {
  if (opts.num_images < 0 || opts.num_images > 1000000000) {
    return InvalidArgumentError("datagen imagenet: num_images must be in 0..10^9, got " +
                                std::to_string(opts.num_images));
  }
  if (opts.num_classes < 1 || opts.num_classes > 100000000) {
    return InvalidArgumentError("datagen imagenet: num_classes must be in 1..10^8, got " +
                                std::to_string(opts.num_classes));
  }
  if (opts.tfrecord_shards < 0 || opts.tfrecord_shards > 99999) {
    return InvalidArgumentError(
        "datagen imagenet: tfrecord_shards must be in 0..99999, got " +
        std::to_string(opts.tfrecord_shards));
  }
  if (opts.threads < 0) {
    return InvalidArgumentError("datagen imagenet: threads must be >= 0, got " +
                                std::to_string(opts.threads));
  }
  if (!opts.jpeg_folder && opts.tfrecord_shards == 0) {
    return InvalidArgumentError(
        "datagen imagenet: nothing to write (no JPEG folder and no TFRecord shards)");
  }
  const int64_t n = opts.num_images;
  const uint64_t seed = opts.seed;
  const int64_t shards = opts.tfrecord_shards;

  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec)
    return UnavailableError("datagen: cannot create " + out_dir + ": " + ec.message());
  SLUICE_RETURN_IF_ERROR(RemoveStaleFiles(out_dir));
  if (opts.jpeg_folder) {
    for (int64_t c = 0; c < std::min(n, opts.num_classes); ++c) {
      const std::string dir = out_dir + "/train/" + ImagenetWnid(c);
      fs::create_directories(dir, ec);
      if (ec)
        return UnavailableError("datagen: cannot create " + dir + ": " + ec.message());
    }
  }
  std::vector<std::unique_ptr<TFRecordWriter>> writers;
  if (shards > 0) {
    fs::create_directories(out_dir + "/tfrecord", ec);
    if (ec)
      return UnavailableError("datagen: cannot create " + out_dir +
                              "/tfrecord: " + ec.message());
    for (int64_t s = 0; s < shards; ++s) {
      SLUICE_ASSIGN_OR_RETURN(
          auto w, TFRecordWriter::Open(TfrecordShardPath(out_dir, s, shards)));
      writers.push_back(std::move(w));
    }
  }

  // The order images are produced in: a seeded permutation when sharding (position k goes
  // to shard k mod N), the identity otherwise.
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[i] = i;
  if (shards > 0) {
    Rng rng(HashCombine(seed, kShuffleSalt));
    for (int64_t i = n - 1; i > 0; --i) {
      std::swap(order[i], order[rng.UniformInt(static_cast<uint64_t>(i) + 1)]);
    }
  }

  // Workers render and encode positions in order of claim; the calling thread writes
  // the shards in position order through a bounded window of finished images.
  const int64_t threads = std::max<int64_t>(
      1, std::min<int64_t>(opts.threads > 0 ? opts.threads : AvailableCores(),
                           std::max<int64_t>(n, 1)));
  const int64_t window = std::max<int64_t>(16, 8 * threads);
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::optional<Generated>> slots(static_cast<size_t>(window));
  int64_t consumed = 0;  // positions the writer has taken (guarded by mu)
  bool stop = false;     // guarded by mu
  std::atomic<int64_t> next{0};
  const bool keep_jpeg = shards > 0;

  auto work = [&] {
    while (true) {
      const int64_t pos = next.fetch_add(1);
      if (pos >= n) return;
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return stop || pos < consumed + window; });
        if (stop) return;
      }
      Generated g;
      const int64_t index = order[pos];
      Rng rng = ImageRng(seed, index);
      g.params = DrawParams(rng, opts.num_classes, index);
      Result<std::string> jpeg =
          EncodeJpeg(Render(rng, g.params), g.params.quality, "420");
      const std::string rel = RelativePath(g.params.label, index);
      if (!jpeg.ok()) {
        g.status = jpeg.status().WithContext("datagen: image " + std::to_string(index));
      } else {
        if (opts.jpeg_folder) g.status = WriteWholeFile(out_dir + "/" + rel, *jpeg);
        char hash[17];
        std::snprintf(hash, sizeof(hash), "%016llx",
                      static_cast<unsigned long long>(Fnv1a64(*jpeg)));
        g.manifest_line = rel + "\t" + std::to_string(g.params.label) + "\t" +
                          std::to_string(g.params.width) + "\t" +
                          std::to_string(g.params.height) + "\t" +
                          std::to_string(g.params.quality) + "\t" +
                          std::to_string(jpeg->size()) + "\t" + hash + "\n";
        if (keep_jpeg) g.jpeg = std::move(jpeg).value();
      }
      std::lock_guard<std::mutex> lock(mu);
      slots[pos % window] = std::move(g);
      cv.notify_all();
    }
  };
  std::vector<std::thread> pool;
  for (int64_t t = 0; t < threads; ++t) pool.emplace_back(work);
  auto finish = [&](Status s) {
    {
      std::lock_guard<std::mutex> lock(mu);
      stop = true;
    }
    cv.notify_all();
    for (std::thread& t : pool) t.join();
    return s;
  };

  std::vector<std::string> manifest(static_cast<size_t>(n));
  for (int64_t pos = 0; pos < n; ++pos) {
    Generated g;
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return slots[pos % window].has_value(); });
      g = std::move(*slots[pos % window]);
      slots[pos % window].reset();
      consumed = pos + 1;
    }
    cv.notify_all();
    if (!g.status.ok()) return finish(g.status);
    if (shards > 0) {
      Status s = writers[pos % shards]->Write(SerializeExample(g.jpeg, g.params));
      if (!s.ok()) {
        return finish(s.WithContext("datagen: " +
                                    TfrecordShardPath(out_dir, pos % shards, shards)));
      }
    }
    manifest[g.params.index] = std::move(g.manifest_line);
    if (progress) progress(pos + 1, n);
  }
  SLUICE_RETURN_IF_ERROR(finish(Status::OK()));
  for (int64_t s = 0; s < shards; ++s) {
    SLUICE_RETURN_IF_ERROR(writers[s]->Close().WithContext(
        "datagen: " + TfrecordShardPath(out_dir, s, shards)));
  }

  // The MANIFEST last, atomically: its presence marks a complete set.
  std::string text;
  for (const std::string& line : manifest) text += line;
  const std::string tmp = out_dir + "/MANIFEST.tmp";
  SLUICE_RETURN_IF_ERROR(WriteWholeFile(tmp, text));
  fs::rename(tmp, out_dir + "/MANIFEST", ec);
  if (ec) return UnavailableError("datagen: cannot rename " + tmp + ": " + ec.message());
  return Status::OK();
}

}  // namespace sluice
