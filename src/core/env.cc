#include "core/env.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

namespace sluice {
namespace {

const char* KindOf(mode_t m) {
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

FileStat ToFileStat(const struct stat& st) {
  FileStat s;
  s.type = S_ISREG(st.st_mode)   ? FileType::kRegular
           : S_ISDIR(st.st_mode) ? FileType::kDirectory
                                 : FileType::kOther;
  s.size = static_cast<uint64_t>(st.st_size);
  s.device = static_cast<uint64_t>(st.st_dev);
  s.inode = static_cast<uint64_t>(st.st_ino);
  s.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  return s;
}

class PosixRandomAccessFile : public RandomAccessFile {
 public:
  PosixRandomAccessFile(std::string name, int fd, uint64_t size)
      : RandomAccessFile(std::move(name)), fd_(fd), size_(size) {}
  ~PosixRandomAccessFile() override { ::close(fd_); }

  Result<size_t> Read(uint64_t offset, char* dst, size_t n) override {
    while (true) {
      ssize_t r = ::pread(fd_, dst, n, static_cast<off_t>(offset));
      if (r >= 0) return static_cast<size_t>(r);
      if (errno != EINTR) {
        return ErrnoToStatus(
            errno, "cannot read at byte offset " + std::to_string(offset) + " of file",
            name());
      }
    }
  }
  uint64_t Size() const override { return size_; }

 private:
  int fd_;
  uint64_t size_;
};

class PosixWritableFile : public WritableFile {
 public:
  PosixWritableFile(std::string name, int fd) : WritableFile(std::move(name)), fd_(fd) {}
  ~PosixWritableFile() override { Close().IgnoreError(); }

  Status Append(std::string_view data) override {
    if (fd_ < 0) return FailedPreconditionError("append to closed file " + name());
    while (!data.empty()) {
      ssize_t r = ::write(fd_, data.data(), data.size());
      if (r < 0) {
        if (errno == EINTR) continue;
        return ErrnoToStatus(errno, "cannot write", name());
      }
      data.remove_prefix(static_cast<size_t>(r));
    }
    return Status::OK();
  }
  Status Sync() override {
    if (fd_ < 0) return FailedPreconditionError("sync of closed file " + name());
    if (::fsync(fd_) != 0) return ErrnoToStatus(errno, "cannot sync", name());
    return Status::OK();
  }
  Status Close() override {
    if (fd_ < 0) return Status::OK();
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) return ErrnoToStatus(errno, "cannot close", name());
    return Status::OK();
  }

 private:
  int fd_;
};

bool IsDotOrDotDot(std::string_view path) {
  size_t slash = path.rfind('/');
  std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  return base == "." || base == "..";
}

class PosixEnv : public Env {
 public:
  Result<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
      const std::string& path) override {
    // O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused below).
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return ErrnoToStatus(errno, "cannot open", path);
    struct stat st;
    if (::fstat(fd, &st) != 0) {
      int e = errno;
      ::close(fd);
      return ErrnoToStatus(e, "cannot stat", path);
    }
    if (!S_ISREG(st.st_mode)) {
      ::close(fd);
      if (S_ISDIR(st.st_mode)) return ErrnoToStatus(EISDIR, "cannot read", path);
      return InvalidArgumentError("cannot read '" + path + "': it is " +
                                  KindOf(st.st_mode) +
                                  "; data is read only from regular files");
    }
    return std::unique_ptr<RandomAccessFile>(
        new PosixRandomAccessFile(path, fd, static_cast<uint64_t>(st.st_size)));
  }

  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path,
                                                        bool exclusive) override {
    const int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (exclusive ? O_EXCL : O_TRUNC);
    int fd = ::open(path.c_str(), flags, 0644);
    if (fd < 0) return ErrnoToStatus(errno, "cannot create", path);
    return std::unique_ptr<WritableFile>(new PosixWritableFile(path, fd));
  }

  Result<FileStat> Stat(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return ErrnoToStatus(errno, "cannot stat", path);
    return ToFileStat(st);
  }

  Result<std::vector<DirEntry>> GetChildren(const std::string& dir) override {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return ErrnoToStatus(errno, "cannot list", dir);
    std::vector<DirEntry> out;
    errno = 0;
    while (struct dirent* e = ::readdir(d)) {
      std::string_view name = e->d_name;
      if (name == "." || name == "..") {
        errno = 0;
        continue;
      }
      DirEntry entry{std::string(name), FileType::kOther};
      if (e->d_type == DT_REG) {
        entry.type = FileType::kRegular;
      } else if (e->d_type == DT_DIR) {
        entry.type = FileType::kDirectory;
      } else if (e->d_type == DT_LNK || e->d_type == DT_UNKNOWN) {
        // Follow links; some file systems lack d_type.
        const std::string full =
            dir.empty() || dir.back() == '/' ? dir + entry.name : dir + "/" + entry.name;
        struct stat st;
        if (::stat(full.c_str(), &st) == 0) entry.type = ToFileStat(st).type;
      }
      out.push_back(std::move(entry));
      errno = 0;
    }
    int err = errno;
    ::closedir(d);
    if (err != 0) return ErrnoToStatus(err, "error listing", dir);
    return out;
  }

