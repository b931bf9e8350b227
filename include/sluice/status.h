// Status and Result<T>: sluice's error model.
//
// No exceptions cross the sluice API. Every fallible call returns a Status (no value) or a
// Result<T> (a value or an error). Both are [[nodiscard]]: ignoring an error is a compile
// warning. Propagate with SLUICE_RETURN_IF_ERROR and SLUICE_ASSIGN_OR_RETURN.
//
// End of data is never an error: iterators return Result<std::optional<Element>> and signal
// the end with std::nullopt.
//
// An OK Status holds no allocation (a null pointer), so returning OK on hot paths is free.
//
// Thread-safety: Status and Result are values; distinct objects may be used concurrently,
// one object may be read concurrently.
#ifndef SLUICE_STATUS_H_
#define SLUICE_STATUS_H_

#include <cassert>
#include <memory>
#include <new>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

namespace sluice {

// Error categories; the names follow absl/gRPC so they map 1:1 onto gRPC status codes.
enum class StatusCode : int {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
  kUnauthenticated = 16,
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message);

  Status(const Status& other);
  Status& operator=(const Status& other);
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;

  static Status OK() { return Status(); }

  bool ok() const { return state_ == nullptr; }
  StatusCode code() const { return state_ ? state_->code : StatusCode::kOk; }
  // The message without the code; empty for OK.
  const std::string& message() const;
  // "DataLoss: corrupt record at ..."; "OK" for OK.
  std::string ToString() const;

  // Returns a copy whose message is prefixed with `context` ("context: message").
  // Used to add the operator / file that saw an error as it propagates up.
  Status WithContext(std::string_view context) const;

  bool operator==(const Status& o) const {
    return code() == o.code() && message() == o.message();
  }

  // Marks a status as deliberately ignored.
  void IgnoreError() const {}

 private:
  struct State {
    StatusCode code;
    std::string message;
  };
  std::unique_ptr<State> state_;
};

std::ostream& operator<<(std::ostream& os, const Status& s);

// Constructors for each error category.
Status CancelledError(std::string msg);
Status UnknownError(std::string msg);
Status InvalidArgumentError(std::string msg);
Status NotFoundError(std::string msg);
Status AlreadyExistsError(std::string msg);
Status ResourceExhaustedError(std::string msg);
Status FailedPreconditionError(std::string msg);
Status AbortedError(std::string msg);
Status OutOfRangeError(std::string msg);
Status UnimplementedError(std::string msg);
Status InternalError(std::string msg);
Status UnavailableError(std::string msg);
Status DataLossError(std::string msg);

// Status for an errno value from a failed system call on `path`.
Status ErrnoToStatus(int err, std::string_view what, std::string_view path);

namespace internal {
// Throws std::logic_error naming `status`: a Result's value was read while it held an
// error (a bug in the caller; inside a user function the runtime turns it into that
// function's error, as any exception).
[[noreturn]] void ResultValueOfError(const Status& status);
}  // namespace internal

// Result<T>: either a T or a non-OK Status.
//
// Laid out as the Status (one pointer, null when a value is held) beside a union holding
// the T: ok() is a null test, and a move is the pointer plus T's own move, with no variant
// visit (std::variant's moves dispatched through a jump table; every element an iterator
// returns goes through several of them).
template <typename T>
class [[nodiscard]] Result {
  static_assert(!std::is_same_v<T, Status>, "Result<Status> is not allowed");
  static_assert(!std::is_reference_v<T>, "Result<T&> is not allowed");

