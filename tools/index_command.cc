// sluice index FILE... [--check] [--json]: writes the offset index beside each uncompressed
// TFRecord file (FILE.index, formats/tfrecord_index.h), so the TFRecord source serves rows
// by index (global_shuffle over the files). --check only verifies the existing indexes:
// present, valid and fresh. Exit status 1 when any file fails.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "commands.h"
#include "formats/tfrecord_index.h"

namespace sluice {
namespace {

// One file: the index written (or checked), or why not.
nlohmann::json IndexOne(const std::string& file, bool check) {
  nlohmann::json j = {{"file", file}, {"index", TFRecordIndexPath(file)}};
  Result<TFRecordIndex> index = check ? ReadTFRecordIndex(file) : WriteTFRecordIndex(file);
  if (index.ok() && check) {
    Result<FileStat> st = Env::Default()->Stat(file);
    if (!st.ok()) {
      index = st.status();
    } else if (!IndexFresh(*index, *st)) {
      index = FailedPreconditionError("stale index " + TFRecordIndexPath(file) + ": " + file +
                                      " changed since it was indexed");
    }
  }
  if (!index.ok()) {
    j["error"] = index.status().ToString();
    return j;
  }
  j["records"] = index->offsets.size();
  j["file_bytes"] = index->file_size;
  return j;
}

int RunIndex(const std::vector<std::string>& files, bool check, bool json) {
  int rc = 0;
  nlohmann::json all = nlohmann::json::array();
  for (const std::string& f : files) {
    nlohmann::json j = IndexOne(f, check);
    if (j.contains("error")) rc = 1;
    if (json) {
      all.push_back(j);
    } else if (j.contains("error")) {
      std::fprintf(stderr, "%s: %s\n", f.c_str(), j["error"].get<std::string>().c_str());
    } else {
      std::printf("%s: %s records -> %s%s\n", f.c_str(), j["records"].dump().c_str(),
                  j["index"].get<std::string>().c_str(), check ? " (valid, fresh)" : "");
    }
  }
  if (json) std::printf("%s\n", all.dump(1).c_str());
  return rc;
}

}  // namespace

void AddIndexCommand(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand(
      "index", "Write an offset index beside each uncompressed TFRecord file (FILE.index)");
  auto files = std::make_shared<std::vector<std::string>>();
  auto check = std::make_shared<bool>(false);
  auto json = std::make_shared<bool>(false);
  cmd->add_option("files", *files, "TFRecord files")->required();
  cmd->add_flag("--check", *check, "Only verify the existing indexes (valid and fresh)");
  cmd->add_flag("--json", *json, "One JSON array: file, index, records or error");
  cmd->callback([=] { *exit_code = RunIndex(*files, *check, *json); });
}

}  // namespace sluice
