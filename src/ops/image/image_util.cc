// Crop windows, PIL-exact bilinear resampling, flips and normalization.
#include "ops/image/image_util.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define SLUICE_IMAGE_AVX2 1
#define SLUICE_TARGET_AVX2 __attribute__((target("avx2")))
#endif

namespace sluice {
namespace {

std::atomic<bool> g_simd_enabled{true};

bool UseSimd() {
#ifdef SLUICE_IMAGE_AVX2
  static const bool kHasAvx2 = __builtin_cpu_supports("avx2");
  return kHasAvx2 && g_simd_enabled.load(std::memory_order_relaxed);
#else
  return false;
#endif
}

// Python's int(round(x)): half to even (the default rounding mode).
int64_t RoundHalfEven(double x) { return static_cast<int64_t>(std::nearbyint(x)); }

// ---- Resampling filters (PIL's precompute_coeffs, bilinear) ----

constexpr int kPrecisionBits = 32 - 8 - 2;  // PIL's fixed point
constexpr int32_t kHalf = 1 << (kPrecisionBits - 1);

double Triangle(double x) {
  x = std::fabs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

// For each output index: the first source index, the tap count and the normalized weights
// (each output's taps padded with zeros to an even count, for the paired SIMD loads).
struct AxisFilter {
  std::vector<int64_t> start;
  std::vector<int32_t> count;
  std::vector<int64_t> offset;  // of the output's first weight in `weights`
  std::vector<double> weights;
  int32_t max_count = 0;
};

void ComputeAxisFilter(int64_t in_size, int64_t out_size, bool antialias, AxisFilter* f) {
  const double scale = static_cast<double>(in_size) / static_cast<double>(out_size);
  const double filterscale = antialias && scale > 1.0 ? scale : 1.0;
  const double support = 1.0 * filterscale;  // the triangle's support is 1
  const double inv = 1.0 / filterscale;
  f->start.resize(out_size);
  f->count.resize(out_size);
  f->offset.resize(out_size);
  f->weights.clear();
  f->max_count = 0;
  for (int64_t i = 0; i < out_size; ++i) {
    const double center = (static_cast<double>(i) + 0.5) * scale;
    int64_t lo = static_cast<int64_t>(center - support + 0.5);  // truncation, as PIL
    if (lo < 0) lo = 0;
    int64_t hi = static_cast<int64_t>(center + support + 0.5);
    if (hi > in_size) hi = in_size;
    const int64_t n = hi - lo;
    const size_t off = f->weights.size();
    double total = 0;
    for (int64_t k = 0; k < n; ++k) {
      const double w = Triangle((static_cast<double>(k + lo) - center + 0.5) * inv);
      f->weights.push_back(w);
      total += w;
    }
    if (total != 0.0) {
      for (int64_t k = 0; k < n; ++k) f->weights[off + k] /= total;
    }
    if (n % 2 != 0) f->weights.push_back(0.0);
    f->start[i] = lo;
    f->count[i] = static_cast<int32_t>(n);
    f->offset[i] = static_cast<int64_t>(off);
    f->max_count = std::max(f->max_count, static_cast<int32_t>(n));
  }
}

// PIL's normalize_coeffs_8bpc (the triangle is never negative).
void ToFixedPoint(const std::vector<double>& w, std::vector<int32_t>* out) {
  out->resize(w.size());
  for (size_t i = 0; i < w.size(); ++i) {
    (*out)[i] = static_cast<int32_t>(0.5 + w[i] * (1 << kPrecisionBits));
  }
}

inline uint8_t Clip8(int32_t acc) {
  const int32_t v = acc >> kPrecisionBits;
  return static_cast<uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v));
}

// The separable driver. hrows(in0, in1, out0, out1) resamples source rows horizontally,
// two at a time (in1 and out1 are null for a single row; hrows is unused when the width
// does not change); vrow(rows, n, y, out_row) combines n rows into output row y. Rows the
// vertical filter needs are resampled once, into a ring of at least max-taps + 1 rows
// (the extra slot holds a row resampled one ahead as the second of a pair). Both ends of
// PIL's filter windows only move forward with y, so rows in the ring are never needed
// again once overwritten.
template <typename T, typename HRows, typename VRow>
void Separable(const T* base, int64_t stride, int64_t in_h, int64_t row_len,
               int64_t out_h, bool need_h, const AxisFilter* vf, HRows&& hrows,
               VRow&& vrow, std::vector<T>* ring, std::vector<const T*>* rows, T* dst) {
  if (vf == nullptr) {  // in_h == out_h
    for (int64_t y = 0; y < out_h; y += 2) {
      const bool two = y + 1 < out_h;
      if (need_h) {
        hrows(base + y * stride, two ? base + (y + 1) * stride : nullptr,
              dst + y * row_len, two ? dst + (y + 1) * row_len : nullptr);
        continue;
      }
      for (int64_t r = y; r < y + (two ? 2 : 1); ++r) {
        std::memcpy(dst + r * row_len, base + r * stride, row_len * sizeof(T));
      }
    }
    return;
  }
  // A power of two, so a row's slot is a mask, not a division (~30 cycles each).
  const int64_t slots =
      static_cast<int64_t>(std::bit_ceil(static_cast<uint64_t>(vf->max_count) + 1));
  if (need_h) ring->resize(slots * row_len);
  rows->resize(slots);
  auto slot = [&](int64_t r) { return ring->data() + (r & (slots - 1)) * row_len; };
  int64_t next = 0;  // source rows below this one are resampled (or never needed)
  for (int64_t y = 0; y < out_h; ++y) {
    const int64_t s = vf->start[y];
    const int n = vf->count[y];
    if (need_h) {
      int64_t r = std::max(next, s);
      while (r < s + n) {
        if (r + 1 < in_h) {
          hrows(base + r * stride, base + (r + 1) * stride, slot(r), slot(r + 1));
          r += 2;
        } else {
          hrows(base + r * stride, nullptr, slot(r), nullptr);
          r += 1;
        }
      }
      next = std::max(next, r);
      for (int t = 0; t < n; ++t) (*rows)[t] = slot(s + t);
    } else {
      for (int t = 0; t < n; ++t) (*rows)[t] = base + (s + t) * stride;
    }
    vrow(rows->data(), n, y, dst + y * row_len);
  }
}

// ---- uint8, portable ----

template <int kC>
inline void HorizontalPixelU8(const uint8_t* p, int64_t channels, const int32_t* k, int n,
                              uint8_t* o) {
  if constexpr (kC > 0) {
    int32_t acc[kC];
    for (int c = 0; c < kC; ++c) acc[c] = kHalf;
    for (int t = 0; t < n; ++t) {
      for (int c = 0; c < kC; ++c) acc[c] += p[t * kC + c] * k[t];
    }
    for (int c = 0; c < kC; ++c) o[c] = Clip8(acc[c]);
  } else {
    for (int64_t c = 0; c < channels; ++c) {
      int32_t acc = kHalf;
      for (int t = 0; t < n; ++t) acc += p[t * channels + c] * k[t];
      o[c] = Clip8(acc);
    }
  }
}

template <int kC>
void HorizontalRowU8(const uint8_t* in, int64_t channels, const AxisFilter& f,
                     const int32_t* w, uint8_t* out, int64_t out_w, bool flip) {
  const int64_t c = kC > 0 ? kC : channels;
  for (int64_t d = 0; d < out_w; ++d) {
    const int64_t x = flip ? out_w - 1 - d : d;
    HorizontalPixelU8<kC>(in + f.start[x] * c, channels, w + f.offset[x], f.count[x],
                          out + d * c);
  }
}

void VerticalRowU8(const uint8_t* const* rows, int n, const int32_t* k, uint8_t* out,
                   int64_t begin, int64_t len) {
  // Blocks of a constant width, which compilers vectorize even at -O2.
  constexpr int kBlock = 32;
  int64_t j = begin;
  for (; j + kBlock <= len; j += kBlock) {
    int32_t acc[kBlock];
    for (int u = 0; u < kBlock; ++u) acc[u] = kHalf;
    for (int t = 0; t < n; ++t) {
      const uint8_t* r = rows[t] + j;
      const int32_t w = k[t];
      for (int u = 0; u < kBlock; ++u) acc[u] += r[u] * w;
    }
    for (int u = 0; u < kBlock; ++u) out[j + u] = Clip8(acc[u]);
  }
  for (; j < len; ++j) {
    int32_t acc = kHalf;
    for (int t = 0; t < n; ++t) acc += rows[t][j] * k[t];
    out[j] = Clip8(acc);
  }
}

// ---- uint8, AVX2 ----
#ifdef SLUICE_IMAGE_AVX2

// The horizontal pass for 3 or 4 channels, two rows at a time, exact in 16-bit
// multiplies. PIL's products p * k (8-bit pixel, 22-bit weight) need 30 bits; with
// k = kh * 2^11 + kl (both < 2^11), sum(p * k) = (sum(p * kh) << 11) + sum(p * kl), and
// each sum is a chain of pmaddwd (16 x 16 -> 32-bit, adjacent pairs added): the exact
// integer PIL computes, with no 32-bit multiply and no widened copy of the row.
//
// The low 128-bit lane works on the first row and the high lane on the second, so the two
// rows share every weight and shuffle and nothing crosses lanes until the store. For one
// output, a pair of taps (t, t+1) is shuffled from a 16-byte load into the 16-bit
// [R_t, R_t+1, G_t, G_t+1, B_t, B_t+1, X_t, X_t+1], and one pmaddwd with the broadcast
// weight pair leaves [R, G, B, X] partial sums in each lane. Every output gets the same
// number of pairs (zero weights pad the shorter ones, so the loop never mispredicts), in
// output order (flip applied); four outputs are packed to bytes and stored together.
// The loads read up to 15 bytes past an output's last tap (bytes that only meet zero
// weights). A row is read in place when those bytes are still inside the window's memory
// (the next rows), and otherwise first copied into a padded buffer.
struct HPlan {
  int pairs = 0;             // tap pairs per output
  std::vector<int32_t> src;  // byte offset of each output's first tap in the row
  std::vector<int32_t> k;    // [out][pair][hi, lo]: (w_t | w_t+1 << 16) of each half
  int64_t row_bytes = 0;
  int64_t reach = 0;            // bytes from a row's start that the loads may read
  std::vector<uint8_t> row[2];  // padded copies, for rows read past the window's end
};

void BuildHPlan(const AxisFilter& f, const std::vector<int32_t>& w, int64_t channels,
                int64_t in_w, int64_t out_w, bool flip, HPlan* plan) {
  const int pairs = (f.max_count + 1) / 2;
  plan->pairs = pairs;
  plan->src.resize(out_w);
  plan->k.resize(out_w * pairs * 2);
  plan->row_bytes = in_w * channels;
  // One 16-byte load serves two pairs (four pixels).
  const int64_t reach =
      4 * ((pairs + 1) / 2 - 1) * channels + 16;  // bytes the loads read
  int64_t end = plan->row_bytes;
  for (int64_t d = 0; d < out_w; ++d) {
    const int64_t x = flip ? out_w - 1 - d : d;
    const int64_t off = f.start[x] * channels;
    plan->src[d] = static_cast<int32_t>(off);
    end = std::max(end, off + reach);
    int32_t* k = plan->k.data() + d * pairs * 2;
    std::fill(k, k + pairs * 2, 0);
    for (int t = 0; t < f.count[x]; ++t) {
      const uint32_t v = static_cast<uint32_t>(w[f.offset[x] + t]);
      const int shift = 16 * (t % 2);
      k[(t / 2) * 2] |= static_cast<int32_t>((v >> 11) << shift);
      k[(t / 2) * 2 + 1] |= static_cast<int32_t>((v & 2047) << shift);
    }
  }
  plan->reach = end;
  // Bytes past row_bytes only meet zero weights: whatever an earlier row left there does.
  for (auto& r : plan->row) {
    if (static_cast<int64_t>(r.size()) < end) r.resize(end);
  }
}

// pshufb masks: the 16-bit [R_a, R_b, G_a, G_b, B_a, B_b, X_a, X_b] of pixels (a, b) =
// (0, 1) or (2, 3) of a 16-byte load, in both lanes.
template <int kC>
SLUICE_TARGET_AVX2 inline __m256i PairShuffle(int first) {
  alignas(32) int8_t m[32];
  for (int lane = 0; lane < 2; ++lane) {
    for (int c = 0; c < 4; ++c) {
      for (int t = 0; t < 2; ++t) {
        const int byte = (first + t) * kC + c;
        m[lane * 16 + c * 4 + t * 2] = static_cast<int8_t>(c < kC ? byte : -1);
        m[lane * 16 + c * 4 + t * 2 + 1] = -1;
      }
    }
  }
  return _mm256_load_si256(reinterpret_cast<const __m256i*>(m));
}

// (sum(p * kh) << 11) + sum(p * kl), rounded and shifted as PIL does.
SLUICE_TARGET_AVX2 inline __m256i Finish(__m256i h, __m256i l) {
  const __m256i sum = _mm256_add_epi32(_mm256_add_epi32(_mm256_slli_epi32(h, 11), l),
                                       _mm256_set1_epi32(kHalf));
  return _mm256_srai_epi32(sum, kPrecisionBits);
}

// Four [R, G, B, X] int32 pixels per lane -> 16 bytes per lane, compacted by `compact`.
SLUICE_TARGET_AVX2 inline __m256i PackPixels(__m256i a, __m256i b, __m256i c, __m256i d,
                                             __m256i compact) {
  return _mm256_shuffle_epi8(
      _mm256_packus_epi16(_mm256_packs_epi32(a, b), _mm256_packs_epi32(c, d)), compact);
}

// One output for both rows: [R, G, B, X] (int32, rounded and shifted) in each lane.
template <int kC, int kPairs>
SLUICE_TARGET_AVX2 inline __m256i OutputPixel(const uint8_t* p0, const uint8_t* p1,
                                              const int32_t* k, int pairs, __m256i m01,
                                              __m256i m23) {
  if constexpr (kPairs > 0) pairs = kPairs;
  __m256i h = _mm256_setzero_si256(), l = _mm256_setzero_si256();
#pragma GCC unroll 4
  for (int q = 0; 2 * q < pairs; ++q) {
    const __m256i px = _mm256_inserti128_si256(
        _mm256_castsi128_si256(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(p0 + 4 * q * kC))),
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(p1 + 4 * q * kC)), 1);
    const __m256i a = _mm256_shuffle_epi8(px, m01);
    h = _mm256_add_epi32(h, _mm256_madd_epi16(a, _mm256_set1_epi32(k[4 * q])));
    l = _mm256_add_epi32(l, _mm256_madd_epi16(a, _mm256_set1_epi32(k[4 * q + 1])));
    if (2 * q + 1 < pairs) {
      const __m256i b = _mm256_shuffle_epi8(px, m23);
      h = _mm256_add_epi32(h, _mm256_madd_epi16(b, _mm256_set1_epi32(k[4 * q + 2])));
      l = _mm256_add_epi32(l, _mm256_madd_epi16(b, _mm256_set1_epi32(k[4 * q + 3])));
    }
  }
  return Finish(h, l);
}

