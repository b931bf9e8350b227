// Dataset <-> GraphDef (graph/proto/graph.proto), binary and JSON.
#include "sluice/serialize.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/stubs/common.h>
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/type_resolver_util.h>

#include <bit>
#include <climits>
#include <cstring>
#include <map>
#include <set>
#include <sstream>

#include "api/builtins.h"
#include "api/serialize_internal.h"
#include "core/env.h"
#include "graph/dataset_access.h"
#include "graph/registry.h"

namespace sluice {

static_assert(std::endian::native == std::endian::little,
              "tensor contents are serialized as the host's little-endian bytes");

namespace {

std::string NodeName(int64_t id, std::string_view op) {
  return "node " + std::to_string(id) + " (" + std::string(op) + ")";
}

bool IsUtf8(std::string_view s) {
  // protobuf's own check, so that whatever is written parses again.
  return s.size() <= static_cast<size_t>(INT_MAX) &&
         google::protobuf::internal::IsStructurallyValidUTF8(s.data(), static_cast<int>(s.size()));
}

Status CheckUtf8(std::string_view s) {
  if (IsUtf8(s)) return Status::OK();
  return InvalidArgumentError("string attribute value is not UTF-8 (protobuf strings must be)");
}

graph::DataType DTypeToProto(DType d) { return static_cast<graph::DataType>(d); }

Result<DType> DTypeFromProto(int d) {
  DType t = static_cast<DType>(static_cast<uint8_t>(d));
  if (d < 0 || d > 255 || !DTypeIsValid(t) || t == DType::kInvalid) {
    return InvalidArgumentError("invalid dtype code " + std::to_string(d));
  }
  return t;
}

void ShapeToProto(const PartialShape& s, graph::ShapeProto* out) {
  if (!s.rank_known()) {
    out->set_unknown_rank(true);
    return;
  }
  for (int i = 0; i < s.rank(); ++i) out->add_dim(s.dim(i));
}

Result<PartialShape> ShapeFromProto(const graph::ShapeProto& p) {
  if (p.unknown_rank()) {
    if (p.dim_size() != 0) return InvalidArgumentError("a shape of unknown rank has dims");
    return PartialShape::UnknownRank();
  }
  if (p.dim_size() > kMaxTensorRank) {
    return InvalidArgumentError("shape rank " + std::to_string(p.dim_size()) + " exceeds " +
                                std::to_string(kMaxTensorRank));
  }
  std::vector<int64_t> dims(p.dim().begin(), p.dim().end());
  for (int64_t d : dims) {
    if (d < -1) return InvalidArgumentError("shape dim " + std::to_string(d) + " < -1");
  }
  return PartialShape(std::move(dims));
}

Status TensorToProto(const Tensor& t, graph::TensorProto* out) {
  out->set_dtype(DTypeToProto(t.dtype()));
  if (!t.valid()) return Status::OK();
  for (int64_t d : t.shape().dims()) out->add_shape(d);
  const int64_t n = t.num_elements();
  if (t.dtype() == DType::kString) {
    const std::string* s = t.data<std::string>();
    for (int64_t i = 0; i < n; ++i) out->add_string_val(s[i]);
  } else {
    out->set_content(static_cast<const char*>(t.raw_data()),
                     static_cast<size_t>(n) * DTypeSize(t.dtype()));
  }
  return Status::OK();
}

Result<Tensor> TensorFromProto(const graph::TensorProto& p) {
  if (p.dtype() == graph::DT_INVALID) {
    if (p.shape_size() != 0 || !p.content().empty() || p.string_val_size() != 0) {
      return InvalidArgumentError("tensor of invalid dtype has contents");
    }
    return Tensor();
  }
  SLUICE_ASSIGN_OR_RETURN(DType dtype, DTypeFromProto(p.dtype()));
  if (p.shape_size() > kMaxTensorRank) {
    return InvalidArgumentError("tensor rank " + std::to_string(p.shape_size()) + " exceeds " +
                                std::to_string(kMaxTensorRank));
  }
  // Every size is checked against the bytes actually present before allocating.
  const uint64_t have = dtype == DType::kString ? static_cast<uint64_t>(p.string_val_size())
                                                : p.content().size() / DTypeSize(dtype);
  bool has_zero = false;
  for (int64_t d : p.shape()) {
    if (d < 0) return InvalidArgumentError("tensor dim " + std::to_string(d) + " < 0");
    has_zero = has_zero || d == 0;
  }
  uint64_t n = has_zero ? 0 : 1;
  bool too_big = false;
  // Element counts past kMaxCount cannot be present (and would overflow the byte count);
  // smaller ones are compared with what is there, so the error can say exactly.
  constexpr uint64_t kMaxCount = uint64_t{1} << 56;
  for (int64_t d : p.shape()) {
    if (has_zero) break;
    if (n > kMaxCount / static_cast<uint64_t>(d)) {
      too_big = true;
      break;
    }
    n *= static_cast<uint64_t>(d);
  }
  std::vector<int64_t> dims(p.shape().begin(), p.shape().end());
  Shape shape(dims);
  const std::string what = std::string(DTypeName(dtype)) + shape.ToString();
  if (dtype == DType::kString) {
    if (too_big || n != have || !p.content().empty()) {
      return InvalidArgumentError("tensor " + what + " needs " + (too_big ? "more" : std::to_string(n)) +
                                  " string values, got " + std::to_string(p.string_val_size()) +
                                  (p.content().empty() ? "" : " (and raw content)"));
    }
  } else if (too_big || n * DTypeSize(dtype) != p.content().size() || p.string_val_size() != 0) {
    return InvalidArgumentError(
        "tensor " + what + " needs " +
        (too_big ? std::string("more") : std::to_string(n * DTypeSize(dtype))) +
        " bytes of content, got " + std::to_string(p.content().size()) +
        (p.string_val_size() ? " (and string values)" : ""));
  }
  SLUICE_ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(dtype, std::move(shape)));
  if (dtype == DType::kString) {
    std::string* s = t.mutable_data<std::string>();
    for (uint64_t i = 0; i < n; ++i) s[i] = p.string_val(static_cast<int>(i));
  } else {
    if (dtype == DType::kBool) {
      for (char c : p.content()) {
        if (c != 0 && c != 1) return InvalidArgumentError("bool tensor holds a byte other than 0/1");
      }
    }
    if (n > 0) std::memcpy(t.mutable_data<char>(), p.content().data(), p.content().size());
  }
  return t;
}

}  // namespace

