// libFuzzer target: a GetElementResponse as a client receives it from a worker
// (untrusted bytes): decompression (zstd, lz4) and element decoding are bounded by
// kMaxElementBytes and fail with an error, never a crash or an unbounded allocation. An
// element that decodes encodes again to bytes that decode to the same element.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "core/coding.h"
#include "service/element_codec.h"

using namespace sluice::service;  // NOLINT

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  GetElementResponse resp;
  if (!resp.ParseFromArray(data, static_cast<int>(size))) return 0;
  // Sizes claimed beyond what a fuzz input could inflate to are refused by the codec's
  // bound; keep the fuzzer's own allocations small as well.
  if (resp.uncompressed_size() > (int64_t{1} << 24)) return 0;
  auto e = DecodeResponseElement(resp);
  if (!e.ok()) return 0;
  std::string bytes;
  sluice::EncodeElement(*e, &bytes);
  GetElementResponse again;
  if (!CompressElement(bytes, COMPRESSION_ZSTD, &again).ok()) abort();
  auto e2 = DecodeResponseElement(again);
  if (!e2.ok()) abort();
  std::string bytes2;
  sluice::EncodeElement(*e2, &bytes2);
  if (bytes != bytes2) abort();
  return 0;
}