// out0 (and out1 when not null) from rows in0 and in1, each readable for plan.reach
// bytes.
template <int kC, int kPairs>
SLUICE_TARGET_AVX2 void HorizontalRowsU8Avx2(const uint8_t* in0, const uint8_t* in1,
                                             const HPlan& plan, uint8_t* out0,
                                             uint8_t* out1, int64_t out_w) {
  const int pairs = kPairs > 0 ? kPairs : plan.pairs;
  const __m256i m01 = PairShuffle<kC>(0), m23 = PairShuffle<kC>(2);
  // Four [R, G, B, X] pixels -> 12 packed RGB bytes (and 4 bytes to be overwritten).
  const __m256i compact =
      kC == 3 ? _mm256_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1,
                                 0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1)
              : _mm256_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0,
                                 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const int32_t* src = plan.src.data();
  const int32_t* k = plan.k.data();
#define SLUICE_PIXEL(d) \
  OutputPixel<kC, kPairs>(in0 + src[d], in1 + src[d], k + (d)*pairs * 2, pairs, m01, m23)
  int64_t d = 0;
  // Full 16-byte stores while they stay inside the row (3 channels: 4 bytes spill into
  // the next outputs, which are written after).
  for (; d + (kC == 3 ? 6 : 4) <= out_w; d += 4) {
    const __m256i v = PackPixels(SLUICE_PIXEL(d), SLUICE_PIXEL(d + 1),
                                 SLUICE_PIXEL(d + 2), SLUICE_PIXEL(d + 3), compact);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out0 + d * kC),
                     _mm256_castsi256_si128(v));
    if (out1 != nullptr) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out1 + d * kC),
                       _mm256_extracti128_si256(v, 1));
    }
  }
  for (; d < out_w; d += 4) {
    const int64_t m = std::min<int64_t>(4, out_w - d);
    const __m256i zero = _mm256_setzero_si256();
    const __m256i v = PackPixels(SLUICE_PIXEL(d), m > 1 ? SLUICE_PIXEL(d + 1) : zero,
                                 m > 2 ? SLUICE_PIXEL(d + 2) : zero,
                                 m > 3 ? SLUICE_PIXEL(d + 3) : zero, compact);
    alignas(32) uint8_t buf[32];
    _mm256_store_si256(reinterpret_cast<__m256i*>(buf), v);
    std::memcpy(out0 + d * kC, buf, m * kC);
    if (out1 != nullptr) std::memcpy(out1 + d * kC, buf + 16, m * kC);
  }
