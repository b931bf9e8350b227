// Elements on the wire: sluice's element coding (core/coding.h), optionally compressed
// with zstd or lz4 (the client asks; the worker compresses only what gets smaller).
//
// Thread-safety: free functions, thread-safe.
#ifndef SLUICE_SERVICE_ELEMENT_CODEC_H_
#define SLUICE_SERVICE_ELEMENT_CODEC_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "service/proto/service.pb.h"
#include "sluice/element.h"
#include "sluice/status.h"

namespace sluice::service {

// Largest element accepted from the network, before or after decompression.
inline constexpr int64_t kMaxElementBytes = int64_t{1} << 30;

// Fills resp's element, compression and uncompressed_size from an encoded element.
Status CompressElement(std::string encoded, ElementCompression wanted,
                       GetElementResponse* resp);
// The element a response carries. DataLoss for bytes that do not decompress or decode;
// InvalidArgument for sizes over kMaxElementBytes.
Result<Element> DecodeResponseElement(const GetElementResponse& resp);

}  // namespace sluice::service

#endif  // SLUICE_SERVICE_ELEMENT_CODEC_H_
