// libFuzzer target for ParsePipelineSpec (include/sluice/serialize.h, docs/spec.md):
// untrusted JSON specs must yield a dataset or a clear error, never a crash, leak or
// hang.
//
// Input: the spec text. Specs that mention ops or kernels that touch the file system when
// built (ListFiles, ImageFolder, Idx, tokenize, vocab_lookup) are skipped, so that the
// fuzzer does not walk the machine's disk. Besides "no crash", it checks: errors are
// non-empty and do not echo unbounded input; a spec that loads has a fingerprint and a
// debug string, and when it serializes, the GraphDef loads again to the same fingerprint.
#include <google/protobuf/stubs/logging.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "sluice/serialize.h"

namespace {

void Check(bool ok) {
  if (!ok) abort();
}

bool TouchesFiles(std::string_view text) {
  for (std::string_view s :
       {"ListFiles", "ImageFolder", "Idx", "tokenize", "vocab_lookup"}) {
    if (text.find(s) != std::string_view::npos) return true;
  }
  // JSON escapes could spell the names some other way ("\u004cistFiles").
  return text.find("\\u") != std::string_view::npos;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool quiet = [] {
    google::protobuf::SetLogHandler(nullptr);  // invalid UTF-8 warnings and the like
    return true;
  }();
  (void)quiet;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (TouchesFiles(text)) return 0;

  auto ds = sluice::ParsePipelineSpec(text, "fuzz.json");
  if (!ds.ok()) {
    const sluice::Status status = ds.status();
    const std::string& m = status.message();
    Check(!m.empty());
    // Messages quote clipped snippets, not the input; the JSON path of a deep node and
    // the list of known ops are what may grow, both bounded.
    Check(m.size() < 64 * 1024);
    return 0;
  }
  Check(ds->ok());
  (void)ds->Cardinality();
  (void)ds->element_spec().ToString();
  (void)sluice::DatasetGraphDebugString(*ds);
  auto fp = sluice::DatasetFingerprint(*ds);
  auto bytes = sluice::SerializeDataset(*ds, sluice::GraphFormat::kBinary);
  Check(fp.ok() == bytes.ok());  // both fail exactly on local callables, which specs lack
  if (!bytes.ok()) return 0;
  auto back = sluice::DeserializeDataset(*bytes, sluice::GraphFormat::kBinary);
  Check(back.ok());
  auto fp2 = sluice::DatasetFingerprint(*back);
  Check(fp2.ok() && *fp2 == *fp);
  return 0;
}
