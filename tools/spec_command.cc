// sluice spec show|fingerprint|export <file.json>: inspects a JSON pipeline spec
// (docs/spec.md) without running it.
//
//   show         the graph (output first, inputs indented), element spec, cardinality,
//                options and fingerprint; --json prints them as one JSON object
//   fingerprint  the fingerprint alone (include/sluice/serialize.h)
//   export       the serialized GraphDef: protobuf JSON on stdout, or binary with -o FILE
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "commands.h"
#include "data_roots.h"
#include "sluice/serialize.h"

namespace sluice {
namespace {

int Fail(const std::string& what, const Status& s) {
  std::fprintf(stderr, "sluice spec %s: %s\n", what.c_str(), s.ToString().c_str());
  return 1;
}

int Show(const std::string& path, bool json, const DataRoots& roots) {
  Result<Dataset> ds = LoadSpecConfined(path, roots);
  if (!ds.ok()) return Fail("show", ds.status());
  Result<std::string> fp = DatasetFingerprint(*ds);
  if (!fp.ok()) return Fail("show", fp.status());
  const int64_t card = ds->Cardinality();
  const std::string card_str = card == kInfiniteCardinality  ? "infinite"
                               : card == kUnknownCardinality ? "unknown"
                                                             : std::to_string(card);
  if (json) {
    nlohmann::json j = {{"spec", path},
                        {"fingerprint", *fp},
                        {"element_spec", ds->element_spec().ToString()},
                        {"cardinality", card_str},
                        {"options", ds->options().DebugLines()},
                        {"graph", DatasetGraphDebugString(*ds)}};
    if (auto rewrites = ds->OptimizationReport(); rewrites.ok()) j["rewrites"] = *rewrites;
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("spec        : %s\n", path.c_str());
  std::printf("fingerprint : %s\n", fp->c_str());
  std::printf("elements    : %s\n", ds->element_spec().ToString().c_str());
  std::printf("cardinality : %s\n", card_str.c_str());
  for (const std::string& line : ds->options().DebugLines()) {
    std::printf("option      : %s\n", line.c_str());
  }
  std::printf("graph (output first):\n%s", DatasetGraphDebugString(*ds).c_str());
  // What MakeIterator() will rewrite (docs/optimizer.md).
  Result<std::vector<std::string>> rewrites = ds->OptimizationReport();
  if (!rewrites.ok()) return Fail("show", rewrites.status());
  for (const std::string& line : *rewrites) std::printf("rewrite     : %s\n", line.c_str());
  return 0;
}

int Fingerprint(const std::string& path) {
  Result<Dataset> ds = LoadPipelineSpec(path);
  if (!ds.ok()) return Fail("fingerprint", ds.status());
  Result<std::string> fp = DatasetFingerprint(*ds);
  if (!fp.ok()) return Fail("fingerprint", fp.status());
  std::printf("%s\n", fp->c_str());
  return 0;
}

int Export(const std::string& path, const std::string& out) {
  Result<Dataset> ds = LoadPipelineSpec(path);
  if (!ds.ok()) return Fail("export", ds.status());
  Result<std::string> bytes =
      SerializeDataset(*ds, out.empty() ? GraphFormat::kJson : GraphFormat::kBinary);
  if (!bytes.ok()) return Fail("export", bytes.status());
  if (out.empty()) {
    std::printf("%s\n", bytes->c_str());
    return 0;
  }
  std::ofstream f(out, std::ios::binary);
  f.write(bytes->data(), static_cast<std::streamsize>(bytes->size()));
  f.close();
  if (!f) return Fail("export", ErrnoToStatus(errno, "cannot write", out));
  return 0;
}

}  // namespace

void AddSpecCommand(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("spec", "Inspect a JSON pipeline spec (docs/spec.md)");
  cmd->require_subcommand(1);
  auto path = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  auto out = std::make_shared<std::string>();
  auto roots = std::make_shared<DataRoots>();

  auto* show = cmd->add_subcommand("show", "Print the graph, element spec and fingerprint");
  show->add_option("file", *path, "The spec (.json)")->required();
  show->add_flag("--json", *json, "Print one JSON object");
  AddDataRootFlags(show, roots.get());
  show->callback([=] { *exit_code = Show(*path, *json, *roots); });

  auto* fp = cmd->add_subcommand("fingerprint", "Print the pipeline's fingerprint");
  fp->add_option("file", *path, "The spec (.json)")->required();
  fp->callback([=] { *exit_code = Fingerprint(*path); });

  auto* exp = cmd->add_subcommand(
      "export", "Print the serialized GraphDef as protobuf JSON, or write it binary (-o)");
  exp->add_option("file", *path, "The spec (.json)")->required();
  exp->add_option("-o,--output", *out, "Write the binary GraphDef here");
  exp->callback([=] { *exit_code = Export(*path, *out); });
}

}  // namespace sluice
