// Held buffers under a hard RAM budget (runtime/memory_budget.h): each case runs in a
// child process (its peak RSS is its own) and the parent prints one JSON document.
//
//  shuffle          Range.Map(1 MiB).Shuffle(100000)        -> ResourceExhausted
//  cache            Range(2048).Map(1 MiB).Cache()           -> ResourceExhausted (2 GiB)
//  group_by_window  Range.Map(1 MiB).GroupByWindow(x % 2, 2048) -> ResourceExhausted
//  shuffle_fits     Range(2048).Map(1 MiB).Shuffle(512)      -> runs to the end
//  shuffle_small    Range(1M).Shuffle(1024) of int64 scalars, no rewrites, default
//                   budget: ns per element, best of 5 (the hot path of charging)
//
// The budget is Options.autotune.ram_budget = 1 GiB. Elements are filled (not zero pages,
// which would not count in RSS) and the recycled-buffer cache is off
// (SLUICE_BUFFER_CACHE_MB=0: it sits outside the budget). Each child reports the error,
// the elements it delivered, the budget's peak charged bytes and its baseline RSS; the
// parent adds the child's peak RSS (wait4 ru_maxrss) and checks
//   peak_rss <= budget + margin  and  peak charged bytes <= budget + margin,
//   margin = 64 MiB
// The margin covers the process before the pipeline (library, allocator arenas: about
// 10 MiB, reported as baseline_rss_bytes), the element in flight when the buffer failed
// and the one the map is producing (2 MiB), malloc's page per mmap'd element (4 KiB x
// 1024 elements = 4 MiB) and the held buffer's reservation slack (128 KiB).
//
//   ./build/memory_bench            all cases, JSON on stdout (exit 1 if a check fails)
//   ./build/memory_bench --case=X   one case, in this process (what the children run)
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "api/dataset_internal.h"
#include "sluice/dataset.h"

namespace sluice {
namespace {

constexpr int64_t kElem = int64_t{1} << 20;
constexpr int64_t kBudget = int64_t{1} << 30;
constexpr int64_t kMargin = int64_t{64} << 20;

int64_t VmKb(const char* key) {
  std::ifstream f("/proc/self/status");
  std::string k;
  int64_t kb = 0;
  std::string unit;
  while (f >> k) {
    if (k == key) {
      f >> kb;
      return kb;
    }
    std::getline(f, unit);
  }
  return -1;
}

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    out += c;
  }
  return out;
}

Function Big() {
  return Function::Map("big", [](Element e, FunctionContext&) -> Result<Element> {
    Tensor t = Tensor::Zeros(DType::kUInt8, Shape({kElem}));
    memset(t.mutable_data<uint8_t>(), static_cast<int>(e[0].scalar<int64_t>() | 1), kElem);
    return Element{e[0], std::move(t)};
  });
}

Options WithBudget() {
  Options o;
  o.autotune.ram_budget = kBudget;
  return o;
}

// Drains `ds`; prints {"status", "message", "elements", "peak_charged_bytes", ...}.
int RunPipeline(const Dataset& ds) {
  const int64_t baseline_kb = VmKb("VmRSS:");
  auto it = ds.WithOptions(WithBudget()).MakeIterator();
  if (!it.ok()) {
    std::printf("{\"status\": \"%s\"}\n", Escape(it.status().ToString()).c_str());
    return 1;
  }
  int64_t n = 0;
  Status error;
  while (true) {
    auto e = (*it)->GetNext();
    if (!e.ok()) {
      error = e.status();
      break;
    }
    if (!*e) break;
    ++n;
  }
  PipelineStats s = (*it)->Snapshot();
  std::printf(
      "{\"status\": \"%s\", \"message\": \"%s\", \"elements\": %lld, "
      "\"peak_charged_bytes\": %lld, \"ram_budget\": %lld, \"baseline_rss_bytes\": %lld, "
      "\"vm_hwm_bytes\": %lld, \"charged_within_budget_plus_margin\": %s}\n",
      error.ok() ? "OK" : std::string(StatusCodeName(error.code())).c_str(),
      Escape(error.message()).c_str(), static_cast<long long>(n),
      static_cast<long long>(s.peak_buffered_bytes), static_cast<long long>(s.ram_budget),
      static_cast<long long>(baseline_kb * 1024),
      static_cast<long long>(VmKb("VmHWM:") * 1024),
      s.peak_buffered_bytes <= kBudget + kMargin ? "true" : "false");
  return 0;
}

