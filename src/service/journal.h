// The dispatcher's journal: an append-only file of records, each one state change
// (service.proto Update), written and fsynced before the change is acknowledged.
//
// Record format: fixed32 payload length, fixed32 masked crc32c of the payload (the
// LevelDB mask), payload. Replay reads records from the start and stops at the first one
// that is incomplete, longer than kMaxJournalRecord, or whose checksum does not match: a
// torn tail (a write cut short by a crash). The torn tail is dropped (the file is
// truncated to the last whole record) and reported; records after it are never applied.
//
// Thread-safety: not thread-safe; the dispatcher calls it under its own mutex.
#ifndef SLUICE_SERVICE_JOURNAL_H_
#define SLUICE_SERVICE_JOURNAL_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/status.h"

namespace sluice::service {

// Largest record accepted on replay (and written): 64 MiB.
inline constexpr uint32_t kMaxJournalRecord = 64u << 20;

class Journal {
 public:
  struct Replayed {
    std::vector<std::string> records;  // payloads of the whole records, in order
    int64_t valid_bytes = 0;           // where the whole records end
    int64_t dropped_bytes = 0;         // the torn tail's length (0: none)
    std::string dropped_reason;        // why the tail was dropped ("" when none)
  };

  // Reads `path` (a missing file is an empty journal) without changing it.
  static Result<Replayed> Read(const std::string& path);

  // Replays `path` (Read), truncates a torn tail and opens the file for appending.
  static Result<std::pair<Journal, Replayed>> Open(const std::string& path);

  Journal(Journal&& other) noexcept;
  Journal& operator=(Journal&& other) noexcept;
  ~Journal();

  // Appends one record and fsyncs before returning OK. InvalidArgument for a payload
  // over kMaxJournalRecord; an I/O error names the file. After an error the journal
  // refuses further appends (the file's tail is unknown).
  Status Append(std::string_view payload);

  const std::string& path() const { return path_; }
  int64_t size() const { return size_; }

 private:
  Journal(std::string path, int fd, int64_t size)
      : path_(std::move(path)), fd_(fd), size_(size) {}
  std::string path_;
  int fd_ = -1;
  int64_t size_ = 0;
  Status broken_;
};

}  // namespace sluice::service

#endif  // SLUICE_SERVICE_JOURNAL_H_