#undef SLUICE_PIXEL
}

// `limit`: one past the last byte of the window's memory (its last row's end).
template <int kC>
void HorizontalRowsU8Simd(const uint8_t* in0, const uint8_t* in1, const uint8_t* limit,
                          HPlan& plan, uint8_t* out0, uint8_t* out1, int64_t out_w) {
  auto readable = [&](const uint8_t* in, int i) {
    if (in + plan.reach <= limit) return in;
    std::memcpy(plan.row[i].data(), in, plan.row_bytes);
    return static_cast<const uint8_t*>(plan.row[i].data());
  };
  const uint8_t* r0 = readable(in0, 0);
  const uint8_t* r1 = in1 != nullptr ? readable(in1, 1) : r0;
  switch (plan.pairs) {
    case 1:
      HorizontalRowsU8Avx2<kC, 1>(r0, r1, plan, out0, out1, out_w);
      break;
    case 2:
      HorizontalRowsU8Avx2<kC, 2>(r0, r1, plan, out0, out1, out_w);
      break;
    case 3:
      HorizontalRowsU8Avx2<kC, 3>(r0, r1, plan, out0, out1, out_w);
      break;
    case 4:
      HorizontalRowsU8Avx2<kC, 4>(r0, r1, plan, out0, out1, out_w);
      break;
    default:
      HorizontalRowsU8Avx2<kC, 0>(r0, r1, plan, out0, out1, out_w);
      break;
  }
}

