#include "service/element_codec.h"

#include <lz4.h>
#include <zstd.h>

#include "core/coding.h"

namespace sluice::service {

Status CompressElement(std::string encoded, ElementCompression wanted,
                       GetElementResponse* resp) {
  resp->set_uncompressed_size(static_cast<int64_t>(encoded.size()));
  std::string out;
  if (wanted == COMPRESSION_ZSTD) {
    out.resize(ZSTD_compressBound(encoded.size()));
    const size_t n =
        ZSTD_compress(out.data(), out.size(), encoded.data(), encoded.size(), 1);
    if (ZSTD_isError(n))
      return InternalError(std::string("zstd: ") + ZSTD_getErrorName(n));
    out.resize(n);
  } else if (wanted == COMPRESSION_LZ4 && encoded.size() <= LZ4_MAX_INPUT_SIZE) {
    out.resize(LZ4_compressBound(static_cast<int>(encoded.size())));
    const int n =
        LZ4_compress_default(encoded.data(), out.data(), static_cast<int>(encoded.size()),
                             static_cast<int>(out.size()));
    if (n <= 0) return InternalError("lz4: compression failed");
    out.resize(static_cast<size_t>(n));
  }
  if (!out.empty() && out.size() < encoded.size()) {
    resp->set_compression(wanted);
    resp->set_element(std::move(out));
  } else {
    resp->set_compression(COMPRESSION_NONE);
    resp->set_element(std::move(encoded));
  }
  return Status::OK();
}

Result<Element> DecodeResponseElement(const GetElementResponse& resp) {
  const int64_t size = resp.uncompressed_size();
  if (size < 0 || size > kMaxElementBytes ||
      static_cast<int64_t>(resp.element().size()) > kMaxElementBytes) {
    return InvalidArgumentError("service: element of " + std::to_string(size) +
                                " bytes over the limit");
  }
  std::string plain;
  std::string_view in = resp.element();
  switch (resp.compression()) {
    case COMPRESSION_NONE:
      break;
    case COMPRESSION_ZSTD: {
      plain.resize(static_cast<size_t>(size));
      const size_t n = ZSTD_decompress(plain.data(), plain.size(), in.data(), in.size());
      if (ZSTD_isError(n) || n != plain.size()) {
        return DataLossError("service: element does not decompress (zstd)");
      }
      in = plain;
      break;
    }
    case COMPRESSION_LZ4: {
      plain.resize(static_cast<size_t>(size));
      if (size > LZ4_MAX_INPUT_SIZE || in.size() > LZ4_MAX_INPUT_SIZE) {
        return InvalidArgumentError("service: lz4 element over the limit");
      }
      const int n =
          LZ4_decompress_safe(in.data(), plain.data(), static_cast<int>(in.size()),
                              static_cast<int>(plain.size()));
      if (n < 0 || n != size)
        return DataLossError("service: element does not decompress (lz4)");
      in = plain;
      break;
    }
    default:
      return InvalidArgumentError("service: unknown element compression " +
                                  std::to_string(resp.compression()));
  }
  std::string_view cursor = in;
  SLUICE_ASSIGN_OR_RETURN(Element e, DecodeElement(&cursor));
  if (!cursor.empty()) return DataLossError("service: trailing bytes after the element");
  for (size_t i = 0; i < e.size(); ++i) {
    // The element coding reads a tensor of no type; nothing a worker sends has one.
    if (e[i].dtype() == DType::kInvalid) {
      return DataLossError("service: element component " + std::to_string(i) +
                           " has no type");
    }
  }
  return e;
}

}  // namespace sluice::service
