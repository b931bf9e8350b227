// The client: the DataServiceDataset source op (registered by the service layer the
// first time Distribute runs) and Distribute itself.
#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "core/mutex.h"
#include "graph/attr.h"
#include "graph/dataset_access.h"
#include "graph/registry.h"
#include "runtime/iterator_base.h"
#include "service/element_codec.h"
#include "service/grpc_transport.h"
#include "service/local_workers.h"
#include "service/security.h"
#include "sluice/serialize.h"
#include "sluice/service.h"

namespace sluice::service {
namespace {

constexpr char kOp[] = "DataServiceDataset";

Mutex reports_mu;
std::vector<JobReport>& Reports() {
  static auto* r = new std::vector<JobReport>();
  return *r;
}

struct ClientConfig {
  std::string dispatcher;  // host:port
  std::string graph;       // binary GraphDef
  std::string fingerprint;
  std::string job_name;
  ProcessingMode policy;
  ElementCompression compression;
  bool local_only;
  int64_t max_outstanding;
  int64_t buffer_elements;
  int64_t dispatcher_timeout_ms;
  int64_t worker_timeout_ms;
  SecurityOptions security;  // file names; read when an iterator starts
  std::string trainer_id;  // non-empty: the job shares a cross-trainer cache
  int64_t num_consumers = 0;  // coordinated reads: consumers per round (0: off)
  int64_t consumer_index = 0;
  int64_t round_wait_ms = 2000;
};

class DataServiceDataset : public DatasetNode {
 public:
  DataServiceDataset(OpArgs args, ElementSpec spec, ClientConfig config)
      : DatasetNode(kOp, std::move(args), std::move(spec)), config_(std::move(config)) {}
  int64_t Cardinality() const override { return kUnknownCardinality; }
  bool IsReplayable() const override { return false; }
  const ClientConfig& config() const { return config_; }
  // The dataset id the dispatcher gave the graph, remembered across epochs (0: none yet).
  std::atomic<int64_t>* dataset_id() const { return &dataset_id_; }

 protected:
  Result<IteratorPtr> MakeIteratorInternal(const IteratorContext& ctx,
                                           const std::string& prefix) const override;

 private:
  const ClientConfig config_;
  mutable std::atomic<int64_t> dataset_id_{0};
};

// Thread-safety: GetNext from one thread (as every iterator); the heartbeat and fetch
// threads share the state below under mu_.
class DataServiceIterator : public IteratorBase {
 public:
  DataServiceIterator(const DataServiceDataset* ds, const std::string& prefix)
      : IteratorBase(ds->shared(), prefix),
        c_(ds->config()),
        dataset_id_(ds->dataset_id()) {}

  ~DataServiceIterator() override {
    {
      MutexLock l(&mu_);
      stopping_ = true;
      cv_.SignalAll();
    }
    // The heartbeat thread starts fetch threads: it stops first.
    if (heartbeat_.joinable()) heartbeat_.join();
    std::vector<std::thread> threads;
    {
      MutexLock l(&mu_);
      for (auto& [id, t] : tasks_) {
        if (t.thread.joinable()) threads.push_back(std::move(t.thread));
      }
    }
    for (auto& t : threads) t.join();
    if (dispatcher_ && client_id_ > 0) {
      ReleaseJobClientRequest req;
      req.set_job_id(job_id_);
      req.set_client_id(client_id_);
      ReleaseJobClientResponse resp;
      dispatcher_->ReleaseJobClient(req, &resp)
          .IgnoreError();  // or the timeout releases it
    }
    if (client_id_ > 0) {
      MutexLock l(&reports_mu);
      Reports().push_back(report_);
    }
  }

