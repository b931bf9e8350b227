// libFuzzer target for DeserializeDataset (include/sluice/serialize.h): untrusted graph
// bytes must yield a dataset or a clear error, never a crash, leak or hang.
//
// Input: byte 0 picks the format (even: binary GraphDef, odd: protobuf JSON); the rest is
// the serialized graph. Graphs that name file-system sources (ListFiles, ImageFolder, Idx)
// or kernels that read files when built (tokenize, vocab_lookup) are skipped, so that the
// fuzzer does not walk the machine's disk. Besides "no crash", it checks: a graph that
// loads serializes again, that serialization loads to the same fingerprint, and
// serializing is stable (equal graphs, equal bytes).
#include <google/protobuf/stubs/logging.h>
#include <google/protobuf/util/json_util.h>

#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>

#include "graph/proto/graph.pb.h"
#include "sluice/serialize.h"

namespace {

void Check(bool ok) {
  if (!ok) abort();
}

bool TouchesFiles(const sluice::graph::GraphDef& def) {
  static const std::set<std::string> kOps = {"ListFiles", "ImageFolder", "Idx"};
  static const std::set<std::string> kKernels = {"tokenize", "vocab_lookup"};
  for (const auto& n : def.node()) {
    if (kOps.count(n.op())) return true;
    for (const auto& f : n.function()) {
      if (kKernels.count(f.kernel())) return true;
    }
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool quiet = [] {
    google::protobuf::SetLogHandler(nullptr);  // invalid UTF-8 warnings and the like
    return true;
  }();
  (void)quiet;
  if (size == 0) return 0;
  const sluice::GraphFormat format =
      data[0] % 2 == 0 ? sluice::GraphFormat::kBinary : sluice::GraphFormat::kJson;
  std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);

  sluice::graph::GraphDef def;
  bool parsed = format == sluice::GraphFormat::kBinary
                    ? def.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))
                    : google::protobuf::util::JsonStringToMessage(
                          google::protobuf::StringPiece(bytes.data(), bytes.size()), &def)
                          .ok();
  if (parsed && TouchesFiles(def)) return 0;

  auto ds = sluice::DeserializeDataset(bytes, format);
  if (!ds.ok()) {
    Check(!ds.status().message().empty());
    return 0;
  }
  Check(ds->ok());
  auto again = sluice::SerializeDataset(*ds, sluice::GraphFormat::kBinary);
  Check(again.ok());
  auto back = sluice::DeserializeDataset(*again, sluice::GraphFormat::kBinary);
  Check(back.ok());
  auto third = sluice::SerializeDataset(*back, sluice::GraphFormat::kBinary);
  Check(third.ok() && *third == *again);
  auto fp1 = sluice::DatasetFingerprint(*ds);
  auto fp2 = sluice::DatasetFingerprint(*back);
  Check(fp1.ok() && fp2.ok() && *fp1 == *fp2);
  (void)sluice::DatasetGraphDebugString(*ds);
  return 0;
}
