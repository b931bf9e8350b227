// Byte coding: varints, fixed-width integers, and the binary form of tensors and elements
// shared by checkpoints and the file cache (and later the service's wire format).
//
// Decoders take a string_view cursor, advance it, and reject malformed input (truncation,
// absurd ranks or sizes) with DataLoss; they never read past the input.
#ifndef SLUICE_CORE_CODING_H_
#define SLUICE_CORE_CODING_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "sluice/element.h"
#include "sluice/status.h"

namespace sluice {

void PutVarint64(std::string* out, uint64_t v);
void PutFixed32(std::string* out, uint32_t v);
void PutFixed64(std::string* out, uint64_t v);
void PutLengthPrefixed(std::string* out, std::string_view s);
bool GetVarint64(std::string_view* in, uint64_t* v);
bool GetFixed32(std::string_view* in, uint32_t* v);
bool GetFixed64(std::string_view* in, uint64_t* v);
bool GetLengthPrefixed(std::string_view* in, std::string_view* s);

inline uint32_t DecodeFixed32(const char* p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}
inline uint64_t DecodeFixed64(const char* p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

// Largest rank accepted from encoded data.
inline constexpr int kMaxEncodedRank = 32;

void EncodeTensor(const Tensor& t, std::string* out);
Result<Tensor> DecodeTensor(std::string_view* in);
void EncodeElement(const Element& e, std::string* out);
Result<Element> DecodeElement(std::string_view* in);

}  // namespace sluice

#endif  // SLUICE_CORE_CODING_H_
