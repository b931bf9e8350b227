// `sluice cluster`: a dispatcher and workers as child processes of one command; a client
// reads a job from them, SIGTERM stops them all and leaves no process behind.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "service/tsan_suppressions.h"
#include "sluice/dataset.h"
#include "sluice/service.h"
#include "testing/conformance.h"

namespace sluice::service {
namespace {

using testing::SluiceBinary;
using testing::TempDir;

bool Alive(pid_t pid) { return kill(pid, 0) == 0; }

// GET http://127.0.0.1:port/metrics, the body ("" on failure).
std::string Scrape(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  std::string out;
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0) {
    const std::string req = "GET /metrics HTTP/1.0\r\n\r\n";
    (void)!write(fd, req.data(), req.size());
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  const size_t p = out.find("\r\n\r\n");
  return p == std::string::npos ? "" : out.substr(p + 4);
}

// The sum of a family's samples in a /metrics body.
double Sum(const std::string& body, const std::string& family) {
  double sum = 0;
  std::istringstream in(body);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(family + "{", 0) == 0 || line.rfind(family + " ", 0) == 0) {
      sum += std::stod(line.substr(line.rfind(' ') + 1));
    }
  }
  return sum;
}

// Starts `sluice cluster args...` with stdout / stderr to files; returns its pid and the
// start-up JSON line (null when none came within 30 s).
pid_t StartCluster(const TempDir& dir, std::vector<std::string> args,
                   nlohmann::json* info) {
  const std::string out = dir.File("cluster.json");
  const std::string err = dir.File("cluster.err");
  args.insert(args.begin(), {SluiceBinary(), "cluster"});
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int efd = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(efd, 2);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  for (int i = 0; i < 600 && pid > 0 && info->is_null(); ++i) {  // bounded: 30 s
    std::ifstream f(out);
    std::string line;
    if (std::getline(f, line) && !f.eof())
      *info = nlohmann::json::parse(line, nullptr, false);
    if (info->is_null()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return pid;
}

// SIGTERM, then waits (bounded) for the exit status; SIGKILL if it does not come.
bool StopCluster(pid_t pid, int* status) {
  kill(pid, SIGTERM);
  for (int i = 0; i < 300; ++i) {  // bounded: 15 s
    if (waitpid(pid, status, WNOHANG) == pid) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  kill(pid, SIGKILL);
  waitpid(pid, status, 0);
  return false;
}

TEST(ClusterTest, StartsWorkersServesAJobAndStopsEverythingOnSigterm) {
  TempDir dir;
  const std::string out = dir.File("cluster.json");
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    const std::string bin = SluiceBinary();
    execl(bin.c_str(), bin.c_str(), "cluster", "--workers", "2", "--json", "--metrics",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  ASSERT_GT(pid, 0);
  nlohmann::json info;
  for (int i = 0; i < 600 && info.is_null(); ++i) {  // bounded: 30 s
    std::ifstream f(out);
    std::string line;
    if (std::getline(f, line) && !f.eof())
      info = nlohmann::json::parse(line, nullptr, false);
    if (info.is_null()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(info.is_object()) << "no start-up line from sluice cluster";
  ASSERT_EQ(info["workers"].size(), 2u) << info.dump();
  std::vector<pid_t> children = {info["dispatcher_pid"].get<pid_t>()};
  for (const auto& w : info["workers"]) {
    children.push_back(w["pid"].get<pid_t>());
    EXPECT_GT(w["metrics_port"].get<int>(), 0);
  }
  for (pid_t c : children) EXPECT_TRUE(Alive(c)) << c;

  DistributeOptions o;
  o.service = info["dispatcher"].get<std::string>();
  o.worker_timeout_ms = 20000;
  auto all = Distribute(Dataset::Range(500), o).Collect();
  ASSERT_TRUE(all.ok()) << all.status();
  std::set<int64_t> seen;
  for (const Element& e : *all) seen.insert(testing::IntOf(e));
  EXPECT_EQ(seen.size(), 500u);
  EXPECT_EQ(all->size(), 500u);
  // Over the network this time: the workers' counters add up to the job.
  double served = 0, wire = 0;
  for (const auto& w : info["workers"]) {
    const std::string body = Scrape(w["metrics_port"].get<int>());
    served += Sum(body, "sluice_worker_elements_served_total");
    wire += Sum(body, "sluice_worker_wire_bytes_sent_total");
  }
  EXPECT_EQ(served, 500);
  EXPECT_GT(wire, 0);

  ASSERT_EQ(kill(pid, SIGTERM), 0);
  int status = 0;
  bool exited = false;
  for (int i = 0; i < 300 && !exited; ++i) {  // bounded: 15 s
    exited = waitpid(pid, &status, WNOHANG) == pid;
    if (!exited) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (!exited) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  ASSERT_TRUE(exited) << "sluice cluster did not stop on SIGTERM";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  // The cluster reaped its children before exiting: none is left.
  for (pid_t c : children) EXPECT_FALSE(Alive(c)) << "orphan " << c;
  // Its own temporary work directory is gone too.
  EXPECT_NE(access(info["work_dir"].get<std::string>().c_str(), F_OK), 0);
}

// The security and log flags pass through to the children: a token-protected cluster
// refuses an anonymous client and serves one with the token; every log line is JSON.
TEST(ClusterTest, TokenAndJsonLogsPassThrough) {
  TempDir dir;
  testing::WriteFile(dir.File("token"), "cluster-token\n");
  nlohmann::json info;
  const pid_t pid = StartCluster(dir,
                                 {"--workers", "1", "--json", "--log-format", "json",
                                  "--auth-token-file", dir.File("token")},
                                 &info);
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(info.is_object()) << "no start-up line from sluice cluster";
  DistributeOptions o;
  o.service = info["dispatcher"].get<std::string>();
  auto anonymous = Distribute(Dataset::Range(100), o).Collect();
  EXPECT_EQ(anonymous.status().code(), StatusCode::kUnauthenticated)
      << anonymous.status();
  o.security.auth_token_file = dir.File("token");
  auto all = Distribute(Dataset::Range(100), o).Collect();
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->size(), 100u);
  int status = 0;
  ASSERT_TRUE(StopCluster(pid, &status));
  std::ifstream err(dir.File("cluster.err"));
  int lines = 0;
  std::set<std::string> components;
  for (std::string line; std::getline(err, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    ASSERT_TRUE(j.is_object()) << "not a JSON line: " << line;
    EXPECT_TRUE(j.contains("ts") && j.contains("level") && j.contains("msg")) << line;
    components.insert(j.value("component", ""));
    ++lines;
  }
  EXPECT_GE(lines, 2);
  EXPECT_EQ(components, (std::set<std::string>{"dispatcher", "worker"}));
}

}  // namespace
}  // namespace sluice::service
