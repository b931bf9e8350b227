#include "service/grpc_transport.h"

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <map>

#include "service/metrics.h"
#include "service/proto/service.grpc.pb.h"
#include "service/security.h"

namespace sluice::service {
namespace {

grpc::Status ToGrpc(const Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), s.message());
}

Status FromGrpc(const grpc::Status& s, std::string_view what) {
  if (s.ok()) return Status::OK();
  return Status(static_cast<StatusCode>(s.error_code()),
                std::string(what) + ": " + s.error_message());
}

std::shared_ptr<grpc::ChannelCredentials> ChannelCredentialsFor(const Security& sec) {
  if (!sec.tls()) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions o;
  o.pem_root_certs = sec.ca_pem;
  o.pem_private_key = sec.key_pem;
  o.pem_cert_chain = sec.cert_pem;
  return grpc::SslCredentials(o);
}

std::shared_ptr<grpc::ServerCredentials> ServerCredentialsFor(const Security& sec) {
  if (!sec.tls()) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions o(
      GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  o.pem_root_certs = sec.ca_pem;
  o.pem_key_cert_pairs.push_back({sec.key_pem, sec.cert_pem});
  return grpc::SslServerCredentials(o);
}

// The token check every server method starts with.
grpc::Status Authenticate(const Security& sec, grpc::ServerContext* ctx,
                          std::string_view who) {
  if (sec.token.empty()) return grpc::Status::OK;
  const auto& md = ctx->client_metadata();
  auto it = md.find(kAuthMetadataKey);
  std::string value;
  if (it != md.end()) value.assign(it->second.data(), it->second.size());
  return ToGrpc(CheckAuthMetadata(sec, it == md.end() ? nullptr : &value, who));
}

void AddToken(const Security& sec, grpc::ClientContext* ctx) {
  if (!sec.token.empty()) ctx->AddMetadata(kAuthMetadataKey, AuthMetadataValue(sec));
}

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& address,
                                           const Security& sec) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kMaxResponseBytes);
  args.SetMaxSendMessageSize(kMaxRequestBytes);
  // Reconnect quickly after a restart of the other side.
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  return grpc::CreateCustomChannel(address, ChannelCredentialsFor(sec), args);
}

void SetDeadline(grpc::ClientContext* ctx, int64_t ms) {
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(ms));
}

}  // namespace

Result<std::string> ParseServiceAddress(std::string_view address) {
  std::string_view a = address;
  if (a.substr(0, 7) == "grpc://") a.remove_prefix(7);
  const size_t colon = a.rfind(':');
  if (a.empty() || colon == std::string_view::npos || colon == 0 ||
      colon + 1 == a.size() || a.find('/') != std::string_view::npos) {
    return InvalidArgumentError("service address '" + std::string(address) +
                                "' is not grpc://host:port");
  }
  for (char c : a.substr(colon + 1)) {
    if (c < '0' || c > '9') {
      return InvalidArgumentError("service address '" + std::string(address) +
                                  "': the port is not a number");
    }
  }
  return std::string(a);
}

// ---- dispatcher stub ----

struct GrpcDispatcherClient::Impl {
  std::unique_ptr<DispatcherService::Stub> stub;
  int64_t deadline_ms;
  Security security;
};

GrpcDispatcherClient::GrpcDispatcherClient(const std::string& address,
                                           int64_t deadline_ms, const Security& security)
    : impl_(new Impl{DispatcherService::NewStub(MakeChannel(address, security)),
                     deadline_ms, security}) {}
GrpcDispatcherClient::~GrpcDispatcherClient() = default;