Status AttrToProto(const AttrValue& value, graph::AttrValue* out) {
  return std::visit(
      [out](const auto& x) -> Status {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool>) {
          out->set_b(x);
        } else if constexpr (std::is_same_v<T, int64_t>) {
          out->set_i(x);
        } else if constexpr (std::is_same_v<T, double>) {
          out->set_f(x);
        } else if constexpr (std::is_same_v<T, std::string>) {
          SLUICE_RETURN_IF_ERROR(CheckUtf8(x));
          out->set_s(x);
        } else if constexpr (std::is_same_v<T, DType>) {
          out->set_type(DTypeToProto(x));
        } else if constexpr (std::is_same_v<T, PartialShape>) {
          ShapeToProto(x, out->mutable_shape());
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          out->mutable_int_list()->mutable_value()->Add(x.begin(), x.end());
        } else if constexpr (std::is_same_v<T, std::vector<double>>) {
          out->mutable_float_list()->mutable_value()->Add(x.begin(), x.end());
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          auto* l = out->mutable_string_list();
          for (const std::string& s : x) {
            SLUICE_RETURN_IF_ERROR(CheckUtf8(s));
            l->add_value(s);
          }
        } else if constexpr (std::is_same_v<T, std::vector<DType>>) {
          auto* l = out->mutable_type_list();
          for (DType d : x) l->add_value(DTypeToProto(d));
        } else if constexpr (std::is_same_v<T, std::vector<PartialShape>>) {
          auto* l = out->mutable_shape_list();
          for (const PartialShape& s : x) ShapeToProto(s, l->add_value());
        } else if constexpr (std::is_same_v<T, Tensor>) {
          return TensorToProto(x, out->mutable_tensor());
        } else {
          static_assert(std::is_same_v<T, std::vector<Tensor>>);
          auto* l = out->mutable_tensor_list();
          for (const Tensor& t : x) SLUICE_RETURN_IF_ERROR(TensorToProto(t, l->add_value()));
        }
        return Status::OK();
      },
      value);
}