// The vertical pass, any channel count, exact like the horizontal one: bytes of rows
// (t, t+1) interleaved into 16-bit pairs, one pmaddwd per weight half and pair. The
// unpacks and packs are both within 128-bit lanes, so bytes come back in order.
// 32 bytes per step; an odd last tap is paired with itself under a zero weight. The
// halves' sums are merged per pair, (h << 11) + l, which keeps four accumulators.
template <int kPairs>
SLUICE_TARGET_AVX2 void VerticalRowsU8Avx2(const uint8_t* const* rows, int pairs,
                                           const int32_t* kh, const int32_t* kl,
                                           uint8_t* out, int64_t len) {
  if constexpr (kPairs > 0) pairs = kPairs;
  const __m256i zero = _mm256_setzero_si256(), half = _mm256_set1_epi32(kHalf);
  for (int64_t x = 0; x + 32 <= len; x += 32) {
    __m256i acc[4] = {half, half, half, half};
#pragma GCC unroll 4
    for (int j = 0; j < pairs; ++j) {
      const __m256i a =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[2 * j] + x));
      const __m256i b =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[2 * j + 1] + x));
      const __m256i wh = _mm256_set1_epi32(kh[j]), wl = _mm256_set1_epi32(kl[j]);
      const __m256i ab[2] = {_mm256_unpacklo_epi8(a, b), _mm256_unpackhi_epi8(a, b)};
      for (int i = 0; i < 4; ++i) {
        const __m256i v = (i % 2 == 0) ? _mm256_unpacklo_epi8(ab[i / 2], zero)
                                       : _mm256_unpackhi_epi8(ab[i / 2], zero);
        acc[i] = _mm256_add_epi32(
            acc[i], _mm256_add_epi32(_mm256_slli_epi32(_mm256_madd_epi16(v, wh), 11),
                                     _mm256_madd_epi16(v, wl)));
      }
    }
    for (__m256i& v : acc) v = _mm256_srai_epi32(v, kPrecisionBits);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + x),
                        _mm256_packus_epi16(_mm256_packs_epi32(acc[0], acc[1]),
                                            _mm256_packs_epi32(acc[2], acc[3])));
  }
}

