#include "service/journal.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "core/coding.h"
#include "core/crc32c.h"

namespace sluice::service {
namespace {

Status IoError(const std::string& what, const std::string& path) {
  return UnavailableError("journal " + path + ": " + what + ": " + std::strerror(errno));
}

}  // namespace

Result<Journal::Replayed> Journal::Read(const std::string& path) {
  Replayed out;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return out;
    return IoError("open", path);
  }
  std::string data;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      Status s = IoError("read", path);
      ::close(fd);
      return s;
    }
    if (n == 0) break;
    data.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  size_t pos = 0;
  while (pos < data.size()) {
    if (data.size() - pos < 8) {
      out.dropped_reason = "incomplete record header at offset " + std::to_string(pos);
      break;
    }
    const uint32_t len = DecodeFixed32(data.data() + pos);
    const uint32_t crc = crc32c::Unmask(DecodeFixed32(data.data() + pos + 4));
    if (len > kMaxJournalRecord) {
      out.dropped_reason = "record length " + std::to_string(len) +
                           " over the limit at offset " + std::to_string(pos);
      break;
    }
    if (data.size() - pos - 8 < len) {
      out.dropped_reason = "incomplete record at offset " + std::to_string(pos);
      break;
    }
    const char* payload = data.data() + pos + 8;
    if (crc32c::Value(payload, len) != crc) {
      out.dropped_reason = "checksum mismatch at offset " + std::to_string(pos);
      break;
    }
    out.records.emplace_back(payload, len);
    pos += 8 + len;
  }
  out.valid_bytes = static_cast<int64_t>(pos);
  out.dropped_bytes = static_cast<int64_t>(data.size() - pos);
  return out;
}

Result<std::pair<Journal, Journal::Replayed>> Journal::Open(const std::string& path) {
  SLUICE_ASSIGN_OR_RETURN(Replayed replayed, Read(path));
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return IoError("open for writing", path);
  if (replayed.dropped_bytes > 0 && ::ftruncate(fd, replayed.valid_bytes) != 0) {
    Status s = IoError("truncate the torn tail", path);
    ::close(fd);
    return s;
  }
  if (::lseek(fd, replayed.valid_bytes, SEEK_SET) < 0 || ::fsync(fd) != 0) {
    Status s = IoError("seek/fsync", path);
    ::close(fd);
    return s;
  }
  return std::make_pair(Journal(path, fd, replayed.valid_bytes), std::move(replayed));
}

Journal::Journal(Journal&& o) noexcept
    : path_(std::move(o.path_)), fd_(o.fd_), size_(o.size_), broken_(o.broken_) {
  o.fd_ = -1;
}

Journal& Journal::operator=(Journal&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(o.path_);
    fd_ = o.fd_;
    size_ = o.size_;
    broken_ = o.broken_;
    o.fd_ = -1;
  }
  return *this;
}

Journal::~Journal() {
  if (fd_ >= 0) ::close(fd_);
}

Status Journal::Append(std::string_view payload) {
  if (!broken_.ok()) return broken_;
  if (fd_ < 0) return FailedPreconditionError("journal " + path_ + " is closed");
  if (payload.size() > kMaxJournalRecord) {
    return InvalidArgumentError("journal " + path_ + ": record of " +
                                std::to_string(payload.size()) + " bytes over the limit");
  }
  std::string rec;
  rec.reserve(8 + payload.size());
  PutFixed32(&rec, static_cast<uint32_t>(payload.size()));
  PutFixed32(&rec, crc32c::Mask(crc32c::Value(payload.data(), payload.size())));
  rec.append(payload);
  size_t done = 0;
  while (done < rec.size()) {
    const ssize_t n = ::write(fd_, rec.data() + done, rec.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      broken_ = IoError("write", path_);
      return broken_;
    }
    done += static_cast<size_t>(n);
  }
  if (::fdatasync(fd_) != 0) {
    broken_ = IoError("fdatasync", path_);
    return broken_;
  }
  size_ += static_cast<int64_t>(rec.size());
  return Status::OK();
}

}  // namespace sluice::service