Result<AttrValue> AttrFromProto(const graph::AttrValue& v) {
  using P = graph::AttrValue;
  switch (v.value_case()) {
    case P::kB: return AttrValue(v.b());
    case P::kI: return AttrValue(static_cast<int64_t>(v.i()));
    case P::kF: return AttrValue(v.f());
    case P::kS: return AttrValue(v.s());
    case P::kType: {
      SLUICE_ASSIGN_OR_RETURN(DType d, DTypeFromProto(v.type()));
      return AttrValue(d);
    }
    case P::kShape: {
      SLUICE_ASSIGN_OR_RETURN(PartialShape s, ShapeFromProto(v.shape()));
      return AttrValue(std::move(s));
    }
    case P::kIntList:
      return AttrValue(std::vector<int64_t>(v.int_list().value().begin(), v.int_list().value().end()));
    case P::kFloatList:
      return AttrValue(std::vector<double>(v.float_list().value().begin(), v.float_list().value().end()));
    case P::kStringList:
      return AttrValue(
          std::vector<std::string>(v.string_list().value().begin(), v.string_list().value().end()));
    case P::kTypeList: {
      std::vector<DType> out;
      for (int d : v.type_list().value()) {
        SLUICE_ASSIGN_OR_RETURN(DType t, DTypeFromProto(d));
        out.push_back(t);
      }
      return AttrValue(std::move(out));
    }
    case P::kShapeList: {
      std::vector<PartialShape> out;
      for (const auto& s : v.shape_list().value()) {
        SLUICE_ASSIGN_OR_RETURN(PartialShape p, ShapeFromProto(s));
        out.push_back(std::move(p));
      }
      return AttrValue(std::move(out));
    }
    case P::kTensor: {
      SLUICE_ASSIGN_OR_RETURN(Tensor t, TensorFromProto(v.tensor()));
      return AttrValue(std::move(t));
    }
    case P::kTensorList: {
      std::vector<Tensor> out;
      for (int i = 0; i < v.tensor_list().value_size(); ++i) {
        auto t = TensorFromProto(v.tensor_list().value(i));
        if (!t.ok()) return t.status().WithContext("tensor " + std::to_string(i));
        out.push_back(std::move(t).value());
      }
      return AttrValue(std::move(out));
    }
    case P::VALUE_NOT_SET: break;
  }
  return InvalidArgumentError("attribute has no value");
}

Status CheckFunctionsSerializable(const DatasetNode& node) {
  for (const Function& f : node.functions()) {
    if (f.serializable()) continue;
    std::string kernels;
    for (const std::string& k : BuiltinRegistry().KernelNames()) {
      kernels += (kernels.empty() ? "" : ", ") + k;
    }
    return FailedPreconditionError(node.op() + ": function '" + f.name() +
                                   "' is a local C++ callable and cannot be serialized; use a "
                                   "registered kernel (sluice kernels: " + kernels + ")");
  }
  return Status::OK();
}

