#include "core/logging.h"

#include <strings.h>
#include <time.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace sluice {
namespace {

LogLevel ParseLevel(const char* s) {
  if (s == nullptr || *s == '\0') return LogLevel::kWarning;
  if (s[0] >= '0' && s[0] <= '4' && s[1] == '\0') return static_cast<LogLevel>(s[0] - '0');
  if (strcasecmp(s, "debug") == 0) return LogLevel::kDebug;
  if (strcasecmp(s, "info") == 0) return LogLevel::kInfo;
  if (strcasecmp(s, "warning") == 0 || strcasecmp(s, "warn") == 0) return LogLevel::kWarning;
  if (strcasecmp(s, "error") == 0) return LogLevel::kError;
  if (strcasecmp(s, "off") == 0 || strcasecmp(s, "none") == 0) return LogLevel::kOff;
  return LogLevel::kWarning;
}

std::atomic<int>& Level() {
  static std::atomic<int> level{static_cast<int>(ParseLevel(std::getenv("SLUICE_LOG_LEVEL")))};
  return level;
}

double SecondsSinceStart() {
  auto now = [] {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
  };
  static const double start = now();
  return now() - start;
}

}  // namespace

LogLevel GetLogLevel() { return static_cast<LogLevel>(Level().load(std::memory_order_relaxed)); }

void SetLogLevel(LogLevel level) {
  Level().store(static_cast<int>(level), std::memory_order_relaxed);
}

bool LogEnabled(LogLevel level) {
  return level != LogLevel::kOff &&
         static_cast<int>(level) >= Level().load(std::memory_order_relaxed);
}

namespace internal {

LogLine::~LogLine() {
  static constexpr char kLetters[] = "DIWE";
  char head[48];
  std::snprintf(head, sizeof(head), "sluice %c %.3f ", kLetters[static_cast<int>(level_)],
                SecondsSinceStart());
  std::string line = head + out_.str() + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace internal
}  // namespace sluice
