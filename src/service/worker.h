// A worker's transport-free logic (tf.data service's DataServiceWorkerImpl): it
// heartbeats the dispatcher, runs the tasks it is given with the local runtime (static
// rewrites, autotuning, its own CPU and RAM budgets), buffers each task's elements and
// serves them one GetElement at a time, to any client of the task's job.
//
// Stateless: everything it holds is tasks' progress. When the dispatcher is unreachable
// (restarting), heartbeats and split requests retry with backoff and the tasks keep
// running from their buffers; the next successful heartbeat reports the tasks the worker
// runs, and a dispatcher that replayed its journal knows them, so nothing restarts. A
// task the dispatcher no longer knows (its job released, the worker timed out) is
// dropped.
//
// Tasks of coordinated-reads jobs (num_consumers = m) serve rounds: round r is m batches
// of the same bucket (the same shape past the batch dimension, as bucket_by_sequence_
// length makes with pad_to_bucket_boundary), one per consumer index. Batches wait in
// per-bucket queues until a bucket has m; at most kMaxWaitingBatches wait, then the task
// fails (ResourceExhausted: too many distinct shapes). What is left at the end, fewer
// than m of a bucket, is not served.
//
// Tasks of jobs whose consumers are all in this process (target_workers="LOCAL") run
// direct: no producing thread and no task buffer; Take pulls the pipeline on the
// consumer's thread (the pipeline's own prefetch is the buffer), which saves a thread
// hand-off per element; the first Take builds the pipeline there too.
//
// DYNAMIC tasks read their source's splits from leases of Config::lease_splits splits
// (one GetSplits RPC per lease); FILE tasks read files worker_index, worker_index +
// num_workers, ...; DATA tasks keep elements worker_index, worker_index + num_workers,
// ... (Shard at the end of the pipeline); OFF tasks read everything.
//
// Thread-safety: every public method is thread-safe.
#ifndef SLUICE_SERVICE_WORKER_H_
#define SLUICE_SERVICE_WORKER_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "core/mutex.h"
#include "service/cross_trainer_cache.h"
#include "service/dispatcher_client.h"
#include "service/proto/service.pb.h"
#include "sluice/dataset.h"
#include "sluice/element.h"
#include "sluice/status.h"

namespace sluice::service {

struct WorkerConfig {
  std::string address;  // how clients reach this worker ("host:port"), its identity
  int64_t heartbeat_interval_ms = 200;
  int64_t cpu_budget = 0;                // 0: the machine's cores (Options::autotune)
  int64_t ram_budget = 0;                // 0: the runtime's default
  int64_t buffer_elements = 64;          // per task, elements ready to serve
  int64_t lease_splits = 64;             // DYNAMIC: splits asked for per GetSplits
  int64_t dispatcher_retry_ms = 120000;  // how long a split request retries
  int64_t get_element_wait_ms = 50;      // how long GetElement waits for an element
  // Every task's file confinement (Options::files), replacing the roots its graph names;
  // the graph is also rebuilt inside them. Both empty: unconfined.
  std::vector<std::string> data_roots;
  std::vector<std::string> write_roots;
  // Cross-trainer-cache jobs: bytes each task's sliding window holds at most.
  int64_t cross_trainer_cache_bytes = int64_t{256} << 20;
};

class Worker {
 public:
  // `dispatcher` is shared with the heartbeat and task threads.
  Worker(WorkerConfig config, std::shared_ptr<DispatcherClient> dispatcher);
  ~Worker();  // Stop()

  // Starts heartbeating (the first heartbeat registers). Returns after the first one
  // succeeded, or its error.
  Status Start();
  // Stops heartbeats and tasks; GetElement then answers Cancelled.
  void Stop();

  // One element of a task, end_of_sequence once the task has served all, or skip when
  // none is ready within get_element_wait_ms. NotFound for a task this worker does not
  // run; the task's pipeline error when it failed.
  Status GetElement(const GetElementRequest& req, GetElementResponse* resp);
  // The same without coding, for clients in this process (target_workers="LOCAL").
  enum class TakeResult { kElement, kEnd, kSkip };
  Status Take(int64_t task_id, Element* element, TakeResult* result);
  // The same for a trainer of a cross-trainer-cache job: reads the task's cache at the
  // trainer's cursor; `skipped` (may be null) gets the evicted elements it jumped over.
  Status Take(int64_t task_id, const std::string& trainer_id, Element* element,
              TakeResult* result, int64_t* skipped);

  // Heartbeats now instead of at the next interval (a local client found no task: the
  // worker may not have heard of a new job yet).
  void Nudge();
  // Heartbeats now, on the caller's thread, and returns once the worker runs every task
  // the dispatcher assigned it (a local client whose task the worker has not heard of
  // yet: no wait for the heartbeat loop). Heartbeats never overlap.
  Status HeartbeatNow() { return Heartbeat(); }