namespace {

Status AttrsToProto(const AttrMap& attrs, google::protobuf::Map<std::string, graph::AttrValue>* out,
                    std::string_view owner) {
  for (const auto& [name, value] : attrs) {
    Status s = AttrToProto(value, &(*out)[name]);
    if (!s.ok()) return s.WithContext(std::string(owner) + ": attribute '" + name + "'");
  }
  return Status::OK();
}

Result<AttrMap> AttrsFromProto(const google::protobuf::Map<std::string, graph::AttrValue>& in) {
  AttrMap out;
  for (const auto& [name, value] : in) {
    auto v = AttrFromProto(value);
    if (!v.ok()) return v.status().WithContext("attribute '" + name + "'");
    out.emplace(name, std::move(v).value());
  }
  return out;
}

void OptionsToProto(const Options& o, graph::OptionsDef* p) {
  if (o.deterministic) p->set_deterministic(*o.deterministic);
  if (o.autotune.enabled) p->set_autotune_enabled(*o.autotune.enabled);
  if (o.autotune.cpu_budget) p->set_autotune_cpu_budget(*o.autotune.cpu_budget);
  if (o.autotune.ram_budget) p->set_autotune_ram_budget(*o.autotune.ram_budget);
  if (o.autotune.initial_parallelism) {
    p->set_autotune_initial_parallelism(*o.autotune.initial_parallelism);
  }
  if (o.optimization.apply_default_optimizations) {
    p->set_apply_default_optimizations(*o.optimization.apply_default_optimizations);
  }
  for (const auto& [name, on] : o.optimization.passes) (*p->mutable_optimization_passes())[name] = on;
  if (o.threading.private_threadpool_size) {
    p->set_private_threadpool_size(*o.threading.private_threadpool_size);
  }
  if (o.inline_execution) p->set_inline_execution(*o.inline_execution);
  // mutable_*() marks the field present even for an empty list (nothing allowed).
  if (o.files.allowed_roots) {
    auto* roots = p->mutable_allowed_roots();
    for (const std::string& r : *o.files.allowed_roots) roots->add_roots(r);
  }
  if (o.files.allowed_write_roots) {
    auto* roots = p->mutable_allowed_write_roots();
    for (const std::string& r : *o.files.allowed_write_roots) roots->add_roots(r);
  }
}

Options OptionsFromProto(const graph::OptionsDef& p) {
  Options o;
  if (p.has_deterministic()) o.deterministic = p.deterministic();
  if (p.has_autotune_enabled()) o.autotune.enabled = p.autotune_enabled();
  if (p.has_autotune_cpu_budget()) o.autotune.cpu_budget = p.autotune_cpu_budget();
  if (p.has_autotune_ram_budget()) o.autotune.ram_budget = p.autotune_ram_budget();
  if (p.has_autotune_initial_parallelism()) {
    o.autotune.initial_parallelism = p.autotune_initial_parallelism();
  }
  if (p.has_apply_default_optimizations()) {
    o.optimization.apply_default_optimizations = p.apply_default_optimizations();
  }
  for (const auto& [name, on] : p.optimization_passes()) o.optimization.passes[name] = on;
  if (p.has_private_threadpool_size()) o.threading.private_threadpool_size = p.private_threadpool_size();
  if (p.has_inline_execution()) o.inline_execution = p.inline_execution();
  if (p.has_allowed_roots()) {
    o.files.allowed_roots.emplace(p.allowed_roots().roots().begin(),
                                  p.allowed_roots().roots().end());
  }
  if (p.has_allowed_write_roots()) {
    o.files.allowed_write_roots.emplace(p.allowed_write_roots().roots().begin(),
                                        p.allowed_write_roots().roots().end());
  }
  return o;
}

// Post-order walk: inputs get smaller ids than their consumers; shared nodes get one id.
Result<int64_t> AddNode(const DatasetPtr& node, graph::GraphDef* def,
                        std::map<const DatasetNode*, int64_t>* ids) {
  auto it = ids->find(node.get());
  if (it != ids->end()) return it->second;
  SLUICE_RETURN_IF_ERROR(CheckFunctionsSerializable(*node));
  std::vector<int64_t> inputs;
  for (const DatasetPtr& in : node->inputs()) {
    SLUICE_ASSIGN_OR_RETURN(int64_t id, AddNode(in, def, ids));
    inputs.push_back(id);
  }
  const int64_t id = def->node_size();
  graph::NodeDef* n = def->add_node();
  n->set_id(id);
  n->set_op(node->op());
  SLUICE_RETURN_IF_ERROR(AttrsToProto(node->attrs(), n->mutable_attr(), node->op()));
  for (int64_t in : inputs) n->add_input(in);
  for (const Function& f : node->functions()) {
    graph::FunctionDef* fd = n->add_function();
    fd->set_kernel(f.name());
    SLUICE_RETURN_IF_ERROR(
        AttrsToProto(f.attrs(), fd->mutable_attr(), node->op() + ": function '" + f.name() + "'"));
  }
  ids->emplace(node.get(), id);
  return id;
}

}  // namespace

