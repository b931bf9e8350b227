#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <memory>
#include <vector>

#include "core/mutex.h"
#include "profiler/analysis.h"
#include "profiler/recorder.h"
#include "sluice/profiler.h"

namespace sluice::profiler {
namespace {

std::atomic<bool> global_session_running{false};

Status WriteText(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  f.close();
  if (!f) return InternalError("profiler: cannot write '" + path + "'");
  return Status::OK();
}

}  // namespace

struct Session::Impl {
  ProfileOptions options;
  std::string events_path;
  Recorder* recorder = nullptr;  // owned; a global one is retired, not deleted
  bool running = false;
  Summary summary;
};

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

namespace {
// A global session's recorder outlives it: iterators made while it ran keep a pointer
// to it (a stopped recorder ignores their spans). Kept here rather than dropped, so the
// memory stays reachable (and leak checkers see it is meant to stay).
void RetireGlobalRecorder(Recorder* r) {
  static Mutex mu;
  static auto* retired = new std::vector<std::unique_ptr<Recorder>>();
  MutexLock l(&mu);
  retired->emplace_back(r);
}
}  // namespace

Session::~Session() {
  if (impl_->running) (void)Stop();
  if (impl_->options.attach_globally) {
    RetireGlobalRecorder(impl_->recorder);
  } else {
    delete impl_->recorder;
  }
}

Result<std::unique_ptr<Session>> Session::Start(const ProfileOptions& options) {
  if (options.sample_every < 1) {
    return InvalidArgumentError("profiler: sample_every must be >= 1, got " +
                                std::to_string(options.sample_every));
  }
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  if (!options.trace_path.empty()) {
    impl->events_path = options.trace_path + ".events";
  } else {
    char tmpl[] = "/tmp/sluice-profile-XXXXXX";
    const int fd = mkstemp(tmpl);
    if (fd < 0) return InternalError("profiler: cannot create a temporary event file");
    close(fd);
    impl->events_path = tmpl;
  }
  if (options.attach_globally && global_session_running.exchange(true)) {
    return FailedPreconditionError(
        "profiler: a global profiling session is already running");
  }
  RecorderOptions ro;
  ro.sampling = options.sampling;
  ro.sample_every = options.sample_every;
  ro.counters = options.counters;
  impl->recorder = new Recorder(ro);
  Status st = impl->recorder->Start(impl->events_path);
  if (!st.ok()) {
    delete impl->recorder;
    if (options.attach_globally) global_session_running.store(false);
    return st;
  }
  if (options.attach_globally) SetGlobalSpanRecorder(impl->recorder);
  impl->running = true;
  return std::unique_ptr<Session>(new Session(std::move(impl)));
}

SpanRecorder* Session::recorder() { return impl_->recorder; }

Status Session::Stop() {
  if (!impl_->running) return Status::OK();
  impl_->running = false;
  if (impl_->options.attach_globally) {
    SetGlobalSpanRecorder(nullptr);
    global_session_running.store(false);
  }
  SLUICE_RETURN_IF_ERROR(impl_->recorder->Stop());
  Result<Summary> s = ExportEventFiles({impl_->events_path}, impl_->options.trace_path);
  if (!impl_->options.keep_events) std::remove(impl_->events_path.c_str());
  if (!s.ok()) return s.status();
  impl_->summary = std::move(*s);
  if (!impl_->options.summary_json_path.empty()) {
    SLUICE_RETURN_IF_ERROR(
        WriteText(impl_->options.summary_json_path, SummaryJson(impl_->summary)));
  }
  if (!impl_->options.html_path.empty()) {
    SLUICE_RETURN_IF_ERROR(WriteText(impl_->options.html_path,
                                     SummaryHtml(impl_->summary, "sluice profile")));
  }
  return Status::OK();
}

const Summary& Session::summary() const { return impl_->summary; }

Result<Summary> ExportEventFiles(const std::vector<std::string>& event_paths,
                                 const std::string& trace_path) {
  EventLog log;
  for (const std::string& p : event_paths) SLUICE_RETURN_IF_ERROR(ReadEventFile(p, &log));
  Analysis a = Analyze(std::move(log));
  if (!trace_path.empty()) SLUICE_RETURN_IF_ERROR(WriteChromeTrace(a, trace_path));
  return std::move(a.summary);
}

}  // namespace sluice::profiler