  Status Initialize(const IteratorContext&) override {
    SLUICE_ASSIGN_OR_RETURN(security_, LoadSecurity(c_.security, "distribute"));
    dispatcher_ = MakeDispatcherClient(c_.dispatcher, kRpcDeadlineMs, security_);
    // Later epochs skip registering the graph again (a dispatcher that forgot it, having
    // no journal, answers NotFound and it is registered anew).
    GetOrCreateJobRequest jreq;
    GetOrCreateJobResponse jresp;
    Status created = NotFoundError("");
    if (const int64_t id = dataset_id_->load(); id > 0) {
      jreq.set_dataset_id(id);
      FillJobRequest(&jreq);
      created = RetryUnavailable(c_.dispatcher_timeout_ms,
                                 [&] { return dispatcher_->GetOrCreateJob(jreq, &jresp); });
    }
    if (created.code() == StatusCode::kNotFound) {
      GetOrRegisterDatasetRequest dreq;
      dreq.set_graph(c_.graph);
      dreq.set_fingerprint(c_.fingerprint);
      GetOrRegisterDatasetResponse dresp;
      SLUICE_RETURN_IF_ERROR(RetryUnavailable(c_.dispatcher_timeout_ms, [&] {
        return dispatcher_->GetOrRegisterDataset(dreq, &dresp);
      }));
      dataset_id_->store(dresp.dataset_id());
      jreq.Clear();
      jreq.set_dataset_id(dresp.dataset_id());
      FillJobRequest(&jreq);
      created = RetryUnavailable(c_.dispatcher_timeout_ms,
                                 [&] { return dispatcher_->GetOrCreateJob(jreq, &jresp); });
    }
    SLUICE_RETURN_IF_ERROR(created);
    job_id_ = jresp.job_id();
    client_id_ = jresp.client_id();
    {
      MutexLock l(&mu_);
      report_.job_id = job_id_;
      report_.job_name = c_.job_name;
      report_.trainer_id = c_.trainer_id;
      if (c_.num_consumers > 0) report_.consumer_index = c_.consumer_index;
    }
    SLUICE_RETURN_IF_ERROR(HeartbeatOnce());
    heartbeat_ = std::thread([this] { HeartbeatLoop(); });
    return Status::OK();
  }

 protected:
  Result<std::optional<Element>> GetNextInternal() override {
    if (c_.num_consumers > 0) {
      StartWaiting();
      auto r = GetNextCoordinated();
      StopWaiting();
      return r;
    }
    if (c_.local_only) return GetNextLocal();
    MutexLock l(&mu_);
    if (queue_.empty()) {
      waiting_since_ = MonotonicNs();
      cv_.Wait(&mu_, [&]() REQUIRES(mu_) {
        return !queue_.empty() || !error_.ok() || Finished();
      });
      wait_ns_ += MonotonicNs() - waiting_since_;
      waiting_since_ = -1;
    }
    if (!queue_.empty()) {
      Element e = std::move(queue_.front());
      queue_.pop_front();
      ++report_.elements;
      cv_.SignalAll();
      return std::optional<Element>(std::move(e));
    }
    if (!error_.ok()) return error_;
    report_.finished = true;
    return std::optional<Element>();
  }
  // LOCAL: the consumer takes from this process's workers itself, round robin over
  // the tasks, with no fetch thread in between.
  Result<std::optional<Element>> GetNextLocal() {
    MutexLock l(&mu_);
    waiting_since_ = MonotonicNs();  // the wait is timed under the lock taken anyway
    Result<std::optional<Element>> r = GetNextLocalLocked();
    wait_ns_ += MonotonicNs() - waiting_since_;
    waiting_since_ = -1;
    return r;
  }
  Result<std::optional<Element>> GetNextLocalLocked() REQUIRES(mu_) {
    // Drops mu_ around the take and the heartbeat (the caller's MutexLock holds it again
    // on every return).
    for (int64_t retry_ms = 0;;) {
      if (!error_.ok()) return error_;
      if (Finished()) {
        report_.finished = true;
        return std::optional<Element>();
      }
      // Round robin over the open tasks, with no allocation per element (tasks_ only
      // grows while the iterator lives, so `address` stays valid unlocked).
      size_t open = 0;
      for (const auto& [id, t] : tasks_) open += !t.done && !t.lost;
      if (open == 0) {  // no local task yet: wait for the heartbeat to bring one
        cv_.WaitFor(&mu_, std::chrono::milliseconds(10));
        continue;
      }
      size_t pick = next_task_++ % open;
      int64_t task_id = 0;
      const std::string* address = nullptr;
      for (const auto& [id, t] : tasks_) {
        if (t.done || t.lost || pick-- > 0) continue;
        task_id = id;
        address = &t.info.worker_address();
        break;
      }
      mu_.Unlock();
      Element e;
      Worker::TakeResult r = Worker::TakeResult::kSkip;
      int64_t skipped = 0;
      Status s = TakeFromLocalWorker(*address, task_id, c_.trainer_id, &e, &r, &skipped);
      mu_.Lock();
      report_.skipped_elements += skipped;
      if (s.ok() && r == Worker::TakeResult::kElement) {
        ++report_.elements;
        return std::optional<Element>(std::move(e));
      }
      if (s.ok() && r == Worker::TakeResult::kEnd) tasks_[task_id].done = true;
      if (s.ok()) continue;
      if (s.code() == StatusCode::kNotFound) {
        // The worker has not heard of the job yet: it heartbeats now, on this thread,
        // and the take is retried at once; then (the dispatcher is away) with backoff.
        if (retry_ms == 0) {
          retry_ms = 1;
          mu_.Unlock();
          Status hb = HeartbeatLocalWorker(*address);
          mu_.Lock();
          if (hb.ok()) continue;
        }
        NudgeLocalWorker(*address);
        retry_ms = std::min<int64_t>(retry_ms * 2, 200);
        cv_.WaitFor(&mu_, std::chrono::milliseconds(retry_ms));
        continue;
      }
      if (s.code() != StatusCode::kUnavailable && s.code() != StatusCode::kCancelled)
        return s;
      tasks_[task_id].lost = true;  // the local worker stopped
    }
  }

