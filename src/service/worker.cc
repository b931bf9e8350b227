#include "service/worker.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>

#include "core/coding.h"
#include "core/env.h"
#include "core/logging.h"
#include "runtime/node_stats.h"
#include "runtime/resources.h"
#include "runtime/split_provider.h"
#include "service/cross_trainer_cache.h"
#include "service/element_codec.h"
#include "service/metrics.h"
#include "sluice/dataset.h"
#include "sluice/serialize.h"

namespace sluice::service {
namespace {

// DYNAMIC: splits from the dispatcher, a lease at a time.
class RemoteSplitProvider : public SplitProvider {
 public:
  RemoteSplitProvider(std::shared_ptr<DispatcherClient> d, int64_t task, int64_t lease,
                      int64_t retry_ms, const std::atomic<bool>* cancelled,
                      std::atomic<int64_t>* rpcs)
      : d_(std::move(d)),
        task_(task),
        lease_(lease),
        retry_ms_(retry_ms),
        cancelled_(cancelled),
        rpcs_(rpcs) {}
  int64_t Cardinality() const override { return kUnknownCardinality; }

 protected:
  Result<std::optional<Tensor>> GetNextLocked() REQUIRES(mu_) override {
    if (next_ < end_) return std::optional<Tensor>(Tensor::Scalar<int64_t>(next_++));
    if (done_) return std::optional<Tensor>();
    GetSplitsRequest req;
    req.set_task_id(task_);
    req.set_max_splits(lease_);
    req.set_lease_index(leases_);
    GetSplitsResponse resp;
    SLUICE_RETURN_IF_ERROR(RetryUnavailable(retry_ms_, [&]() -> Status {
      if (cancelled_->load()) return CancelledError("worker: task cancelled");
      ++*rpcs_;
      resp.Clear();
      return d_->GetSplits(req, &resp);
    }));
    if (resp.end_of_splits()) {
      done_ = true;
      return std::optional<Tensor>();
    }
    ++leases_;
    next_ = resp.begin();
    end_ = resp.end();
    return std::optional<Tensor>(Tensor::Scalar<int64_t>(next_++));
  }
  Status ResetLocked() REQUIRES(mu_) override {
    return UnimplementedError(
        "RemoteSplitProvider: the dispatcher's splits cannot restart");
  }
  Status SaveLocked(CheckpointWriter*, std::string_view) const REQUIRES(mu_) override {
    return UnimplementedError("RemoteSplitProvider: service tasks are not checkpointed");
  }
  Status RestoreLocked(const CheckpointReader&, std::string_view) REQUIRES(mu_) override {
    return UnimplementedError("RemoteSplitProvider: service tasks are not checkpointed");
  }
  std::string name() const override { return "RemoteSplitProvider"; }

 private:
  const std::shared_ptr<DispatcherClient> d_;
  const int64_t task_, lease_, retry_ms_;
  const std::atomic<bool>* cancelled_;
  std::atomic<int64_t>* rpcs_;
  int64_t next_ GUARDED_BY(mu_) = 0;
  int64_t end_ GUARDED_BY(mu_) = 0;
  int64_t leases_ GUARDED_BY(mu_) = 0;  // leases received
  bool done_ GUARDED_BY(mu_) = false;
};

int64_t ProcessCpuNs() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return (int64_t{u.ru_utime.tv_sec} + u.ru_stime.tv_sec) * 1000000000 +
         (int64_t{u.ru_utime.tv_usec} + u.ru_stime.tv_usec) * 1000;
}

}  // namespace

Status RetryUnavailable(int64_t budget_ms, const std::function<Status()>& call) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(budget_ms);
  int64_t backoff_ms = 50;
  for (;;) {
    Status s = call();
    if (s.ok() || (s.code() != StatusCode::kUnavailable &&
                   s.code() != StatusCode::kDeadlineExceeded)) {
      return s;
    }
    if (std::chrono::steady_clock::now() + std::chrono::milliseconds(backoff_ms) >
        deadline) {
      return s;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(backoff_ms));
    backoff_ms = std::min<int64_t>(backoff_ms * 2, 2000);
  }
}