void VerticalRowU8Simd(const uint8_t* const* rows, int n, const int32_t* k, uint8_t* out,
                       int64_t len) {
  constexpr int kMaxPairs = 64;
  const int pairs = (n + 1) / 2;
  int64_t done = 0;
  if (pairs <= kMaxPairs) {
    int32_t kh[kMaxPairs], kl[kMaxPairs];  // (k_t | k_t+1 << 16) of each 11-bit half
    const uint8_t* r[2 * kMaxPairs];
    for (int j = 0; j < pairs; ++j) {
      const bool second = 2 * j + 1 < n;
      const uint32_t a = static_cast<uint32_t>(k[2 * j]);
      const uint32_t b = second ? static_cast<uint32_t>(k[2 * j + 1]) : 0;
      kh[j] = static_cast<int32_t>((a >> 11) | ((b >> 11) << 16));
      kl[j] = static_cast<int32_t>((a & 2047) | ((b & 2047) << 16));
      r[2 * j] = rows[2 * j];
      r[2 * j + 1] = second ? rows[2 * j + 1] : rows[2 * j];
    }
    switch (pairs) {
      case 1:
        VerticalRowsU8Avx2<1>(r, pairs, kh, kl, out, len);
        break;
      case 2:
        VerticalRowsU8Avx2<2>(r, pairs, kh, kl, out, len);
        break;
      case 3:
        VerticalRowsU8Avx2<3>(r, pairs, kh, kl, out, len);
        break;
      default:
        VerticalRowsU8Avx2<0>(r, pairs, kh, kl, out, len);
        break;
    }
    done = len / 32 * 32;
  }
  VerticalRowU8(rows, n, k, out, done, len);
}

#endif  // SLUICE_IMAGE_AVX2

struct U8Scratch {
  AxisFilter h, v;
  std::vector<int32_t> hw, vw;  // fixed-point weights
#ifdef SLUICE_IMAGE_AVX2
  HPlan plan;
#endif
  std::vector<uint8_t> ring;
  std::vector<const uint8_t*> rows;
};

struct F32Scratch {
  AxisFilter h, v;
  std::vector<float> hw, vw;
  std::vector<float> ring;
  std::vector<const float*> rows;
};

// ---- float32 ----

template <int kC>
void HorizontalRowF32(const float* in, int64_t channels, const AxisFilter& f, const float* w,
                      float* out, int64_t out_w, bool flip) {
  const int64_t c = kC > 0 ? kC : channels;
  for (int64_t d = 0; d < out_w; ++d) {
    const int64_t x = flip ? out_w - 1 - d : d;
    const float* p = in + f.start[x] * c;
    const float* k = w + f.offset[x];
    const int n = f.count[x];
    float* o = out + d * c;
    if constexpr (kC > 0) {
      float acc[kC] = {};
      for (int t = 0; t < n; ++t) {
        for (int ch = 0; ch < kC; ++ch) acc[ch] += p[t * kC + ch] * k[t];
      }
      for (int ch = 0; ch < kC; ++ch) o[ch] = acc[ch];
    } else {
      for (int64_t ch = 0; ch < c; ++ch) {
        float acc = 0.0f;
        for (int t = 0; t < n; ++t) acc += p[t * c + ch] * k[t];
        o[ch] = acc;
      }
    }
  }
}

void VerticalRowF32(const float* const* rows, int n, const float* k, float* out,
                    int64_t len) {
  constexpr int kBlock = 16;  // a constant width, vectorized even at -O2
  int64_t j = 0;
  for (; j + kBlock <= len; j += kBlock) {
    float acc[kBlock] = {};
    for (int t = 0; t < n; ++t) {
      const float* r = rows[t] + j;
      const float w = k[t];
      for (int u = 0; u < kBlock; ++u) acc[u] += r[u] * w;
    }
    for (int u = 0; u < kBlock; ++u) out[j + u] = acc[u];
  }
  for (; j < len; ++j) {
    float acc = 0.0f;
    for (int t = 0; t < n; ++t) acc += rows[t][j] * k[t];
    out[j] = acc;
  }
}

