// The service's authentication and confinement (docs/service.md, "Security"): a shared
// token on every RPC, mutual TLS with certificates made here by Debian's `openssl` in a
// temporary directory, and workers confined to their data roots.
#include "service/security.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>

#include "service/grpc_transport.h"
#include "service/tsan_suppressions.h"
#include "sluice/dataset.h"
#include "sluice/service.h"
#include "testing/conformance.h"

namespace sluice::service {
namespace {

using testing::TempDir;
using testing::WriteFile;

struct Cluster {
  Cluster(const SecurityOptions& security, int workers,
          std::vector<std::string> data_roots = {}) {
    DispatcherOptions d;
    d.security = security;
    auto started = DispatchServer::Start(d);
    EXPECT_TRUE(started.ok()) << started.status();
    if (!started.ok()) return;
    dispatcher = std::move(*started);
    for (int i = 0; i < workers; ++i) {
      WorkerOptions w;
      w.dispatcher = dispatcher->target();
      w.heartbeat_interval_ms = 50;
      w.cpu_budget = 1;
      w.security = security;
      w.data_roots = data_roots;
      auto ws = WorkServer::Start(w);
      EXPECT_TRUE(ws.ok()) << ws.status();
      if (ws.ok()) this->workers.push_back(std::move(*ws));
    }
  }
  DistributeOptions Options(const SecurityOptions& security) const {
    DistributeOptions o;
    o.processing_mode = ShardingPolicy::kDynamic;
    o.service = dispatcher->target();
    o.security = security;
    o.dispatcher_timeout_ms = 2000;  // TLS refusals look like an unreachable server
    o.worker_timeout_ms = 5000;
    return o;
  }
  std::unique_ptr<DispatchServer> dispatcher;
  std::vector<std::unique_ptr<WorkServer>> workers;
};

Result<int64_t> CountAll(const Dataset& ds) {
  SLUICE_ASSIGN_OR_RETURN(std::vector<Element> all, ds.Collect());
  return static_cast<int64_t>(all.size());
}

// ---- token ----

class TokenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WriteFile(dir_.File("token"), "s3cret-token-1\n");
    WriteFile(dir_.File("wrong"), "s3cret-token-2\n");
    server_.auth_token_file = dir_.File("token");
  }
  TempDir dir_;
  SecurityOptions server_;
};

TEST_F(TokenTest, RightTokenReadsEverything) {
  Cluster c(server_, 2);
  ASSERT_TRUE(c.dispatcher);
  Result<int64_t> n = CountAll(Distribute(Dataset::Range(100), c.Options(server_)));
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 100);
}

TEST_F(TokenTest, WrongTokenIsRefused) {
  Cluster c(server_, 1);
  ASSERT_TRUE(c.dispatcher);
  SecurityOptions client;
  client.auth_token_file = dir_.File("wrong");
  Result<int64_t> n = CountAll(Distribute(Dataset::Range(100), c.Options(client)));
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.status().code(), StatusCode::kUnauthenticated) << n.status();
  EXPECT_NE(n.status().message().find("wrong token"), std::string::npos) << n.status();
  EXPECT_EQ(n.status().message().find("s3cret"), std::string::npos) << n.status();
}

TEST_F(TokenTest, MissingTokenIsRefused) {
  Cluster c(server_, 1);
  ASSERT_TRUE(c.dispatcher);
  Result<int64_t> n =
      CountAll(Distribute(Dataset::Range(100), c.Options(SecurityOptions())));
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.status().code(), StatusCode::kUnauthenticated) << n.status();
  EXPECT_NE(n.status().message().find("requires a token"), std::string::npos)
      << n.status();
}

