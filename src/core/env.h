// Env: the file-system seam (LevelDB's leveldb::Env). Every open, read, stat, directory
// listing, glob and write of a data file in the library goes through an Env, so tests can
// inject faults (tests/testing/fault_env.h), bytes read can be counted per file
// (CountingEnv) and a pipeline can be confined to given directories (NewConfinedEnv).
//
//   Env* env = Env::Default();                           // POSIX
//   SLUICE_ASSIGN_OR_RETURN(auto f, env->NewRandomAccessFile("/data/x.tfrecord"));
//   SLUICE_ASSIGN_OR_RETURN(size_t n, f->Read(0, buf, sizeof(buf)));
//
// Which Env an operator uses: iterators take the pipeline's (Runtime::env(), set from
// Options::env and Options::files, default Env::Default()); ops that touch files
// while the dataset is being built (ListFiles globs, ImageFolder walks, Idx reads its
// header, vocabularies load) take BuildEnv(): the Env a ScopedBuildEnv installed on this
// thread (LoadPipelineSpec / DeserializeDataset install the confined Env of the spec's
// options), else Env::Default().
//
// Regular files only: NewRandomAccessFile refuses anything that is not a regular file
// (directories, FIFOs, character and block devices such as /dev/zero or /dev/urandom,
// sockets) with InvalidArgument naming the path, in every Env. A FIFO is opened
// non-blocking, so refusing it never waits for a writer.
//
// Errors name the path (and, for reads, the byte offset). They never contain file bytes.
//
// Thread-safety: an Env is thread-safe. A RandomAccessFile may be read by several
// threads at once; a WritableFile is used by one thread at a time.
#ifndef SLUICE_CORE_ENV_H_
#define SLUICE_CORE_ENV_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/mutex.h"
#include "sluice/options.h"
#include "sluice/status.h"

namespace sluice {

enum class FileType { kRegular, kDirectory, kOther };  // kOther: FIFO, device, socket

struct FileStat {
  FileType type = FileType::kOther;
  uint64_t size = 0;
  // Identity of the file (st_dev, st_ino), e.g. to walk a directory tree with symlink
  // cycles once.
  uint64_t device = 0;
  uint64_t inode = 0;
  // Last modification time (st_mtim), in ns since the epoch; 0 where unknown.
  int64_t mtime_ns = 0;
};

// An entry of a directory listing.
struct DirEntry {
  std::string name;
  FileType type = FileType::kOther;  // symlinks followed (a dangling one: kOther)
};

// A file opened for positional reads.
class RandomAccessFile {
 public:
  explicit RandomAccessFile(std::string name) : name_(std::move(name)) {}
  virtual ~RandomAccessFile() = default;
  RandomAccessFile(const RandomAccessFile&) = delete;
  RandomAccessFile& operator=(const RandomAccessFile&) = delete;

  // Reads up to `n` bytes at `offset` into `dst` and returns how many. May return fewer
  // than `n` before the end of the file (a short read: callers read again); 0 means the
  // end of the file. Errors name the file and the offset.
  virtual Result<size_t> Read(uint64_t offset, char* dst, size_t n) = 0;
  // The size when the file was opened (it may change later; reads then end early).
  virtual uint64_t Size() const = 0;
  const std::string& name() const { return name_; }

 private:
  const std::string name_;
};

// A file opened for appending. The destructor closes it, ignoring errors.
class WritableFile {
 public:
  explicit WritableFile(std::string name) : name_(std::move(name)) {}
  virtual ~WritableFile() = default;
  WritableFile(const WritableFile&) = delete;
  WritableFile& operator=(const WritableFile&) = delete;

  // Writes all of `data` (retrying partial writes) or fails naming the file.
  virtual Status Append(std::string_view data) = 0;
  // Makes the data durable (fsync).
  virtual Status Sync() = 0;
  // Closes the file. Idempotent; later appends fail.
  virtual Status Close() = 0;
  const std::string& name() const { return name_; }

 private:
  const std::string name_;
};

class Env {
 public:
  Env() = default;
  virtual ~Env() = default;
  Env(const Env&) = delete;
  Env& operator=(const Env&) = delete;

  // The POSIX file system. Never destroyed.
  static Env* Default();

