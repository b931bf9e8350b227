#include "sluice/status.h"

#include <cstring>
#include <stdexcept>

namespace sluice {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kCancelled: return "Cancelled";
    case StatusCode::kUnknown: return "Unknown";
    case StatusCode::kInvalidArgument: return "InvalidArgument";
    case StatusCode::kDeadlineExceeded: return "DeadlineExceeded";
    case StatusCode::kNotFound: return "NotFound";
    case StatusCode::kAlreadyExists: return "AlreadyExists";
    case StatusCode::kPermissionDenied: return "PermissionDenied";
    case StatusCode::kResourceExhausted: return "ResourceExhausted";
    case StatusCode::kFailedPrecondition: return "FailedPrecondition";
    case StatusCode::kAborted: return "Aborted";
    case StatusCode::kOutOfRange: return "OutOfRange";
    case StatusCode::kUnimplemented: return "Unimplemented";
    case StatusCode::kInternal: return "Internal";
    case StatusCode::kUnavailable: return "Unavailable";
    case StatusCode::kDataLoss: return "DataLoss";
    case StatusCode::kUnauthenticated: return "Unauthenticated";
  }
  return "Unknown";
}

namespace internal {
void ResultValueOfError(const Status& status) {
  throw std::logic_error("the value of a Result holding an error was read: " +
                         status.ToString());
}
}  // namespace internal

Status::Status(StatusCode code, std::string message) {
  if (code != StatusCode::kOk) {
    state_ = std::make_unique<State>(State{code, std::move(message)});
  }
}

Status::Status(const Status& other)
    : state_(other.state_ ? std::make_unique<State>(*other.state_) : nullptr) {}

Status& Status::operator=(const Status& other) {
  if (this != &other) state_ = other.state_ ? std::make_unique<State>(*other.state_) : nullptr;
  return *this;
}

const std::string& Status::message() const {
  static const std::string* const kEmpty = new std::string();
  return state_ ? state_->message : *kEmpty;
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string s(StatusCodeName(code()));
  s += ": ";
  s += state_->message;
  return s;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  std::string m(context);
  m += ": ";
  m += state_->message;
  return Status(code(), std::move(m));
}

std::ostream& operator<<(std::ostream& os, const Status& s) { return os << s.ToString(); }

#define SLUICE_DEFINE_ERROR_(Fn, Code) \
  Status Fn(std::string msg) { return Status(StatusCode::Code, std::move(msg)); }
SLUICE_DEFINE_ERROR_(CancelledError, kCancelled)
SLUICE_DEFINE_ERROR_(UnknownError, kUnknown)
SLUICE_DEFINE_ERROR_(InvalidArgumentError, kInvalidArgument)
SLUICE_DEFINE_ERROR_(NotFoundError, kNotFound)
SLUICE_DEFINE_ERROR_(AlreadyExistsError, kAlreadyExists)
SLUICE_DEFINE_ERROR_(ResourceExhaustedError, kResourceExhausted)
SLUICE_DEFINE_ERROR_(FailedPreconditionError, kFailedPrecondition)
SLUICE_DEFINE_ERROR_(AbortedError, kAborted)
SLUICE_DEFINE_ERROR_(OutOfRangeError, kOutOfRange)
SLUICE_DEFINE_ERROR_(UnimplementedError, kUnimplemented)
SLUICE_DEFINE_ERROR_(InternalError, kInternal)
SLUICE_DEFINE_ERROR_(UnavailableError, kUnavailable)
SLUICE_DEFINE_ERROR_(DataLossError, kDataLoss)
#undef SLUICE_DEFINE_ERROR_

Status ErrnoToStatus(int err, std::string_view what, std::string_view path) {
  std::string msg(what);
  msg += " '";
  msg += path;
  msg += "': ";
  msg += strerror(err);
  StatusCode code = StatusCode::kUnknown;
  switch (err) {
    case ENOENT: code = StatusCode::kNotFound; break;
    case EACCES: case EPERM: code = StatusCode::kPermissionDenied; break;
    case EEXIST: code = StatusCode::kAlreadyExists; break;
    case EINVAL: case ENAMETOOLONG: case EISDIR: case ENOTDIR: code = StatusCode::kInvalidArgument; break;
    case ENOSPC: case ENOMEM: case EMFILE: case ENFILE: code = StatusCode::kResourceExhausted; break;
    case EIO: code = StatusCode::kDataLoss; break;
    case EINTR: case EAGAIN: code = StatusCode::kUnavailable; break;
    default: break;
  }
  return Status(code, std::move(msg));
}

}  // namespace sluice