// Every RPC checks, not only the first a client makes: the dispatcher's worker RPCs and
// the worker's GetElement, called directly without and with the token.
TEST_F(TokenTest, EveryDispatcherAndWorkerRpcChecksTheToken) {
  Cluster c(server_, 1);
  ASSERT_TRUE(c.dispatcher);
  auto address = ParseServiceAddress(c.dispatcher->target());
  ASSERT_TRUE(address.ok());
  auto right = LoadSecurity(server_, "test");
  ASSERT_TRUE(right.ok()) << right.status();
  GrpcDispatcherClient anonymous(*address);
  GrpcDispatcherClient authed(*address, kRpcDeadlineMs, *right);

  WorkerHeartbeatRequest hb;
  hb.set_worker_address("127.0.0.1:1");
  WorkerHeartbeatResponse hbr;
  EXPECT_EQ(anonymous.WorkerHeartbeat(hb, &hbr).code(), StatusCode::kUnauthenticated);
  GetSplitsRequest sp;
  GetSplitsResponse spr;
  EXPECT_EQ(anonymous.GetSplits(sp, &spr).code(), StatusCode::kUnauthenticated);
  ClientHeartbeatRequest ch;
  ClientHeartbeatResponse chr;
  EXPECT_EQ(anonymous.ClientHeartbeat(ch, &chr).code(), StatusCode::kUnauthenticated);
  ReleaseJobClientRequest rl;
  ReleaseJobClientResponse rlr;
  EXPECT_EQ(anonymous.ReleaseJobClient(rl, &rlr).code(), StatusCode::kUnauthenticated);
  GetOrCreateJobRequest gj;
  GetOrCreateJobResponse gjr;
  EXPECT_EQ(anonymous.GetOrCreateJob(gj, &gjr).code(), StatusCode::kUnauthenticated);
  // With the token the same request reaches the logic (which has its own opinion).
  EXPECT_NE(authed.GetSplits(sp, &spr).code(), StatusCode::kUnauthenticated);

  GetElementRequest ge;
  ge.set_task_id(12345);
  GetElementResponse ger;
  EXPECT_EQ(MakeGrpcWorkerClient(c.workers[0]->address())->GetElement(ge, &ger).code(),
            StatusCode::kUnauthenticated);
  const Status s = MakeGrpcWorkerClient(c.workers[0]->address(), kRpcDeadlineMs, *right)
                       ->GetElement(ge, &ger);
  EXPECT_EQ(s.code(), StatusCode::kNotFound) << s;  // no such task, but let in
}

TEST_F(TokenTest, AWorkerWithoutTheTokenCannotRegister) {
  Cluster c(server_, 0);
  ASSERT_TRUE(c.dispatcher);
  WorkerOptions w;
  w.dispatcher = c.dispatcher->target();
  auto ws = WorkServer::Start(w);
  ASSERT_FALSE(ws.ok());
  EXPECT_EQ(ws.status().code(), StatusCode::kUnauthenticated) << ws.status();
}

TEST(SecurityTest, BadTokenFilesAndHalfTlsAreRefused) {
  TempDir dir;
  WriteFile(dir.File("empty"), "  \n");
  WriteFile(dir.File("spaces"), "two words\n");
  SecurityOptions o;
  o.auth_token_file = dir.File("empty");
  EXPECT_EQ(LoadSecurity(o, "x").status().code(), StatusCode::kInvalidArgument);
  o.auth_token_file = dir.File("spaces");
  EXPECT_EQ(LoadSecurity(o, "x").status().code(), StatusCode::kInvalidArgument);
  o.auth_token_file = dir.File("absent");
  EXPECT_FALSE(LoadSecurity(o, "x").ok());
  SecurityOptions half;
  half.tls_cert = dir.File("empty");
  Result<Security> s = LoadSecurity(half, "dispatcher");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("--tls-key"), std::string::npos) << s.status();
}