struct Worker::Task {
  TaskDef def;
  std::shared_ptr<JobCounters> counters;  // the job's, set before the task is published
  Mutex mu;
  CondVar cv;
  std::deque<Element> buffer GUARDED_BY(mu);
  int64_t buffered_bytes GUARDED_BY(mu) = 0;
  bool ended GUARDED_BY(mu) = false;
  bool served GUARDED_BY(mu) = false;  // ended and the buffer drained
  Status error GUARDED_BY(mu);
  std::atomic<bool> cancelled{false};
  std::thread thread;
  // Direct tasks (local consumers): no thread; takers pull `it` themselves, one at a
  // time under pull_mu, and the first builds it.
  bool direct = false;
  Mutex pull_mu;
  std::unique_ptr<Iterator> it GUARDED_BY(pull_mu);
  // Cross-trainer-cache jobs: every trainer reads the task's stream through the cache.
  std::unique_ptr<CrossTrainerCache> cache;
  // Coordinated reads (def.num_consumers() > 0).
  struct Round {
    std::vector<Element> batches;  // one per consumer
    std::vector<bool> taken;
    int64_t left = 0;
  };
  Mutex rounds_mu;
  std::map<int64_t, Round> rounds GUARDED_BY(rounds_mu);
  std::map<std::vector<int64_t>, std::deque<Element>> buckets GUARDED_BY(rounds_mu);
  int64_t waiting GUARDED_BY(rounds_mu) = 0;
  bool rounds_ended GUARDED_BY(rounds_mu) = false;
};

namespace {
constexpr int64_t kMaxWaitingBatches = 1024;
constexpr int64_t kMaxRoundsKept = 256;

// A batch's bucket: the shapes of its components past the batch dimension.
std::vector<int64_t> BucketOf(const Element& e) {
  std::vector<int64_t> key;
  for (size_t i = 0; i < e.size(); ++i) {
    const auto& dims = e[i].shape().dims();
    key.push_back(static_cast<int64_t>(dims.size()));
    for (size_t d = 1; d < dims.size(); ++d) key.push_back(dims[d]);
  }
  return key;
}
}  // namespace

Status Worker::TakeRound(Task* t, int64_t consumer, int64_t round, Element* element,
                         TakeResult* result) {
  const int64_t m = t->def.num_consumers();
  if (consumer < 0 || consumer >= m || round < 0) {
    return InvalidArgumentError("worker " + config_.address + ": consumer " +
                                std::to_string(consumer) + " of round " +
                                std::to_string(round) + " (the job has " +
                                std::to_string(m) + " consumers)");
  }
  MutexLock l(&t->rounds_mu);
  auto it = t->rounds.find(round);
  if (it == t->rounds.end()) {
    if (t->rounds_ended) {
      *result = TakeResult::kEnd;
      return Status::OK();
    }
    for (;;) {
      auto full = std::find_if(t->buckets.begin(), t->buckets.end(), [&](const auto& b) {
        return static_cast<int64_t>(b.second.size()) >= m;
      });
      if (full != t->buckets.end()) {
        Task::Round r;
        for (int64_t i = 0; i < m; ++i) {
          r.batches.push_back(std::move(full->second.front()));
          full->second.pop_front();
        }
        t->waiting -= m;
        if (full->second.empty()) t->buckets.erase(full);
        r.taken.assign(static_cast<size_t>(m), false);
        r.left = m;
        it = t->rounds.emplace(round, std::move(r)).first;
        // Rounds some consumer never came for (it skipped them) are not kept forever.
        while (static_cast<int64_t>(t->rounds.size()) > kMaxRoundsKept)
          t->rounds.erase(t->rounds.begin());
        break;
      }
      Element e;
      TakeResult r;
      SLUICE_RETURN_IF_ERROR(TakeRaw(t, &e, &r));
      if (r == TakeResult::kSkip) {
        *result = TakeResult::kSkip;
        return Status::OK();
      }
      if (r == TakeResult::kEnd) {
        t->rounds_ended = true;
        *result = TakeResult::kEnd;
        return Status::OK();
      }
      if (++t->waiting > kMaxWaitingBatches) {
        return ResourceExhaustedError(
            "worker " + config_.address + ": coordinated reads: " +
            std::to_string(kMaxWaitingBatches) + " batches wait in " +
            std::to_string(t->buckets.size()) +
            " buckets of distinct shapes; pad batches to their bucket's boundary "
            "(bucket_by_sequence_length(pad_to_bucket_boundary=True))");
      }
      t->buckets[BucketOf(e)].push_back(std::move(e));
    }
  }
  Task::Round& r = it->second;
  const auto c = static_cast<size_t>(consumer);
  if (r.taken[c]) {
    return FailedPreconditionError("worker " + config_.address + ": consumer " +
                                   std::to_string(consumer) + " already took round " +
                                   std::to_string(round));
  }
  r.taken[c] = true;
  *element = std::move(r.batches[c]);
  *result = TakeResult::kElement;
  if (--r.left == 0) t->rounds.erase(it);
  return Status::OK();
}