int ShuffleSmall() {
  constexpr int64_t kN = int64_t{1} << 20;
  double best = 1e30;
  int64_t sum = 0;
  for (int rep = 0; rep < 5; ++rep) {
    auto it = MakeIteratorAsBuilt(Dataset::Range(kN).Shuffle(1024, 1), {});
    if (!it.ok()) return 1;
    const auto t0 = std::chrono::steady_clock::now();
    while (true) {
      auto e = (*it)->GetNext();
      if (!e.ok() || !*e) break;
      sum += (**e)[0].scalar<int64_t>();
    }
    const double ns =
        std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0)
            .count() /
        kN;
    best = std::min(best, ns);
  }
  std::printf("{\"status\": \"OK\", \"ns_per_element\": %.2f, \"elements\": %lld, "
              "\"checksum\": %lld}\n",
              best, static_cast<long long>(kN), static_cast<long long>(sum));
  return 0;
}

int RunCase(const std::string& name) {
  Function key = Function::Map("mod2", [](Element e, FunctionContext&) -> Result<Element> {
    return Element{Tensor::Scalar<int64_t>(e[0].scalar<int64_t>() % 2)};
  });
  Function as_is = Function::DatasetFunction(
      "as_is", [](Element, FunctionContext& ctx) -> Result<Dataset> { return *ctx.window(); });
  if (name == "shuffle") return RunPipeline(Dataset::Range(200000).Map(Big()).Shuffle(100000, 1));
  if (name == "cache") return RunPipeline(Dataset::Range(2048).Map(Big()).Cache());
  if (name == "group_by_window") {
    return RunPipeline(Dataset::Range(8192).Map(Big()).GroupByWindow(key, as_is, 2048));
  }
  if (name == "shuffle_fits") return RunPipeline(Dataset::Range(2048).Map(Big()).Shuffle(512, 1));
  if (name == "shuffle_small") return ShuffleSmall();
  std::fprintf(stderr, "unknown case %s\n", name.c_str());
  return 2;
}

struct Child {
  std::string json;
  int64_t max_rss_bytes = -1;
  int exit_code = -1;
};

// Runs `self --case=name` with the buffer cache off; its stdout and its rusage.
Child Spawn(const char* self, const std::string& name) {
  Child c;
  int fds[2];
  if (pipe(fds) != 0) return c;
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    setenv("SLUICE_BUFFER_CACHE_MB", "0", 1);
    const std::string arg = "--case=" + name;
    execl(self, self, arg.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  char buf[4096];
  ssize_t k;
  while ((k = read(fds[0], buf, sizeof(buf))) > 0) c.json.append(buf, static_cast<size_t>(k));
  close(fds[0]);
  int status = 0;
  rusage ru{};
  wait4(pid, &status, 0, &ru);
  c.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  c.max_rss_bytes = static_cast<int64_t>(ru.ru_maxrss) * 1024;
  while (!c.json.empty() && (c.json.back() == '\n' || c.json.back() == ' ')) c.json.pop_back();
  return c;
}

}  // namespace
}  // namespace sluice

int main(int argc, char** argv) {
  using namespace sluice;
  for (int i = 1; i < argc; ++i) {
    if (strncmp(argv[i], "--case=", 7) == 0) return RunCase(argv[i] + 7);
  }
  struct Expect {
    const char* name;
    bool must_fail;
  };
  const Expect cases[] = {{"shuffle", true},
                          {"cache", true},
                          {"group_by_window", true},
                          {"shuffle_fits", false},
                          {"shuffle_small", false}};
  bool all_ok = true;
  std::printf("{\"budget_bytes\": %lld, \"margin_bytes\": %lld, \"cases\": [\n",
              static_cast<long long>(kBudget), static_cast<long long>(kMargin));
  for (size_t i = 0; i < std::size(cases); ++i) {
    Child c = Spawn("/proc/self/exe", cases[i].name);
    const bool exhausted = c.json.find("\"ResourceExhausted\"") != std::string::npos;
    const bool ran = c.json.find("\"status\": \"OK\"") != std::string::npos;
    const bool rss_ok = c.max_rss_bytes <= kBudget + kMargin;
    const bool charged_ok =
        c.json.find("\"charged_within_budget_plus_margin\": false") == std::string::npos;
    const bool ok =
        c.exit_code == 0 && rss_ok && charged_ok && (cases[i].must_fail ? exhausted : ran);
    all_ok = all_ok && ok;
    std::printf("  {\"case\": \"%s\", \"child\": %s, \"peak_rss_bytes\": %lld, "
                "\"rss_within_budget_plus_margin\": %s, \"exit_code\": %d, \"pass\": %s}%s\n",
                cases[i].name, c.json.empty() ? "null" : c.json.c_str(),
                static_cast<long long>(c.max_rss_bytes), rss_ok ? "true" : "false",
                c.exit_code, ok ? "true" : "false", i + 1 < std::size(cases) ? "," : "");
    std::fflush(stdout);
  }
  std::printf("], \"pass\": %s}\n", all_ok ? "true" : "false");
  return all_ok ? 0 : 1;
}
