// sluice.plumber: the bottleneck doctor from Python (python/sluice/plumber.py wraps these).
// Tracing runs the pipeline, whose Python functions need the GIL on pipeline threads: every
// call here releases it while the native side works.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bindings.h"
#include "sluice/plumber.h"

namespace py = pybind11;

namespace sluice {
namespace python {
namespace {

plumber::OptimizeOptions MakeOptions(double seconds, double warmup, int64_t cores,
                                     int64_t ram_budget, double cpu_availability = 0) {
  plumber::OptimizeOptions o;
  o.trace.seconds = seconds;
  o.trace.warmup_seconds = warmup;
  o.trace.cpu_budget = cores;
  o.plan.cores = cores;
  o.plan.ram_budget = ram_budget;
  o.plan.cpu_availability = cpu_availability;
  return o;
}

// {"text", "json", "html"} of a trace's analysis and plan; optionally the rewritten dataset.
py::dict Diagnose(const plumber::Trace& trace, const plumber::PlanOptions& po,
                  const Dataset* ds) {
  Result<plumber::Analysis> a = [&] {
    py::gil_scoped_release release;
    return plumber::Analyze(trace);
  }();
  plumber::Analysis analysis = ValueOrThrow(std::move(a));
  plumber::Plan plan = ValueOrThrow(plumber::MakePlan(analysis, po));
  py::dict d;
  d["text"] = plumber::ReportText(analysis, plan);
  d["json"] = plumber::ReportJson(analysis, plan);
  d["html"] = plumber::ReportHtml(analysis, plan);
  if (ds != nullptr) d["dataset"] = ValueOrThrow(plumber::ApplyPlan(*ds, plan));
  return d;
}

}  // namespace

void BindPlumber(py::module_& m) {
  m.def(
      "plumber_optimize",
      [](const Dataset& ds, double seconds, double warmup, int64_t cores, int64_t ram_budget) {
        Result<Dataset> r = [&] {
          py::gil_scoped_release release;
          return plumber::Optimize(ds, MakeOptions(seconds, warmup, cores, ram_budget));
        }();
        return ValueOrThrow(std::move(r));
      },
      py::arg("ds"), py::arg("seconds"), py::arg("warmup"), py::arg("cores"),
      py::arg("ram_budget"));
  m.def(
      "plumber_diagnose",
      [](const Dataset& ds, double seconds, double warmup, int64_t cores, int64_t ram_budget,
         std::string save_trace, double cpu_availability) {
        plumber::OptimizeOptions o =
            MakeOptions(seconds, warmup, cores, ram_budget, cpu_availability);
        Result<plumber::Trace> t = [&] {
          py::gil_scoped_release release;
          return plumber::TracePipeline(ds, o.trace);
        }();
        plumber::Trace trace = ValueOrThrow(std::move(t));
        if (!save_trace.empty()) ThrowIfError(plumber::SaveTrace(trace, save_trace));
        return Diagnose(trace, o.plan, &ds);
      },
      py::arg("ds"), py::arg("seconds"), py::arg("warmup"), py::arg("cores"),
      py::arg("ram_budget"), py::arg("save_trace"), py::arg("cpu_availability"));
  m.def(
      "plumber_diagnose_trace",
      [](std::string path, int64_t cores, int64_t ram_budget) {
        plumber::Trace trace = ValueOrThrow(plumber::LoadTrace(path));
        plumber::PlanOptions po;
        po.cores = cores;
        po.ram_budget = ram_budget;
        return Diagnose(trace, po, nullptr);
      },
      py::arg("path"), py::arg("cores"), py::arg("ram_budget"));
  m.def(
      "plumber_measure",
      [](const Dataset& ds, double seconds, double warmup, int64_t cores) {
        Result<double> r = [&] {
          py::gil_scoped_release release;
          return plumber::MeasureThroughput(ds, seconds, warmup, cores);
        }();
        return ValueOrThrow(std::move(r));
      },
      py::arg("ds"), py::arg("seconds"), py::arg("warmup"), py::arg("cores"));
}

}  // namespace python
}  // namespace sluice