#define SLUICE_DISPATCHER_CALL(Method)                                            \
  Status GrpcDispatcherClient::Method(const Method##Request& req,                 \
                                      Method##Response* resp) {                   \
    grpc::ClientContext ctx;                                                      \
    SetDeadline(&ctx, impl_->deadline_ms);                                        \
    AddToken(impl_->security, &ctx);                                              \
    return FromGrpc(impl_->stub->Method(&ctx, req, resp), "dispatcher " #Method); \
  }
SLUICE_DISPATCHER_CALL(GetOrRegisterDataset)
SLUICE_DISPATCHER_CALL(GetOrCreateJob)
SLUICE_DISPATCHER_CALL(ClientHeartbeat)
SLUICE_DISPATCHER_CALL(ReleaseJobClient)
SLUICE_DISPATCHER_CALL(WorkerHeartbeat)
SLUICE_DISPATCHER_CALL(GetSplits)
#undef SLUICE_DISPATCHER_CALL

// ---- dispatchers in this process ----

namespace {
struct LocalDispatchers {
  Mutex mu;
  CondVar cv;
  std::map<std::string, GrpcDispatcherServer*> servers GUARDED_BY(mu);
  int64_t in_use GUARDED_BY(mu) = 0;
  std::atomic<int64_t> calls{0};
};

LocalDispatchers& Dispatchers() {
  static auto* d = new LocalDispatchers();
  return *d;
}

// The addresses a client in this process may name for a server on host:port.
std::vector<std::string> LocalAddresses(const std::string& host, int port) {
  const std::string p = ":" + std::to_string(port);
  std::vector<std::string> a = {host + p};
  if (host == "127.0.0.1" || host == "localhost" || host == "0.0.0.0" || host == "[::]") {
    for (const char* h : {"127.0.0.1", "localhost"}) {
      if (h != host) a.push_back(h + p);
    }
  }
  return a;
}
}  // namespace

// ---- worker stub ----

namespace {
class GrpcWorkerClient : public WorkerClient {
 public:
  GrpcWorkerClient(const std::string& address, int64_t deadline_ms,
                   const Security& security)
      : address_(address),
        stub_(WorkerService::NewStub(MakeChannel(address, security))),
        deadline_ms_(deadline_ms),
        security_(security) {}
  Status GetElement(const GetElementRequest& req, GetElementResponse* resp) override {
    grpc::ClientContext ctx;
    SetDeadline(&ctx, deadline_ms_);
    AddToken(security_, &ctx);
    return FromGrpc(stub_->GetElement(&ctx, req, resp),
                    "worker " + address_ + " GetElement");
  }

 private:
  const std::string address_;
  std::unique_ptr<WorkerService::Stub> stub_;
  const int64_t deadline_ms_;
  const Security security_;
};
}  // namespace

std::unique_ptr<WorkerClient> MakeGrpcWorkerClient(const std::string& address,
                                                   int64_t deadline_ms,
                                                   const Security& security) {
  return std::make_unique<GrpcWorkerClient>(address, deadline_ms, security);
}

// ---- dispatcher server ----

struct GrpcDispatcherServer::Service : public DispatcherService::Service {
  Service(Dispatcher* d, Security sec) : d(d), sec(std::move(sec)) {}
#define SLUICE_DISPATCHER_METHOD(Method)                                    \
  grpc::Status Method(grpc::ServerContext* ctx, const Method##Request* req, \
                      Method##Response* resp) override {                    \
    grpc::Status st = Authenticate(sec, ctx, "dispatcher " #Method);        \
    if (st.ok()) st = ToGrpc(CheckRequestBounds(*req));                     \
    if (st.ok()) st = ToGrpc(d->Method(*req, resp));                        \
    rpc.Count(#Method, st.error_code());                                    \
    return st;                                                              \
  }
  SLUICE_DISPATCHER_METHOD(GetOrRegisterDataset)
  SLUICE_DISPATCHER_METHOD(GetOrCreateJob)
  SLUICE_DISPATCHER_METHOD(ClientHeartbeat)
  SLUICE_DISPATCHER_METHOD(ReleaseJobClient)
  SLUICE_DISPATCHER_METHOD(WorkerHeartbeat)
  SLUICE_DISPATCHER_METHOD(GetSplits)
#undef SLUICE_DISPATCHER_METHOD
  Dispatcher* d;
  const Security sec;
  RpcCounters rpc;
};

const RpcCounters& GrpcDispatcherServer::rpc_counters() const { return service_->rpc; }

class LocalDispatcherClient : public DispatcherClient {
 public:
  LocalDispatcherClient(std::string address, int64_t deadline_ms, Security security)
      : address_(std::move(address)),
        deadline_ms_(deadline_ms),
        security_(std::move(security)),
        local_(security_.token.empty() && !security_.tls()) {}

#define SLUICE_LOCAL_DISPATCHER_CALL(Method)                                   \
  Status Method(const Method##Request& req, Method##Response* resp) override { \
    if (GrpcDispatcherServer* s = local_ ? Acquire() : nullptr) {              \
      Status st = CheckRequestBounds(req);                                     \
      if (st.ok()) st = s->dispatcher_->Method(req, resp);                     \
      s->service_->rpc.Count(#Method, static_cast<int>(st.code()));            \
      Release();                                                               \
      return st;                                                               \
    }                                                                          \
    return Grpc()->Method(req, resp);                                          \
  }
  SLUICE_LOCAL_DISPATCHER_CALL(GetOrRegisterDataset)
  SLUICE_LOCAL_DISPATCHER_CALL(GetOrCreateJob)
  SLUICE_LOCAL_DISPATCHER_CALL(ClientHeartbeat)
  SLUICE_LOCAL_DISPATCHER_CALL(ReleaseJobClient)
  SLUICE_LOCAL_DISPATCHER_CALL(WorkerHeartbeat)
  SLUICE_LOCAL_DISPATCHER_CALL(GetSplits)
#undef SLUICE_LOCAL_DISPATCHER_CALL

 private:
  GrpcDispatcherServer* Acquire() {
    LocalDispatchers& d = Dispatchers();
    MutexLock l(&d.mu);
    auto it = d.servers.find(address_);
    if (it == d.servers.end()) return nullptr;
    ++d.in_use;
    d.calls.fetch_add(1, std::memory_order_relaxed);
    return it->second;
  }
  void Release() {
    LocalDispatchers& d = Dispatchers();
    MutexLock l(&d.mu);
    if (--d.in_use == 0) d.cv.SignalAll();
  }
  GrpcDispatcherClient* Grpc() {
    MutexLock l(&mu_);
    if (!grpc_)
      grpc_ = std::make_unique<GrpcDispatcherClient>(address_, deadline_ms_, security_);
    return grpc_.get();
  }

  const std::string address_;
  const int64_t deadline_ms_;
  const Security security_;
  const bool local_;
  Mutex mu_;
  std::unique_ptr<GrpcDispatcherClient> grpc_ GUARDED_BY(mu_);
};

int64_t InProcessDispatcherCalls() { return Dispatchers().calls.load(); }

std::shared_ptr<DispatcherClient> MakeDispatcherClient(const std::string& address,
                                                       int64_t deadline_ms,
                                                       const Security& security) {
  return std::make_shared<LocalDispatcherClient>(address, deadline_ms, security);
}

Result<std::unique_ptr<GrpcDispatcherServer>> GrpcDispatcherServer::Start(
    DispatcherConfig config, const std::string& host, int port, int64_t tick_ms,
    const Security& security) {
  std::unique_ptr<GrpcDispatcherServer> s(new GrpcDispatcherServer());
  s->dispatcher_ = std::make_unique<Dispatcher>(std::move(config));
  SLUICE_RETURN_IF_ERROR(s->dispatcher_->Start());
  s->service_ = std::make_unique<Service>(s->dispatcher_.get(), security);
  grpc::ServerBuilder b;
  b.AddListeningPort(host + ":" + std::to_string(port), ServerCredentialsFor(security),
                     &s->port_);
  b.SetMaxReceiveMessageSize(kMaxRequestBytes);
  b.RegisterService(s->service_.get());
  s->server_ = b.BuildAndStart();
  if (s->server_ == nullptr || s->port_ == 0) {
    return UnavailableError("dispatcher: cannot listen on " + host + ":" +
                            std::to_string(port));
  }
  if (security.token.empty() && !security.tls()) {
    LocalDispatchers& d = Dispatchers();
    MutexLock l(&d.mu);
    for (std::string& a : LocalAddresses(host, s->port_)) {
      if (d.servers.emplace(a, s.get()).second) s->local_addresses_.push_back(a);
    }
  }
  GrpcDispatcherServer* self = s.get();
  s->ticker_ = std::thread([self, tick_ms] {
    MutexLock l(&self->mu_);
    while (!self->stopping_) {
      self->cv_.WaitFor(&self->mu_, std::chrono::milliseconds(tick_ms));
      if (self->stopping_) break;
      l.Unlock();
      Status st = self->dispatcher_->Tick();
      if (!st.ok()) Log("error", "dispatcher", "tick failed", {{"error", st.ToString()}});
      l.Lock();
    }
  });
  return s;
}

GrpcDispatcherServer::~GrpcDispatcherServer() { Stop(); }

void GrpcDispatcherServer::Stop() {
  if (!local_addresses_.empty()) {  // in-process clients go over gRPC from now on
    LocalDispatchers& d = Dispatchers();
    MutexLock l(&d.mu);
    for (const std::string& a : local_addresses_) d.servers.erase(a);
    local_addresses_.clear();
    d.cv.Wait(&d.mu, [&]() REQUIRES(d.mu) { return d.in_use == 0; });
  }
  {
    MutexLock l(&mu_);
    stopping_ = true;
    cv_.SignalAll();
  }
  if (ticker_.joinable()) ticker_.join();
  if (server_)
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
}

void GrpcDispatcherServer::Wait() {
  if (server_) server_->Wait();
}

// ---- worker server ----

struct GrpcWorkerServer::Service : public WorkerService::Service {
  explicit Service(Security sec) : sec(std::move(sec)) {}
  grpc::Status GetElement(grpc::ServerContext* ctx, const GetElementRequest* req,
                          GetElementResponse* resp) override {
    grpc::Status st = Authenticate(sec, ctx, "worker GetElement");
    Worker* w = worker.load();
    if (st.ok() && w == nullptr) {
      st = grpc::Status(grpc::StatusCode::UNAVAILABLE, "worker starting");
    }
    if (st.ok()) st = ToGrpc(w->GetElement(*req, resp));
    rpc.Count("GetElement", st.error_code());
    return st;
  }
  std::atomic<Worker*> worker{nullptr};
  const Security sec;
  RpcCounters rpc;
};

const RpcCounters& GrpcWorkerServer::rpc_counters() const { return service_->rpc; }

Result<std::unique_ptr<GrpcWorkerServer>> GrpcWorkerServer::Start(
    WorkerConfig config, const std::string& dispatcher_address, const std::string& host,
    int port, const Security& security) {
  SLUICE_ASSIGN_OR_RETURN(std::string dispatcher,
                          ParseServiceAddress(dispatcher_address));
  std::unique_ptr<GrpcWorkerServer> s(new GrpcWorkerServer());
  s->service_ = std::make_unique<Service>(security);
  grpc::ServerBuilder b;
  b.AddListeningPort(host + ":" + std::to_string(port), ServerCredentialsFor(security),
                     &s->port_);
  b.SetMaxReceiveMessageSize(1 << 20);  // GetElementRequest is a few integers
  b.RegisterService(s->service_.get());
  s->server_ = b.BuildAndStart();
  if (s->server_ == nullptr || s->port_ == 0) {
    return UnavailableError("worker: cannot listen on " + host + ":" +
                            std::to_string(port));
  }
  if (config.address.empty()) config.address = host + ":" + std::to_string(s->port_);
  s->worker_ = std::make_unique<Worker>(
      std::move(config), MakeDispatcherClient(dispatcher, kRpcDeadlineMs, security));
  // The dispatcher may still be starting: registration retries for a while.
  SLUICE_RETURN_IF_ERROR(RetryUnavailable(30000, [&] { return s->worker_->Start(); }));
  s->service_->worker = s->worker_.get();
  return s;
}

GrpcWorkerServer::~GrpcWorkerServer() { Stop(); }

void GrpcWorkerServer::Stop() {
  if (service_) service_->worker = nullptr;
  if (server_)
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  if (worker_) worker_->Stop();
}

void GrpcWorkerServer::Wait() {
  if (server_) server_->Wait();
}

}  // namespace sluice::service
