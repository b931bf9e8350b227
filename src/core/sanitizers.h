// Which sanitizer this translation unit is built with, as constants (GCC defines
// __SANITIZE_ADDRESS__, clang answers __has_feature). Memory recyclers (the buffer caches
// in tensor.cc and small_blocks.cc) turn themselves off under AddressSanitizer, so that a
// use after free still reaches the sanitizer instead of a recycled block.
#ifndef SLUICE_CORE_SANITIZERS_H_
#define SLUICE_CORE_SANITIZERS_H_

namespace sluice {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#else
inline constexpr bool kAddressSanitizer = false;
#endif

}  // namespace sluice

#endif  // SLUICE_CORE_SANITIZERS_H_