  Result<std::vector<std::string>> Glob(const std::string& pattern) override {
    glob_t g{};
    int rc = ::glob(pattern.c_str(), GLOB_PERIOD, nullptr, &g);
    std::vector<std::string> out;
    if (rc == 0) {
      for (size_t i = 0; i < g.gl_pathc; ++i) {
        if (!IsDotOrDotDot(g.gl_pathv[i])) out.emplace_back(g.gl_pathv[i]);
      }
    }
    globfree(&g);
    if (rc == GLOB_NOSPACE) {
      return ResourceExhaustedError("out of memory globbing '" + pattern + "'");
    }
    if (rc == GLOB_ABORTED) {
      return UnavailableError("read error while globbing '" + pattern + "'");
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  Status RenameFile(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) {
      return ErrnoToStatus(errno, "cannot rename to '" + to + "'", from);
    }
    return Status::OK();
  }

  Status DeleteFile(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) return ErrnoToStatus(errno, "cannot delete", path);
    return Status::OK();
  }

  Status CreateDirs(const std::string& dir) override {
    if (dir.empty()) return Status::OK();
    struct stat st;
    if (::stat(dir.c_str(), &st) == 0) {
      if (S_ISDIR(st.st_mode)) return Status::OK();
      return ErrnoToStatus(ENOTDIR, "cannot create directory", dir);
    }
    size_t slash = dir.find_last_not_of('/');
    slash = slash == std::string::npos ? std::string::npos : dir.rfind('/', slash);
    if (slash != std::string::npos && slash > 0) {
      SLUICE_RETURN_IF_ERROR(CreateDirs(dir.substr(0, slash)));
    }
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      return ErrnoToStatus(errno, "cannot create directory", dir);
    }
    return Status::OK();
  }
};

// ---- confinement ----

std::string RealPath(const std::string& path, int* err) {
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf) == nullptr) {
    *err = errno;
    return "";
  }
  *err = 0;
  return buf;
}

// The canonical form of `path`: realpath(3) of its longest existing prefix, followed by
// the components that do not exist yet. "" when a missing component is "." or "..".
std::string Resolve(const std::string& path) {
  int err = 0;
  std::string real = RealPath(path.empty() ? "." : path, &err);
  if (err == 0) return real;
  if (err != ENOENT && err != ENOTDIR) return "";
  // Split off the last component and resolve the rest.
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  const size_t slash = p.rfind('/');
  const std::string parent =
      slash == std::string::npos ? "." : (slash == 0 ? "/" : p.substr(0, slash));
  const std::string base = slash == std::string::npos ? p : p.substr(slash + 1);
  if (base.empty() || base == "." || base == ".." || parent == p) return "";
  std::string r = Resolve(parent);
  if (r.empty()) return "";
  return r == "/" ? "/" + base : r + "/" + base;
}

bool Under(const std::string& resolved, const std::string& root) {
  if (root == "/") return true;
  return resolved.size() >= root.size() && resolved.compare(0, root.size(), root) == 0 &&
         (resolved.size() == root.size() || resolved[root.size()] == '/');
}

struct Roots {
  std::vector<std::string> resolved;  // realpaths of the roots that exist
  std::string described;              // "['/a', '/b (does not exist)']"
};

Roots MakeRoots(const std::vector<std::string>& roots) {
  Roots r;
  r.described = "[";
  for (size_t i = 0; i < roots.size(); ++i) {
    int err = 0;
    std::string real = RealPath(roots[i], &err);
    r.described += (i ? ", '" : "'") + roots[i];
    if (err == 0) {
      r.resolved.push_back(real);
    } else {
      r.described += " (does not exist)";
    }
    r.described += "'";
  }
  r.described += "]";
  return r;
}

class ConfinedEnv : public EnvWrapper {
 public:
  ConfinedEnv(Env* base, const std::vector<std::string>& read_roots,
              const std::vector<std::string>& write_roots)
      : EnvWrapper(base), write_(MakeRoots(write_roots)) {
    std::vector<std::string> all = read_roots;
    all.insert(all.end(), write_roots.begin(), write_roots.end());
    read_ = MakeRoots(all);
  }