// ---- Flip and normalize, AVX2 ----
#ifdef SLUICE_IMAGE_AVX2

// 3-byte pixels: five per 16-byte shuffle.
SLUICE_TARGET_AVX2
int64_t FlipRow3Avx2(const uint8_t* in, uint8_t* out, int64_t w) {
  const __m128i rev = _mm_setr_epi8(13, 14, 15, 10, 11, 12, 7, 8, 9, 4, 5, 6, 1, 2, 3, -1);
  int64_t d = 0;
  for (; d + 6 <= w; d += 5) {
    // Bytes 1..15: source pixels w-5-d .. w-1-d.
    const __m128i v =
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + (w - 5 - d) * 3 - 1));
    // Writes one byte into pixel d+5, which a later step or the tail rewrites.
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + d * 3), _mm_shuffle_epi8(v, rev));
  }
  return d;
}

struct DeinterleaveMasks {
  alignas(16) int8_t m[3][3][16];  // [channel][source vector][byte]
};
constexpr DeinterleaveMasks MakeDeinterleaveMasks() {
  DeinterleaveMasks d{};
  for (int c = 0; c < 3; ++c) {
    for (int v = 0; v < 3; ++v) {
      for (int k = 0; k < 16; ++k) {
        const int idx = 3 * k + c - 16 * v;
        d.m[c][v][k] = static_cast<int8_t>(idx >= 0 && idx < 16 ? idx : -128);
      }
    }
  }
  return d;
}
constexpr DeinterleaveMasks kDeinterleave = MakeDeinterleaveMasks();

// RGB uint8 -> three float planes, 16 pixels per step. Returns the pixels done.
SLUICE_TARGET_AVX2
int64_t NormalizeU8RgbPlanarAvx2(const uint8_t* src, int64_t num_pixels, float scale,
                                 const float* mean, const float* inv_std, float* dst) {
  const __m256 s = _mm256_set1_ps(scale);
  __m256 m[3], r[3];
  __m128i mask[3][3];
  for (int c = 0; c < 3; ++c) {
    m[c] = _mm256_set1_ps(mean[c]);
    r[c] = _mm256_set1_ps(inv_std[c]);
    for (int v = 0; v < 3; ++v) {
      mask[c][v] = _mm_load_si128(reinterpret_cast<const __m128i*>(kDeinterleave.m[c][v]));
    }
  }
  int64_t i = 0;
  for (; i + 16 <= num_pixels; i += 16) {
    const uint8_t* p = src + 3 * i;
    const __m128i v0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i v1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16));
    const __m128i v2 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 32));
    for (int c = 0; c < 3; ++c) {
      const __m128i b = _mm_or_si128(
          _mm_or_si128(_mm_shuffle_epi8(v0, mask[c][0]), _mm_shuffle_epi8(v1, mask[c][1])),
          _mm_shuffle_epi8(v2, mask[c][2]));
      const __m256 lo = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(b));
      const __m256 hi = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(b, 8)));
      float* o = dst + c * num_pixels + i;
      _mm256_storeu_ps(o, _mm256_mul_ps(_mm256_sub_ps(_mm256_mul_ps(lo, s), m[c]), r[c]));
      _mm256_storeu_ps(o + 8, _mm256_mul_ps(_mm256_sub_ps(_mm256_mul_ps(hi, s), m[c]), r[c]));
    }
  }
  return i;
}

#endif  // SLUICE_IMAGE_AVX2

template <int kBytes>
void FlipRowFixed(const uint8_t* in, uint8_t* out, int64_t w) {
  for (int64_t d = 0; d < w; ++d) std::memcpy(out + d * kBytes, in + (w - 1 - d) * kBytes, kBytes);
}

template <typename T>
void NormalizeScalar(const T* src, int64_t begin, int64_t num_pixels, int64_t channels,
                     float scale, const float* mean, const float* inv_std, bool chw,
                     float* dst) {
  if (channels == 1) {  // both layouts are one plane: a loop the compiler vectorizes
    const float m = mean[0], k = inv_std[0];
    for (int64_t i = begin; i < num_pixels; ++i) dst[i] = (static_cast<float>(src[i]) * scale - m) * k;
    return;
  }
  if (chw) {
    for (int64_t c = 0; c < channels; ++c) {
      const float m = mean[c], k = inv_std[c];
      float* plane = dst + c * num_pixels;
      for (int64_t i = begin; i < num_pixels; ++i) {
        plane[i] = (static_cast<float>(src[i * channels + c]) * scale - m) * k;
      }
    }
    return;
  }
  for (int64_t i = begin; i < num_pixels; ++i) {
    for (int64_t c = 0; c < channels; ++c) {
      dst[i * channels + c] = (static_cast<float>(src[i * channels + c]) * scale - mean[c]) * inv_std[c];
    }
  }
}

}  // namespace

