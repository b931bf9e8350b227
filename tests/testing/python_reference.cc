#include "testing/python_reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include "testing/conformance.h"

namespace sluice::testing {
namespace {

std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

struct NpyType {
  DType dtype;
  const char* descr;
};
constexpr NpyType kNpyTypes[] = {
    {DType::kBool, "|b1"},    {DType::kUInt8, "|u1"},   {DType::kInt8, "|i1"},
    {DType::kInt16, "<i2"},   {DType::kInt32, "<i4"},   {DType::kInt64, "<i8"},
    {DType::kFloat32, "<f4"}, {DType::kFloat64, "<f8"},
};

template <typename F>
void VisitAsDouble(const Tensor& t, F&& f) {
  const int64_t n = t.num_elements();
  switch (t.dtype()) {
#define SLUICE_CASE(D, T) \
  case D:                 \
    for (int64_t i = 0; i < n; ++i) f(i, static_cast<double>(t.data<T>()[i])); \
    break;
    SLUICE_CASE(DType::kBool, bool)
    SLUICE_CASE(DType::kUInt8, uint8_t)
    SLUICE_CASE(DType::kInt8, int8_t)
    SLUICE_CASE(DType::kInt16, int16_t)
    SLUICE_CASE(DType::kInt32, int32_t)
    SLUICE_CASE(DType::kInt64, int64_t)
    SLUICE_CASE(DType::kFloat32, float)
    SLUICE_CASE(DType::kFloat64, double)
#undef SLUICE_CASE
    default:
      ADD_FAILURE() << "unsupported dtype " << DTypeName(t.dtype());
  }
}

std::vector<double> AsDoubles(const Tensor& t) {
  std::vector<double> v(t.num_elements());
  VisitAsDouble(t, [&](int64_t i, double x) { v[i] = x; });
  return v;
}

bool SameLayout(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape()) {
    ADD_FAILURE() << "shapes differ: " << a.shape().ToString() << " vs " << b.shape().ToString();
    return false;
  }
  return true;
}

}  // namespace

bool RunReferenceScript(const std::string& script, const std::vector<std::string>& args) {
  std::string cmd = std::string(kPython) + " " + ShellQuote(SourceDir() + "/tests/reference/" + script);
  for (const auto& a : args) cmd += " " + ShellQuote(a);
  cmd += " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) {
    ADD_FAILURE() << "cannot run: " << cmd;
    return false;
  }
  std::string output;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) output.append(buf, n);
  int rc = pclose(p);
  if (rc != 0) {
    ADD_FAILURE() << "reference script failed (" << rc << "): " << cmd << "\n" << output;
    return false;
  }
  return true;
}

void WriteNpy(const std::string& path, const Tensor& t) {
  const char* descr = nullptr;
  for (const auto& nt : kNpyTypes) {
    if (nt.dtype == t.dtype()) descr = nt.descr;
  }
  ASSERT_NE(descr, nullptr) << "WriteNpy: unsupported dtype " << DTypeName(t.dtype());
  std::string shape = "(";
  for (int i = 0; i < t.rank(); ++i) shape += std::to_string(t.dim(i)) + (t.rank() == 1 ? "," : i + 1 < t.rank() ? ", " : "");
  shape += ")";
  std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  out.append(static_cast<const char*>(t.raw_data()), t.nbytes());
  WriteFile(path, out);
}

Tensor ReadNpy(const std::string& path) {
  std::string s = ReadFile(path);
  if (s.size() < 10 || s.compare(0, 6, "\x93NUMPY") != 0) {
    ADD_FAILURE() << path << ": not a .npy file";
    return Tensor();
  }
  const int major = static_cast<uint8_t>(s[6]);
  size_t hlen, hstart;
  if (major == 1) {
    hlen = static_cast<uint8_t>(s[8]) | (static_cast<size_t>(static_cast<uint8_t>(s[9])) << 8);
    hstart = 10;
  } else {
    if (s.size() < 12) return ADD_FAILURE() << path << ": truncated", Tensor();
    hlen = 0;
    for (int i = 0; i < 4; ++i) hlen |= static_cast<size_t>(static_cast<uint8_t>(s[8 + i])) << (8 * i);
    hstart = 12;
  }
  if (hstart + hlen > s.size()) return ADD_FAILURE() << path << ": truncated header", Tensor();
  const std::string header = s.substr(hstart, hlen);
  DType dtype = DType::kInvalid;
  for (const auto& nt : kNpyTypes) {
    if (header.find(std::string("'") + nt.descr + "'") != std::string::npos) dtype = nt.dtype;
  }
  if (dtype == DType::kInvalid) return ADD_FAILURE() << path << ": unsupported dtype in " << header, Tensor();
  if (header.find("'fortran_order': True") != std::string::npos) {
    return ADD_FAILURE() << path << ": fortran order", Tensor();
  }
  const size_t open = header.find('(', header.find("'shape'"));
  const size_t close = header.find(')', open);
  std::vector<int64_t> dims;
  std::stringstream ss(header.substr(open + 1, close - open - 1));
  std::string tok;
  while (std::getline(ss, tok, ',')) {
    if (tok.find_first_not_of(' ') != std::string::npos) dims.push_back(std::stoll(tok));
  }
  Tensor t(dtype, Shape(dims));
  const size_t data = hstart + hlen;
  if (s.size() - data != t.nbytes()) {
    return ADD_FAILURE() << path << ": " << s.size() - data << " data bytes, expected " << t.nbytes(), Tensor();
  }
  std::memcpy(t.mutable_data<char>(), s.data() + data, t.nbytes());
  return t;
}

double MaxAbsDiff(const Tensor& a, const Tensor& b) {
  if (!SameLayout(a, b)) return std::numeric_limits<double>::infinity();
  std::vector<double> bv = AsDoubles(b);
  double m = 0;
  VisitAsDouble(a, [&](int64_t i, double x) { m = std::max(m, std::fabs(x - bv[i])); });
  return m;
}

double MeanAbsDiff(const Tensor& a, const Tensor& b) {
  if (!SameLayout(a, b)) return std::numeric_limits<double>::infinity();
  if (a.num_elements() == 0) return 0;
  std::vector<double> bv = AsDoubles(b);
  double s = 0;
  VisitAsDouble(a, [&](int64_t i, double x) { s += std::fabs(x - bv[i]); });
  return s / static_cast<double>(a.num_elements());
}

}  // namespace sluice::testing
