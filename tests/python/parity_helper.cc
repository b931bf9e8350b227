// Runs the pipelines of tests/python/test_parity.py through the C++ API and prints, for
// every element, one line per component: "<index> <name> <dtype> <shape> <crc32 of the
// bytes>" (strings: the crc of the concatenated payloads, each prefixed by its length).
// The Python test builds the same pipelines with the Python API and compares the lines.
//
//   sluice_py_parity_helper <pipeline> <source dir>
#include <zlib.h>

#include <cstdio>
#include <string>

#include "sluice/dataset.h"

namespace sluice {
namespace {

uint32_t Crc(const Tensor& t) {
  uLong crc = crc32(0L, Z_NULL, 0);
  if (t.dtype() == DType::kString) {
    for (const std::string& s : t.flat<std::string>()) {
      uint64_t n = s.size();
      crc = crc32(crc, reinterpret_cast<const Bytef*>(&n), sizeof(n));
      crc = crc32(crc, reinterpret_cast<const Bytef*>(s.data()), s.size());
    }
    return crc;
  }
  return crc32(crc, static_cast<const Bytef*>(t.raw_data()), t.nbytes());
}

Result<Dataset> Build(const std::string& name, const std::string& src) {
  if (name == "range") {
    return Dataset::Range(0, 100, 3).Shuffle(10, 5).Batch(7);
  }
  if (name == "fashion") {
    const std::string dir = "/usr/share/datasets/fashion-mnist";
    SLUICE_ASSIGN_OR_RETURN(Function expand, Function::Kernel("expand_dims", {{"axis", int64_t{-1}}}));
    SLUICE_ASSIGN_OR_RETURN(
        Function norm, Function::Kernel("normalize", {{"mean", std::vector<double>{0.2860}},
                                                      {"std", std::vector<double>{0.3530}},
                                                      {"layout", std::string("CHW")}}));
    SLUICE_ASSIGN_OR_RETURN(
        Function cast, Function::Kernel("cast", {{"dtype", DType::kInt64},
                                                 {"components", std::vector<int64_t>{1}}}));
    return Dataset::Zip({Dataset::Idx(dir + "/t10k-images-idx3-ubyte.gz"),
                         Dataset::Idx(dir + "/t10k-labels-idx1-ubyte.gz")})
        .Take(2000)
        .Shuffle(2000, 42)
        .Map(expand)
        .MapAndBatch(norm, 256, kAutotune)
        .Map(cast);
  }
  if (name == "imagenet") {
    SLUICE_ASSIGN_OR_RETURN(
        Function parse,
        Function::Kernel("parse_example",
                         {{"keys", std::vector<std::string>{"image/encoded", "image/class/label"}},
                          {"kinds", std::vector<std::string>{"fixed", "fixed"}},
                          {"dtypes", std::vector<DType>{DType::kString, DType::kInt64}},
                          {"shapes", std::vector<PartialShape>{PartialShape{}, PartialShape{}}}}));
    SLUICE_ASSIGN_OR_RETURN(Function decode, Function::Kernel("decode_jpeg", {{"channels", int64_t{3}}}));
    SLUICE_ASSIGN_OR_RETURN(Function resize,
                            Function::Kernel("resize", {{"size", std::vector<int64_t>{32, 32}}}));
    return Dataset::TFRecord({src + "/data/imagenet/tfrecord/train-00000-of-00008"})
        .Take(12)
        .Map(parse)
        .Map(decode, 2)
        .Map(resize)
        .Batch(4);
  }
  if (name == "text") {
    SLUICE_ASSIGN_OR_RETURN(
        Function tok, Function::Kernel("tokenize", {{"vocab_file", src + "/data/text/vocab.txt"}}));
    return Dataset::TFRecord({src + "/data/text/text-00000-of-00008"}).Take(64).Map(tok).PaddedBatch(8);
  }
  return InvalidArgumentError("unknown pipeline " + name);
}

int Run(const std::string& name, const std::string& src) {
  Result<Dataset> ds = Build(name, src);
  if (!ds.ok()) {
    std::fprintf(stderr, "%s\n", ds.status().ToString().c_str());
    return 1;
  }
  auto it = ds->MakeIterator();
  if (!it.ok()) {
    std::fprintf(stderr, "%s\n", it.status().ToString().c_str());
    return 1;
  }
  for (int64_t i = 0;; ++i) {
    auto next = (*it)->GetNext();
    if (!next.ok()) {
      std::fprintf(stderr, "%s\n", next.status().ToString().c_str());
      return 1;
    }
    if (!*next) break;
    const Element& e = **next;
    for (size_t c = 0; c < e.size(); ++c) {
      std::string cname = e.names() ? (*e.names())[c] : std::to_string(c);
      std::printf("%lld %s %s %s %08x\n", static_cast<long long>(i), cname.c_str(),
                  std::string(DTypeName(e[c].dtype())).c_str(), e[c].shape().ToString().c_str(),
                  Crc(e[c]));
    }
  }
  return 0;
}

}  // namespace
}  // namespace sluice

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s <range|fashion|imagenet|text> <source dir>\n", argv[0]);
    return 2;
  }
  return sluice::Run(argv[1], argv[2]);
}