  // What the worker's /metrics exports (docs/service.md, "Metrics and logs").
  struct JobServed {
    int64_t elements = 0;    // elements taken by clients
    int64_t bytes = 0;       // their in-memory size (ElementBytes)
    int64_t wire_bytes = 0;  // what GetElement sent (coded, maybe compressed)
  };
  struct Stats {
    std::map<int64_t, JobServed> served;  // by job id, since the worker started
    int64_t tasks = 0;
    int64_t buffered_elements = 0;  // ready to serve, all tasks
    int64_t buffered_bytes = 0;
    int64_t task_errors = 0;  // tasks whose pipeline failed
    int64_t skips = 0;        // requests answered "nothing ready yet"
    int64_t split_rpcs = 0;
    double client_wait_seconds = 0;  // time requests waited for an element
  };
  Stats GetStats() const;

  // Counters.
  int64_t num_tasks() const;
  int64_t split_rpcs() const { return split_rpcs_.load(); }
  int64_t heartbeats() const { return heartbeats_.load(); }
  // Cross-trainer caches: evicted elements trainers jumped over, over all tasks.
  int64_t cache_skipped_elements() const { return cache_skipped_.load(); }

 private:
  struct Task;
  // What a job was served, counted without a lock (relaxed atomics): every task of the
  // job holds its counters, so taking an element costs no map lookup.
  struct JobCounters {
    std::atomic<int64_t> elements{0}, bytes{0}, wire_bytes{0};
  };
  std::shared_ptr<JobCounters> CountersFor(int64_t job_id);
  static void CountWireBytes(JobCounters* served, const GetElementResponse& resp);
  // GetElement's answer for a taken element (coded, compressed, counted) or end/skip.
  Status Respond(JobCounters* served, const Element& e, TakeResult r,
                 ElementCompression compression, GetElementResponse* resp);
  Status Heartbeat();
  void HeartbeatLoop();
  // A buffered task's producing thread.
  void RunTask(std::shared_ptr<Task> task);
  // The task's pipeline, with its split provider or shard.
  Result<std::unique_ptr<Iterator>> MakeTaskIterator(Task* t);
  // Records the task's error (counted, logged, given to its takers).
  void FailTask(Task* t, const Status& s);
  Result<std::shared_ptr<Task>> FindTask(int64_t task_id);
  // The task's next element from its buffer (or its iterator, direct), cache or not.
  Status TakeRaw(Task* t, Element* element, TakeResult* result);
  static CrossTrainerCache::Outcome Outcome(TakeResult r);
  // A cache read as Take's (resp null) or GetElement's (resp set) answer.
  Status FromCache(const CrossTrainerCache::Read& read, Element* element,
                   GetElementResponse* resp, ElementCompression compression,
                   TakeResult* result, int64_t* skipped);
  // Coordinated reads: consumer `consumer` of round `round`. The first request for a
  // round forms it from num_consumers batches of one bucket (their shape past the batch
  // dimension); each consumer takes its own; the round is dropped when all took theirs.
  Status TakeRound(Task* t, int64_t consumer, int64_t round, Element* element,
                   TakeResult* result);
  // Take for a direct task: pulls its iterator on the caller's thread (the first take
  // builds it there).
  Status TakeDirect(Task* t, Element* element, TakeResult* result);
  // The task's dataset, rebuilt once per dataset id (so its optimized graph is too, as
  // for a local pipeline's epochs).
  Result<Dataset> CachedDataset(const TaskDef& def);

  const WorkerConfig config_;
  const std::shared_ptr<DispatcherClient> dispatcher_;
  mutable Mutex mu_;
  CondVar cv_;
  std::map<int64_t, std::shared_ptr<Task>> tasks_ GUARDED_BY(mu_);
  std::vector<int64_t> finished_unreported_ GUARDED_BY(mu_);
  std::map<int64_t, Dataset> datasets_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  bool nudged_ GUARDED_BY(mu_) = false;
  std::thread heartbeat_thread_;
  Mutex heartbeat_mu_;  // held through a heartbeat, before mu_
  int64_t cores_ GUARDED_BY(heartbeat_mu_) = 0;
  int64_t cores_read_ns_ GUARDED_BY(heartbeat_mu_) = -1;
  std::atomic<int64_t> split_rpcs_{0};
  std::atomic<int64_t> heartbeats_{0};
  std::atomic<int64_t> task_errors_{0};
  std::atomic<int64_t> skips_{0};
  std::atomic<int64_t> wait_ns_{0};
  mutable Mutex stats_mu_;  // after mu_ and Task::mu when nested
  std::map<int64_t, std::shared_ptr<JobCounters>> served_ GUARDED_BY(stats_mu_);
  std::atomic<int64_t> cache_skipped_{0};
  // The advisor's report: elements produced (all tasks), and what was last reported.
  std::atomic<int64_t> produced_{0};
  int64_t reported_produced_ GUARDED_BY(mu_) = 0;
  int64_t reported_cpu_ns_ GUARDED_BY(mu_) = -1;
};

}  // namespace sluice::service

#endif  // SLUICE_SERVICE_WORKER_H_
