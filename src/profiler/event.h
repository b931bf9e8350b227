// The profiler's compact event (32 bytes) and its event file.
//
// An event file is a magic line followed by records, each a one-byte tag and a body:
//   'T' thread:  u32 tid, u32 pid, u16 name length, name
//   'N' name:    i32 id, u16 op length, op, u16 prefix length, prefix
//   'E' events:  u32 tid, u32 pid, u32 count, count * Event (host byte order)
//   'M' note:    u16 length, text (e.g. hardware counters unavailable)
// Several files (worker processes) merge by reading them all; ids are per file.
#ifndef SLUICE_PROFILER_EVENT_H_
#define SLUICE_PROFILER_EVENT_H_

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "sluice/status.h"

namespace sluice::profiler {

enum class EventKind : uint8_t {
  kSpan = 1,  // one GetNext (or one transform call): start_ns..end_ns of element `index`
  kCounter = 2,  // counter `aux` (CounterId) over the own time of a span of `name`,
                 // `index` ending at start_ns; end_ns holds the value
  kAsked =
      3,  // the consumer asked for a batch (start_ns) and took batch `index` (end_ns)
  kReady = 4,  // batch `index` was produced start_ns..end_ns (ready at end_ns)
};

// Span flags.
inline constexpr uint8_t kFlagProduced = 1;
inline constexpr uint8_t kFlagError = 2;
inline constexpr uint8_t kFlagRoot = 4;  // the root iterator: consumer side of a batch
inline constexpr uint8_t kFlagRootInput = 8;  // the root's first input: production side

struct Event {
  int64_t start_ns;  // CLOCK_MONOTONIC
  int64_t end_ns;    // kCounter: the value
  int64_t index;     // element or batch index
  int32_t name;      // id of an 'N' record (operator), -1 for none
  EventKind kind;
  uint8_t flags;
  uint16_t aux;  // kCounter: CounterId
};
static_assert(sizeof(Event) == 32, "events are stored in 32 bytes");

// Counters the profiler knows, in CounterId order (names used in summaries).
inline constexpr const char* kCounterNames[] = {
    "task_clock_ns",         "page_faults",   "context_switches",
    "cpu_migrations",        "cycles",        "instructions",
    "cache_misses",          "branch_misses", "stalled_cycles_frontend",
    "stalled_cycles_backend"};
inline constexpr int kNumCounters = 10;
inline constexpr int kNumSoftwareCounters = 4;

// Appends records to an event file. Not thread-safe (one writer: the drain thread).
class EventFileWriter {
 public:
  ~EventFileWriter();
  Status Open(const std::string& path);
  void Thread(uint32_t tid, uint32_t pid, const std::string& name);
  void Name(int32_t id, const std::string& op, const std::string& prefix);
  void Events(uint32_t tid, uint32_t pid, const Event* events, uint32_t count);
  void Note(const std::string& text);
  Status Close();
  // Forgets the file without flushing or closing it (a forked child's copy).
  void Abandon() { f_ = nullptr; }
  int64_t bytes() const { return bytes_; }

 private:
  void Put(const void* p, size_t n);
  std::FILE* f_ = nullptr;
  std::string path_;
  int64_t bytes_ = 0;
};

// The contents of one or more event files, merged.
struct ThreadInfo {
  uint32_t pid = 0;
  uint32_t tid = 0;
  std::string name;
};
struct NameInfo {
  std::string op;
  std::string prefix;
};
struct LoadedEvent {
  Event e;
  int32_t thread;  // index into EventLog::threads
};
struct EventLog {
  std::vector<ThreadInfo> threads;
  std::vector<NameInfo> names;  // merged: LoadedEvent::e.name indexes this
  std::vector<LoadedEvent> events;
  std::vector<std::string> notes;
};

// Reads `path` into *log (appending; names and threads are merged by prefix and
// pid/tid). DataLoss names the file and offset of a truncated or corrupt record.
Status ReadEventFile(const std::string& path, EventLog* log);

}  // namespace sluice::profiler

#endif  // SLUICE_PROFILER_EVENT_H_