TEST(RequestBoundsTest, OversizedNamesAndTaskListsAreRefusedBeforeTheLogic) {
  Cluster c(SecurityOptions(), 0);
  ASSERT_TRUE(c.dispatcher);
  auto address = ParseServiceAddress(c.dispatcher->target());
  ASSERT_TRUE(address.ok());
  GrpcDispatcherClient client(*address);
  GetOrCreateJobRequest job;
  job.set_job_name(std::string(kMaxJobNameBytes + 1, 'j'));
  GetOrCreateJobResponse jr;
  Status s = client.GetOrCreateJob(job, &jr);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("job name"), std::string::npos) << s;
  WorkerHeartbeatRequest hb;
  hb.set_worker_address("127.0.0.1:1");
  for (int i = 0; i <= kMaxTasksPerHeartbeat; ++i) hb.add_current_task(i);
  WorkerHeartbeatResponse hbr;
  s = client.WorkerHeartbeat(hb, &hbr);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s;
  GetOrRegisterDatasetRequest ds;
  ds.set_fingerprint(std::string(kMaxFingerprintBytes + 1, 'f'));
  GetOrRegisterDatasetResponse dsr;
  EXPECT_EQ(client.GetOrRegisterDataset(ds, &dsr).code(), StatusCode::kInvalidArgument);
}

// ---- mutual TLS ----

bool Sh(const std::string& cmd) {
  return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0;
}

// A CA, a certificate for 127.0.0.1 signed by it (servers and clients alike), and a
// second CA with a client certificate of its own (the impostor).
class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Sh("command -v openssl")) GTEST_SKIP() << "openssl is not installed";
    const std::string d = dir_.path();
    WriteFile(dir_.File("san.ext"), "subjectAltName=IP:127.0.0.1,DNS:localhost\n");
    const std::string key = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    for (const std::string ca : {"ca", "rogue_ca"}) {
      ASSERT_TRUE(Sh("openssl req -x509 " + key + " -days 2 -subj /CN=" + ca +
                     " -addext basicConstraints=critical,CA:TRUE -addext "
                     "keyUsage=critical,keyCertSign,cRLSign -keyout " +
                     d + "/" + ca + ".key -out " + d + "/" + ca + ".pem"));
    }
    for (const auto& [name, ca] :
         std::map<std::string, std::string>{{"node", "ca"}, {"rogue", "rogue_ca"}}) {
      ASSERT_TRUE(Sh("openssl req " + key + " -subj /CN=127.0.0.1 -keyout " + d + "/" +
                     name + ".key -out " + d + "/" + name + ".csr"));
      ASSERT_TRUE(Sh("openssl x509 -req -days 2 -in " + d + "/" + name + ".csr -CA " + d +
                     "/" + ca + ".pem -CAkey " + d + "/" + ca +
                     ".key -CAcreateserial -extfile " + d + "/san.ext -out " + d + "/" +
                     name + ".pem"));
    }
    server_.tls_cert = dir_.File("node.pem");
    server_.tls_key = dir_.File("node.key");
    server_.tls_ca = dir_.File("ca.pem");
  }
  TempDir dir_;
  SecurityOptions server_;
};

TEST_F(TlsTest, ClientWithTheRightCertificateReads) {
  Cluster c(server_, 2);
  ASSERT_TRUE(c.dispatcher);
  Result<int64_t> n = CountAll(Distribute(Dataset::Range(100), c.Options(server_)));
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 100);
}

TEST_F(TlsTest, ClientWithACertificateOfAnotherCaIsRefused) {
  Cluster c(server_, 1);
  ASSERT_TRUE(c.dispatcher);
  SecurityOptions rogue;
  rogue.tls_cert = dir_.File("rogue.pem");
  rogue.tls_key = dir_.File("rogue.key");
  rogue.tls_ca = dir_.File("ca.pem");  // it trusts the servers; they do not trust it
  Result<int64_t> n = CountAll(Distribute(Dataset::Range(100), c.Options(rogue)));
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.status().code(), StatusCode::kUnavailable) << n.status();
}

