#include "core/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#include <nmmintrin.h>
#endif

namespace sluice::crc32c {
namespace {

constexpr uint32_t kPoly = 0x82f63b78u;  // reversed Castagnoli polynomial

struct Tables {
  uint32_t t[8][256];
  Tables() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
      t[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; ++i) {
      for (int s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
    }
  }
};

const Tables& GetTables() {
  static const Tables tables;
  return tables;
}

uint32_t ExtendPortable(uint32_t crc, const uint8_t* p, size_t n) {
  const Tables& tb = GetTables();
  uint32_t c = ~crc;
  while (n >= 8) {
    uint64_t v;
    memcpy(&v, p, 8);
    v ^= c;
    c = tb.t[7][v & 0xff] ^ tb.t[6][(v >> 8) & 0xff] ^ tb.t[5][(v >> 16) & 0xff] ^
        tb.t[4][(v >> 24) & 0xff] ^ tb.t[3][(v >> 32) & 0xff] ^ tb.t[2][(v >> 40) & 0xff] ^
        tb.t[1][(v >> 48) & 0xff] ^ tb.t[0][v >> 56];
    p += 8;
    n -= 8;
  }
  while (n--) c = tb.t[0][(c ^ *p++) & 0xff] ^ (c >> 8);
  return ~c;
}

#if defined(__x86_64__)
// The crc32 instruction has a latency of 3 cycles and a throughput of 1, so long inputs
// run three independent streams over consecutive blocks and join them: the register
// after block A then B is shift(crc(A), |B|) ^ crc_0(B), where shift applies |B| zero
// bytes (a linear map, tabulated per block size) and crc_0 starts from 0. This is Mark
// Adler's crc32c_hw (zlib license).
constexpr size_t kLong = 8192, kShort = 256;

// GF(2) matrix (32 columns as words) times a vector.
uint32_t Gf2Times(const uint32_t* mat, uint32_t vec) {
  uint32_t sum = 0;
  for (; vec != 0; vec >>= 1, ++mat) {
    if (vec & 1) sum ^= *mat;
  }
  return sum;
}

void Gf2Square(uint32_t* square, const uint32_t* mat) {
  for (int n = 0; n < 32; ++n) square[n] = Gf2Times(mat, mat[n]);
}

// Tables applying `len` (a power of two) zero bytes to a crc register, byte by byte.
struct ZerosTable {
  uint32_t t[4][256];
  explicit ZerosTable(size_t len) {
    uint32_t odd[32], even[32];
    odd[0] = kPoly;  // one zero bit
    for (int n = 1; n < 32; ++n) odd[n] = 1u << (n - 1);
    Gf2Square(even, odd);  // two zero bits
    Gf2Square(odd, even);  // four
    uint32_t* op = even;
    for (;;) {  // 8 << k zero bits, alternating buffers
      Gf2Square(even, odd);
      op = even;
      len >>= 1;
      if (len == 0) break;
      Gf2Square(odd, even);
      op = odd;
      len >>= 1;
      if (len == 0) break;
    }
    for (uint32_t n = 0; n < 256; ++n) {
      for (int b = 0; b < 4; ++b) t[b][n] = Gf2Times(op, n << (8 * b));
    }
  }
  uint32_t Shift(uint32_t crc) const {
    return t[0][crc & 0xff] ^ t[1][(crc >> 8) & 0xff] ^ t[2][(crc >> 16) & 0xff] ^
           t[3][crc >> 24];
  }
};

__attribute__((target("sse4.2"))) uint64_t Crc64(uint64_t c, const uint8_t* p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return _mm_crc32_u64(c, v);
}

// Three streams over blocks of `block` bytes while at least three remain.
__attribute__((target("sse4.2"))) uint64_t ThreeWay(uint64_t c, const uint8_t** p,
                                                    size_t* n, size_t block,
                                                    const ZerosTable& zeros) {
  while (*n >= 3 * block) {
    const uint8_t* q = *p;
    const uint8_t* end = q + block;
    uint64_t c1 = 0, c2 = 0;
    for (; q < end; q += 8) {
      c = Crc64(c, q);
      c1 = Crc64(c1, q + block);
      c2 = Crc64(c2, q + 2 * block);
    }
    c = zeros.Shift(static_cast<uint32_t>(c)) ^ static_cast<uint32_t>(c1);
    c = zeros.Shift(static_cast<uint32_t>(c)) ^ static_cast<uint32_t>(c2);
    *p += 3 * block;
    *n -= 3 * block;
  }
  return c;
}

__attribute__((target("sse4.2"))) uint32_t ExtendHw(uint32_t crc, const uint8_t* p,
                                                    size_t n) {
  static const ZerosTable kLongZeros(kLong), kShortZeros(kShort);
  uint64_t c = static_cast<uint32_t>(~crc);
  c = ThreeWay(c, &p, &n, kLong, kLongZeros);
  c = ThreeWay(c, &p, &n, kShort, kShortZeros);
  for (; n >= 8; n -= 8, p += 8) c = Crc64(c, p);
  uint32_t c32 = static_cast<uint32_t>(c);
  while (n--) c32 = _mm_crc32_u8(c32, *p++);
  return ~c32;
}

bool HaveSse42() {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  return (c & bit_SSE4_2) != 0;
}
#endif

}  // namespace

uint32_t Extend(uint32_t crc, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
#if defined(__x86_64__)
  static const bool hw = HaveSse42();
  if (hw) return ExtendHw(crc, p, n);
#endif
  return ExtendPortable(crc, p, n);
}

}  // namespace sluice::crc32c
