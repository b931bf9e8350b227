// The service's metrics: the HTTP responder's bounds, the text the dispatcher and a
// worker export after a job, and a real Prometheus (Debian's `prometheus`, installed by
// scripts/install_deps.sh) scraping both and answering a query through its HTTP API.
#include "service/metrics.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "service/tsan_suppressions.h"
#include "sluice/dataset.h"
#include "sluice/service.h"
#include "testing/conformance.h"

namespace sluice::service {
namespace {

using testing::TempDir;
using testing::WriteFile;

int Connect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return -1;
  }
  timeval tv{10, 0};  // no read waits past 10 s
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  return fd;
}

// Sends `request` and reads the answer to the end ("" when the connection failed).
std::string Exchange(int port, const std::string& request) {
  const int fd = Connect(port);
  if (fd < 0) return "";
  (void)!write(fd, request.data(), request.size());
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  close(fd);
  return out;
}

std::string HttpGet(int port, const std::string& path) {
  return Exchange(port, "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
}

std::string Body(const std::string& response) {
  const size_t p = response.find("\r\n\r\n");
  return p == std::string::npos ? "" : response.substr(p + 4);
}

TEST(MetricsHttpTest, ServesMetricsAndRefusesTheRest) {
  auto s = MetricsHttpServer::Start("127.0.0.1", 0, [] { return std::string("x 1\n"); });
  ASSERT_TRUE(s.ok()) << s.status();
  const int port = (*s)->port();
  std::string r = HttpGet(port, "/metrics");
  EXPECT_EQ(r.rfind("HTTP/1.0 200", 0), 0u) << r;
  EXPECT_NE(r.find("text/plain; version=0.0.4"), std::string::npos);
  EXPECT_EQ(Body(r), "x 1\n");
  EXPECT_EQ(HttpGet(port, "/etc/passwd").rfind("HTTP/1.0 404", 0), 0u);
  EXPECT_EQ(Exchange(port, "POST /metrics HTTP/1.0\r\n\r\n").rfind("HTTP/1.0 405", 0),
            0u);
  EXPECT_EQ(Exchange(port, "garbage\r\n\r\n").rfind("HTTP/1.0 400", 0), 0u);
  // A request head over the bound is answered without reading on.
  std::string huge =
      "GET /metrics HTTP/1.0\r\nX: " + std::string(20000, 'a') + "\r\n\r\n";
  EXPECT_EQ(Exchange(port, huge).rfind("HTTP/1.0 431", 0), 0u);
  // A peer that connects and says nothing is dropped after the read timeout; the next
  // scrape is then served.
  const int silent = Connect(port);
  ASSERT_GE(silent, 0);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(Body(HttpGet(port, "/metrics")), "x 1\n");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  close(silent);
  (*s)->Stop();
}

TEST(MetricsHttpTest, PrometheusTextEscapesLabels) {
  PrometheusText t;
  t.Family("a_total", "counter", "Things.");
  t.Sample("a_total", 3, {{"job_name", "we\"ird\\\nname"}});
  t.Sample("b", 0.25);
  EXPECT_EQ(t.text(),
            "# HELP a_total Things.\n# TYPE a_total counter\n"
            "a_total{job_name=\"we\\\"ird\\\\\\nname\"} 3\nb 0.25\n");
}

struct Servers {
  Servers() {
    DispatcherOptions d;
    d.metrics_port = 0;
    auto ds = DispatchServer::Start(d);
    EXPECT_TRUE(ds.ok()) << ds.status();
    dispatcher = std::move(*ds);
    WorkerOptions w;
    w.dispatcher = dispatcher->target();
    w.heartbeat_interval_ms = 50;
    w.cpu_budget = 1;
    w.metrics_port = 0;
    auto ws = WorkServer::Start(w);
    EXPECT_TRUE(ws.ok()) << ws.status();
    worker = std::move(*ws);
  }
  // Reads a DYNAMIC job of `n` int64 scalars through the worker.
  int64_t ReadJob(int64_t n, const std::string& target = "ANY") {
    DistributeOptions o;
    o.service = dispatcher->target();
    o.job_name = "metrics";
    o.target_workers = target;
    auto all = Distribute(Dataset::Range(n), o).Collect();
    EXPECT_TRUE(all.ok()) << all.status();
    return all.ok() ? static_cast<int64_t>(all->size()) : -1;
  }
  std::unique_ptr<DispatchServer> dispatcher;
  std::unique_ptr<WorkServer> worker;
};

TEST(ServiceMetricsTest, DispatcherAndWorkerExportWhatAJobDid) {
  Servers s;
  ASSERT_TRUE(s.worker);
  ASSERT_GE(s.worker->metrics_port(), 0);
  ASSERT_EQ(s.ReadJob(300), 300);
  const std::string w = Body(HttpGet(s.worker->metrics_port(), "/metrics"));
  // The worker runs in this process, so the client takes its elements without the
  // network; served elements and bytes count the same either way (8 bytes each).
  EXPECT_NE(w.find("sluice_worker_elements_served_total{job_id=\"1\"} 300\n"),
            std::string::npos)
      << w;
  EXPECT_NE(w.find("sluice_worker_bytes_served_total{job_id=\"1\"} 2400\n"),
            std::string::npos)
      << w;
  EXPECT_NE(w.find("# TYPE sluice_worker_buffered_bytes gauge"), std::string::npos);
  EXPECT_NE(w.find("sluice_worker_task_errors_total 0\n"), std::string::npos) << w;
  const std::string d = Body(HttpGet(s.dispatcher->metrics_port(), "/metrics"));
  EXPECT_NE(d.find("sluice_dispatcher_workers 1\n"), std::string::npos) << d;
  EXPECT_NE(
      d.find("sluice_dispatcher_splits_leased_total{job_id=\"1\",job_name=\"metrics\"} "
             "300\n"),
      std::string::npos)
      << d;
  EXPECT_NE(d.find("sluice_dispatcher_rpcs_total{method=\"GetOrCreateJob\"} 1\n"),
            std::string::npos)
      << d;
  // A LOCAL job's direct task (pulled on the consumer's thread) counts the same.
  ASSERT_EQ(s.ReadJob(100, "LOCAL"), 100);
  const std::string l = Body(HttpGet(s.worker->metrics_port(), "/metrics"));
  EXPECT_NE(l.find("sluice_worker_elements_served_total{job_id=\"2\"} 100\n"),
            std::string::npos)
      << l;
  EXPECT_NE(l.find("sluice_worker_bytes_served_total{job_id=\"2\"} 800\n"),
            std::string::npos)
      << l;
}

// ---- a real Prometheus ----

int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

const char* PrometheusBinary() {
  for (const char* p : {"/usr/bin/prometheus", "/usr/local/bin/prometheus"}) {
    if (access(p, X_OK) == 0) return p;
  }
  return nullptr;
}

TEST(PrometheusScrapeTest, PrometheusScrapesDispatcherAndWorkerAndAnswersAQuery) {
  const char* prometheus = PrometheusBinary();
  if (prometheus == nullptr) {
    GTEST_SKIP() << "Debian's prometheus is not installed (scripts/install_deps.sh "
                    "installs it): the scrape test cannot run";
  }
  Servers s;
  ASSERT_TRUE(s.worker);
  ASSERT_EQ(s.ReadJob(120), 120);
  TempDir dir;
  const int web_port = FreePort();
  WriteFile(dir.File("prometheus.yml"),
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
            "scrape_configs:\n"
            "  - job_name: sluice-dispatcher\n    static_configs:\n"
            "      - targets: ['127.0.0.1:" +
                std::to_string(s.dispatcher->metrics_port()) +
                "']\n"
                "  - job_name: sluice-worker\n    static_configs:\n"
                "      - targets: ['127.0.0.1:" +
                std::to_string(s.worker->metrics_port()) + "']\n");
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = open(dir.File("prometheus.log").c_str(), O_WRONLY | O_CREAT, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    const std::string config = "--config.file=" + dir.File("prometheus.yml");
    const std::string listen =
        "--web.listen-address=127.0.0.1:" + std::to_string(web_port);
    const std::string tsdb = "--storage.tsdb.path=" + dir.File("tsdb");
    execl(prometheus, prometheus, config.c_str(), listen.c_str(), tsdb.c_str(),
          "--log.level=warn", static_cast<char*>(nullptr));
    _exit(127);
  }
  ASSERT_GT(pid, 0);
  // Bounded wait: Prometheus starts, scrapes both targets (every second), and the
  // worker's counter comes back through /api/v1/query.
  double served = -1, workers = -1;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline && (served < 0 || workers < 0)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    for (auto [query, out] :
         {std::pair<const char*, double*>{"sluice_worker_elements_served_total", &served},
          {"sluice_dispatcher_workers", &workers}}) {
      const std::string body =
          Body(HttpGet(web_port, std::string("/api/v1/query?query=") + query));
      auto j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
      if (j.is_discarded() || j.value("status", "") != "success") continue;
      const auto& result = j["data"]["result"];
      if (!result.is_array() || result.empty()) continue;
      *out = std::stod(result[0]["value"][1].get<std::string>());
    }
  }
  kill(pid, SIGTERM);
  int status = 0;
  for (int i = 0; i < 100 && waitpid(pid, &status, WNOHANG) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (waitpid(pid, &status, WNOHANG) == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  EXPECT_EQ(served, 120) << testing::ReadFile(dir.File("prometheus.log"));
  EXPECT_EQ(workers, 1);
}

}  // namespace
}  // namespace sluice::service
