// StatsToJson and StatsWindow (include/sluice/stats.h). The JSON is written from the
// protobuf messages of src/runtime/proto/stats.proto by reflection, so the schema has one
// definition and every field reaches every projection.
#include <map>
#include <nlohmann/json.hpp>

#include "runtime/proto/stats.pb.h"
#include "sluice/stats.h"

namespace sluice {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

stats::NodeStats NodeToProto(const IteratorStats& s) {
  stats::NodeStats p;
  p.set_name(s.name);
  p.set_prefix(s.prefix);
  p.set_node_id(s.node_id);
  p.set_parent(s.parent);
  p.set_async(s.async);
  p.set_cardinality(s.cardinality);
  p.set_static_bytes_per_element(s.static_bytes_per_element);
  p.set_elements_produced(s.elements_produced);
  p.set_elements_consumed(s.elements_consumed);
  p.set_elements_skipped(s.elements_skipped);
  p.set_cpu_ns(s.cpu_ns);
  p.set_wall_ns(s.wall_ns);
  p.set_bytes_produced(s.bytes_produced);
  p.set_bytes_consumed(s.bytes_consumed);
  p.set_buffered_bytes(s.buffered_bytes);
  p.set_buffered_elements(s.buffered_elements);
  p.set_buffer_limit(s.buffer_limit);
  p.set_parallelism(s.parallelism);
  p.set_file_bytes_read(s.file_bytes_read);
  return p;
}

stats::PipelineStats ToProto(const PipelineStats& s) {
  stats::PipelineStats p;
  p.set_uptime_ns(s.uptime_ns);
  p.set_cpu_budget(s.cpu_budget);
  p.set_ram_budget(s.ram_budget);
  p.set_buffered_bytes(s.buffered_bytes);
  p.set_peak_buffered_bytes(s.peak_buffered_bytes);
  p.set_budget_overshoot_bytes(s.budget_overshoot_bytes);
  for (const IteratorStats& n : s.nodes) *p.add_nodes() = NodeToProto(n);
  return p;
}

// Every field, by proto name, numbers as JSON numbers (protobuf's own JSON mapping writes
// int64 as strings).
nlohmann::ordered_json MessageJson(const Message& m) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  const auto* d = m.GetDescriptor();
  const auto* r = m.GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    if (f->is_repeated()) {
      nlohmann::ordered_json a = nlohmann::ordered_json::array();
      for (int k = 0; k < r->FieldSize(m, f); ++k) {
        a.push_back(MessageJson(r->GetRepeatedMessage(m, f, k)));
      }
      j[f->name()] = std::move(a);
      continue;
    }
    switch (f->cpp_type()) {
      case FieldDescriptor::CPPTYPE_INT64: j[f->name()] = r->GetInt64(m, f); break;
      case FieldDescriptor::CPPTYPE_INT32: j[f->name()] = r->GetInt32(m, f); break;
      case FieldDescriptor::CPPTYPE_BOOL: j[f->name()] = r->GetBool(m, f); break;
      case FieldDescriptor::CPPTYPE_STRING: j[f->name()] = r->GetString(m, f); break;
      case FieldDescriptor::CPPTYPE_DOUBLE: j[f->name()] = r->GetDouble(m, f); break;
      default: break;  // the schema holds no other types (stats_test checks every field)
    }
  }
  return j;
}

std::vector<std::string> FieldNames(const google::protobuf::Descriptor* d) {
  std::vector<std::string> v;
  for (int i = 0; i < d->field_count(); ++i) v.push_back(d->field(i)->name());
  return v;
}

}  // namespace

std::string StatsToJson(const PipelineStats& stats, int indent) {
  return MessageJson(ToProto(stats)).dump(indent);
}

std::vector<std::string> StatsPipelineFieldNames() {
  return FieldNames(stats::PipelineStats::descriptor());
}

std::vector<std::string> StatsNodeFieldNames() {
  return FieldNames(stats::NodeStats::descriptor());
}

StatsDelta StatsWindow::Delta(const PipelineStats& now) const {
  StatsDelta d;
  d.duration_ns = now.uptime_ns - start_.uptime_ns;
  std::map<std::string_view, const IteratorStats*> before;
  for (const IteratorStats& s : start_.nodes) before.emplace(s.prefix, &s);
  d.nodes = now.nodes;
  for (IteratorStats& s : d.nodes) {
    auto it = before.find(s.prefix);
    if (it == before.end()) continue;  // new during the window: counts from zero
    const IteratorStats& b = *it->second;
    if (s.elements_produced < b.elements_produced) {
      d.restarted = true;  // the tree was rebuilt: keep the new tree's totals
      continue;
    }
    s.elements_produced -= b.elements_produced;
    s.elements_consumed -= b.elements_consumed;
    s.elements_skipped -= b.elements_skipped;
    s.cpu_ns -= b.cpu_ns;
    s.wall_ns -= b.wall_ns;
    s.bytes_produced -= b.bytes_produced;
    s.bytes_consumed -= b.bytes_consumed;
    s.file_bytes_read -= b.file_bytes_read;
  }
  return d;
}

}  // namespace sluice
