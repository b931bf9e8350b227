// The dispatcher's transport-free logic (tf.data service's DataServiceDispatcherImpl):
// one method per RPC, request in, response out. The gRPC shim (grpc_servers.h) only
// converts Status; tests call these methods directly.
//
// Every state change is an Update appended to the journal (fsynced) and then applied to
// the DispatcherState before the method returns, so an acknowledged change survives a
// crash. Start() replays the journal (dropping a torn tail) before serving.
//
// Liveness: workers and clients that have not sent a heartbeat for
// Config::worker_timeout_ms / client_timeout_ms are removed by Tick() (called by the
// server's housekeeping thread): a removed worker's unfinished tasks are lost (their
// leased splits count as lost), a removed client leaves its job, and a job whose clients
// all left is released. After a restart every known worker and client starts a fresh
// timeout.
//
// Thread-safety: every public method is thread-safe.
#ifndef SLUICE_SERVICE_DISPATCHER_H_
#define SLUICE_SERVICE_DISPATCHER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "core/mutex.h"
#include "service/advisor.h"
#include "service/dispatcher_state.h"
#include "service/journal.h"
#include "service/proto/service.pb.h"
#include "sluice/status.h"

namespace sluice::service {

// Largest DYNAMIC lease (splits per GetSplits answer).
inline constexpr int64_t kMaxLeaseSplits = 1 << 20;
// Most consumers of a coordinated-reads job.
inline constexpr int64_t kMaxConsumers = 1024;
// Largest graph a client may register.
inline constexpr int64_t kMaxGraphBytes = 64 << 20;

struct DispatcherConfig {
  std::string work_dir;  // holds the journal; "" keeps no journal (tests only)
  int64_t worker_timeout_ms = 10000;
  int64_t client_timeout_ms = 60000;
  int64_t default_lease_splits = 64;  // when the worker asks for 0
  // Milliseconds on a monotonic clock; tests inject their own.
  std::function<int64_t()> clock;
};

class Dispatcher {
 public:
  explicit Dispatcher(DispatcherConfig config);

  // Opens (and replays) the journal. Must be called once before anything else.
  Status Start();

  Status GetOrRegisterDataset(const GetOrRegisterDatasetRequest& req,
                              GetOrRegisterDatasetResponse* resp);
  Status GetOrCreateJob(const GetOrCreateJobRequest& req, GetOrCreateJobResponse* resp);
  Status ClientHeartbeat(const ClientHeartbeatRequest& req,
                         ClientHeartbeatResponse* resp);
  Status ReleaseJobClient(const ReleaseJobClientRequest& req,
                          ReleaseJobClientResponse* resp);
  Status WorkerHeartbeat(const WorkerHeartbeatRequest& req,
                         WorkerHeartbeatResponse* resp);
  Status GetSplits(const GetSplitsRequest& req, GetSplitsResponse* resp);

  // Removes workers and clients past their timeouts.
  Status Tick();

  // The worker-count advisor's estimate from the heartbeats' reports (advisor.h).
  WorkerAdvice Advice() const;

  // Counters (tests, benchmarks, logs).
  int64_t updates_replayed() const { return updates_replayed_; }
  int64_t journal_dropped_bytes() const { return journal_dropped_bytes_; }
  int64_t split_rpcs() const;
  // A copy of the state (tests).
  DispatcherState StateForTest() const;
  // Runs `f` on the state under the dispatcher's lock (metrics; `f` must not call back).
  void VisitState(const std::function<void(const DispatcherState&)>& f) const;

 private:
  Status Commit(const Update& u) REQUIRES(mu_);
  Status CreateTasksForWorker(const std::string& address) REQUIRES(mu_);
  Status CreateTasksForJob(const DispatcherState::Job& job) REQUIRES(mu_);
  bool WantsTaskOnNewWorker(const DispatcherState::Job& job) const REQUIRES(mu_);
  bool HasLiveWorker() const REQUIRES(mu_);
  int64_t Now() const { return config_.clock(); }

  const DispatcherConfig config_;
  mutable Mutex mu_;
  DispatcherState state_ GUARDED_BY(mu_);
  std::optional<Journal> journal_ GUARDED_BY(mu_);
  bool started_ GUARDED_BY(mu_) = false;
  std::map<std::string, int64_t> worker_seen_ GUARDED_BY(mu_);  // address -> ms
  std::map<int64_t, std::pair<int64_t, int64_t>> client_seen_
      GUARDED_BY(mu_);  // client -> (job, ms)
  int64_t split_rpcs_ GUARDED_BY(mu_) = 0;
  WorkerCountAdvisor advisor_ GUARDED_BY(mu_);
  int64_t updates_replayed_ = 0;
  int64_t journal_dropped_bytes_ = 0;
};

}  // namespace sluice::service

#endif  // SLUICE_SERVICE_DISPATCHER_H_