ImageWindow SampleRandomResizedCrop(int64_t height, int64_t width, std::array<double, 2> scale,
                                    std::array<double, 2> ratio, Rng& rng) {
  if (height <= 0 || width <= 0) return {0, 0, std::max<int64_t>(height, 0), std::max<int64_t>(width, 0)};
  const double area = static_cast<double>(height) * static_cast<double>(width);
  const double log_lo = std::log(ratio[0]), log_hi = std::log(ratio[1]);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target_area = area * (scale[0] + (scale[1] - scale[0]) * rng.Uniform());
    const double aspect = std::exp(log_lo + (log_hi - log_lo) * rng.Uniform());
    const double w = std::nearbyint(std::sqrt(target_area * aspect));
    const double h = std::nearbyint(std::sqrt(target_area / aspect));
    if (w > 0 && w <= static_cast<double>(width) && h > 0 && h <= static_cast<double>(height)) {
      const int64_t wi = static_cast<int64_t>(w), hi = static_cast<int64_t>(h);
      const int64_t y = static_cast<int64_t>(rng.UniformInt(static_cast<uint64_t>(height - hi + 1)));
      const int64_t x = static_cast<int64_t>(rng.UniformInt(static_cast<uint64_t>(width - wi + 1)));
      return {y, x, hi, wi};
    }
  }
  // Center fallback.
  const double in_ratio = static_cast<double>(width) / static_cast<double>(height);
  const double rmin = std::min(ratio[0], ratio[1]), rmax = std::max(ratio[0], ratio[1]);
  int64_t w = width, h = height;
  if (in_ratio < rmin) {
    h = RoundHalfEven(static_cast<double>(w) / rmin);
  } else if (in_ratio > rmax) {
    w = RoundHalfEven(static_cast<double>(h) * rmax);
  }
  h = std::clamp<int64_t>(h, 1, height);
  w = std::clamp<int64_t>(w, 1, width);
  return {(height - h) / 2, (width - w) / 2, h, w};
}

ImageWindow CenterCropWindow(int64_t height, int64_t width, int64_t crop_height,
                             int64_t crop_width) {
  return {RoundHalfEven(static_cast<double>(height - crop_height) / 2.0),
          RoundHalfEven(static_cast<double>(width - crop_width) / 2.0), crop_height, crop_width};
}

void ResizeBilinearU8(const uint8_t* src, int64_t src_row_stride, int64_t channels,
                      const ImageWindow& window, uint8_t* dst, int64_t out_height,
                      int64_t out_width, bool antialias, bool flip) {
  if (channels <= 0 || window.height <= 0 || window.width <= 0 || out_height <= 0 ||
      out_width <= 0) {
    return;
  }
  thread_local U8Scratch scratch;
  U8Scratch& s = scratch;
  const int64_t c = channels;
  const uint8_t* base = src + window.y * src_row_stride + window.x * c;
  const bool need_h = out_width != window.width || flip;
  const bool need_v = out_height != window.height;
  const bool simd = UseSimd();
  [[maybe_unused]] const bool simd_h = simd && (c == 3 || c == 4);
  if (need_h) {
    ComputeAxisFilter(window.width, out_width, antialias, &s.h);
    ToFixedPoint(s.h.weights, &s.hw);
#ifdef SLUICE_IMAGE_AVX2
    if (simd_h) BuildHPlan(s.h, s.hw, c, window.width, out_width, flip, &s.plan);
#endif
  }
  if (need_v) {
    ComputeAxisFilter(window.height, out_height, antialias, &s.v);
    ToFixedPoint(s.v.weights, &s.vw);
  }
  const int64_t row_len = out_width * c;
  [[maybe_unused]] const uint8_t* limit =
      base + (window.height - 1) * src_row_stride + window.width * c;
  auto hrows = [&](const uint8_t* in0, const uint8_t* in1, uint8_t* out0, uint8_t* out1) {
#ifdef SLUICE_IMAGE_AVX2
    if (simd_h) {
      if (c == 3) {
        HorizontalRowsU8Simd<3>(in0, in1, limit, s.plan, out0, out1, out_width);
      } else {
        HorizontalRowsU8Simd<4>(in0, in1, limit, s.plan, out0, out1, out_width);
      }
      return;
    }
#endif
    for (int r = 0; r < 2; ++r) {
      const uint8_t* in = r == 0 ? in0 : in1;
      uint8_t* out = r == 0 ? out0 : out1;
      if (in == nullptr) break;
      switch (c) {
        case 1:
          HorizontalRowU8<1>(in, c, s.h, s.hw.data(), out, out_width, flip);
          break;
        case 2:
          HorizontalRowU8<2>(in, c, s.h, s.hw.data(), out, out_width, flip);
          break;
        case 3:
          HorizontalRowU8<3>(in, c, s.h, s.hw.data(), out, out_width, flip);
          break;
        case 4:
          HorizontalRowU8<4>(in, c, s.h, s.hw.data(), out, out_width, flip);
          break;
        default:
          HorizontalRowU8<0>(in, c, s.h, s.hw.data(), out, out_width, flip);
          break;
      }
    }
  };
  auto vrow = [&](const uint8_t* const* rows, int n, int64_t y, uint8_t* out) {
    const int32_t* k = s.vw.data() + s.v.offset[y];
#ifdef SLUICE_IMAGE_AVX2
    if (simd) {
      VerticalRowU8Simd(rows, n, k, out, row_len);
      return;
    }
#endif
    VerticalRowU8(rows, n, k, out, 0, row_len);
  };
  Separable<uint8_t>(base, src_row_stride, window.height, row_len, out_height, need_h,
                     need_v ? &s.v : nullptr, hrows, vrow, &s.ring, &s.rows, dst);
}

