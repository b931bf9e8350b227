// The thin gRPC layer: servers that hand each RPC to the transport-free Dispatcher and
// Worker, and stubs that implement DispatcherClient and fetch elements from workers.
// sluice Status codes are gRPC's, so errors cross unchanged.
//
// Every RPC has a deadline (kRpcDeadlineMs unless stated); servers accept messages up to
// kMaxRequestBytes and clients up to kMaxResponseBytes.
//
// Thread-safety: all classes are thread-safe.
#ifndef SLUICE_SERVICE_GRPC_TRANSPORT_H_
#define SLUICE_SERVICE_GRPC_TRANSPORT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/mutex.h"
#include "service/dispatcher.h"
#include "service/dispatcher_client.h"
#include "service/security.h"
#include "service/worker.h"

namespace grpc {
class Server;
class Channel;
}  // namespace grpc

namespace sluice::service {

class RpcCounters;

inline constexpr int64_t kRpcDeadlineMs = 10000;
inline constexpr int kMaxRequestBytes = 80 << 20;  // a 64 MiB graph and the envelope
inline constexpr int kMaxResponseBytes = (1 << 30) + (16 << 20);

// "grpc://host:port" or "host:port" -> "host:port"; InvalidArgument otherwise.
Result<std::string> ParseServiceAddress(std::string_view address);

// A client of the dispatcher at `address` ("host:port") that skips the network when a
// GrpcDispatcherServer in this process listens there: while one is registered at that
// address (it and this client both without a token or TLS), each call goes straight to
// its Dispatcher, through the same request bounds and RPC counters as the gRPC method;
// otherwise (none here, or it stopped) the call goes over gRPC with `security`. A LOCAL
// job's client and a WorkServer beside their dispatcher save a round trip per call.
std::shared_ptr<DispatcherClient> MakeDispatcherClient(const std::string& address,
                                                       int64_t deadline_ms,
                                                       const Security& security);
// Calls such clients made straight to a dispatcher in this process, since it started.
int64_t InProcessDispatcherCalls();

class GrpcDispatcherClient : public DispatcherClient {
 public:
  // Sends security's token on every call and, with TLS, presents its certificate.
  explicit GrpcDispatcherClient(const std::string& address,
                                int64_t deadline_ms = kRpcDeadlineMs,
                                const Security& security = Security());
  ~GrpcDispatcherClient() override;
  Status GetOrRegisterDataset(const GetOrRegisterDatasetRequest& req,
                              GetOrRegisterDatasetResponse* resp) override;
  Status GetOrCreateJob(const GetOrCreateJobRequest& req,
                        GetOrCreateJobResponse* resp) override;
  Status ClientHeartbeat(const ClientHeartbeatRequest& req,
                         ClientHeartbeatResponse* resp) override;
  Status ReleaseJobClient(const ReleaseJobClientRequest& req,
                          ReleaseJobClientResponse* resp) override;
  Status WorkerHeartbeat(const WorkerHeartbeatRequest& req,
                         WorkerHeartbeatResponse* resp) override;
  Status GetSplits(const GetSplitsRequest& req, GetSplitsResponse* resp) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// How a client reads from one worker: over gRPC, or directly from a Worker in this
// process (target_workers="LOCAL").
class WorkerClient {
 public:
  virtual ~WorkerClient() = default;
  virtual Status GetElement(const GetElementRequest& req, GetElementResponse* resp) = 0;
};
std::unique_ptr<WorkerClient> MakeGrpcWorkerClient(const std::string& address,
                                                   int64_t deadline_ms = kRpcDeadlineMs,
                                                   const Security& security = Security());

// A dispatcher serving on host:port (port 0: any free port), with a housekeeping thread
// that runs Dispatcher::Tick every tick_ms. With security's token every RPC without it is
// refused (Unauthenticated); with its TLS files the port speaks TLS only and requires a
// client certificate signed by its CA.
class GrpcDispatcherServer {
 public:
  static Result<std::unique_ptr<GrpcDispatcherServer>> Start(
      DispatcherConfig config, const std::string& host, int port, int64_t tick_ms = 200,
      const Security& security = Security());
  ~GrpcDispatcherServer();  // Stop()
  void Stop();
  void Wait();  // until Stop (from another thread) or the process ends
  int port() const { return port_; }
  Dispatcher* dispatcher() { return dispatcher_.get(); }
  const RpcCounters& rpc_counters() const;  // requests and errors per method

 private:
  friend class LocalDispatcherClient;
  GrpcDispatcherServer() = default;
  std::vector<std::string> local_addresses_;  // registered for MakeDispatcherClient
  std::unique_ptr<Dispatcher> dispatcher_;
  struct Service;
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  Mutex mu_;
  CondVar cv_;
  bool stopping_ GUARDED_BY(mu_) = false;
  std::thread ticker_;
};

// A worker serving on host:port (port 0: any free port), registered with the dispatcher
// at `dispatcher_address`. config.address is set to host:port unless given. security
// protects the worker's port as the dispatcher's, and is what the worker presents to the
// dispatcher.
class GrpcWorkerServer {
 public:
  static Result<std::unique_ptr<GrpcWorkerServer>> Start(
      WorkerConfig config, const std::string& dispatcher_address, const std::string& host,
      int port, const Security& security = Security());
  ~GrpcWorkerServer();
  void Stop();
  void Wait();
  int port() const { return port_; }
  Worker* worker() { return worker_.get(); }
  const RpcCounters& rpc_counters() const;

 private:
  GrpcWorkerServer() = default;
  std::unique_ptr<Worker> worker_;
  struct Service;
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

}  // namespace sluice::service

#endif  // SLUICE_SERVICE_GRPC_TRANSPORT_H_