Worker::Worker(WorkerConfig config, std::shared_ptr<DispatcherClient> dispatcher)
    : config_(std::move(config)), dispatcher_(std::move(dispatcher)) {}

Worker::~Worker() { Stop(); }

Status Worker::Start() {
  SLUICE_RETURN_IF_ERROR(Heartbeat());
  heartbeat_thread_ = std::thread([this] { HeartbeatLoop(); });
  return Status::OK();
}

void Worker::Stop() {
  std::map<int64_t, std::shared_ptr<Task>> tasks;
  {
    MutexLock l(&mu_);
    stopping_ = true;
    tasks.swap(tasks_);
    cv_.SignalAll();
  }
  if (heartbeat_thread_.joinable()) heartbeat_thread_.join();
  for (auto& [id, t] : tasks) {
    t->cancelled = true;
    {
      MutexLock l(&t->mu);
      t->cv.SignalAll();
    }
    if (t->thread.joinable()) t->thread.join();
  }
}

void Worker::Nudge() {
  MutexLock l(&mu_);
  nudged_ = true;
  cv_.SignalAll();
}

Worker::Stats Worker::GetStats() const {
  Stats s;
  std::vector<std::shared_ptr<Task>> tasks;
  {
    MutexLock l(&mu_);
    for (const auto& [id, t] : tasks_) tasks.push_back(t);
  }
  s.tasks = static_cast<int64_t>(tasks.size());
  for (const auto& t : tasks) {
    MutexLock l(&t->mu);
    s.buffered_elements += static_cast<int64_t>(t->buffer.size());
    s.buffered_bytes += t->buffered_bytes;
  }
  s.task_errors = task_errors_.load();
  s.skips = skips_.load();
  s.split_rpcs = split_rpcs_.load();
  s.client_wait_seconds = static_cast<double>(wait_ns_.load()) * 1e-9;
  MutexLock l(&stats_mu_);
  for (const auto& [job, c] : served_) {
    JobServed& j = s.served[job];
    j.elements = c->elements.load(std::memory_order_relaxed);
    j.bytes = c->bytes.load(std::memory_order_relaxed);
    j.wire_bytes = c->wire_bytes.load(std::memory_order_relaxed);
  }
  return s;
}

int64_t Worker::num_tasks() const {
  MutexLock l(&mu_);
  return static_cast<int64_t>(tasks_.size());
}

