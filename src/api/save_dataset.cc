// Dataset::Save and Dataset::Load (tf.data save/load); the directory layout is
// ops/saved_dataset.h's.
#include <unistd.h>

#include "core/env.h"
#include "ops/record_file.h"
#include "ops/saved_dataset.h"
#include "sluice/dataset.h"
#include "sluice/iterator.h"
#include "sluice/serialize.h"

namespace sluice {

Status Dataset::Save(const std::string& path, Compression compression) const {
  SLUICE_RETURN_IF_ERROR(status());
  if (path.empty()) return InvalidArgumentError("Save: path is empty");
  // The files go through the pipeline's Env, confined to options().files' write roots
  // when they are set (docs/files.md), as Cache and Snapshot are.
  Env* env = options().env != nullptr ? options().env : Env::Default();
  std::unique_ptr<Env> confined = NewConfinedEnvFor(env, options().files);
  if (confined) env = confined.get();
  SLUICE_RETURN_IF_ERROR(env->CreateDirs(path).WithContext("Save"));
  // The old metadata goes first: until the new one is written, nothing here is read.
  const std::string meta_path = path + "/" + kSavedMetadataFile;
  if (Status s = env->DeleteFile(meta_path);
      !s.ok() && s.code() != StatusCode::kNotFound) {
    return s.WithContext("Save");
  }
  SavedDatasetMetadata meta;
  meta.compression = compression;
  meta.spec = element_spec();
  meta.shards.push_back(SavedShardName(0, compression));
  const std::string shard = path + "/" + meta.shards[0];
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<Iterator> it, MakeIterator());
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<ElementFileWriter> w,
                          ElementFileWriter::Create(env, shard, compression));
  for (;;) {
    SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, it->GetNext());
    if (!e) break;
    if (Status s = w->Append(*e); !s.ok()) return s.WithContext("Save: '" + shard + "'");
  }
  meta.elements = w->count();
  SLUICE_RETURN_IF_ERROR(w->Finish(shard).WithContext("Save: '" + shard + "'"));
  const std::string tmp = meta_path + ".tmp-" + std::to_string(getpid());
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> f, env->NewWritableFile(tmp));
  Status s = f->Append(EncodeSavedMetadata(meta));
  if (s.ok()) s = f->Sync();
  Status c = f->Close();
  if (s.ok()) s = c;
  if (s.ok()) s = env->RenameFile(tmp, meta_path);
  if (!s.ok()) env->DeleteFile(tmp).IgnoreError();
  return s.WithContext("Save: '" + meta_path + "'");
}

Dataset Dataset::Load(const std::string& path) {
  return FromOp("Load", {{"path", path}});
}

Dataset Dataset::Snapshot(const std::string& path, Compression compression) const {
  auto fp = DatasetFingerprint(*this);
  // Pipelines with local callables have no fingerprint: they share the name "pipeline".
  return FromOp("Snapshot",
                {{"path", path},
                 {"fingerprint", fp.ok() ? *fp : std::string("pipeline")},
                 {"compression", std::string(CompressionName(compression))}},
                {*this});
}

}  // namespace sluice
