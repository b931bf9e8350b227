// Recorder: the profiler's SpanRecorder. Each recording thread appends 32-byte events to
// its own chunk (single writer, no lock: the size is published with a release store);
// a full chunk (kChunkEvents events) goes onto a lock-free list that a drain thread
// empties into the event file (event.h) every few milliseconds. Stop drains the rest,
// including each thread's partial chunk, and writes the thread and operator names.
//
// Sampling (RecorderOptions): the root's spans and its first input's are always kept
// (they are the batches); other spans all, 1 in N by element index, or none. Batches
// only: just the root and, under a Prefetch root, its first input get the hook (Wants);
// no other iterator and no pool work calls the recorder at all.
//
// Counters: with counters on, Begin reads the thread's perf counters and Record reads
// them again; the difference minus the nested spans' differences (the operator's own
// share) follows the span as kCounter events, non-zero counters only.
//
// Thread-safety: Record, Begin, InternName and Append may be called from any thread;
// Start/Stop from one controlling thread. The recorder must outlive every iterator that
// holds it; after Stop it records nothing. In a process forked from the one that made it
// (a DataLoader worker) the recorder is inert: its destructor leaks everything, as the
// drain thread and the file belong to the parent.
#ifndef SLUICE_PROFILER_RECORDER_H_
#define SLUICE_PROFILER_RECORDER_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "profiler/event.h"
#include "runtime/span.h"
#include "sluice/profiler.h"

namespace sluice::profiler {

struct RecorderOptions {
  Sampling sampling = Sampling::kAll;
  int64_t sample_every = 1;
  bool counters = false;
};

class Recorder final : public SpanRecorder {
 public:
  static constexpr uint32_t kChunkEvents = 2048;

  explicit Recorder(const RecorderOptions& options);
  ~Recorder() override;

  // Opens the event file and starts the drain thread.
  Status Start(const std::string& events_path);
  // Stops recording, drains everything, closes the file. Idempotent.
  Status Stop();

  void Record(const Span& span) override;
  void Begin() override;
  // Batches only: just the root and, under a Prefetch root, its first input get the
  // hook; no pool work ("<prefix>/fn").
  bool Wants(std::string_view prefix, std::string_view parent_op) const override;

  // For code that is not an iterator (sluice.profiler.torch): a name id for an operator,
  // and an event appended to the calling thread's buffer.
  int32_t InternName(const std::string& op, const std::string& prefix);
  void Append(const Event& e);
  // Counter boundaries around a manual span (as Begin/Record do for iterators): End
  // appends the span's kCounter events for `name` (call it after appending the span).
  void BeginCounters();
  void EndCounters(int32_t name, int64_t index, int64_t end_ns);

  int64_t events_recorded() const;
  int64_t file_bytes() const { return file_bytes_; }
  bool active() const { return active_.load(std::memory_order_relaxed); }

 private:
  struct Chunk;
  struct ThreadBuffer;
  ThreadBuffer* Local();
  ThreadBuffer* LocalSlow();
  void PushFull(Chunk* c);
  void DrainLoop();
  void DrainFull();
  void CountersPush(ThreadBuffer* tb);
  void CountersPop(ThreadBuffer* tb, int32_t name, int64_t index, int64_t ts);

  const RecorderOptions options_;
  const uint64_t generation_;
  std::atomic<bool> active_{false};
  std::atomic<Chunk*> full_{nullptr};

  std::mutex mu_;  // guards threads_, names_, name_ids_, stop_, the writer
  std::vector<std::unique_ptr<ThreadBuffer>> threads_;
  std::vector<NameInfo> names_;
  std::unordered_map<std::string, int32_t> name_ids_;
  bool stop_ = false;
  bool stopped_ = false;
  std::condition_variable cv_;
  std::unique_ptr<std::thread> drain_;
  const int pid_;  // the process that made the recorder (a forked child only leaks it)
  EventFileWriter writer_;
  int64_t file_bytes_ = 0;
  std::atomic<int64_t> drained_events_{0};
  std::string hw_note_;
};

}  // namespace sluice::profiler

#endif  // SLUICE_PROFILER_RECORDER_H_