Result<graph::GraphDef> DatasetToGraphDef(const Dataset& dataset) {
  SLUICE_RETURN_IF_ERROR(dataset.status());
  graph::GraphDef def;
  def.set_version(kGraphFormatVersion);
  std::map<const DatasetNode*, int64_t> ids;
  SLUICE_ASSIGN_OR_RETURN(int64_t out, AddNode(NodeOf(dataset), &def, &ids));
  def.set_output(out);
  OptionsToProto(dataset.options(), def.mutable_options());
  return def;
}

Result<Dataset> DatasetFromGraphDef(const graph::GraphDef& def) {
  if (def.version() < 1 || def.version() > kGraphFormatVersion) {
    return InvalidArgumentError("graph format version " + std::to_string(def.version()) +
                                " is not supported (this build reads 1.." +
                                std::to_string(kGraphFormatVersion) + ")");
  }
  const int64_t num_nodes = def.node_size();
  if (num_nodes < 1 || num_nodes > kMaxGraphNodes) {
    return InvalidArgumentError("graph has " + std::to_string(num_nodes) +
                                " nodes; expected 1.." + std::to_string(kMaxGraphNodes));
  }
  // Ops that touch files while being built (ListFiles, ImageFolder, Idx, vocabularies)
  // stay inside the roots of the graph's own file options.
  std::unique_ptr<Env> confined;
  if (def.has_options()) {
    confined = NewConfinedEnvFor(BuildEnv(), OptionsFromProto(def.options()).files);
  }
  ScopedBuildEnv build_env(confined.get());
  std::vector<DatasetPtr> nodes;
  std::vector<int64_t> depth;
  nodes.reserve(num_nodes);
  for (int64_t i = 0; i < num_nodes; ++i) {
    const graph::NodeDef& n = def.node(static_cast<int>(i));
    const std::string name = NodeName(i, n.op());
    if (n.id() != i) {
      return InvalidArgumentError(name + ": id " + std::to_string(n.id()) +
                                  " must equal its position " + std::to_string(i));
    }
    OpArgs args;
    int64_t d = 0;
    for (int k = 0; k < n.input_size(); ++k) {
      const int64_t in = n.input(k);
      if (in < 0 || in >= i) {
        return InvalidArgumentError(name + ": input " + std::to_string(k) + " refers to node " +
                                    std::to_string(in) +
                                    ", which is not an earlier node (inputs are listed before "
                                    "their consumers, so cycles cannot occur)");
      }
      args.inputs.push_back(nodes[in]);
      d = std::max(d, depth[in] + 1);
    }
    if (d > kMaxGraphDepth) {
      return InvalidArgumentError(name + ": the graph is deeper than " +
                                  std::to_string(kMaxGraphDepth) + " nodes");
    }
    auto attrs = AttrsFromProto(n.attr());
    if (!attrs.ok()) return attrs.status().WithContext(name);
    args.attrs = std::move(attrs).value();
    for (int k = 0; k < n.function_size(); ++k) {
      const graph::FunctionDef& fd = n.function(k);
      auto fattrs = AttrsFromProto(fd.attr());
      auto fn = fattrs.ok() ? Function::Kernel(fd.kernel(), std::move(fattrs).value())
                            : Result<Function>(fattrs.status());
      if (!fn.ok()) {
        return fn.status().WithContext(name + ": function " + std::to_string(k) + " ('" +
                                       fd.kernel() + "')");
      }
      args.functions.push_back(std::move(fn).value());
    }
    auto node = BuiltinRegistry().CreateOp(n.op(), std::move(args));
    if (!node.ok()) return node.status().WithContext(name);
    nodes.push_back(std::move(node).value());
    depth.push_back(d);
  }
  if (def.output() < 0 || def.output() >= num_nodes) {
    return InvalidArgumentError("graph output " + std::to_string(def.output()) +
                                " is not a node (the graph has " + std::to_string(num_nodes) +
                                ")");
  }
  Dataset ds = DatasetOf(nodes[def.output()]);
  if (def.has_options()) ds = ds.WithOptions(OptionsFromProto(def.options()));
  return ds;
}