void ResizeBilinearF32(const float* src, int64_t src_row_stride, int64_t channels,
                       const ImageWindow& window, float* dst, int64_t out_height,
                       int64_t out_width, bool antialias, bool flip) {
  if (channels <= 0 || window.height <= 0 || window.width <= 0 || out_height <= 0 ||
      out_width <= 0) {
    return;
  }
  thread_local F32Scratch scratch;
  F32Scratch& s = scratch;
  const int64_t c = channels;
  const float* base = src + window.y * src_row_stride + window.x * c;
  const bool need_h = out_width != window.width || flip;
  const bool need_v = out_height != window.height;
  if (need_h) {
    ComputeAxisFilter(window.width, out_width, antialias, &s.h);
    s.hw.assign(s.h.weights.begin(), s.h.weights.end());
  }
  if (need_v) {
    ComputeAxisFilter(window.height, out_height, antialias, &s.v);
    s.vw.assign(s.v.weights.begin(), s.v.weights.end());
  }
  const int64_t row_len = out_width * c;
  auto hrow = [&](const float* in, float* out) {
    switch (c) {
      case 1: HorizontalRowF32<1>(in, c, s.h, s.hw.data(), out, out_width, flip); break;
      case 2: HorizontalRowF32<2>(in, c, s.h, s.hw.data(), out, out_width, flip); break;
      case 3: HorizontalRowF32<3>(in, c, s.h, s.hw.data(), out, out_width, flip); break;
      case 4: HorizontalRowF32<4>(in, c, s.h, s.hw.data(), out, out_width, flip); break;
      default: HorizontalRowF32<0>(in, c, s.h, s.hw.data(), out, out_width, flip); break;
    }
  };
  auto hrows = [&](const float* in0, const float* in1, float* out0, float* out1) {
    hrow(in0, out0);
    if (in1 != nullptr) hrow(in1, out1);
  };
  auto vrow = [&](const float* const* rows, int n, int64_t y, float* out) {
    VerticalRowF32(rows, n, s.vw.data() + s.v.offset[y], out, row_len);
  };
  Separable<float>(base, src_row_stride, window.height, row_len, out_height, need_h,
                   need_v ? &s.v : nullptr, hrows, vrow, &s.ring, &s.rows, dst);
}

void FlipLeftRight(const uint8_t* src, uint8_t* dst, int64_t height, int64_t width,
                   int64_t pixel_bytes) {
  const int64_t row = width * pixel_bytes;
#ifdef SLUICE_IMAGE_AVX2
  const bool simd3 = pixel_bytes == 3 && UseSimd();
#endif
  for (int64_t y = 0; y < height; ++y) {
    const uint8_t* in = src + y * row;
    uint8_t* out = dst + y * row;
    switch (pixel_bytes) {
      case 1: std::reverse_copy(in, in + width, out); break;
      case 3: {
        int64_t d = 0;
#ifdef SLUICE_IMAGE_AVX2
        if (simd3) d = FlipRow3Avx2(in, out, width);
#endif
        for (; d < width; ++d) std::memcpy(out + d * 3, in + (width - 1 - d) * 3, 3);
        break;
      }
      case 4: FlipRowFixed<4>(in, out, width); break;
      case 12: FlipRowFixed<12>(in, out, width); break;
      default:
        for (int64_t d = 0; d < width; ++d) {
          std::memcpy(out + d * pixel_bytes, in + (width - 1 - d) * pixel_bytes, pixel_bytes);
        }
    }
  }
}

void NormalizeU8(const uint8_t* src, int64_t num_pixels, int64_t channels, float scale,
                 const float* mean, const float* inv_std, bool chw, float* dst) {
  int64_t done = 0;
#ifdef SLUICE_IMAGE_AVX2
  if (channels == 3 && chw && UseSimd()) {
    done = NormalizeU8RgbPlanarAvx2(src, num_pixels, scale, mean, inv_std, dst);
  }
#endif
  NormalizeScalar(src, done, num_pixels, channels, scale, mean, inv_std, chw, dst);
}

void NormalizeF32(const float* src, int64_t num_pixels, int64_t channels, float scale,
                  const float* mean, const float* inv_std, bool chw, float* dst) {
  NormalizeScalar(src, 0, num_pixels, channels, scale, mean, inv_std, chw, dst);
}

void SetImageSimdEnabledForTesting(bool enabled) {
  g_simd_enabled.store(enabled, std::memory_order_relaxed);
}

bool ImageSimdActive() { return UseSimd(); }

}  // namespace sluice