  // Opens a regular file for reading: NotFound / PermissionDenied / InvalidArgument (a
  // directory or another non-regular file) naming the path.
  virtual Result<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
      const std::string& path) = 0;
  // Creates (or truncates) `path` for writing. With `exclusive`, AlreadyExists when it
  // exists (O_EXCL).
  virtual Result<std::unique_ptr<WritableFile>> NewWritableFile(
      const std::string& path, bool exclusive = false) = 0;
  // Stats `path`, following symlinks.
  virtual Result<FileStat> Stat(const std::string& path) = 0;
  // The entries of directory `dir` (not "." or ".."), in no particular order.
  virtual Result<std::vector<DirEntry>> GetChildren(const std::string& dir) = 0;
  // The paths matching a glob(3) pattern (GLOB_PERIOD: `*` matches leading dots; "." and
  // ".." are never listed), sorted. No match is an empty list, not an error.
  virtual Result<std::vector<std::string>> Glob(const std::string& pattern) = 0;
  virtual Status RenameFile(const std::string& from, const std::string& to) = 0;
  virtual Status DeleteFile(const std::string& path) = 0;
  // Creates `dir` and its missing parents; OK when it exists.
  virtual Status CreateDirs(const std::string& dir) = 0;
  // OK when this Env would let `path` be read (confinement); it need not exist for the
  // default Env, which allows everything. Used by ops that hand out paths (ListFiles,
  // ImageFolder) so a confined pipeline does not list what it may not read.
  virtual Status CheckRead(const std::string& path) { return Status::OK(); }
};

// Forwards every call to another Env (which must outlive it); override what differs.
class EnvWrapper : public Env {
 public:
  explicit EnvWrapper(Env* target) : target_(target) {}
  Env* target() const { return target_; }

  Result<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
      const std::string& path) override {
    return target_->NewRandomAccessFile(path);
  }
  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path,
                                                        bool exclusive) override {
    return target_->NewWritableFile(path, exclusive);
  }
  Result<FileStat> Stat(const std::string& path) override { return target_->Stat(path); }
  Result<std::vector<DirEntry>> GetChildren(const std::string& dir) override {
    return target_->GetChildren(dir);
  }
  Result<std::vector<std::string>> Glob(const std::string& pattern) override {
    return target_->Glob(pattern);
  }
  Status RenameFile(const std::string& from, const std::string& to) override {
    return target_->RenameFile(from, to);
  }
  Status DeleteFile(const std::string& path) override {
    return target_->DeleteFile(path);
  }
  Status CreateDirs(const std::string& dir) override { return target_->CreateDirs(dir); }
  Status CheckRead(const std::string& path) override { return target_->CheckRead(path); }

 private:
  Env* target_;
};

// An Env that allows reads only of files under `read_roots` or `write_roots`, and writes
// (create, rename, delete, mkdir) only under `write_roots`. Paths are resolved with
// realpath(3) before the check (for a file that does not exist yet: its directory), so
// neither ".." nor a symlink leads out of a root; roots are resolved once, here (a root
// that does not exist allows nothing). A refusal is PermissionDenied naming the path and
// the roots. Glob and GetChildren refuse patterns and directories outside the roots.
// Limits: a path swapped for a symlink between the check and the open (a race with
// another process writing inside a root) is not caught. `base` must outlive the result.
std::unique_ptr<Env> NewConfinedEnv(Env* base, std::vector<std::string> read_roots,
                                    std::vector<std::string> write_roots);
// NewConfinedEnv(base, ...) for Options::files; null when `files` confines nothing.
std::unique_ptr<Env> NewConfinedEnvFor(Env* base, const FileOptions& files);

// An EnvWrapper counting the bytes read from each file, by path as opened.
class CountingEnv : public EnvWrapper {
 public:
  explicit CountingEnv(Env* target) : EnvWrapper(target) {}
  Result<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
      const std::string& path) override;
  // path -> bytes read so far (by every file opened through this Env).
  std::map<std::string, uint64_t> BytesReadPerFile() const;
  uint64_t TotalBytesRead() const;

  // Called by the files it opens.
  void Count(const std::string& path, uint64_t n);

 private:
  mutable Mutex mu_;
  std::map<std::string, uint64_t> bytes_ GUARDED_BY(mu_);
};

// The Env for file access while datasets are built on this thread (see above).
Env* BuildEnv();

// Installs `env` as BuildEnv() on this thread for its lifetime (nests; null: no change).
class ScopedBuildEnv {
 public:
  explicit ScopedBuildEnv(Env* env);
  ~ScopedBuildEnv();
  ScopedBuildEnv(const ScopedBuildEnv&) = delete;
  ScopedBuildEnv& operator=(const ScopedBuildEnv&) = delete;

 private:
  Env* previous_;
};

// Reads a whole regular file through `env` (at most `max_bytes`; a larger file is
// InvalidArgument naming it).
Result<std::string> ReadFileToString(Env* env, const std::string& path,
                                     uint64_t max_bytes = uint64_t{1} << 32);

}  // namespace sluice

#endif  // SLUICE_CORE_ENV_H_