Status Worker::Heartbeat() {
  MutexLock serial(&heartbeat_mu_);
  WorkerHeartbeatRequest req;
  req.set_worker_address(config_.address);
  req.set_cpu_budget(config_.cpu_budget);
  req.set_ram_budget(config_.ram_budget);
  // The advisor's report: this process's CPU (a worker process's is its pipelines' and
  // serving's) and the elements produced since the previous heartbeat.
  // The cores (cgroup files) are read again once a second at most: a heartbeat on a
  // consumer's thread stays cheap.
  const int64_t now_ns = MonotonicNs();
  if (cores_read_ns_ < 0 || now_ns - cores_read_ns_ > 1'000'000'000) {
    cores_ = config_.cpu_budget > 0 ? config_.cpu_budget : AvailableCores();
    cores_read_ns_ = now_ns;
  }
  req.set_cores(cores_);
  const int64_t cpu_now = ProcessCpuNs(), produced_now = produced_.load();
  {
    MutexLock l(&mu_);
    if (reported_cpu_ns_ >= 0) {
      req.set_cpu_ns(cpu_now - reported_cpu_ns_);
      req.set_elements(produced_now - reported_produced_);
    }
    reported_cpu_ns_ = cpu_now;
    reported_produced_ = produced_now;
    for (const auto& [id, t] : tasks_) req.add_current_task(id);
    for (int64_t id : finished_unreported_) req.add_finished_task(id);
  }
  WorkerHeartbeatResponse resp;
  SLUICE_RETURN_IF_ERROR(dispatcher_->WorkerHeartbeat(req, &resp));
  ++heartbeats_;
  std::vector<std::shared_ptr<Task>> removed;
  {
    MutexLock l(&mu_);
    if (stopping_) return Status::OK();
    std::erase_if(finished_unreported_, [&](int64_t id) {
      for (int64_t f : req.finished_task()) {
        if (f == id) return true;
      }
      return false;
    });
    for (int64_t id : resp.removed_task()) {
      auto it = tasks_.find(id);
      if (it == tasks_.end()) continue;
      removed.push_back(it->second);
      tasks_.erase(it);
    }
    for (const TaskDef& def : resp.new_task()) {
      if (tasks_.count(def.task_id())) continue;
      auto t = std::make_shared<Task>();
      t->def = def;
      t->counters = CountersFor(def.job_id());
      t->direct = def.local_consumers();
      if (def.cross_trainer_cache()) {
        t->cache = std::make_unique<CrossTrainerCache>(config_.cross_trainer_cache_bytes);
      }
      tasks_[def.task_id()] = t;
      if (!t->direct) t->thread = std::thread([this, t] { RunTask(t); });
    }
  }
  for (auto& t : removed) {
    t->cancelled = true;
    {
      MutexLock l(&t->mu);
      t->cv.SignalAll();
    }
    if (t->thread.joinable()) t->thread.join();
  }
  return Status::OK();
}

void Worker::HeartbeatLoop() {
  int64_t wait_ms = config_.heartbeat_interval_ms;
  MutexLock l(&mu_);
  while (!stopping_) {
    cv_.WaitFor(&mu_, std::chrono::milliseconds(wait_ms),
                [&]() REQUIRES(mu_) { return stopping_ || nudged_; });
    if (stopping_) break;
    nudged_ = false;
    l.Unlock();
    Status s = Heartbeat();
    l.Lock();
    // Backs off while the dispatcher is away; the tasks keep running.
    wait_ms =
        s.ok() ? config_.heartbeat_interval_ms : std::min<int64_t>(wait_ms * 2, 2000);
  }
}

Result<Dataset> Worker::CachedDataset(const TaskDef& def) {
  // Direct tasks keep the pipeline's own output prefetch: it is their only buffer.
  const bool direct = def.local_consumers();
  const int64_t key = def.dataset_id() * 2 + (direct ? 1 : 0);
  {
    MutexLock l(&mu_);
    auto it = datasets_.find(key);
    if (it != datasets_.end()) return it->second;
  }
  // A client's graph is built and run inside the worker's data roots whatever roots it
  // names itself (ListFiles, Idx, vocabularies read files while being built).
  FileOptions files;
  if (!config_.data_roots.empty() || !config_.write_roots.empty()) {
    files.allowed_roots = config_.data_roots;
    files.allowed_write_roots = config_.write_roots;
  }
  std::unique_ptr<Env> confined = NewConfinedEnvFor(Env::Default(), files);
  Result<Dataset> built = [&] {
    ScopedBuildEnv build_env(confined.get());
    return DeserializeDataset(def.graph(), GraphFormat::kBinary);
  }();
  SLUICE_ASSIGN_OR_RETURN(Dataset ds, std::move(built));
  // The worker's budgets, set on the dataset (not per iterator) so that its rewritten
  // graph is computed once. The task's buffer is the pipeline's output prefetch: a second
  // one would only add a hand-off (unless the pipeline's options ask for it).
  Options options;
  if (files.confined()) options.files = files;
  if (config_.cpu_budget > 0) options.autotune.cpu_budget = config_.cpu_budget;
  if (config_.ram_budget != 0) options.autotune.ram_budget = config_.ram_budget;
  if (!direct && !ds.options().optimization.passes.count("inject_prefetch")) {
    options.optimization.Set("inject_prefetch", false);
  }
  ds = ds.WithOptions(options);
  MutexLock l(&mu_);
  if (datasets_.size() >= 64)
    datasets_.clear();  // a bound, not an LRU: rebuilding is cheap
  datasets_.emplace(key, ds);
  return ds;
}

