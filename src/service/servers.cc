// The public DispatchServer / WorkServer (sluice/service.h) over the gRPC servers, and
// the registry of local workers.
#include <map>

#include "core/mutex.h"
#include "service/grpc_transport.h"
#include "service/local_workers.h"
#include "service/metrics.h"
#include "sluice/service.h"

namespace sluice::service {
namespace {

struct LocalRegistry {
  Mutex mu;
  CondVar cv;
  std::map<std::string, Worker*> workers GUARDED_BY(mu);
  std::map<std::string, int> in_use GUARDED_BY(mu);
  // Acquires the worker at `address` for one call (nullptr: none); *count is the
  // address's in-use count, to pass to Release (map nodes stay put).
  Worker* Acquire(const std::string& address, int** count) {
    MutexLock l(&mu);
    auto it = workers.find(address);
    if (it == workers.end()) return nullptr;
    *count = &in_use.try_emplace(it->first, 0).first->second;
    ++**count;
    return it->second;
  }
  void Release(int* count) {
    MutexLock l(&mu);
    if (--*count == 0) cv.SignalAll();
  }
};

LocalRegistry& Registry() {
  static LocalRegistry* r = new LocalRegistry();
  return *r;
}

}  // namespace

void RegisterLocalWorker(const std::string& address, Worker* worker) {
  MutexLock l(&Registry().mu);
  Registry().workers[address] = worker;
}

void UnregisterLocalWorker(const std::string& address) {
  LocalRegistry& r = Registry();
  MutexLock l(&r.mu);
  r.workers.erase(address);
  r.cv.Wait(&r.mu, [&]() REQUIRES(r.mu) { return r.in_use[address] == 0; });
}

bool IsLocalWorker(const std::string& address) {
  MutexLock l(&Registry().mu);
  return Registry().workers.count(address) > 0;
}

void NudgeLocalWorker(const std::string& address) {
  LocalRegistry& r = Registry();
  MutexLock l(&r.mu);
  auto it = r.workers.find(address);
  if (it != r.workers.end()) it->second->Nudge();
}

Status HeartbeatLocalWorker(const std::string& address) {
  LocalRegistry& r = Registry();
  Worker* w;
  {
    MutexLock l(&r.mu);
    auto it = r.workers.find(address);
    if (it == r.workers.end())
      return UnavailableError("local worker " + address + " is gone");
    w = it->second;
    ++r.in_use[address];
  }
  Status s = w->HeartbeatNow();
  MutexLock l(&r.mu);
  if (--r.in_use[address] == 0) r.cv.SignalAll();
  return s;
}

Status TakeFromLocalWorker(const std::string& address, int64_t task_id, Element* element,
                           Worker::TakeResult* result) {
  return TakeFromLocalWorker(address, task_id, "", element, result, nullptr);
}

Status TakeFromLocalWorker(const std::string& address, int64_t task_id,
                           const std::string& trainer_id, Element* element,
                           Worker::TakeResult* result, int64_t* skipped) {
  LocalRegistry& r = Registry();
  int* count = nullptr;
  Worker* w = r.Acquire(address, &count);
  if (w == nullptr) return UnavailableError("local worker " + address + " is gone");
  Status s = w->Take(task_id, trainer_id, element, result, skipped);
  r.Release(count);
  return s;
}

namespace {
class LocalWorkerClient : public WorkerClient {
 public:
  explicit LocalWorkerClient(std::string address) : address_(std::move(address)) {}
  Status GetElement(const GetElementRequest& req, GetElementResponse* resp) override {
    LocalRegistry& r = Registry();
    Worker* w;
    {
      MutexLock l(&r.mu);
      auto it = r.workers.find(address_);
      if (it == r.workers.end())
        return UnavailableError("local worker " + address_ + " is gone");
      w = it->second;
      ++r.in_use[address_];
    }
    Status s = w->GetElement(req, resp);
    MutexLock l(&r.mu);
    if (--r.in_use[address_] == 0) r.cv.SignalAll();
    return s;
  }

