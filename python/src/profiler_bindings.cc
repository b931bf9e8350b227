// sluice.profiler's native side: sessions around sluice iterations, the event log that
// sluice.profiler.torch writes from each DataLoader process, perf counters, and the
// export of event files to a Chrome trace and a summary.
#include <pybind11/stl.h>
#include <unistd.h>

#include <fstream>
#include <memory>

#include "bindings.h"
#include "profiler/counters.h"
#include "profiler/recorder.h"
#include "sluice/profiler.h"

namespace py = pybind11;

namespace sluice {
namespace python {
namespace {

using profiler::Event;
using profiler::EventKind;

Status WriteFile(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  f.close();
  return f ? Status::OK() : InternalError("sluice.profiler: cannot write '" + path + "'");
}

// One process's events (a DataLoader worker's or the main process's): a Recorder not
// attached to iterators, fed by Python.
class EventLog {
 public:
  EventLog(const std::string& path, bool counters) {
    profiler::RecorderOptions o;
    o.counters = counters;
    recorder_ = std::make_unique<profiler::Recorder>(o);
    ThrowIfError(recorder_->Start(path));
  }
  int32_t Name(const std::string& op, const std::string& prefix) {
    return recorder_->InternName(op, prefix);
  }
  void Span(int32_t name, int64_t index, int64_t start, int64_t end, bool ok) {
    recorder_->Append(Event{
        start, end, index, name, EventKind::kSpan,
        static_cast<uint8_t>(ok ? profiler::kFlagProduced : profiler::kFlagError), 0});
  }
  void Batch(bool asked, int64_t batch, int64_t start, int64_t end) {
    recorder_->Append(Event{start, end, batch, -1,
                            asked ? EventKind::kAsked : EventKind::kReady,
                            profiler::kFlagProduced, 0});
  }
  void Close() {
    py::gil_scoped_release nogil;
    ThrowIfError(recorder_->Stop());
  }
  profiler::Recorder* recorder() { return recorder_.get(); }

 private:
  std::unique_ptr<profiler::Recorder> recorder_;
};

py::tuple Export(const std::vector<std::string>& paths, const std::string& trace,
                 const std::string& summary_json, const std::string& html) {
  Result<profiler::Summary> s = [&] {
    py::gil_scoped_release nogil;
    return profiler::ExportEventFiles(paths, trace);
  }();
  const profiler::Summary summary = ValueOrThrow(std::move(s));
  const std::string json = profiler::SummaryJson(summary);
  if (!summary_json.empty()) ThrowIfError(WriteFile(summary_json, json));
  if (!html.empty()) {
    ThrowIfError(WriteFile(html, profiler::SummaryHtml(summary, "sluice profile")));
  }
  return py::make_tuple(profiler::SummaryText(summary), json);
}

}  // namespace

void BindProfiler(py::module_& m) {
  py::class_<profiler::Session>(m, "_ProfilerSession")
      .def(py::init([](const std::string& trace, const std::string& sampling,
                       int64_t sample_every, bool counters,
                       const std::string& summary_json, const std::string& html) {
             profiler::ProfileOptions o;
             o.trace_path = trace;
             o.sampling = sampling == "batches" ? profiler::Sampling::kBatchesOnly
                          : sample_every > 1    ? profiler::Sampling::kOneInN
                                                : profiler::Sampling::kAll;
             o.sample_every = sample_every;
             o.counters = counters;
             o.summary_json_path = summary_json;
             o.html_path = html;
             o.attach_globally = true;
             return ValueOrThrow(profiler::Session::Start(o));
           }),
           py::arg("trace"), py::arg("sampling") = "all", py::arg("sample_every") = 1,
           py::arg("counters") = false, py::arg("summary_json") = "",
           py::arg("html") = "")
      .def(
          "stop",
          [](profiler::Session& s) {
            {
              py::gil_scoped_release nogil;
              ThrowIfError(s.Stop());
            }
            return py::make_tuple(profiler::SummaryText(s.summary()),
                                  profiler::SummaryJson(s.summary()));
          },
          "Stops recording, writes the files; returns (summary text, summary JSON).");

  py::class_<EventLog>(m, "_ProfilerEventLog")
      .def(py::init<const std::string&, bool>(), py::arg("path"),
           py::arg("counters") = false)
      .def("name", &EventLog::Name, py::arg("op"), py::arg("prefix"))
      .def("span", &EventLog::Span, py::arg("name"), py::arg("index"),
           py::arg("start_ns"), py::arg("end_ns"), py::arg("ok") = true)
      .def(
          "batch_asked",
          [](EventLog& l, int64_t b, int64_t s, int64_t e) { l.Batch(true, b, s, e); },
          py::arg("batch"), py::arg("asked_ns"), py::arg("taken_ns"))
      .def(
          "batch_ready",
          [](EventLog& l, int64_t b, int64_t s, int64_t e) { l.Batch(false, b, s, e); },
          py::arg("batch"), py::arg("start_ns"), py::arg("ready_ns"))
      .def("begin_counters", [](EventLog& l) { l.recorder()->BeginCounters(); })
      .def(
          "end_counters",
          [](EventLog& l, int32_t name, int64_t index, int64_t end_ns) {
            l.recorder()->EndCounters(name, index, end_ns);
          },
          py::arg("name"), py::arg("index"), py::arg("end_ns"))
      .def("close", &EventLog::Close);

  m.def("_profiler_export", &Export, py::arg("event_paths"), py::arg("trace") = "",
        py::arg("summary_json") = "", py::arg("html") = "",
        "Merges event files into a Chrome trace; returns (summary text, summary JSON).");

  m.def(
      "perf_counters",
      [] {
        // Counters of the calling thread over one read (a probe): which ones are
        // available.
        profiler::ThreadCounters c;
        ThrowIfError(c.Open());
        uint64_t v[profiler::kNumCounters];
        c.Read(v);
        py::dict d;
        for (int i = 0; i < profiler::kNumCounters; ++i) {
          if (i < profiler::kNumSoftwareCounters || c.hardware_available()) {
            d[profiler::kCounterNames[i]] = v[i];
          }
        }
        return d;
      },
      "This thread's perf_event_open counters (software always, hardware where "
      "exposed).");
  m.def("perf_hardware_unavailable_reason",
        [] { return profiler::ThreadCounters::HardwareUnavailableReason(); });
}

}  // namespace python
}  // namespace sluice