void Worker::FailTask(Task* t, const Status& s) {
  ++task_errors_;
  Log("warning", "worker", "task failed",
      {{"worker", config_.address},
       {"task_id", std::to_string(t->def.task_id())},
       {"job_id", std::to_string(t->def.job_id())},
       {"error", s.ToString()}});
  MutexLock l(&t->mu);
  t->error = s.WithContext("worker " + config_.address + " task " +
                           std::to_string(t->def.task_id()));
  t->cv.SignalAll();
}

Result<std::unique_ptr<Iterator>> Worker::MakeTaskIterator(Task* t) {
  SLUICE_ASSIGN_OR_RETURN(Dataset ds, CachedDataset(t->def));
  std::shared_ptr<SplitProvider> provider;
  const int64_t n = t->def.num_workers(), i = t->def.worker_index();
  switch (t->def.sharding_policy()) {
    case DYNAMIC:
      provider = std::make_shared<RemoteSplitProvider>(
          dispatcher_, t->def.task_id(), config_.lease_splits,
          config_.dispatcher_retry_ms, &t->cancelled, &split_rpcs_);
      break;
    case FILE: {
      SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<SplitProvider> local,
                              ds.MakeSplitProvider());
      SLUICE_ASSIGN_OR_RETURN(provider, ShardingSplitProvider::Make(n, i, local));
      break;
    }
    case DATA:
      ds = ds.Shard(n, i);
      break;
    default:
      break;
  }
  return ds.MakeIterator(provider);
}

void Worker::RunTask(std::shared_ptr<Task> t) {
  Result<std::unique_ptr<Iterator>> it = MakeTaskIterator(t.get());
  if (!it.ok()) return FailTask(t.get(), it.status());
  while (!t->cancelled) {
    Result<std::optional<Element>> e = (*it)->GetNext();
    if (!e.ok()) return FailTask(t.get(), e.status());
    MutexLock l(&t->mu);
    if (!e->has_value()) {
      t->ended = true;
      t->cv.SignalAll();
      return;
    }
    t->cv.Wait(&t->mu, [&]() REQUIRES(t->mu) {
      return t->cancelled ||
             static_cast<int64_t>(t->buffer.size()) < config_.buffer_elements;
    });
    t->buffered_bytes += ElementBytes(**e);
    t->buffer.push_back(std::move(**e));
    ++produced_;
    t->cv.SignalAll();
  }
}

Result<std::shared_ptr<Worker::Task>> Worker::FindTask(int64_t task_id) {
  MutexLock l(&mu_);
  if (stopping_) return CancelledError("worker " + config_.address + " is stopping");
  auto it = tasks_.find(task_id);
  if (it == tasks_.end()) {
    return NotFoundError("worker " + config_.address + ": no task " +
                         std::to_string(task_id));
  }
  return it->second;
}

Status Worker::Take(int64_t task_id, Element* element, TakeResult* result) {
  return Take(task_id, "", element, result, nullptr);
}

Status Worker::Take(int64_t task_id, const std::string& trainer_id, Element* element,
                    TakeResult* result, int64_t* skipped) {
  SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<Task> t, FindTask(task_id));
  if (!t->cache) return TakeRaw(t.get(), element, result);
  SLUICE_ASSIGN_OR_RETURN(
      CrossTrainerCache::Read read,
      t->cache->Get(trainer_id, [&](std::shared_ptr<const CachedElement>* made,
                                    CrossTrainerCache::Outcome* outcome) {
        Element e;
        TakeResult r;
        SLUICE_RETURN_IF_ERROR(TakeRaw(t.get(), &e, &r));
        *outcome = Outcome(r);
        if (r != TakeResult::kElement) return Status::OK();
        auto c = std::make_shared<CachedElement>();
        c->bytes = static_cast<int64_t>(e.nbytes());
        c->element = std::move(e);
        *made = std::move(c);
        return Status::OK();
      }));
  return FromCache(read, element, nullptr, COMPRESSION_NONE, result, skipped);
}