  Result<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
      const std::string& path) override {
    SLUICE_RETURN_IF_ERROR(CheckRead(path));
    return target()->NewRandomAccessFile(path);
  }
  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path,
                                                        bool exclusive) override {
    SLUICE_RETURN_IF_ERROR(CheckWrite(path));
    return target()->NewWritableFile(path, exclusive);
  }
  Result<FileStat> Stat(const std::string& path) override {
    SLUICE_RETURN_IF_ERROR(CheckRead(path));
    return target()->Stat(path);
  }
  Result<std::vector<DirEntry>> GetChildren(const std::string& dir) override {
    SLUICE_RETURN_IF_ERROR(CheckRead(dir));
    return target()->GetChildren(dir);
  }
  Result<std::vector<std::string>> Glob(const std::string& pattern) override {
    SLUICE_ASSIGN_OR_RETURN(std::vector<std::string> paths, target()->Glob(pattern));
    for (const std::string& p : paths) SLUICE_RETURN_IF_ERROR(CheckRead(p));
    return paths;
  }
  Status RenameFile(const std::string& from, const std::string& to) override {
    SLUICE_RETURN_IF_ERROR(CheckWrite(from));
    SLUICE_RETURN_IF_ERROR(CheckWrite(to));
    return target()->RenameFile(from, to);
  }
  Status DeleteFile(const std::string& path) override {
    SLUICE_RETURN_IF_ERROR(CheckWrite(path));
    return target()->DeleteFile(path);
  }
  Status CreateDirs(const std::string& dir) override {
    SLUICE_RETURN_IF_ERROR(CheckWrite(dir));
    return target()->CreateDirs(dir);
  }
  Status CheckRead(const std::string& path) override {
    return Check(path, read_, "the allowed roots");
  }

 private:
  Status CheckWrite(const std::string& path) {
    return Check(path, write_, "the allowed write roots");
  }
  static Status Check(const std::string& path, const Roots& roots, const char* what) {
    const std::string resolved = Resolve(path);
    if (!resolved.empty()) {
      for (const std::string& root : roots.resolved) {
        if (Under(resolved, root)) return Status::OK();
      }
    }
    return Status(StatusCode::kPermissionDenied,
                  "'" + path + "' is outside " + what + " " + roots.described +
                      (resolved.empty() || resolved == path
                           ? ""
                           : " (it resolves to '" + resolved + "')"));
  }

  Roots read_;
  Roots write_;
};

class CountingFile : public RandomAccessFile {
 public:
  CountingFile(std::unique_ptr<RandomAccessFile> base, CountingEnv* env)
      : RandomAccessFile(base->name()), base_(std::move(base)), env_(env) {}
  Result<size_t> Read(uint64_t offset, char* dst, size_t n) override {
    auto r = base_->Read(offset, dst, n);
    if (r.ok() && *r > 0) env_->Count(name(), *r);
    return r;
  }
  uint64_t Size() const override { return base_->Size(); }

 private:
  std::unique_ptr<RandomAccessFile> base_;
  CountingEnv* env_;
};

thread_local Env* build_env = nullptr;

}  // namespace

Env* Env::Default() {
  static Env* env = new PosixEnv();
  return env;
}

std::unique_ptr<Env> NewConfinedEnv(Env* base, std::vector<std::string> read_roots,
                                    std::vector<std::string> write_roots) {
  return std::make_unique<ConfinedEnv>(base, read_roots, write_roots);
}

std::unique_ptr<Env> NewConfinedEnvFor(Env* base, const FileOptions& files) {
  if (!files.confined()) return nullptr;
  return NewConfinedEnv(base, files.allowed_roots.value_or(std::vector<std::string>{}),
                        files.allowed_write_roots.value_or(std::vector<std::string>{}));
}

Result<std::unique_ptr<RandomAccessFile>> CountingEnv::NewRandomAccessFile(
    const std::string& path) {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> f,
                          target()->NewRandomAccessFile(path));
  return std::unique_ptr<RandomAccessFile>(new CountingFile(std::move(f), this));
}

void CountingEnv::Count(const std::string& path, uint64_t n) {
  MutexLock l(&mu_);
  bytes_[path] += n;
}

std::map<std::string, uint64_t> CountingEnv::BytesReadPerFile() const {
  MutexLock l(&mu_);
  return bytes_;
}

uint64_t CountingEnv::TotalBytesRead() const {
  MutexLock l(&mu_);
  uint64_t total = 0;
  for (const auto& [path, n] : bytes_) total += n;
  return total;
}

Env* BuildEnv() { return build_env != nullptr ? build_env : Env::Default(); }

ScopedBuildEnv::ScopedBuildEnv(Env* env) : previous_(build_env) {
  if (env != nullptr) build_env = env;
}

ScopedBuildEnv::~ScopedBuildEnv() { build_env = previous_; }

Result<std::string> ReadFileToString(Env* env, const std::string& path,
                                     uint64_t max_bytes) {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> f,
                          env->NewRandomAccessFile(path));
  auto too_big = [&] {
    return InvalidArgumentError("'" + path + "' is over the limit of " +
                                std::to_string(max_bytes) + " bytes");
  };
  if (f->Size() > max_bytes) return too_big();
  std::string out;
  out.resize(static_cast<size_t>(f->Size()));
  uint64_t done = 0;
  while (true) {
    if (done == out.size()) {
      if (done >= max_bytes) {
        // At the limit: one more byte means the file grew past it.
        char c;
        SLUICE_ASSIGN_OR_RETURN(size_t k, f->Read(done, &c, 1));
        if (k > 0) return too_big();
        break;
      }
      out.resize(static_cast<size_t>(
          std::min<uint64_t>(max_bytes, std::max<uint64_t>(out.size() * 2, 4096))));
    }
    SLUICE_ASSIGN_OR_RETURN(size_t k,
                            f->Read(done, out.data() + done, out.size() - done));
    if (k == 0) break;
    done += k;
  }
  out.resize(static_cast<size_t>(done));
  return out;
}

}  // namespace sluice
