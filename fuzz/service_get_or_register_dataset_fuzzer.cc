// libFuzzer target: GetOrRegisterDatasetRequest as the dispatcher receives it (untrusted
// bytes), through the transport-free Dispatcher::GetOrRegisterDataset
// (fuzz/service_fuzz.h). Never a crash, a hang or an unbounded allocation; an answer
// names a registered dataset.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

#include "graph/proto/graph.pb.h"
#include "service_fuzz.h"

using namespace sluice::service;  // NOLINT

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  GetOrRegisterDatasetRequest req;
  if (!req.ParseFromArray(data, static_cast<int>(size))) return 0;
  // As graph_deserialize_fuzzer: graphs that name file-system sources or kernels that
  // read files when built are skipped, so the fuzzer does not walk the machine's disk.
  static const std::set<std::string> kFileOps = {
      "ListFiles", "ImageFolder", "Idx", "TextLine", "TFRecord", "FixedLengthRecord"};
  static const std::set<std::string> kFileKernels = {"tokenize", "vocab_lookup",
                                                     "read_file"};
  sluice::graph::GraphDef def;
  if (!def.ParseFromString(req.graph())) return 0;
  for (const auto& n : def.node()) {
    if (kFileOps.count(n.op())) return 0;
    for (const auto& f : n.function()) {
      if (kFileKernels.count(f.kernel())) return 0;
    }
  }
  fuzz::Harness& h = fuzz::Get();
  GetOrRegisterDatasetResponse resp;
  sluice::Status s = h.dispatcher->GetOrRegisterDataset(req, &resp);
  if (s.ok())
    fuzz::Check(h.dispatcher->StateForTest().FindDataset(resp.dataset_id()) != nullptr);
  return 0;
}
