// libFuzzer target: a dispatcher journal file (what a crash or a bad disk may leave)
// replayed into the dispatcher state: records are framed, checksummed and bounded
// (kMaxJournalRecord); a torn or corrupt tail is dropped; updates that do not fit the
// state are refused. Never a crash or an unbounded allocation.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "service/dispatcher_state.h"
#include "service/journal.h"

using namespace sluice::service;  // NOLINT

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = [] {
    char tmpl[] = "/tmp/sluice_journal_fuzz_XXXXXX";
    const int fd = mkstemp(tmpl);
    if (fd >= 0) close(fd);
    return std::string(tmpl);
  }();
  ::FILE* f = fopen(path.c_str(), "wb");
  if (f == nullptr) abort();
  if (size > 0 && fwrite(data, 1, size, f) != size) abort();
  fclose(f);
  auto replayed = Journal::Read(path);
  if (!replayed.ok()) abort();  // a readable file always replays (maybe to nothing)
  if (replayed->valid_bytes + replayed->dropped_bytes != static_cast<int64_t>(size))
    abort();
  DispatcherState state;
  for (const std::string& rec : replayed->records) {
    Update u;
    if (!u.ParseFromString(rec)) continue;
    state.Apply(u).IgnoreError();
  }
  return 0;
}
