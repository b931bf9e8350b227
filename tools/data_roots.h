// --data-root / --write-root: confine the file access of a pipeline loaded from a spec
// (docs/files.md). The flags set Options::files (allowed_roots / allowed_write_roots),
// replacing a spec's own; the spec is also built inside them (ListFiles, ImageFolder, Idx
// and vocabularies touch files while being built), and a spec's own roots then narrow
// that further. The service's worker takes the same flags.
#ifndef SLUICE_TOOLS_DATA_ROOTS_H_
#define SLUICE_TOOLS_DATA_ROOTS_H_

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "core/env.h"
#include "sluice/dataset.h"
#include "sluice/serialize.h"

namespace sluice {

struct DataRoots {
  std::vector<std::string> read;   // --data-root (repeatable)
  std::vector<std::string> write;  // --write-root (repeatable)

  bool set() const { return !read.empty() || !write.empty(); }
  FileOptions Files() const {
    FileOptions f;
    if (!set()) return f;
    f.allowed_roots = read;
    f.allowed_write_roots = write;
    return f;
  }
};

inline void AddDataRootFlags(CLI::App* cmd, DataRoots* roots) {
  cmd->add_option("--data-root", roots->read,
                  "Read files only under this directory (repeatable; docs/files.md)");
  cmd->add_option("--write-root", roots->write,
                  "Write files (Cache) only under this directory (repeatable)");
}

// LoadPipelineSpec(path), built and run inside `roots` when set.
inline Result<Dataset> LoadSpecConfined(const std::string& path, const DataRoots& roots) {
  if (!roots.set()) return LoadPipelineSpec(path);
  const FileOptions files = roots.Files();
  std::unique_ptr<Env> confined = NewConfinedEnvFor(Env::Default(), files);
  ScopedBuildEnv build_env(confined.get());
  SLUICE_ASSIGN_OR_RETURN(Dataset ds, LoadPipelineSpec(path));
  Options o;
  o.files = files;
  return ds.WithOptions(o);
}

}  // namespace sluice

#endif  // SLUICE_TOOLS_DATA_ROOTS_H_