 public:
  // Implicit from a value or an error, so `return value;` and `return status;` both work.
  Result(const T& value) { new (&value_) T(value); }  // NOLINT
  Result(T&& value) noexcept(std::is_nothrow_move_constructible_v<T>) {  // NOLINT
    new (&value_) T(std::move(value));
  }
  Result(Status status) : status_(std::move(status)) {  // NOLINT
    assert(!status_.ok() && "Result constructed from an OK Status");
    if (status_.ok()) status_ = InternalError("Result constructed from OK status");
  }
  template <typename U,
            typename = std::enable_if_t<std::is_constructible_v<T, U&&> &&
                                        !std::is_same_v<std::decay_t<U>, T> &&
                                        !std::is_same_v<std::decay_t<U>, Status> &&
                                        !std::is_same_v<std::decay_t<U>, Result<T>>>>
  Result(U&& value) {  // NOLINT
    new (&value_) T(std::forward<U>(value));
  }

  Result(const Result& o) : status_(o.status_) {
    if (o.ok()) new (&value_) T(o.value_);
  }
  Result(Result&& o) noexcept(std::is_nothrow_move_constructible_v<T>)
      : status_(std::move(o.status_)) {
    // A moved-from error stays an error (its Status is copied, not taken), as
    // std::variant left it: code may still ask a moved-from Result for its status.
    if (status_.ok()) {
      new (&value_) T(std::move(o.value_));
    } else {
      o.status_ = status_;
    }
  }
  Result& operator=(const Result& o) {
    if (this != &o) Assign(o);
    return *this;
  }
  Result& operator=(Result&& o) noexcept(std::is_nothrow_move_constructible_v<T> &&
                                          std::is_nothrow_move_assignable_v<T>) {
    if (this != &o) Assign(std::move(o));
    return *this;
  }
  ~Result() {
    if (ok()) value_.~T();
  }

  bool ok() const { return status_.ok(); }
  // The error; OK when a value is held.
  Status status() const { return ok() ? Status() : status_; }

  T& value() & { return Checked(), value_; }
  const T& value() const& { return Checked(), value_; }
  T&& value() && { return Checked(), std::move(value_); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  T ValueOr(T fallback) const& { return ok() ? value_ : std::move(fallback); }

 private:
  // Reading the value of an error is a bug in the caller: it throws (ResultValueOfError),
  // never reads garbage.
  void Checked() const {
    if (!ok()) [[unlikely]] internal::ResultValueOfError(status_);
  }
  // Both assignments: `o` is a const Result& (copies) or a Result&& (moves its value; a
  // moved-from error keeps its Status, as in the move constructor).
  template <typename R>
  void Assign(R&& o) {
    if (o.ok()) {
      if (ok()) {
        value_ = std::forward<R>(o).value_;
      } else {
        new (&value_) T(std::forward<R>(o).value_);
        status_ = Status();
      }
    } else {
      if (ok()) value_.~T();
      status_ = o.status_;
    }
  }

  Status status_;  // OK exactly when value_ holds a T
  union {
    T value_;
  };
};

namespace internal {
inline Status AsStatus(Status s) { return s; }
template <typename T>
Status AsStatus(const Result<T>& r) {
  return r.status();
}
}  // namespace internal

}  // namespace sluice

#define SLUICE_CONCAT_INNER_(a, b) a##b
#define SLUICE_CONCAT_(a, b) SLUICE_CONCAT_INNER_(a, b)

// Returns from the enclosing function if `expr` (a Status or Result) is an error.
#define SLUICE_RETURN_IF_ERROR(expr)                                        \
  do {                                                                      \
    ::sluice::Status _sluice_st = ::sluice::internal::AsStatus((expr));     \
    if (!_sluice_st.ok()) return _sluice_st;                                \
  } while (0)

// `SLUICE_ASSIGN_OR_RETURN(auto x, MakeX());` declares/assigns x from a Result or returns
// its error.
#define SLUICE_ASSIGN_OR_RETURN(lhs, rexpr) \
  SLUICE_ASSIGN_OR_RETURN_IMPL_(SLUICE_CONCAT_(_sluice_r_, __LINE__), lhs, rexpr)
#define SLUICE_ASSIGN_OR_RETURN_IMPL_(r, lhs, rexpr) \
  auto r = (rexpr);                                  \
  if (!r.ok()) return r.status();                    \
  lhs = std::move(r).value()

#endif  // SLUICE_STATUS_H_
