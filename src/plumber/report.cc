// Reports of an analysis and its plan: text for people, JSON for machines, and a
// self-contained HTML page with inline SVG charts.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "sluice/plumber.h"

namespace sluice::plumber {
namespace {

using json = nlohmann::json;

std::string Fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

double Finite(double v) { return std::isfinite(v) ? v : -1; }

std::string Escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '&': o += "&amp;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

// A horizontal bar chart: one labelled bar per row, scaled to the largest value.
std::string BarChart(const std::string& id, const std::string& title,
                     const std::vector<std::pair<std::string, double>>& rows,
                     const std::string& unit, bool log_scale) {
  const int w = 900, row_h = 24, left = 240, top = 30;
  const int h = top + row_h * static_cast<int>(rows.size()) + 20;
  double maxv = 1e-9;
  for (const auto& [l, v] : rows) {
    if (std::isfinite(v)) maxv = std::max(maxv, v);
  }
  auto scale = [&](double v) {
    if (!std::isfinite(v)) v = maxv;
    if (log_scale) return (w - left - 150) * std::log10(1 + v) / std::log10(1 + maxv);
    return (w - left - 150) * v / maxv;
  };
  std::ostringstream s;
  s << "<svg id=\"" << id << "\" class=\"chart\" width=\"" << w << "\" height=\"" << h
    << "\" xmlns=\"http://www.w3.org/2000/svg\"><text x=\"4\" y=\"18\" class=\"t\">"
    << Escape(title) << "</text>";
  int y = top;
  for (const auto& [label, v] : rows) {
    const double bw = std::max(1.0, scale(v));
    s << "<text x=\"" << left - 6 << "\" y=\"" << y + 16 << "\" text-anchor=\"end\">"
      << Escape(label) << "</text><rect x=\"" << left << "\" y=\"" << y + 3 << "\" width=\""
      << bw << "\" height=\"" << row_h - 6 << "\" fill=\"#3b7dd8\"/><text x=\""
      << left + bw + 4 << "\" y=\"" << y + 16 << "\">"
      << (std::isfinite(v) ? Fmt("%.4g", v) : std::string("unbounded")) << " " << unit
      << "</text>";
    y += row_h;
  }
  s << "</svg>";
  return s.str();
}

}  // namespace

std::string ReportText(const Analysis& a, const Plan& p) {
  std::ostringstream s;
  s << "Pipeline: " << Fmt("%.4g", a.root_elements_per_second)
    << " elements/s measured over " << Fmt("%.2f", a.trace.duration_ns / 1e9) << " s on "
    << a.trace.machine.cores << " cores (CPU " << Fmt("%.0f", 100 * a.cpu_utilization)
    << "% used, disk " << Fmt("%.0f", 100 * a.disk_utilization) << "% of its bandwidth).\n";
  s << "Predicted after the plan: " << Fmt("%.4g", p.predicted_rate) << " elements/s ("
    << Fmt("%.3g", p.predicted_rate / std::max(a.root_elements_per_second, 1e-9))
    << "x).\n\nBottlenecks, tightest first:\n";
  int k = 1;
  for (const Bottleneck& b : p.bottlenecks) {
    s << "  " << k++ << ". [" << b.kind << "] " << b.text << "\n";
  }
  s << "\nPlan:\n";
  for (const NodePlan& n : p.nodes) {
    if (n.parallelism > 0) {
      s << "  " << a.nodes[n.id].name << " #" << n.id << ": parallelism " << n.parallelism
        << " (theta " << Fmt("%.2f", n.theta) << ")\n";
    }
  }
  for (int64_t c : p.cache_nodes) {
    s << "  cache after " << a.nodes[c].name << " #" << c << " ("
      << Fmt("%.3g", a.nodes[c].materialized_bytes / 1048576.0) << " MiB of a "
      << Fmt("%.3g", p.ram_budget / 1048576.0) << " MiB budget): from "
      << Fmt("%.4g", p.predicted_rate_no_cache) << " to " << Fmt("%.4g", p.predicted_rate)
      << " elements/s once the first pass has filled it\n";
  }
  if (p.prefetch > 0) s << "  prefetch " << p.prefetch << " at the output\n";
  s << "\nWhat if:\n";
  for (const auto& w : p.what_ifs) {
    s << "  " << w.question << ": " << Fmt("%.4g", w.rate) << " elements/s";
    if (!w.bound.empty()) s << " (bound: " << w.bound << ")";
    s << "\n";
  }
  s << "\nNodes (id, name, visit ratio, CPU us/element, rate/core, bytes/element, "
       "materialized MiB, flags):\n";
  for (const NodeAnalysis& n : a.nodes) {
    s << "  #" << n.id << " " << n.name << "  v=" << Fmt("%.3g", n.visit_ratio)
      << "  cpu=" << Fmt("%.3g", n.cpu_ns_per_root / 1e3) << "us  R="
      << (std::isfinite(n.rate_per_core) ? Fmt("%.4g", n.rate_per_core) : "inf")
      << "  b=" << Fmt("%.4g", n.bytes_per_element) << "  size="
      << (n.materialized_bytes >= 0 ? Fmt("%.4g", n.materialized_bytes / 1048576.0) : "?")
      << (n.sequential ? "  sequential" : "") << (n.gil ? " gil" : "")
      << (n.random_at_or_below ? "  random-below" : "") << (n.cacheable ? "  cacheable" : "")
      << "\n";
  }
  s << "Framework: " << Fmt("%.3g", a.framework_ns_per_root / 1e3)
    << "us of CPU per element outside the operators; one handoff between threads "
    << Fmt("%.3g", a.trace.machine.handoff_ns / 1e3) << "us.\n";
  return s.str();
}

std::string ReportJson(const Analysis& a, const Plan& p, int indent) {
  json j;
  j["measured_rate"] = a.root_elements_per_second;
  j["predicted_rate"] = p.predicted_rate;
  j["predicted_rate_no_cache"] = p.predicted_rate_no_cache;
  j["cpu_bound"] = Finite(p.cpu_bound);
  j["disk_bound"] = Finite(p.disk_bound);
  j["cores"] = a.trace.machine.cores;
  j["cpu_utilization"] = a.cpu_utilization;
  j["disk_utilization"] = a.disk_utilization;
  j["disk_bytes_per_element"] = a.disk_bytes_per_root;
  j["framework_ns_per_element"] = a.framework_ns_per_root;
  j["consumer_wait_fraction"] = a.consumer_wait_fraction;
  j["seen_fraction"] = a.seen_fraction;
  j["machine"] = {{"sequential_read_bps", a.trace.machine.sequential_read_bps},
                  {"parallel_read_bps", a.trace.machine.parallel_read_bps},
                  {"memory_bytes", a.trace.machine.memory_bytes}};
  j["bottlenecks"] = json::array();
  for (const Bottleneck& b : p.bottlenecks) {
    j["bottlenecks"].push_back(
        {{"kind", b.kind}, {"node", b.node}, {"text", b.text}, {"bound", Finite(b.bound)}});
  }
  j["plan"] = {{"cache_nodes", p.cache_nodes},
               {"cache_bytes", p.cache_bytes},
               {"ram_budget", p.ram_budget},
               {"prefetch", p.prefetch}};
  j["nodes"] = json::array();
  for (const NodeAnalysis& n : a.nodes) {
    const NodePlan& np = p.nodes[n.id];
    j["nodes"].push_back({{"id", n.id},
                          {"name", n.name},
                          {"visit_ratio", n.visit_ratio},
                          {"cpu_ns_per_element", n.cpu_ns_per_root},
                          {"rate_per_core", Finite(n.rate_per_core)},
                          {"utilization", n.utilization},
                          {"bytes_per_element", n.bytes_per_element},
                          {"cardinality", n.cardinality},
                          {"materialized_bytes", n.materialized_bytes},
                          {"sequential", n.sequential},
                          {"gil", n.gil},
                          {"random_at_or_below", n.random_at_or_below},
                          {"cacheable", n.cacheable},
                          {"theta", np.theta},
                          {"parallelism", np.parallelism}});
  }
  j["what_ifs"] = json::array();
  for (const auto& w : p.what_ifs) {
    j["what_ifs"].push_back({{"question", w.question}, {"rate", w.rate}, {"bound", w.bound}});
  }
  return j.dump(indent);
}

std::string ReportHtml(const Analysis& a, const Plan& p, double measured_after) {
  std::vector<std::pair<std::string, double>> rates;
  for (const NodeAnalysis& n : a.nodes) {
    if (n.cpu_ns_per_root > 0) rates.push_back({"#" + std::to_string(n.id) + " " + n.name,
                                                n.rate_per_core});
  }
  std::vector<std::pair<std::string, double>> bounds;
  for (const Bottleneck& b : p.bottlenecks) {
    bounds.push_back({b.kind + (b.node >= 0 ? " (#" + std::to_string(b.node) + ")" : ""),
                      b.bound});
  }
  bounds.push_back({"plan (LP optimum)", p.predicted_rate});
  std::vector<std::pair<std::string, double>> pvm = {
      {"measured before", a.root_elements_per_second},
      {"predicted after", p.predicted_rate}};
  if (measured_after > 0) pvm.push_back({"measured after", measured_after});
  for (const auto& w : p.what_ifs) pvm.push_back({"what if: " + w.question, w.rate});

  std::ostringstream s;
  s << "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>sluice plumber report"
       "</title><style>body{font:14px sans-serif;margin:20px;color:#222}"
       "svg text{font:12px sans-serif}.t{font-weight:bold}li{margin:4px 0}"
       "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px}"
       "</style></head><body><h1>Bottleneck report</h1><p>Measured "
    << Fmt("%.4g", a.root_elements_per_second) << " elements/s on " << a.trace.machine.cores
    << " cores; predicted after the plan: <b>" << Fmt("%.4g", p.predicted_rate)
    << "</b> elements/s.</p><h2>Bottlenecks, tightest first</h2><ol>";
  for (const Bottleneck& b : p.bottlenecks) {
    s << "<li><b>" << Escape(b.kind) << "</b>: " << Escape(b.text) << "</li>";
  }
  s << "</ol><h2>Charts</h2>"
    << BarChart("rates", "Per-node rate (root elements/s per core, log scale)", rates,
                "/s/core", true)
    << "<br>"
    << BarChart("roofline",
                "Roofline: the bound each resource puts on the pipeline (elements/s, log "
                "scale; the lowest binds)",
                bounds, "/s", true)
    << "<br>"
    << BarChart("predicted", "Predicted vs measured (elements/s)", pvm, "/s", false)
    << "<h2>Nodes</h2><table><tr><th>#</th><th>node</th><th>visit ratio</th>"
       "<th>CPU us/elem</th><th>theta</th><th>parallelism</th><th>size MiB</th>"
       "<th>flags</th></tr>";
  for (const NodeAnalysis& n : a.nodes) {
    s << "<tr><td>" << n.id << "</td><td>" << Escape(n.name) << "</td><td>"
      << Fmt("%.3g", n.visit_ratio) << "</td><td>" << Fmt("%.3g", n.cpu_ns_per_root / 1e3)
      << "</td><td>" << Fmt("%.2f", p.nodes[n.id].theta) << "</td><td>"
      << p.nodes[n.id].parallelism << "</td><td>"
      << (n.materialized_bytes >= 0 ? Fmt("%.4g", n.materialized_bytes / 1048576.0) : "?")
      << "</td><td>" << (n.sequential ? "sequential " : "") << (n.gil ? "GIL " : "")
      << (n.random_at_or_below ? "random-below " : "") << (n.cacheable ? "cacheable" : "")
      << "</td></tr>";
  }
  // The mark the browser test requires: set by the page itself once its charts exist.
  s << "</table><script>document.body.setAttribute('data-charts-rendered',"
       "String(document.querySelectorAll('svg.chart').length));</script></body></html>\n";
  return s.str();
}

}  // namespace sluice::plumber
