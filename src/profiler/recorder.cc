#include "profiler/recorder.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

#include "profiler/counters.h"

namespace sluice::profiler {

struct Recorder::Chunk {
  Chunk* next = nullptr;
  uint32_t tid = 0;
  uint32_t pid = 0;
  std::atomic<uint32_t> size{0};
  Event events[kChunkEvents];
};

struct Recorder::ThreadBuffer {
  struct NodeEntry {
    std::string prefix;
    int32_t id = -1;
    uint8_t flags = 0;  // kFlagRoot / kFlagRootInput / 0
  };
  struct Frame {
    uint64_t start[kNumCounters];
    uint64_t children[kNumCounters];
  };
  uint32_t tid = 0;
  uint32_t pid = 0;
  std::string name;
  Chunk* current = nullptr;
  // Keyed by the iterator's prefix storage (stable while it lives), checked by content.
  std::unordered_map<const char*, NodeEntry> nodes;
  std::unique_ptr<ThreadCounters> counters;
  bool counters_tried = false;
  std::vector<Frame> stack;
};

namespace {

std::atomic<uint64_t> next_generation{1};

struct Tls {
  uint64_t generation = 0;
  void* buffer = nullptr;
};
thread_local Tls tls;

uint8_t ClassifyPrefix(std::string_view prefix) {
  const size_t slash = prefix.find('/');
  if (slash == std::string_view::npos) return kFlagRoot;
  if (prefix.find('/', slash + 1) == std::string_view::npos && prefix.ends_with("[0]")) {
    return kFlagRootInput;
  }
  return 0;
}

// One operator per place in the graph: the labels of dynamically made inner iterators
// ("TFRecord[in28]", "Range[slot3]") lose their number ("TFRecord[in*]").
std::string OperatorPrefix(std::string_view prefix) {
  std::string out;
  out.reserve(prefix.size());
  bool in_label = false, seen_letter = false, starred = false;
  for (char c : prefix) {
    if (c == '[') {
      in_label = true;
      seen_letter = starred = false;
    } else if (c == ']') {
      in_label = false;
    } else if (in_label && c >= '0' && c <= '9' && seen_letter) {
      if (!starred) out += '*';
      starred = true;
      continue;
    } else if (in_label) {
      seen_letter = true;
    }
    out += c;
  }
  return out;
}

}  // namespace

Recorder::Recorder(const RecorderOptions& options)
    : options_(options), generation_(next_generation.fetch_add(1)), pid_(getpid()) {
  calls_begin_ = options_.counters;
}

Recorder::~Recorder() {
  if (getpid() != pid_) {  // inherited through fork: nothing here is ours to stop
    (void)drain_.release();
    writer_.Abandon();
    return;
  }
  (void)Stop();
  for (auto& tb : threads_) delete tb->current;
  Chunk* c = full_.exchange(nullptr);
  while (c != nullptr) {
    Chunk* next = c->next;
    delete c;
    c = next;
  }
}

Status Recorder::Start(const std::string& events_path) {
  SLUICE_RETURN_IF_ERROR(writer_.Open(events_path));
  if (options_.counters) {
    hw_note_ = ThreadCounters::HardwareUnavailableReason();
    if (!hw_note_.empty()) writer_.Note(hw_note_);
  }
  active_.store(true);
  drain_ = std::make_unique<std::thread>([this] { DrainLoop(); });
  return Status::OK();
}

Recorder::ThreadBuffer* Recorder::Local() {
  if (tls.generation == generation_) [[likely]] {
    return static_cast<ThreadBuffer*>(tls.buffer);
  }
  return LocalSlow();
}

Recorder::ThreadBuffer* Recorder::LocalSlow() {
  const uint32_t tid = static_cast<uint32_t>(syscall(SYS_gettid));
  std::lock_guard<std::mutex> l(mu_);
  ThreadBuffer* tb = nullptr;
  for (auto& t : threads_) {
    if (t->tid == tid) tb = t.get();
  }
  if (tb == nullptr) {
    auto fresh = std::make_unique<ThreadBuffer>();
    fresh->tid = tid;
    fresh->pid = static_cast<uint32_t>(getpid());
    char name[32] = {};
    if (pthread_getname_np(pthread_self(), name, sizeof name) == 0) fresh->name = name;
    fresh->current = new Chunk;
    fresh->current->tid = tid;
    fresh->current->pid = fresh->pid;
    tb = fresh.get();
    threads_.push_back(std::move(fresh));
  }
  tls.generation = generation_;
  tls.buffer = tb;
  return tb;
}

void Recorder::Append(const Event& e) {
  ThreadBuffer* tb = Local();
  Chunk* c = tb->current;
  uint32_t n = c->size.load(std::memory_order_relaxed);
  if (n == kChunkEvents) [[unlikely]] {
    Chunk* fresh = new Chunk;
    fresh->tid = tb->tid;
    fresh->pid = tb->pid;
    tb->current = fresh;
    PushFull(c);
    c = fresh;
    n = 0;
  }
  c->events[n] = e;
  c->size.store(n + 1, std::memory_order_release);
}

void Recorder::PushFull(Chunk* c) {
  Chunk* head = full_.load(std::memory_order_relaxed);
  do {
    c->next = head;
  } while (!full_.compare_exchange_weak(head, c, std::memory_order_release,
                                        std::memory_order_relaxed));
}

int32_t Recorder::InternName(const std::string& op, const std::string& prefix) {
  std::lock_guard<std::mutex> l(mu_);
  auto [it, fresh] =
      name_ids_.try_emplace(op + "\n" + prefix, static_cast<int32_t>(names_.size()));
  if (fresh) names_.push_back({op, prefix});
  return it->second;
}

void Recorder::CountersPush(ThreadBuffer* tb) {
  if (!tb->counters_tried) {
    tb->counters_tried = true;
    auto c = std::make_unique<ThreadCounters>();
    if (c->Open().ok()) tb->counters = std::move(c);
  }
  ThreadBuffer::Frame f;
  std::memset(f.children, 0, sizeof f.children);
  if (tb->counters != nullptr) {
    tb->counters->Read(f.start);
  } else {
    std::memset(f.start, 0, sizeof f.start);
  }
  tb->stack.push_back(f);
}

void Recorder::CountersPop(ThreadBuffer* tb, int32_t name, int64_t index, int64_t ts) {
  if (tb->stack.empty()) return;  // Begin ran before the session started
  const ThreadBuffer::Frame f = tb->stack.back();
  tb->stack.pop_back();
  if (tb->counters == nullptr) return;
  uint64_t now[kNumCounters];
  tb->counters->Read(now);
  for (int i = 0; i < kNumCounters; ++i) {
    const uint64_t inclusive = now[i] - f.start[i];
    if (!tb->stack.empty()) tb->stack.back().children[i] += inclusive;
    const uint64_t own = inclusive > f.children[i] ? inclusive - f.children[i] : 0;
    if (own == 0 || name < 0) continue;
    Append(Event{ts, static_cast<int64_t>(own), index, name, EventKind::kCounter, 0,
                 static_cast<uint16_t>(i)});
  }
}

void Recorder::Begin() {
  if (!options_.counters || !active_.load(std::memory_order_relaxed)) return;
  CountersPush(Local());
}

void Recorder::BeginCounters() { Begin(); }

bool Recorder::Wants(std::string_view prefix, std::string_view parent_op) const {
  if (options_.sampling != Sampling::kBatchesOnly) return true;
  // The root's input spans are a batch's production side only behind a Prefetch root
  // (analysis.cc); under a synchronous root they run once per element of a batch.
  const uint8_t flags = ClassifyPrefix(prefix);
  return flags == kFlagRoot || (flags == kFlagRootInput && parent_op == "Prefetch");
}

void Recorder::EndCounters(int32_t name, int64_t index, int64_t end_ns) {
  if (!options_.counters || !active_.load(std::memory_order_relaxed)) return;
  CountersPop(Local(), name, index, end_ns);
}

void Recorder::Record(const Span& span) {
  if (!active_.load(std::memory_order_relaxed)) return;
  // The iterator's cache slot holds (operator id << 8 | flags) once resolved: no lookup.
  int32_t id;
  uint8_t node_flags;
  const int64_t cached =
      span.cache != nullptr ? span.cache->load(std::memory_order_relaxed) : -1;
  if (cached >= 0) [[likely]] {
    id = static_cast<int32_t>(cached >> 8);
    node_flags = static_cast<uint8_t>(cached & 0xff);
  } else {
    ThreadBuffer* tb = Local();
    auto [it, fresh] = tb->nodes.try_emplace(span.prefix.data());
    ThreadBuffer::NodeEntry& node = it->second;
    if (fresh || node.prefix != span.prefix) {
      node.prefix = std::string(span.prefix);
      node.flags = ClassifyPrefix(span.prefix);
      node.id = InternName(std::string(span.op), OperatorPrefix(span.prefix));
    }
    id = node.id;
    node_flags = node.flags;
    if (span.cache != nullptr) {
      span.cache->store((int64_t{id} << 8) | node_flags, std::memory_order_relaxed);
    }
  }
  const bool keep =
      node_flags != 0 || options_.sampling == Sampling::kAll ||
      (options_.sampling == Sampling::kOneInN && span.index % options_.sample_every == 0);
  if (keep) {
    const uint8_t flags =
        node_flags | (span.produced ? kFlagProduced : 0) | (span.error ? kFlagError : 0);
    Append(Event{span.start_ns, span.end_ns, span.index, id, EventKind::kSpan, flags, 0});
  }
  if (options_.counters) CountersPop(Local(), keep ? id : -1, span.index, span.end_ns);
}

void Recorder::DrainFull() {
  Chunk* c = full_.exchange(nullptr, std::memory_order_acquire);
  Chunk* reversed = nullptr;  // oldest first
  while (c != nullptr) {
    Chunk* next = c->next;
    c->next = reversed;
    reversed = c;
    c = next;
  }
  while (reversed != nullptr) {
    Chunk* next = reversed->next;
    const uint32_t n = reversed->size.load(std::memory_order_acquire);
    writer_.Events(reversed->tid, reversed->pid, reversed->events, n);
    drained_events_.fetch_add(n, std::memory_order_relaxed);
    delete reversed;
    reversed = next;
  }
}

void Recorder::DrainLoop() {
  std::unique_lock<std::mutex> l(mu_);
  while (!stop_) {
    cv_.wait_for(l, std::chrono::milliseconds(20));
    l.unlock();
    DrainFull();
    l.lock();
  }
}

Status Recorder::Stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (stopped_ || drain_ == nullptr || getpid() != pid_) return Status::OK();
    stopped_ = true;
    stop_ = true;
  }
  active_.store(false);
  cv_.notify_all();
  drain_->join();
  DrainFull();
  std::lock_guard<std::mutex> l(mu_);
  for (auto& tb : threads_) {
    // A writer that saw the recorder active a moment ago may still append: take what is
    // published now and leave the chunk to the destructor.
    const uint32_t n = tb->current->size.load(std::memory_order_acquire);
    writer_.Events(tb->tid, tb->pid, tb->current->events, n);
    drained_events_.fetch_add(n, std::memory_order_relaxed);
    writer_.Thread(tb->tid, tb->pid, tb->name);
  }
  for (size_t i = 0; i < names_.size(); ++i) {
    writer_.Name(static_cast<int32_t>(i), names_[i].op, names_[i].prefix);
  }
  file_bytes_ = writer_.bytes();
  return writer_.Close();
}

int64_t Recorder::events_recorded() const {
  return drained_events_.load(std::memory_order_relaxed);
}

}  // namespace sluice::profiler
