// The framework's half of the Dataset value: a handle on a graph node plus the options it
// carries, built through the Registry. Functions (flat_map, interleave), the serializer and
// ops that build inner datasets need it; the fluent methods, MakeIterator and Iterator are
// the API layer's (src/api/dataset.cc).
#include <algorithm>
#include <sstream>

#include "graph/dataset_access.h"
#include "graph/registry.h"
#include "runtime/exception_status.h"
#include "sluice/dataset.h"

namespace sluice {

std::string AttrValueDebugString(const AttrValue& v) {
  std::ostringstream os;
  std::visit(
      [&os](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool>) {
          os << (x ? "true" : "false");
        } else if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, double>) {
          os << x;
        } else if constexpr (std::is_same_v<T, std::string>) {
          os << '"' << x << '"';
        } else if constexpr (std::is_same_v<T, DType>) {
          os << DTypeName(x);
        } else if constexpr (std::is_same_v<T, PartialShape>) {
          os << x.ToString();
        } else if constexpr (std::is_same_v<T, Tensor>) {
          os << x.DebugString();
        } else {
          os << "[";
          for (size_t i = 0; i < x.size(); ++i) {
            if (i) os << ", ";
            using E = std::decay_t<decltype(x[i])>;
            if constexpr (std::is_same_v<E, DType>) {
              os << DTypeName(x[i]);
            } else if constexpr (std::is_same_v<E, PartialShape>) {
              os << x[i].ToString();
            } else if constexpr (std::is_same_v<E, Tensor>) {
              os << x[i].DebugString();
            } else {
              os << x[i];
            }
          }
          os << "]";
        }
      },
      v);
  return os.str();
}

// ---- Dataset ----

Dataset::Dataset()
    : error_(std::make_shared<Status>(FailedPreconditionError("uninitialized Dataset"))) {}

Dataset::Dataset(std::shared_ptr<const DatasetNode> node)
    : node_(std::move(node)), optimized_(std::make_shared<OptimizedGraph>()) {
  if (!node_) error_ = std::make_shared<Status>(InternalError("null dataset node"));
}

Dataset::Dataset(Status error)
    : error_(std::make_shared<const Status>(
          error.ok() ? InternalError("Dataset built from an OK status") : std::move(error))) {}

Status Dataset::status() const { return node_ ? Status::OK() : *error_; }

Dataset BuildDataset(std::string_view op, AttrMap attrs, std::vector<Dataset> inputs,
                     std::vector<Function> functions) {
  return internal::DatasetAccess::FromOp(op, std::move(attrs), std::move(inputs),
                                         std::move(functions));
}

Dataset internal::DatasetAccess::FromOp(std::string_view op, AttrMap attrs,
                                        std::vector<Dataset> inputs,
                                        std::vector<Function> functions) {
  OpArgs args;
  args.attrs = std::move(attrs);
  for (Dataset& in : inputs) {
    if (!in.ok()) return Dataset(in.status());
    args.inputs.push_back(in.node_);
  }
  for (const Function& f : functions) {
    if (!f.valid()) return Dataset(InvalidArgumentError(std::string(op) + ": invalid function"));
  }
  args.functions = std::move(functions);
  Result<DatasetPtr> r = InternalError("unset");
  try {
    r = Registry::Global().CreateOp(op, std::move(args));
  } SLUICE_RETHROW_FORCED_UNWIND catch (...) {
    return Dataset(StatusFromException(op));
  }
  if (!r.ok()) return Dataset(r.status());
  Dataset out(std::move(r).value());
  // Carry the inputs' options, merged left to right.
  for (const Dataset& in : inputs) {
    if (!in.options_) continue;
    out.options_ = out.options_ ? std::make_shared<const Options>(out.options_->Merge(*in.options_))
                                : in.options_;
  }
  return out;
}

Dataset Dataset::WithOptions(const Options& options) const {
  if (!ok()) return *this;
  Dataset out = *this;
  out.options_ = std::make_shared<const Options>(options_ ? options_->Merge(options) : options);
  out.optimized_ = std::make_shared<OptimizedGraph>();
  return out;
}

const Options& Dataset::options() const {
  static const Options* const kDefault = new Options();
  return options_ ? *options_ : *kDefault;
}

int64_t Dataset::Cardinality() const { return node_ ? node_->Cardinality() : kUnknownCardinality; }

const ElementSpec& Dataset::element_spec() const {
  static const ElementSpec kEmpty;
  return node_ ? node_->element_spec() : kEmpty;
}

namespace {
template <typename T>
void MergeField(std::optional<T>* into, const std::optional<T>& from) {
  if (from.has_value()) *into = from;
}
}  // namespace

Options Options::Merge(const Options& o) const {
  Options m = *this;
  MergeField(&m.deterministic, o.deterministic);
  MergeField(&m.autotune.enabled, o.autotune.enabled);
  MergeField(&m.autotune.cpu_budget, o.autotune.cpu_budget);
  MergeField(&m.autotune.ram_budget, o.autotune.ram_budget);
  MergeField(&m.autotune.initial_parallelism, o.autotune.initial_parallelism);
  MergeField(&m.optimization.apply_default_optimizations,
             o.optimization.apply_default_optimizations);
  for (const auto& [name, on] : o.optimization.passes) m.optimization.passes[name] = on;
  MergeField(&m.threading.private_threadpool_size, o.threading.private_threadpool_size);
  MergeField(&m.files.allowed_roots, o.files.allowed_roots);
  MergeField(&m.files.allowed_write_roots, o.files.allowed_write_roots);
  MergeField(&m.inline_execution, o.inline_execution);
  if (o.span_recorder != nullptr) m.span_recorder = o.span_recorder;
  if (o.env != nullptr) m.env = o.env;
  return m;
}

std::vector<std::string> Options::DebugLines() const {
  std::vector<std::string> out;
  auto add = [&out](const char* key, const auto& v) {
    if (!v.has_value()) return;
    using T = std::decay_t<decltype(*v)>;
    if constexpr (std::is_same_v<T, bool>) {
      out.push_back(std::string(key) + "=" + (*v ? "true" : "false"));
    } else {
      out.push_back(std::string(key) + "=" + std::to_string(*v));
    }
  };
  add("deterministic", deterministic);
  add("autotune.enabled", autotune.enabled);
  add("autotune.cpu_budget", autotune.cpu_budget);
  add("autotune.ram_budget", autotune.ram_budget);
  add("autotune.initial_parallelism", autotune.initial_parallelism);
  add("optimization.apply_default_optimizations", optimization.apply_default_optimizations);
  for (const auto& [name, on] : optimization.passes) {
    out.push_back("optimization." + name + "=" + (on ? "true" : "false"));
  }
  add("threading.private_threadpool_size", threading.private_threadpool_size);
  add("inline_execution", inline_execution);
  auto add_list = [&out](const char* key, const auto& v) {
    if (!v.has_value()) return;
    std::string line = std::string(key) + "=";
    for (size_t i = 0; i < v->size(); ++i) line += (i ? "," : "") + (*v)[i];
    out.push_back(std::move(line));
  };
  add_list("files.allowed_roots", files.allowed_roots);
  add_list("files.allowed_write_roots", files.allowed_write_roots);
  if (span_recorder != nullptr) out.push_back("span_recorder=attached");
  if (env != nullptr) out.push_back("env=custom");
  return out;
}

}  // namespace sluice
