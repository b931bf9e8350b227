// Fuzzes the parse_example and parse_sequence_example kernels with arbitrary bytes: as
// one Example, as a batch of two, and as a SequenceExample. Errors are fine; crashes,
// leaks, undefined behaviour and outputs that break the declared spec are not. The
// kernels scan the wire format themselves, so each parse must also be protobuf's: an
// error where protobuf rejects the bytes, else the same result as for protobuf's own
// serialization of what it parsed.
#include <google/protobuf/stubs/logging.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "formats/proto/example.pb.h"
#include "sluice/dataset.h"

namespace {

using sluice::AttrMap;
using sluice::DType;
using sluice::Element;
using sluice::ElementSpec;
using sluice::Function;
using sluice::FunctionContext;
using sluice::PartialShape;
using sluice::Tensor;

struct Kernels {
  Function example;
  Function sequence;
};

Function MustKernel(std::string_view name, AttrMap attrs) {
  auto f = Function::Kernel(name, std::move(attrs));
  if (!f.ok()) __builtin_trap();
  return *f;
}

const Kernels& GetKernels() {
  static const Kernels* k = [] {
    google::protobuf::SetLogHandler(nullptr);  // invalid UTF-8 keys are logged otherwise
    auto* out = new Kernels;
    out->example = MustKernel(
        "parse_example",
        {{"keys", std::vector<std::string>{"i", "f", "s", "v", "g"}},
         {"kinds", std::vector<std::string>{"fixed", "var", "fixed", "var", "fixed"}},
         {"dtypes", std::vector<DType>{DType::kInt64, DType::kFloat32, DType::kString,
                                       DType::kString, DType::kFloat32}},
         {"shapes", std::vector<PartialShape>{PartialShape{2}, {}, {}, {}, {}}},
         {"defaults", std::vector<Tensor>{Tensor::FromVector<int64_t>({0, 0}), Tensor(),
                                          Tensor::Scalar(""), Tensor(), Tensor()}}});
    out->sequence = MustKernel(
        "parse_sequence_example",
        {{"context_keys", std::vector<std::string>{"i", "v"}},
         {"context_kinds", std::vector<std::string>{"fixed", "var"}},
         {"context_dtypes", std::vector<DType>{DType::kInt64, DType::kString}},
         {"context_shapes", std::vector<PartialShape>{PartialShape{2}, {}}},
         {"context_defaults",
          std::vector<Tensor>{Tensor::FromVector<int64_t>({1, 2}), Tensor()}},
         {"sequence_keys", std::vector<std::string>{"t", "x"}},
         {"sequence_dtypes", std::vector<DType>{DType::kInt64, DType::kFloat32}},
         {"sequence_shapes", std::vector<PartialShape>{{}, PartialShape{2}}},
         {"sequence_allow_missing", std::vector<std::string>{"x"}}});
    return out;
  }();
  return *k;
}

// The kernel's declared output spec must describe what it returned.
void CheckOutput(const Function& f, const Tensor& in,
                 const sluice::Result<Element>& out) {
  if (!out.ok()) {
    if (out.status().message().empty()) __builtin_trap();
    return;
  }
  ElementSpec in_spec = ElementSpec::Of(Element{in});
  auto spec = f.OutputSpec(in_spec);
  if (!spec || !spec->ok()) __builtin_trap();
  if (!(*spec)->Check(*out).ok()) __builtin_trap();
}

// `got` (the parse of the fuzz input) against protobuf's reading of the same bytes.
template <typename Message>
void CheckAgainstProtobuf(const Function& f, const std::string& bytes,
                          const sluice::Result<Element>& got) {
  Message m;
  if (!m.ParseFromString(bytes)) {
    if (got.ok()) __builtin_trap();  // accepted what protobuf rejects
    return;
  }
  FunctionContext ctx(0, 0);
  auto want = f(Element{Tensor::Scalar(m.SerializeAsString())}, ctx);
  if (got.ok() != want.ok()) __builtin_trap();
  if (!got.ok()) {
    if (got.status().ToString() != want.status().ToString()) __builtin_trap();
    return;
  }
  if (got->size() != want->size()) __builtin_trap();
  for (size_t c = 0; c < got->size(); ++c) {
    if (!(*got)[c].ContentEquals((*want)[c])) __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Kernels& k = GetKernels();
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  FunctionContext ctx(0, 0);

  Tensor one = Tensor::Scalar(bytes);
  auto example = k.example(Element{one}, ctx);
  CheckOutput(k.example, one, example);
  CheckAgainstProtobuf<tensorflow::Example>(k.example, bytes, example);

  // A batch of two: the input split at a position chosen by its first byte.
  const size_t cut = size == 0 ? 0 : data[0] % (size + 1);
  Tensor two = Tensor::FromStrings({bytes.substr(0, cut), bytes.substr(cut)});
  CheckOutput(k.example, two, k.example(Element{two}, ctx));

  auto sequence = k.sequence(Element{one}, ctx);
  CheckOutput(k.sequence, one, sequence);
  CheckAgainstProtobuf<tensorflow::SequenceExample>(k.sequence, bytes, sequence);
  return 0;
}
