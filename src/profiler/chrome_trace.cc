// Chrome Trace Event JSON (the "JSON Array/Object Format"): complete events ("X") per
// span on a track per thread, flow events ("s"/"f") from batch ready to batch taken,
// counter events ("C") for batch wait/delay and for perf counters, sorted per track.
#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "profiler/analysis.h"

namespace sluice::profiler {
namespace {

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

struct Out {
  uint32_t pid;
  uint32_t tid;
  int64_t ts_ns;  // relative to the origin
  int order;      // at equal times: slices before flows
  std::string json;
};

std::string Us(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%" PRId64 ".%03" PRId64, ns / 1000, ns % 1000);
  return buf;
}

}  // namespace

Status WriteChromeTrace(const Analysis& a, const std::string& path) {
  const EventLog& log = a.log;
  std::vector<Out> outs;
  auto rel = [&a](int64_t t) { return std::max<int64_t>(t - a.origin_ns, 0); };
  auto thread = [&log](int32_t t) { return log.threads[t]; };
  for (const SpanRecord& s : a.spans) {
    const ThreadInfo& t = thread(s.thread);
    const NameInfo* n = s.name >= 0 ? &log.names[s.name] : nullptr;
    std::string j =
        "{\"ph\":\"X\",\"cat\":\"op\",\"name\":\"" + Escape(n != nullptr ? n->op : "?") +
        "\",\"pid\":" + std::to_string(t.pid) + ",\"tid\":" + std::to_string(t.tid) +
        ",\"ts\":" + Us(rel(s.start_ns)) + ",\"dur\":" + Us(s.end_ns - s.start_ns) +
        ",\"args\":{\"prefix\":\"" + Escape(n != nullptr ? n->prefix : "") +
        "\",\"index\":" + std::to_string(s.index) + ",\"self_us\":" + Us(s.self_ns) +
        "}}";
    outs.push_back({t.pid, t.tid, rel(s.start_ns), 0, std::move(j)});
  }
  // Explicit batch events (sluice.profiler.torch) become slices of their own.
  for (const LoadedEvent& le : log.events) {
    const Event& e = le.e;
    if (e.kind != EventKind::kAsked && e.kind != EventKind::kReady) continue;
    const ThreadInfo& t = thread(le.thread);
    const std::string name =
        (e.kind == EventKind::kAsked ? "wait for batch " : "batch ") +
        std::to_string(e.index);
    std::string j =
        "{\"ph\":\"X\",\"cat\":\"batch\",\"name\":\"" + name +
        "\",\"pid\":" + std::to_string(t.pid) + ",\"tid\":" + std::to_string(t.tid) +
        ",\"ts\":" + Us(rel(e.start_ns)) + ",\"dur\":" + Us(e.end_ns - e.start_ns) +
        ",\"args\":{\"batch\":" + std::to_string(e.index) + "}}";
    outs.push_back({t.pid, t.tid, rel(e.start_ns), 0, std::move(j)});
  }
  // Flows: inside the production slice just before it ends, into the consumer's slice
  // just before it ends.
  int64_t flow_id = 0;
  for (const BatchRecord& b : a.batches) {
    if (!b.complete() || b.producer_thread < 0 || b.consumer_thread < 0) continue;
    ++flow_id;
    const ThreadInfo& p = thread(b.producer_thread);
    const ThreadInfo& c = thread(b.consumer_thread);
    const int64_t s_ts = std::max(rel(b.ready_ns) - 1, rel(b.produce_start_ns));
    const int64_t f_ts = std::max(rel(b.taken_ns) - 1, rel(b.asked_ns));
    const std::string common = "\"cat\":\"batch\",\"name\":\"batch " +
                               std::to_string(b.index) +
                               "\",\"id\":" + std::to_string(flow_id);
    outs.push_back({p.pid, p.tid, s_ts, 1,
                    "{\"ph\":\"s\"," + common + ",\"pid\":" + std::to_string(p.pid) +
                        ",\"tid\":" + std::to_string(p.tid) + ",\"ts\":" + Us(s_ts) +
                        "}"});
    outs.push_back(
        {c.pid, c.tid, f_ts, 1,
         "{\"ph\":\"f\",\"bp\":\"e\"," + common + ",\"pid\":" + std::to_string(c.pid) +
             ",\"tid\":" + std::to_string(c.tid) + ",\"ts\":" + Us(f_ts) + "}"});
    const int64_t wait = b.taken_ns - b.asked_ns;
    const int64_t delay = std::max<int64_t>(b.taken_ns - b.ready_ns, 0);
    outs.push_back({c.pid, c.tid, rel(b.taken_ns), 2,
                    "{\"ph\":\"C\",\"name\":\"batch wait and delay (us)\",\"pid\":" +
                        std::to_string(c.pid) + ",\"tid\":" + std::to_string(c.tid) +
                        ",\"ts\":" + Us(rel(b.taken_ns)) + ",\"args\":{\"wait\":" +
                        Us(wait) + ",\"delay\":" + Us(delay) + "}}"});
  }
  // Counters: a running total per process and counter, at the end of each span.
  std::vector<const LoadedEvent*> counter_events;
  for (const LoadedEvent& le : log.events) {
    if (le.e.kind == EventKind::kCounter && le.e.aux < kNumCounters) {
      counter_events.push_back(&le);
    }
  }
  std::stable_sort(counter_events.begin(), counter_events.end(),
                   [](const LoadedEvent* x, const LoadedEvent* y) {
                     return x->e.start_ns < y->e.start_ns;
                   });
  std::map<std::pair<uint32_t, int>, int64_t> running;
  for (const LoadedEvent* le : counter_events) {
    const ThreadInfo& t = thread(le->thread);
    int64_t& v = running[{t.pid, le->e.aux}];
    v += le->e.end_ns;
    outs.push_back({t.pid, t.tid, rel(le->e.start_ns), 3,
                    "{\"ph\":\"C\",\"name\":\"" + std::string(kCounterNames[le->e.aux]) +
                        "\",\"pid\":" + std::to_string(t.pid) + ",\"tid\":" +
                        std::to_string(t.tid) + ",\"ts\":" + Us(rel(le->e.start_ns)) +
                        ",\"args\":{\"value\":" + std::to_string(v) + "}}"});
  }
  std::stable_sort(outs.begin(), outs.end(), [](const Out& x, const Out& y) {
    return std::tie(x.pid, x.tid, x.ts_ns, x.order) <
           std::tie(y.pid, y.tid, y.ts_ns, y.order);
  });

  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return ErrnoToStatus(errno, "profiler: cannot create trace", path);
  std::fputs(
      "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"sluice profiler\"},"
      "\"traceEvents\":[\n",
      f);
  bool first = true;
  auto put = [&](const std::string& j) {
    if (!first) std::fputs(",\n", f);
    first = false;
    std::fputs(j.c_str(), f);
  };
  std::map<uint32_t, bool> pids;
  for (const ThreadInfo& t : log.threads) pids[t.pid] = true;
  for (const auto& [pid, unused] : pids) {
    put("{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" + std::to_string(pid) +
        ",\"tid\":0,\"args\":{\"name\":\"sluice pid " + std::to_string(pid) + "\"}}");
  }
  for (const ThreadInfo& t : log.threads) {
    const std::string name = t.name.empty() ? "thread " + std::to_string(t.tid) : t.name;
    put("{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" + std::to_string(t.pid) +
        ",\"tid\":" + std::to_string(t.tid) + ",\"args\":{\"name\":\"" + Escape(name) +
        "\"}}");
  }
  for (const Out& o : outs) put(o.json);
  std::fputs("\n]}\n", f);
  const bool bad = std::ferror(f) != 0;
  if (std::fclose(f) != 0 || bad) {
    return ErrnoToStatus(errno, "profiler: cannot write trace", path);
  }
  return Status::OK();
}

}  // namespace sluice::profiler