TEST_F(TlsTest, PlaintextClientIsRefused) {
  Cluster c(server_, 1);
  ASSERT_TRUE(c.dispatcher);
  Result<int64_t> n =
      CountAll(Distribute(Dataset::Range(100), c.Options(SecurityOptions())));
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.status().code(), StatusCode::kUnavailable) << n.status();
}

TEST_F(TlsTest, WorkerWithoutTheRightCertificateCannotRegister) {
  Cluster c(server_, 0);
  ASSERT_TRUE(c.dispatcher);
  auto address = ParseServiceAddress(c.dispatcher->target());
  ASSERT_TRUE(address.ok());
  SecurityOptions rogue;
  rogue.tls_cert = dir_.File("rogue.pem");
  rogue.tls_key = dir_.File("rogue.key");
  rogue.tls_ca = dir_.File("ca.pem");
  auto sec = LoadSecurity(rogue, "test");
  ASSERT_TRUE(sec.ok());
  GrpcDispatcherClient client(*address, 3000, *sec);
  WorkerHeartbeatRequest hb;
  hb.set_worker_address("127.0.0.1:1");
  WorkerHeartbeatResponse hbr;
  const Status s = client.WorkerHeartbeat(hb, &hbr);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(hbr.worker_index(), 0);
  auto good = LoadSecurity(server_, "test");
  ASSERT_TRUE(good.ok());
  GrpcDispatcherClient good_client(*address, 3000, *good);
  EXPECT_TRUE(good_client.WorkerHeartbeat(hb, &hbr).ok());
}

// ---- confinement ----

TEST(ConfinementTest, AClientPipelineCannotReadOutsideTheWorkersDataRoots) {
  TempDir dir;
  WriteFile(dir.File("inside.txt"), "a\nb\nc\n");
  Cluster c(SecurityOptions(), 1, {dir.path()});
  ASSERT_TRUE(c.dispatcher);
  DistributeOptions o = c.Options(SecurityOptions());
  o.processing_mode = ShardingPolicy::kOff;
  Result<int64_t> inside =
      CountAll(Distribute(Dataset::TextLine({dir.File("inside.txt")}), o));
  ASSERT_TRUE(inside.ok()) << inside.status();
  EXPECT_EQ(*inside, 3);

  Result<int64_t> secret = CountAll(Distribute(Dataset::TextLine({"/etc/passwd"}), o));
  ASSERT_FALSE(secret.ok());
  EXPECT_EQ(secret.status().code(), StatusCode::kPermissionDenied) << secret.status();
  EXPECT_NE(secret.status().message().find("/etc/passwd"), std::string::npos);

  // A graph naming wider roots of its own is still held to the worker's.
  Options wide;
  wide.files.allowed_roots = std::vector<std::string>{"/"};
  Result<int64_t> widened =
      CountAll(Distribute(Dataset::TextLine({"/etc/passwd"}).WithOptions(wide), o));
  ASSERT_FALSE(widened.ok());
  EXPECT_EQ(widened.status().code(), StatusCode::kPermissionDenied) << widened.status();

  // Built inside the roots too: ListFiles globs while the graph is rebuilt.
  Result<int64_t> listed = CountAll(Distribute(Dataset::ListFiles({"/etc/*"}), o));
  ASSERT_FALSE(listed.ok());
  EXPECT_EQ(listed.status().code(), StatusCode::kPermissionDenied) << listed.status();

  // A LOCAL job's task is built on the consumer's thread, held to the same roots.
  o.target_workers = "LOCAL";
  for (const Dataset& ds :
       {Dataset::TextLine({"/etc/passwd"}), Dataset::ListFiles({"/etc/*"})}) {
    Result<int64_t> local = CountAll(Distribute(ds, o));
    ASSERT_FALSE(local.ok());
    EXPECT_EQ(local.status().code(), StatusCode::kPermissionDenied) << local.status();
  }
  EXPECT_EQ(*CountAll(Distribute(Dataset::TextLine({dir.File("inside.txt")}), o)), 3);
}

}  // namespace
}  // namespace sluice::service