CrossTrainerCache::Outcome Worker::Outcome(TakeResult r) {
  switch (r) {
    case TakeResult::kElement:
      return CrossTrainerCache::Outcome::kElement;
    case TakeResult::kEnd:
      return CrossTrainerCache::Outcome::kEnd;
    case TakeResult::kSkip:
      break;
  }
  return CrossTrainerCache::Outcome::kSkip;
}

Status Worker::FromCache(const CrossTrainerCache::Read& read, Element* element,
                         GetElementResponse* resp, ElementCompression compression,
                         TakeResult* result, int64_t* skipped) {
  if (skipped) *skipped = read.skipped;
  cache_skipped_ += read.skipped;
  if (read.outcome == CrossTrainerCache::Outcome::kEnd) {
    *result = TakeResult::kEnd;
    return Status::OK();
  }
  if (read.outcome == CrossTrainerCache::Outcome::kSkip) {
    *result = TakeResult::kSkip;
    return Status::OK();
  }
  *result = TakeResult::kElement;
  const CachedElement& c = *read.element;
  if (resp == nullptr) {  // a consumer in this process wants the element itself
    if (c.element) {
      *element = *c.element;  // tensors share their buffers: no copy of the data
      return Status::OK();
    }
    SLUICE_ASSIGN_OR_RETURN(*element, DecodeResponseElement(*c.coded));
    return Status::OK();
  }
  if (c.coded) {
    *resp = *c.coded;
    return Status::OK();
  }
  std::string bytes;
  EncodeElement(*c.element, &bytes);
  return CompressElement(std::move(bytes), compression, resp);
}

Status Worker::TakeRaw(Task* t, Element* element, TakeResult* result) {
  const int64_t task_id = t->def.task_id();
  if (t->direct) return TakeDirect(t, element, result);
  bool newly_served = false;
  int64_t taken_bytes = -1;
  {
    MutexLock l(&t->mu);
    const auto wait_start = std::chrono::steady_clock::now();
    t->cv.WaitFor(&t->mu, std::chrono::milliseconds(config_.get_element_wait_ms),
                  [&]() REQUIRES(t->mu) {
                    return !t->buffer.empty() || t->ended || !t->error.ok() ||
                           t->cancelled;
                  });
    wait_ns_ += std::chrono::duration_cast<std::chrono::nanoseconds>(
                    std::chrono::steady_clock::now() - wait_start)
                    .count();
    if (!t->buffer.empty()) {
      *element = std::move(t->buffer.front());
      t->buffer.pop_front();
      taken_bytes = ElementBytes(*element);
      t->buffered_bytes -= taken_bytes;
      t->cv.SignalAll();
      *result = TakeResult::kElement;
    } else if (!t->error.ok()) {
      return t->error;
    } else if (t->ended) {
      *result = TakeResult::kEnd;
      newly_served = !t->served;
      t->served = true;
    } else {
      *result = TakeResult::kSkip;
      ++skips_;
    }
  }
  if (taken_bytes >= 0) {
    t->counters->elements.fetch_add(1, std::memory_order_relaxed);
    t->counters->bytes.fetch_add(taken_bytes, std::memory_order_relaxed);
  }
  if (newly_served) {
    MutexLock l(&mu_);
    finished_unreported_.push_back(task_id);
  }
  return Status::OK();
}

Status Worker::TakeDirect(Task* t, Element* element, TakeResult* result) {
  Result<std::optional<Element>> e = std::optional<Element>();
  {
    MutexLock pull(&t->pull_mu);
    {
      MutexLock l(&t->mu);  // another taker may have seen the end meanwhile
      if (!t->error.ok()) return t->error;
      if (t->ended) {
        *result = TakeResult::kEnd;
        return Status::OK();
      }
      if (t->cancelled) {
        *result = TakeResult::kSkip;
        return Status::OK();
      }
    }
    if (!t->it) {  // the first take builds the pipeline, as a local MakeIterator would
      Result<std::unique_ptr<Iterator>> it = MakeTaskIterator(t);
      if (!it.ok()) {
        FailTask(t, it.status());
        MutexLock l(&t->mu);
        return t->error;
      }
      t->it = std::move(*it);
    }
    e = t->it->GetNext();
  }
  MutexLock l(&t->mu);
  if (!e.ok()) {
    t->error = e.status().WithContext("worker " + config_.address + " task " +
                                      std::to_string(t->def.task_id()));
    return t->error;
  }
  if (e->has_value()) {
    ++produced_;
    *element = std::move(**e);
    *result = TakeResult::kElement;
    l.Unlock();
    t->counters->elements.fetch_add(1, std::memory_order_relaxed);
    t->counters->bytes.fetch_add(ElementBytes(*element), std::memory_order_relaxed);
    return Status::OK();
  }
  *result = TakeResult::kEnd;
  t->ended = true;
  if (!t->served) {
    t->served = true;
    l.Unlock();
    MutexLock w(&mu_);
    finished_unreported_.push_back(t->def.task_id());
  }
  return Status::OK();
}