 private:
  const std::string address_;
};
}  // namespace

std::unique_ptr<WorkerClient> MakeLocalWorkerClient(const std::string& address) {
  return std::make_unique<LocalWorkerClient>(address);
}

// ---- DispatchServer ----

struct DispatchServer::Impl {
  std::unique_ptr<GrpcDispatcherServer> server;
  std::unique_ptr<MetricsHttpServer> metrics;  // declared last: stops first
  std::string host;
};

DispatchServer::DispatchServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DispatchServer::~DispatchServer() { Stop(); }

Result<std::unique_ptr<DispatchServer>> DispatchServer::Start(
    const DispatcherOptions& o) {
  DispatcherConfig c;
  c.work_dir = o.work_dir;
  c.worker_timeout_ms = o.worker_timeout_ms;
  c.client_timeout_ms = o.client_timeout_ms;
  SLUICE_ASSIGN_OR_RETURN(Security security, LoadSecurity(o.security, "dispatcher"));
  auto impl = std::make_unique<Impl>();
  SLUICE_ASSIGN_OR_RETURN(
      impl->server,
      GrpcDispatcherServer::Start(c, o.host, o.port, /*tick_ms=*/200, security));
  impl->host = o.host;
  if (o.metrics_port >= 0) {
    GrpcDispatcherServer* server = impl->server.get();
    SLUICE_ASSIGN_OR_RETURN(
        impl->metrics, MetricsHttpServer::Start(o.host, o.metrics_port, [server] {
          return DispatcherMetricsText(*server->dispatcher(), server->rpc_counters());
        }));
  }
  return std::unique_ptr<DispatchServer>(new DispatchServer(std::move(impl)));
}

int DispatchServer::port() const { return impl_->server->port(); }
std::string DispatchServer::target() const {
  return "grpc://" + impl_->host + ":" + std::to_string(port());
}
void DispatchServer::Stop() {
  if (impl_->metrics) impl_->metrics->Stop();
  impl_->server->Stop();
}
int DispatchServer::metrics_port() const {
  return impl_->metrics ? impl_->metrics->port() : -1;
}
void DispatchServer::Join() { impl_->server->Wait(); }
int64_t DispatchServer::updates_replayed() const {
  return impl_->server->dispatcher()->updates_replayed();
}
WorkerAdvice DispatchServer::advice() const {
  return impl_->server->dispatcher()->Advice();
}
int64_t DispatchServer::journal_dropped_bytes() const {
  return impl_->server->dispatcher()->journal_dropped_bytes();
}

// ---- WorkServer ----

struct WorkServer::Impl {
  std::unique_ptr<GrpcWorkerServer> server;
  std::unique_ptr<MetricsHttpServer> metrics;
  std::string address;
  bool registered = false;
};

WorkServer::WorkServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
WorkServer::~WorkServer() { Stop(); }

Result<std::unique_ptr<WorkServer>> WorkServer::Start(const WorkerOptions& o) {
  WorkerConfig c;
  c.cpu_budget = o.cpu_budget;
  c.ram_budget = o.ram_budget;
  c.heartbeat_interval_ms = o.heartbeat_interval_ms;
  c.lease_splits = o.lease_splits;
  c.data_roots = o.data_roots;
  c.write_roots = o.write_roots;
  SLUICE_ASSIGN_OR_RETURN(Security security, LoadSecurity(o.security, "worker"));
  c.cross_trainer_cache_bytes = o.cross_trainer_cache_bytes;
  auto impl = std::make_unique<Impl>();
  SLUICE_ASSIGN_OR_RETURN(
      impl->server, GrpcWorkerServer::Start(c, o.dispatcher, o.host, o.port, security));
  impl->address = o.host + ":" + std::to_string(impl->server->port());
  if (o.metrics_port >= 0) {
    GrpcWorkerServer* server = impl->server.get();
    SLUICE_ASSIGN_OR_RETURN(
        impl->metrics, MetricsHttpServer::Start(o.host, o.metrics_port, [server] {
          return WorkerMetricsText(*server->worker(), server->rpc_counters());
        }));
  }
  RegisterLocalWorker(impl->address, impl->server->worker());
  impl->registered = true;
  return std::unique_ptr<WorkServer>(new WorkServer(std::move(impl)));
}

int WorkServer::port() const { return impl_->server->port(); }
std::string WorkServer::address() const { return impl_->address; }
void WorkServer::Stop() {
  if (impl_->metrics) impl_->metrics->Stop();
  if (impl_->registered) {
    UnregisterLocalWorker(impl_->address);
    impl_->registered = false;
  }
  impl_->server->Stop();
}
void WorkServer::Join() { impl_->server->Wait(); }
int WorkServer::metrics_port() const {
  return impl_->metrics ? impl_->metrics->port() : -1;
}
int64_t WorkServer::split_rpcs() const { return impl_->server->worker()->split_rpcs(); }
int64_t WorkServer::cache_skipped_elements() const {
  return impl_->server->worker()->cache_skipped_elements();
}

}  // namespace sluice::service
