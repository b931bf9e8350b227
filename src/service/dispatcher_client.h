// How workers and clients reach the dispatcher: an interface with one method per RPC, so
// the logic above it runs against the gRPC stub (grpc_transport.h) or, in tests and
// in-process setups, against a Dispatcher object directly.
//
// Thread-safety: implementations are thread-safe.
#ifndef SLUICE_SERVICE_DISPATCHER_CLIENT_H_
#define SLUICE_SERVICE_DISPATCHER_CLIENT_H_

#include <memory>

#include "service/dispatcher.h"
#include "service/proto/service.pb.h"
#include "sluice/status.h"

namespace sluice::service {

class DispatcherClient {
 public:
  virtual ~DispatcherClient() = default;
  virtual Status GetOrRegisterDataset(const GetOrRegisterDatasetRequest& req,
                                      GetOrRegisterDatasetResponse* resp) = 0;
  virtual Status GetOrCreateJob(const GetOrCreateJobRequest& req,
                                GetOrCreateJobResponse* resp) = 0;
  virtual Status ClientHeartbeat(const ClientHeartbeatRequest& req,
                                 ClientHeartbeatResponse* resp) = 0;
  virtual Status ReleaseJobClient(const ReleaseJobClientRequest& req,
                                  ReleaseJobClientResponse* resp) = 0;
  virtual Status WorkerHeartbeat(const WorkerHeartbeatRequest& req,
                                 WorkerHeartbeatResponse* resp) = 0;
  virtual Status GetSplits(const GetSplitsRequest& req, GetSplitsResponse* resp) = 0;
};

// Calls a Dispatcher in this process (not owned; it must outlive the client).
class InProcessDispatcherClient : public DispatcherClient {
 public:
  explicit InProcessDispatcherClient(Dispatcher* d) : d_(d) {}
  Status GetOrRegisterDataset(const GetOrRegisterDatasetRequest& req,
                              GetOrRegisterDatasetResponse* resp) override {
    return d_->GetOrRegisterDataset(req, resp);
  }
  Status GetOrCreateJob(const GetOrCreateJobRequest& req,
                        GetOrCreateJobResponse* resp) override {
    return d_->GetOrCreateJob(req, resp);
  }
  Status ClientHeartbeat(const ClientHeartbeatRequest& req,
                         ClientHeartbeatResponse* resp) override {
    return d_->ClientHeartbeat(req, resp);
  }
  Status ReleaseJobClient(const ReleaseJobClientRequest& req,
                          ReleaseJobClientResponse* resp) override {
    return d_->ReleaseJobClient(req, resp);
  }
  Status WorkerHeartbeat(const WorkerHeartbeatRequest& req,
                         WorkerHeartbeatResponse* resp) override {
    return d_->WorkerHeartbeat(req, resp);
  }
  Status GetSplits(const GetSplitsRequest& req, GetSplitsResponse* resp) override {
    return d_->GetSplits(req, resp);
  }

 private:
  Dispatcher* d_;
};

// Retries `call` while it fails with Unavailable or DeadlineExceeded (the dispatcher is
// restarting), backing off from 50 ms to 2 s, for at most `budget_ms` in all; then the
// last error. Other errors return at once.
Status RetryUnavailable(int64_t budget_ms, const std::function<Status()>& call);

}  // namespace sluice::service

#endif  // SLUICE_SERVICE_DISPATCHER_CLIENT_H_