Status Worker::GetElement(const GetElementRequest& req, GetElementResponse* resp) {
  SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<Task> t, FindTask(req.task_id()));
  if (req.coordinated() || t->def.num_consumers() > 0) {
    if (!req.coordinated() || t->def.num_consumers() <= 0) {
      return InvalidArgumentError("worker " + config_.address + ": task " +
                                  std::to_string(req.task_id()) +
                                  (req.coordinated() ? " is not" : " is") +
                                  " a coordinated-reads task");
    }
    Element e;
    TakeResult r;
    SLUICE_RETURN_IF_ERROR(
        TakeRound(t.get(), req.consumer_index(), req.round_index(), &e, &r));
    return Respond(t->counters.get(), e, r, req.compression(), resp);
  }
  if (t->cache) {
    // The element is coded (and compressed) once, by the trainer that made it.
    SLUICE_ASSIGN_OR_RETURN(
        CrossTrainerCache::Read read,
        t->cache->Get(req.trainer_id(), [&](std::shared_ptr<const CachedElement>* made,
                                            CrossTrainerCache::Outcome* outcome) {
          Element e;
          TakeResult r;
          SLUICE_RETURN_IF_ERROR(TakeRaw(t.get(), &e, &r));
          *outcome = Outcome(r);
          if (r != TakeResult::kElement) return Status::OK();
          auto c = std::make_shared<CachedElement>();
          std::string bytes;
          EncodeElement(e, &bytes);
          c->coded.emplace();
          SLUICE_RETURN_IF_ERROR(
              CompressElement(std::move(bytes), req.compression(), &*c->coded));
          c->bytes = static_cast<int64_t>(c->coded->element().size());
          *made = std::move(c);
          return Status::OK();
        }));
    Element unused;
    TakeResult r;
    int64_t skipped = 0;
    SLUICE_RETURN_IF_ERROR(
        FromCache(read, &unused, resp, req.compression(), &r, &skipped));
    resp->set_skipped_elements(skipped);
    if (r == TakeResult::kEnd) resp->set_end_of_sequence(true);
    if (r == TakeResult::kSkip) resp->set_skip(true);
    if (r == TakeResult::kElement) CountWireBytes(t->counters.get(), *resp);
    return Status::OK();
  }
  Element e;
  TakeResult r;
  SLUICE_RETURN_IF_ERROR(TakeRaw(t.get(), &e, &r));
  return Respond(t->counters.get(), e, r, req.compression(), resp);
}

Status Worker::Respond(JobCounters* served, const Element& e, TakeResult r,
                       ElementCompression compression, GetElementResponse* resp) {
  if (r == TakeResult::kEnd) resp->set_end_of_sequence(true);
  if (r == TakeResult::kSkip) resp->set_skip(true);
  if (r != TakeResult::kElement) return Status::OK();
  std::string bytes;
  EncodeElement(e, &bytes);
  SLUICE_RETURN_IF_ERROR(CompressElement(std::move(bytes), compression, resp));
  CountWireBytes(served, *resp);
  return Status::OK();
}

std::shared_ptr<Worker::JobCounters> Worker::CountersFor(int64_t job_id) {
  MutexLock l(&stats_mu_);
  std::shared_ptr<JobCounters>& c = served_[job_id];
  if (!c) c = std::make_shared<JobCounters>();
  return c;
}

void Worker::CountWireBytes(JobCounters* served, const GetElementResponse& resp) {
  served->wire_bytes.fetch_add(static_cast<int64_t>(resp.element().size()),
                               std::memory_order_relaxed);
}

}  // namespace sluice::service
