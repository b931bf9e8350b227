#include "core/coding.h"

#include <cstring>

namespace sluice {

void PutVarint64(std::string* out, uint64_t v) {
  char buf[10];
  int n = 0;
  while (v >= 0x80) {
    buf[n++] = static_cast<char>(v | 0x80);
    v >>= 7;
  }
  buf[n++] = static_cast<char>(v);
  out->append(buf, n);
}

void PutFixed32(std::string* out, uint32_t v) { out->append(reinterpret_cast<const char*>(&v), 4); }
void PutFixed64(std::string* out, uint64_t v) { out->append(reinterpret_cast<const char*>(&v), 8); }

void PutLengthPrefixed(std::string* out, std::string_view s) {
  PutVarint64(out, s.size());
  out->append(s.data(), s.size());
}

bool GetVarint64(std::string_view* in, uint64_t* v) {
  uint64_t result = 0;
  for (int shift = 0; shift <= 63 && !in->empty(); shift += 7) {
    uint8_t byte = static_cast<uint8_t>((*in)[0]);
    in->remove_prefix(1);
    if (shift == 63 && byte > 1) return false;
    result |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      *v = result;
      return true;
    }
  }
  return false;
}

bool GetFixed32(std::string_view* in, uint32_t* v) {
  if (in->size() < 4) return false;
  *v = DecodeFixed32(in->data());
  in->remove_prefix(4);
  return true;
}

bool GetFixed64(std::string_view* in, uint64_t* v) {
  if (in->size() < 8) return false;
  *v = DecodeFixed64(in->data());
  in->remove_prefix(8);
  return true;
}

bool GetLengthPrefixed(std::string_view* in, std::string_view* s) {
  uint64_t n;
  if (!GetVarint64(in, &n) || n > in->size()) return false;
  *s = in->substr(0, n);
  in->remove_prefix(n);
  return true;
}

void EncodeTensor(const Tensor& t, std::string* out) {
  out->push_back(static_cast<char>(t.dtype()));
  PutVarint64(out, static_cast<uint64_t>(t.rank()));
  for (int64_t d : t.shape().dims()) PutVarint64(out, static_cast<uint64_t>(d));
  if (t.dtype() == DType::kString) {
    for (const std::string& s : t.flat<std::string>()) PutLengthPrefixed(out, s);
  } else if (t.valid()) {
    PutLengthPrefixed(out, std::string_view(static_cast<const char*>(t.raw_data()), t.nbytes()));
  }
}

Result<Tensor> DecodeTensor(std::string_view* in) {
  if (in->empty()) return DataLossError("truncated tensor: no dtype");
  auto dtype = static_cast<DType>((*in)[0]);
  in->remove_prefix(1);
  if (dtype == DType::kInvalid) return Tensor();
  if (!DTypeIsValid(dtype)) {
    return DataLossError("corrupt tensor: bad dtype " + std::to_string(static_cast<int>(dtype)));
  }
  uint64_t rank;
  if (!GetVarint64(in, &rank)) return DataLossError("truncated tensor: no rank");
  if (rank > kMaxEncodedRank) return DataLossError("corrupt tensor: rank " + std::to_string(rank));
  std::vector<int64_t> dims(rank);
  // The product of the nonzero dimensions, saturated past kMaxNonzero: an empty tensor
  // ([2050, 0]) may have any other dimensions as long as their product fits int64 (Shape
  // multiplies them all), a non-empty one needs data for every element.
  constexpr uint64_t kMaxNonzero = uint64_t{1} << 62;
  uint64_t nonzero = 1;
  bool empty = false;
  for (uint64_t i = 0; i < rank; ++i) {
    uint64_t d;
    if (!GetVarint64(in, &d)) return DataLossError("truncated tensor: no dimension");
    if (d == 0) {
      empty = true;
    } else {
      nonzero = d > kMaxNonzero / nonzero ? kMaxNonzero + 1 : nonzero * d;
    }
    if (nonzero > kMaxNonzero) return DataLossError("corrupt tensor: dimensions too large");
    dims[i] = static_cast<int64_t>(d);
  }
  const uint64_t n = empty ? 0 : nonzero;
  // Every element needs at least one byte of input, so bound n by the input size.
  if (n > in->size() + 1) return DataLossError("corrupt tensor: dimensions larger than the data");
  Shape shape(dims);
  if (dtype == DType::kString) {
    if (n > in->size()) return DataLossError("corrupt tensor: more strings than bytes");
    Tensor t(dtype, std::move(shape));
    std::string* s = t.mutable_data<std::string>();
    for (uint64_t i = 0; i < n; ++i) {
      std::string_view v;
      if (!GetLengthPrefixed(in, &v)) return DataLossError("truncated tensor: string data");
      s[i].assign(v.data(), v.size());
    }
    return t;
  }
  std::string_view bytes;
  if (!GetLengthPrefixed(in, &bytes)) return DataLossError("truncated tensor: data");
  if (bytes.size() != n * DTypeSize(dtype)) {
    return DataLossError("corrupt tensor: " + std::to_string(bytes.size()) + " bytes for shape " +
                         shape.ToString() + " of " + std::string(DTypeName(dtype)));
  }
  Tensor t(dtype, std::move(shape));
  if (!bytes.empty()) memcpy(t.mutable_data<char>(), bytes.data(), bytes.size());
  return t;
}

void EncodeElement(const Element& e, std::string* out) {
  PutVarint64(out, e.size());
  if (e.names()) {
    out->push_back(1);
    PutVarint64(out, e.names()->size());
    for (const std::string& n : *e.names()) PutLengthPrefixed(out, n);
  } else {
    out->push_back(0);
  }
  for (const Tensor& t : e.tensors()) EncodeTensor(t, out);
}

Result<Element> DecodeElement(std::string_view* in) {
  uint64_t n;
  if (!GetVarint64(in, &n) || n > in->size()) return DataLossError("corrupt element: size");
  if (in->empty()) return DataLossError("truncated element");
  bool has_names = (*in)[0] != 0;
  in->remove_prefix(1);
  Names names;
  if (has_names) {
    uint64_t k;
    if (!GetVarint64(in, &k) || k > in->size()) return DataLossError("corrupt element: names");
    std::vector<std::string> v(k);
    for (auto& s : v) {
      std::string_view sv;
      if (!GetLengthPrefixed(in, &sv)) return DataLossError("truncated element: names");
      s = std::string(sv);
    }
    names = MakeNames(std::move(v));
  }
  std::vector<Tensor> tensors;
  tensors.reserve(n);
  for (uint64_t i = 0; i < n; ++i) {
    SLUICE_ASSIGN_OR_RETURN(Tensor t, DecodeTensor(in));
    tensors.push_back(std::move(t));
  }
  return Element(std::move(tensors), std::move(names));
}

}  // namespace sluice