Result<std::string> SerializeDataset(const Dataset& dataset, GraphFormat format) {
  SLUICE_ASSIGN_OR_RETURN(graph::GraphDef def, DatasetToGraphDef(dataset));
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);  // map entries sorted: equal graphs, equal bytes
    if (!def.SerializeToCodedStream(&coded)) return InternalError("cannot serialize the graph");
  }
  if (format == GraphFormat::kJson) {
    // MessageToJsonString prints map entries in hash order; printing the deterministic
    // bytes through the type resolver keeps them sorted, so equal graphs give equal JSON.
    static google::protobuf::util::TypeResolver* const resolver =
        google::protobuf::util::NewTypeResolverForDescriptorPool(
            "type.googleapis.com", google::protobuf::DescriptorPool::generated_pool());
    google::protobuf::util::JsonPrintOptions o;
    o.add_whitespace = true;
    o.preserve_proto_field_names = true;
    std::string json;
    auto s = google::protobuf::util::BinaryToJsonString(
        resolver, "type.googleapis.com/" + def.GetDescriptor()->full_name(), out, &json, o);
    if (!s.ok()) return InternalError("graph to JSON: " + std::string(s.message()));
    return json;
  }
  return out;
}

Result<Dataset> DeserializeDataset(std::string_view bytes, GraphFormat format) {
  graph::GraphDef def;
  if (format == GraphFormat::kJson) {
    google::protobuf::util::JsonParseOptions o;
    auto s = google::protobuf::util::JsonStringToMessage(
        google::protobuf::StringPiece(bytes.data(), bytes.size()), &def, o);
    if (!s.ok()) return DataLossError("graph JSON does not parse: " + std::string(s.message()));
  } else {
    if (bytes.size() > static_cast<size_t>(INT_MAX)) {
      return InvalidArgumentError("serialized graph of " + std::to_string(bytes.size()) +
                                  " bytes is too large");
    }
    if (!def.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
      return DataLossError("serialized graph (" + std::to_string(bytes.size()) +
                           " bytes) does not parse as a GraphDef");
    }
  }
  return DatasetFromGraphDef(def);
}

// ---- DatasetGraphDebugString ----

namespace {

std::string AttrsDebugString(const AttrMap& attrs) {
  std::string s;
  for (const auto& [name, value] : attrs) {
    if (!s.empty()) s += ", ";
    s += name + "=" + AttrValueDebugString(value);
  }
  return s;
}

// `ids` are the GraphDef ids (GraphNodeIds), so `#id` is what the serialized graph and
// the stats plane (IteratorStats::node_id) call the node.
void PrintNode(const DatasetPtr& node, int indent, const NodeIdMap& ids,
               std::set<const DatasetNode*>* printed, std::ostringstream& os) {
  const std::string pad(2 * indent, ' ');
  const int64_t id = ids.at(node.get());
  if (!printed->insert(node.get()).second) {
    os << pad << node->op() << " (see #" << id << ")\n";
    return;
  }
  os << pad << "#" << id << " " << node->op() << "(" << AttrsDebugString(node->attrs()) << ")\n";
  for (const Function& f : node->functions()) {
    os << pad << "    fn: ";
    if (f.serializable()) {
      os << f.name() << "(" << AttrsDebugString(f.attrs()) << ")\n";
    } else {
      os << "<local callable '" << f.name() << "'>\n";
    }
  }
  for (const DatasetPtr& in : node->inputs()) PrintNode(in, indent + 1, ids, printed, os);
}

}  // namespace

std::string DatasetGraphDebugString(const Dataset& dataset) {
  if (!dataset.ok()) return "<invalid dataset: " + dataset.status().ToString() + ">\n";
  std::ostringstream os;
  std::set<const DatasetNode*> printed;
  PrintNode(NodeOf(dataset), 0, GraphNodeIds(NodeOf(dataset)), &printed, os);
  return os.str();
}

}  // namespace sluice
