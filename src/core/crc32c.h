// CRC-32C (Castagnoli), as used by TFRecord, with TensorFlow's masking.
// Uses the SSE4.2 crc32 instruction when the CPU has it, a slicing-by-8 table otherwise.
#ifndef SLUICE_CORE_CRC32C_H_
#define SLUICE_CORE_CRC32C_H_

#include <cstddef>
#include <cstdint>

namespace sluice::crc32c {

// CRC of data appended to a message whose CRC is `crc`.
uint32_t Extend(uint32_t crc, const void* data, size_t n);
inline uint32_t Value(const void* data, size_t n) { return Extend(0, data, n); }

inline constexpr uint32_t kMaskDelta = 0xa282ead8u;
// TFRecord stores masked CRCs: rotate right by 15 bits and add a constant.
inline uint32_t Mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + kMaskDelta; }
inline uint32_t Unmask(uint32_t masked) {
  uint32_t rot = masked - kMaskDelta;
  return (rot >> 17) | (rot << 15);
}

}  // namespace sluice::crc32c

#endif  // SLUICE_CORE_CRC32C_H_
