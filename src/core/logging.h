// Logging: one line per event on stderr, filtered by a process-wide level.
//
//   SLUICE_LOG(kInfo) << "autotune: " << prefix << " parallelism " << old << " -> " << now;
//
// The level comes from the environment variable SLUICE_LOG_LEVEL (read once, on first
// use): "debug", "info", "warning" (the default), "error" or "off" (case-insensitive; a
// number 0-4 works too). So INFO lines, such as the autotuner's decisions, are silent
// unless asked for (`SLUICE_LOG_LEVEL=info sluice bench imagenet`): tests and library
// users see nothing, and tools that want them call SetLogLevel. A line whose level is
// below the threshold costs one relaxed atomic load; its stream arguments are not
// evaluated.
//
// Lines look like "sluice I 12.345 autotune: ..." (level letter, seconds since the first
// log call). Each line is written with one fwrite, so lines from threads do not interleave.
//
// Thread-safety: thread-safe.
#ifndef SLUICE_CORE_LOGGING_H_
#define SLUICE_CORE_LOGGING_H_

#include <sstream>

namespace sluice {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3, kOff = 4 };

// The current threshold (lines below it are dropped).
LogLevel GetLogLevel();
// Overrides the threshold (and the environment variable) for the process.
void SetLogLevel(LogLevel level);
// Whether a line at `level` would be written.
bool LogEnabled(LogLevel level);

namespace internal {
// Collects one line and writes it to stderr when destroyed.
class LogLine {
 public:
  explicit LogLine(LogLevel level) : level_(level) {}
  ~LogLine();
  LogLine(const LogLine&) = delete;
  LogLine& operator=(const LogLine&) = delete;
  std::ostream& stream() { return out_; }

 private:
  LogLevel level_;
  std::ostringstream out_;
};
}  // namespace internal

}  // namespace sluice

// SLUICE_LOG(kInfo) << ...; the arguments are evaluated only when the line is written.
#define SLUICE_LOG(level)                                          \
  if (!::sluice::LogEnabled(::sluice::LogLevel::level)) {          \
  } else                                                           \
    ::sluice::internal::LogLine(::sluice::LogLevel::level).stream()

#endif  // SLUICE_CORE_LOGGING_H_