  Status SaveInternal(CheckpointWriter*) const override {
    return UnimplementedError(
        "DataServiceDataset: a distributed read cannot be checkpointed");
  }
  Status RestoreInternal(const CheckpointReader&) override {
    return UnimplementedError(
        "DataServiceDataset: a distributed read cannot be checkpointed");
  }

 private:
  struct TaskState {
    TaskInfo info;
    bool done = false;
    bool lost = false;
    std::thread thread;
  };

  void SkipRound() REQUIRES(mu_) {
    if (report_.skipped_rounds.size() < 4096) report_.skipped_rounds.push_back(round_);
    ++round_;
  }

  // Coordinated reads: round round_ from task (round_ mod tasks), as every consumer does.
  Result<std::optional<Element>> GetNextCoordinated() {
    MutexLock l(&mu_);
    for (;;) {
      if (!error_.ok()) return error_;
      bool open = false;
      for (const auto& [id, t] : tasks_) open = open || (!t.done && !t.lost);
      if (!open) {
        if (tasks_.empty() && !job_finished_) {  // no task yet (no worker registered)
          cv_.WaitFor(&mu_, std::chrono::milliseconds(10));
          continue;
        }
        report_.finished = true;
        return std::optional<Element>();
      }
      auto it = tasks_.begin();
      std::advance(it, round_ % static_cast<int64_t>(tasks_.size()));
      const int64_t task = it->first;
      if (it->second.done || it->second.lost) {
        SkipRound();
        continue;
      }
      std::unique_ptr<WorkerClient>& client = round_clients_[task];
      if (!client) {
        const std::string& a = it->second.info.worker_address();
        client = IsLocalWorker(a) ? MakeLocalWorkerClient(a)
                                  : MakeGrpcWorkerClient(a, kRpcDeadlineMs, security_);
      }
      WorkerClient* worker = client.get();
      const int64_t round = round_;
      l.Unlock();
      const auto deadline =
          std::chrono::steady_clock::now() + std::chrono::milliseconds(c_.round_wait_ms);
      enum { kGot, kEnd, kFailed, kMissed } outcome = kMissed;
      Element e;
      Status failure;
      while (std::chrono::steady_clock::now() < deadline) {
        GetElementRequest req;
        req.set_task_id(task);
        req.set_client_id(client_id_);
        req.set_compression(c_.compression);
        req.set_coordinated(true);
        req.set_consumer_index(c_.consumer_index);
        req.set_round_index(round);
        GetElementResponse resp;
        Status s = worker->GetElement(req, &resp);
        if (s.ok() && resp.end_of_sequence()) {
          outcome = kEnd;
          break;
        }
        if (s.ok() && !resp.skip()) {
          Result<Element> d = DecodeResponseElement(resp);
          if (d.ok()) {
            e = std::move(*d);
            outcome = kGot;
          } else {
            failure = d.status();
            outcome = kFailed;
          }
          break;
        }
        if (!s.ok() && s.code() != StatusCode::kUnavailable &&
            s.code() != StatusCode::kDeadlineExceeded &&
            s.code() != StatusCode::kNotFound && s.code() != StatusCode::kCancelled) {
          failure = s;
          outcome = kFailed;
          break;
        }
        if (!s.ok()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      l.Lock();
      switch (outcome) {
        case kGot:
          ++round_;
          ++report_.elements;
          return std::optional<Element>(std::move(e));
        case kEnd:
          tasks_[task].done = true;
          break;
        case kFailed:
          if (error_.ok()) error_ = failure.WithContext("DataServiceDataset: round " +
                                                        std::to_string(round));
          return error_;
        case kMissed:
          SkipRound();
          break;
      }
    }
  }

  void StartWaiting() {
    MutexLock l(&mu_);
    waiting_since_ = MonotonicNs();
  }
  void StopWaiting() {
    MutexLock l(&mu_);
    wait_ns_ += MonotonicNs() - waiting_since_;
    waiting_since_ = -1;
  }

  void FillJobRequest(GetOrCreateJobRequest* jreq) const {
    jreq->set_job_name(c_.job_name);
    jreq->set_sharding_policy(c_.policy);
    jreq->set_local_consumers(c_.local_only);
    jreq->set_cross_trainer_cache(!c_.trainer_id.empty());
    jreq->set_num_consumers(c_.num_consumers);
  }

  bool Finished() const REQUIRES(mu_) {
    bool any = false;
    for (const auto& [id, t] : tasks_) {
      if (!t.done && !t.lost) return false;
      any = any || t.done;
    }
    // LOCAL reads end with the local tasks; others when the dispatcher says the job is.
    return c_.local_only ? any : job_finished_;
  }

  Status HeartbeatOnce() {
    ClientHeartbeatRequest req;
    req.set_job_id(job_id_);
    req.set_client_id(client_id_);
    {
      // The advisor's report: what this client waited and received since the last one.
      MutexLock l(&mu_);
      const int64_t now = MonotonicNs();
      if (waiting_since_ >= 0) {  // a wait in progress counts up to now
        wait_ns_ += now - waiting_since_;
        waiting_since_ = now;
      }
      req.set_wait_ns(wait_ns_);
      req.set_elements(report_.elements - reported_elements_);
      wait_ns_ = 0;
      reported_elements_ = report_.elements;
    }
    ClientHeartbeatResponse resp;
    SLUICE_RETURN_IF_ERROR(dispatcher_->ClientHeartbeat(req, &resp));
    MutexLock l(&mu_);
    for (int64_t id : resp.lost_task()) {
      auto it = tasks_.find(id);
      if (it != tasks_.end()) it->second.lost = true;
      // Coordinated reads map rounds over every task of the job, lost ones included.
      if (it == tasks_.end() && c_.num_consumers > 0) tasks_[id].lost = true;
    }
    report_.lost_tasks = resp.lost_task_size();
    report_.lost_splits = resp.lost_splits();
    for (const TaskInfo& info : resp.task()) {
      if (tasks_.count(info.task_id())) continue;
      if (c_.local_only && !IsLocalWorker(info.worker_address())) continue;
      TaskState& t = tasks_[info.task_id()];
      t.info = info;
      const int64_t id = info.task_id();
      if (!c_.local_only && c_.num_consumers == 0 && !stopping_) {
        t.thread = std::thread([this, id] { FetchLoop(id); });
      }
    }
    job_finished_ = resp.job_finished();
    // Splits remain but no worker runs a task of the job (all died, or none came):
    // wait worker_timeout_ms for one, then fail the read.
    const auto now = std::chrono::steady_clock::now();
    if (resp.task_size() > 0 || job_finished_) {
      no_worker_since_.reset();
    } else if (!no_worker_since_) {
      no_worker_since_ = now;
    } else if (now - *no_worker_since_ >
                   std::chrono::milliseconds(c_.worker_timeout_ms) &&
               error_.ok()) {
      error_ = UnavailableError(
          "DataServiceDataset: job " + std::to_string(job_id_) +
          " has had no live worker for " + std::to_string(c_.worker_timeout_ms) +
          " ms (worker_timeout_ms) while its data is not finished; " +
          std::to_string(resp.lost_task_size()) + " task(s) lost with their workers");
    }
    cv_.SignalAll();
    return Status::OK();
  }

  void HeartbeatLoop() {
    auto last_ok = std::chrono::steady_clock::now();
    int64_t wait_ms = 100;
    MutexLock l(&mu_);
    while (!stopping_) {
      // The whole interval (cv_ is signalled per element: waking on it would send a
      // heartbeat per element).
      cv_.WaitFor(&mu_, std::chrono::milliseconds(wait_ms),
                  [&]() REQUIRES(mu_) { return stopping_; });
      if (stopping_) break;
      l.Unlock();
      Status s = HeartbeatOnce();
      l.Lock();
      if (s.ok()) {
        last_ok = std::chrono::steady_clock::now();
        wait_ms = 100;
        continue;
      }
      const bool retryable = s.code() == StatusCode::kUnavailable ||
                             s.code() == StatusCode::kDeadlineExceeded;
      const auto away = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::steady_clock::now() - last_ok)
                            .count();
      if (!retryable || away > c_.dispatcher_timeout_ms) {
        if (error_.ok())
          error_ = s.WithContext("DataServiceDataset: job " + std::to_string(job_id_));
        cv_.SignalAll();
        break;
      }
      wait_ms = std::min<int64_t>(wait_ms * 2, 2000);
    }
  }

  void FetchLoop(int64_t task_id) {
    std::string address;
    {
      MutexLock l(&mu_);
      address = tasks_[task_id].info.worker_address();
    }
    const bool local = IsLocalWorker(address);
    std::unique_ptr<WorkerClient> client =
        local ? nullptr : MakeGrpcWorkerClient(address, kRpcDeadlineMs, security_);
    int64_t backoff_ms = 0, retry_ms = 0;
    MutexLock l(&mu_);
    for (;;) {
      if (backoff_ms > 0) cv_.WaitFor(&mu_, std::chrono::milliseconds(backoff_ms));
      cv_.Wait(&mu_, [&]() REQUIRES(mu_) {
        return stopping_ || tasks_[task_id].lost ||
               (static_cast<int64_t>(queue_.size()) + in_flight_ < c_.buffer_elements &&
                in_flight_ < c_.max_outstanding);
      });
      if (stopping_ || tasks_[task_id].lost) return;
      ++in_flight_;
      l.Unlock();
      Element e;
      Worker::TakeResult r = Worker::TakeResult::kSkip;
      Status s;
      int64_t skipped = 0;
      if (local) {
        s = TakeFromLocalWorker(address, task_id, c_.trainer_id, &e, &r, &skipped);
      } else {
        GetElementRequest req;
        req.set_task_id(task_id);
        req.set_client_id(client_id_);
        req.set_compression(c_.compression);
        req.set_trainer_id(c_.trainer_id);
        GetElementResponse resp;
        s = client->GetElement(req, &resp);
        if (s.ok()) skipped = resp.skipped_elements();
        if (s.ok()) {
          if (resp.end_of_sequence()) {
            r = Worker::TakeResult::kEnd;
          } else if (!resp.skip()) {
            Result<Element> decoded = DecodeResponseElement(resp);
            if (decoded.ok()) {
              e = std::move(*decoded);
              r = Worker::TakeResult::kElement;
            } else {
              s = decoded.status().WithContext("worker " + address);
            }
          }
        }
      }
      l.Lock();
      report_.skipped_elements += skipped;
      --in_flight_;
      cv_.SignalAll();
      backoff_ms = 0;
      if (s.ok()) {
        retry_ms = 0;
        if (r == Worker::TakeResult::kElement) queue_.push_back(std::move(e));
        if (r == Worker::TakeResult::kEnd) {
          tasks_[task_id].done = true;
          return;
        }
        continue;
      }
      // A worker that is away (dead or restarting) or does not know the task yet: try
      // again later; the dispatcher's heartbeat says when the task is lost.
      if (s.code() == StatusCode::kUnavailable ||
          s.code() == StatusCode::kDeadlineExceeded ||
          s.code() == StatusCode::kNotFound || s.code() == StatusCode::kCancelled) {
        if (local && s.code() == StatusCode::kNotFound) NudgeLocalWorker(address);
        retry_ms = retry_ms == 0 ? 2 : std::min<int64_t>(retry_ms * 2, 500);
        backoff_ms = retry_ms;
        continue;
      }
      if (error_.ok()) error_ = s;
      return;
    }
  }

  const ClientConfig& c_;
  Security security_;  // set by Initialize, before any thread starts
  std::atomic<int64_t>* const dataset_id_;
  std::shared_ptr<DispatcherClient> dispatcher_;
  std::optional<std::chrono::steady_clock::time_point> no_worker_since_ GUARDED_BY(mu_);
  int64_t job_id_ = 0, client_id_ = 0;
  std::thread heartbeat_;
  Mutex mu_;
  CondVar cv_;
  std::map<int64_t, TaskState> tasks_ GUARDED_BY(mu_);
  std::deque<Element> queue_ GUARDED_BY(mu_);
  int64_t in_flight_ GUARDED_BY(mu_) = 0;
  size_t next_task_ GUARDED_BY(mu_) = 0;
  bool job_finished_ GUARDED_BY(mu_) = false;
  int64_t wait_ns_ GUARDED_BY(mu_) = 0;  // waited for elements since the last heartbeat
  int64_t reported_elements_ GUARDED_BY(mu_) = 0;
  int64_t waiting_since_ GUARDED_BY(mu_) = -1;
  int64_t round_ GUARDED_BY(mu_) = 0;  // coordinated reads: the next round
  std::map<int64_t, std::unique_ptr<WorkerClient>> round_clients_ GUARDED_BY(mu_);  // the consumer waits since (ns), or -1
  bool stopping_ GUARDED_BY(mu_) = false;
  Status error_ GUARDED_BY(mu_);
  JobReport report_ GUARDED_BY(mu_);
};

Result<IteratorPtr> DataServiceDataset::MakeIteratorInternal(
    const IteratorContext&, const std::string& prefix) const {
  return IteratorPtr(new DataServiceIterator(this, prefix));
}

Result<ElementCompression> CompressionFrom(std::string_view name, bool local) {
  std::string n(name);
  for (char& ch : n) ch = static_cast<char>(toupper(static_cast<unsigned char>(ch)));
  if (n == "AUTO") return local ? COMPRESSION_NONE : COMPRESSION_LZ4;
  if (n == "NONE" || n.empty()) return COMPRESSION_NONE;
  if (n == "ZSTD") return COMPRESSION_ZSTD;
  if (n == "LZ4") return COMPRESSION_LZ4;
  return InvalidArgumentError("distribute: compression '" + std::string(name) +
                              "' is not AUTO, NONE, ZSTD or LZ4");
}

void RegisterDataServiceOp(Registry* r) {
  r->RegisterOp(
      OpDef(kOp)
          .Summary("Reads a pipeline's elements from the service "
                   "(sluice::service::Distribute).")
          .Inputs(0)
          .Attr("service", AttrType::kString, "The dispatcher, host:port.")
          .Attr("graph", AttrType::kString, "The distributed pipeline (GraphDef, JSON).")
          .Attr("job_name", AttrType::kString, std::string(),
                "Clients naming a job share it.")
          .Attr("processing_mode", AttrType::kInt, int64_t{1}, "The sharding policy.")
          .Attr("compression", AttrType::kInt, int64_t{0}, "Element compression.")
          .Attr("local_only", AttrType::kBool, false, "Read only this process's workers.")
          .Attr("max_outstanding_requests", AttrType::kInt, int64_t{1},
                "Requests in flight.")
          .Attr("buffer_elements", AttrType::kInt, int64_t{64}, "Elements fetched ahead.")
          .Attr("dispatcher_timeout_ms", AttrType::kInt, int64_t{120000},
                "How long an unreachable dispatcher is waited for.")
          .Attr("worker_timeout_ms", AttrType::kInt, int64_t{60000},
                "How long a job with work left and no live worker is waited for.")
          .Attr("auth_token_file", AttrType::kString, std::string(),
                "A file holding the service's token.")
          .Attr("tls_cert", AttrType::kString, std::string(), "Client certificate (PEM).")
          .Attr("tls_key", AttrType::kString, std::string(), "Its key (PEM).")
          .Attr("tls_ca", AttrType::kString, std::string(), "The servers' CA (PEM).")
          .Attr("num_consumers", AttrType::kInt, int64_t{0},
                "Coordinated reads: consumers per round (0: off).")
          .Attr("consumer_index", AttrType::kInt, int64_t{0},
                "Coordinated reads: this consumer's index.")
          .Attr("round_wait_ms", AttrType::kInt, int64_t{2000},
                "Coordinated reads: how long a round's worker is waited for.")
          .Attr("trainer_id", AttrType::kString, std::string(),
                "Cross-trainer cache: this trainer's id (\"\": no cache).")
          .Traits({.source = true, .seed_mix = SeedMix::kNone}),
      [](OpArgs args) -> Result<DatasetPtr> {
        ClientConfig c;
        SLUICE_ASSIGN_OR_RETURN(c.dispatcher,
                                GetAttr<std::string>(args.attrs, kOp, "service"));
        SLUICE_ASSIGN_OR_RETURN(std::string json,
                                GetAttr<std::string>(args.attrs, kOp, "graph"));
        SLUICE_ASSIGN_OR_RETURN(c.job_name,
                                GetAttrOr<std::string>(args.attrs, kOp, "job_name", ""));
        SLUICE_ASSIGN_OR_RETURN(
            int64_t mode, GetAttrOr<int64_t>(args.attrs, kOp, "processing_mode", 1));
        SLUICE_ASSIGN_OR_RETURN(int64_t comp,
                                GetAttrOr<int64_t>(args.attrs, kOp, "compression", 0));
        SLUICE_ASSIGN_OR_RETURN(c.local_only,
                                GetAttrOr<bool>(args.attrs, kOp, "local_only", false));
        SLUICE_ASSIGN_OR_RETURN(
            c.max_outstanding,
            GetAttrOr<int64_t>(args.attrs, kOp, "max_outstanding_requests", 1));
        SLUICE_ASSIGN_OR_RETURN(
            c.buffer_elements,
            GetAttrOr<int64_t>(args.attrs, kOp, "buffer_elements", 64));
        SLUICE_ASSIGN_OR_RETURN(
            c.dispatcher_timeout_ms,
            GetAttrOr<int64_t>(args.attrs, kOp, "dispatcher_timeout_ms", 120000));
        SLUICE_ASSIGN_OR_RETURN(
            c.worker_timeout_ms,
            GetAttrOr<int64_t>(args.attrs, kOp, "worker_timeout_ms", 60000));
        SLUICE_ASSIGN_OR_RETURN(
            c.security.auth_token_file,
            GetAttrOr<std::string>(args.attrs, kOp, "auth_token_file", ""));
        SLUICE_ASSIGN_OR_RETURN(c.security.tls_cert,
                                GetAttrOr<std::string>(args.attrs, kOp, "tls_cert", ""));
        SLUICE_ASSIGN_OR_RETURN(c.security.tls_key,
                                GetAttrOr<std::string>(args.attrs, kOp, "tls_key", ""));
        SLUICE_ASSIGN_OR_RETURN(c.security.tls_ca,
                                GetAttrOr<std::string>(args.attrs, kOp, "tls_ca", ""));
        if (c.worker_timeout_ms < 1) {
          return InvalidArgumentError(
              "DataServiceDataset: worker_timeout_ms must be >= 1");
        }
        SLUICE_ASSIGN_OR_RETURN(
            c.trainer_id, GetAttrOr<std::string>(args.attrs, kOp, "trainer_id", ""));
        SLUICE_ASSIGN_OR_RETURN(c.num_consumers,
                                GetAttrOr<int64_t>(args.attrs, kOp, "num_consumers", 0));
        SLUICE_ASSIGN_OR_RETURN(c.consumer_index,
                                GetAttrOr<int64_t>(args.attrs, kOp, "consumer_index", 0));
        SLUICE_ASSIGN_OR_RETURN(c.round_wait_ms,
                                GetAttrOr<int64_t>(args.attrs, kOp, "round_wait_ms", 2000));
        if (c.num_consumers < 0 || c.num_consumers > 1024 || c.consumer_index < 0 ||
            (c.num_consumers > 0 && c.consumer_index >= c.num_consumers) ||
            c.round_wait_ms < 1) {
          return InvalidArgumentError(
              "DataServiceDataset: bad num_consumers, consumer_index or round_wait_ms");
        }
        if (!ProcessingMode_IsValid(static_cast<int>(mode)) ||
            !ElementCompression_IsValid(static_cast<int>(comp))) {
          return InvalidArgumentError(
              "DataServiceDataset: bad processing_mode or compression");
        }
        if (c.max_outstanding < 1 || c.buffer_elements < 1) {
          return InvalidArgumentError(
              "DataServiceDataset: max_outstanding_requests and buffer_elements must be "
              ">= 1");
        }
        c.policy = static_cast<ProcessingMode>(mode);
        c.compression = static_cast<ElementCompression>(comp);
        SLUICE_ASSIGN_OR_RETURN(Dataset inner,
                                DeserializeDataset(json, GraphFormat::kJson));
        SLUICE_ASSIGN_OR_RETURN(c.graph, SerializeDataset(inner, GraphFormat::kBinary));
        SLUICE_ASSIGN_OR_RETURN(c.fingerprint, DatasetFingerprint(inner));
        ElementSpec spec = inner.element_spec();
        return DatasetPtr(std::make_shared<DataServiceDataset>(
            std::move(args), std::move(spec), std::move(c)));
      });
}

}  // namespace

Result<ShardingPolicy> ShardingPolicyFromName(std::string_view name) {
  std::string n(name);
  for (char& ch : n) ch = static_cast<char>(toupper(static_cast<unsigned char>(ch)));
  if (n == "OFF") return ShardingPolicy::kOff;
  if (n == "DYNAMIC") return ShardingPolicy::kDynamic;
  if (n == "FILE") return ShardingPolicy::kFile;
  if (n == "DATA") return ShardingPolicy::kData;
  if (n == "FILE_OR_DATA") return ShardingPolicy::kFileOrData;
  if (n == "HINT") return ShardingPolicy::kHint;
  return InvalidArgumentError("unknown sharding policy '" + std::string(name) +
                              "' (OFF, DYNAMIC, FILE, DATA, FILE_OR_DATA, HINT)");
}

std::string_view ShardingPolicyName(ShardingPolicy p) {
  switch (p) {
    case ShardingPolicy::kOff:
      return "OFF";
    case ShardingPolicy::kDynamic:
      return "DYNAMIC";
    case ShardingPolicy::kFile:
      return "FILE";
    case ShardingPolicy::kData:
      return "DATA";
    case ShardingPolicy::kFileOrData:
      return "FILE_OR_DATA";
    case ShardingPolicy::kHint:
      return "HINT";
  }
  return "?";
}

std::vector<JobReport> JobReports() {
  MutexLock l(&reports_mu);
  return Reports();
}

Dataset Distribute(const Dataset& dataset, const DistributeOptions& o) {
  if (!dataset.ok()) return dataset;
  // Refused before anything is sent: a local callable cannot run on a worker.
  Result<std::string> json = SerializeDataset(dataset, GraphFormat::kJson);
  if (!json.ok()) return Dataset(json.status().WithContext("distribute"));
  if (o.consumer_index.has_value() != o.num_consumers.has_value()) {
    return Dataset(InvalidArgumentError(
        "distribute: consumer_index and num_consumers go together (coordinated reads)"));
  }
  if (o.num_consumers) {
    if (*o.num_consumers < 1 || *o.num_consumers > 1024 || *o.consumer_index < 0 ||
        *o.consumer_index >= *o.num_consumers) {
      return Dataset(InvalidArgumentError(
          "distribute: coordinated reads need 1 <= num_consumers <= 1024 and 0 <= "
          "consumer_index < num_consumers, not " +
          std::to_string(*o.consumer_index) + " of " + std::to_string(*o.num_consumers)));
    }
    if (o.job_name.empty() || o.cross_trainer_cache || o.round_wait_ms < 1) {
      return Dataset(InvalidArgumentError(
          "distribute: coordinated reads need a job_name and a positive round_wait_ms, "
          "and no cross_trainer_cache"));
    }
  }
  Result<std::string> address = ParseServiceAddress(o.service);
  if (!address.ok()) return Dataset(address.status().WithContext("distribute"));
  std::string target = o.target_workers;
  for (char& ch : target) ch = static_cast<char>(toupper(static_cast<unsigned char>(ch)));
  if (target != "AUTO" && target != "ANY" && target != "LOCAL") {
    return Dataset(InvalidArgumentError("distribute: target_workers '" +
                                        o.target_workers +
                                        "' is not AUTO, ANY or LOCAL"));
  }
  const bool local = target == "LOCAL";
  if (local && o.num_consumers) {
    return Dataset(InvalidArgumentError(
        "distribute: coordinated reads do not read LOCAL workers only"));
  }
  if (o.cross_trainer_cache) {
    if (o.cross_trainer_cache->trainer_id.empty()) {
      return Dataset(InvalidArgumentError(
          "distribute: cross_trainer_cache needs a non-empty trainer_id"));
    }
    if (o.job_name.empty()) {
      return Dataset(InvalidArgumentError(
          "distribute: cross_trainer_cache needs a job_name (the trainers share the job)"));
    }
  }
  Result<ElementCompression> comp = CompressionFrom(o.compression, local);
  if (!comp.ok()) return Dataset(comp.status());
  static std::once_flag once;
  std::call_once(once, [] { RegisterDataServiceOp(&Registry::Global()); });
  int proto_mode = DYNAMIC;
  switch (o.processing_mode) {
    case service::ShardingPolicy::kOff:
      proto_mode = OFF;
      break;
    case service::ShardingPolicy::kDynamic:
      proto_mode = DYNAMIC;
      break;
    case service::ShardingPolicy::kFile:
      proto_mode = FILE;
      break;
    case service::ShardingPolicy::kData:
      proto_mode = DATA;
      break;
    case service::ShardingPolicy::kFileOrData:
      proto_mode = FILE_OR_DATA;
      break;
    case service::ShardingPolicy::kHint:
      proto_mode = HINT;
      break;
  }
  AttrMap attrs;
  attrs["service"] = *address;
  attrs["graph"] = *json;
  attrs["job_name"] = o.job_name;
  attrs["processing_mode"] = int64_t{proto_mode};
  attrs["compression"] = int64_t{*comp};
  attrs["local_only"] = local;
  attrs["max_outstanding_requests"] =
      o.max_outstanding_requests > 0 ? o.max_outstanding_requests : int64_t{16};
  attrs["buffer_elements"] = o.buffer_elements;
  attrs["dispatcher_timeout_ms"] = o.dispatcher_timeout_ms;
  attrs["worker_timeout_ms"] = o.worker_timeout_ms;
  // File names only: the secrets stay in their files, out of the graph.
  attrs["auth_token_file"] = o.security.auth_token_file;
  attrs["tls_cert"] = o.security.tls_cert;
  attrs["tls_key"] = o.security.tls_key;
  attrs["tls_ca"] = o.security.tls_ca;
  if (o.cross_trainer_cache) attrs["trainer_id"] = o.cross_trainer_cache->trainer_id;
  if (o.num_consumers) {
    attrs["num_consumers"] = *o.num_consumers;
    attrs["consumer_index"] = *o.consumer_index;
    attrs["round_wait_ms"] = o.round_wait_ms;
  }
  // The client buffers what it fetches: a prefetch on top would only add a hand-off
  // (the pipeline's own options travel in the graph and apply on the workers).
  Options options = dataset.options();
  if (!options.optimization.passes.count("inject_prefetch")) {
    options.optimization.Set("inject_prefetch", false);
  }
  return Dataset::FromOp(kOp, std::move(attrs)).WithOptions(options);
}

}  // namespace sluice::service
