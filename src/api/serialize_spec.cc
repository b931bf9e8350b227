// LoadPipelineSpec: hand-written JSON pipeline specs (docs/spec.md).
//
// Attribute values are typed from their JSON form (bool, integer, float, string, lists of
// these), or explicitly ({"dtype": "int64"}, {"shape": [null, 3]}, {"tensor": {...}}, ...).
// An attribute the op or kernel declares (graph/op_def.h) is converted to its declared
// type when it can be (a string to a dtype, a list of ints to a shape or to floats, ...);
// an undeclared one is an error naming the closest valid name.
#include <google/protobuf/util/json_util.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "api/builtins.h"
#include "api/serialize_internal.h"
#include "core/env.h"
#include "graph/attr.h"
#include "graph/dataset_access.h"
#include "graph/registry.h"
#include "sluice/serialize.h"

namespace sluice {
namespace {

using Json = nlohmann::json;

// Specs nest a level of JSON per graph level (an "input" object), plus a few for attributes.
constexpr int kMaxJsonDepth = 2 * kMaxGraphDepth + 64;
// Error messages quote at most this many characters of what the user wrote.
constexpr size_t kMaxQuoted = 48;

// `s` cut to kMaxQuoted characters ("..." marks a cut).
std::string Clip(std::string_view s) {
  if (s.size() <= kMaxQuoted) return std::string(s);
  return std::string(s.substr(0, kMaxQuoted - 3)) + "...";
}

// A JSON value for an error message. The nesting depth is bounded by ParsePipelineSpec's
// pre-scan, so dump()'s recursion is too.
std::string Snippet(const Json& j) { return Clip(j.dump()); }

// Op and kernel names are short; a long one is refused here rather than quoted in full by
// the registry's "unknown op" message.
Status CheckName(std::string_view what, std::string_view name) {
  if (name.size() <= 128) return Status::OK();
  return NotFoundError("unknown " + std::string(what) + " '" + Clip(name) + "' (" +
                       std::to_string(name.size()) + " characters)");
}

// Where `text` nests arrays and objects deeper than `limit` (the offset of the bracket
// that does), or -1. Brackets inside strings do not count.
int64_t FindTooDeep(std::string_view text, int limit) {
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return static_cast<int64_t>(i);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return -1;
}

// Attribute type names as attr.h's AttrTypeName spells them.
Result<AttrValue> ConvertTo(const Json& j, std::string_view type);

Result<int64_t> JsonInt(const Json& j) {
  if (j.is_number_integer()) return j.get<int64_t>();
  if (j.is_number_unsigned()) {
    if (j.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
      return InvalidArgumentError("integer " + Snippet(j) + " is out of range");
    }
    return static_cast<int64_t>(j.get<uint64_t>());
  }
  if (j.is_number_float()) {
    const double d = j.get<double>();
    // Range first: converting an out-of-range double is undefined.
    if (std::abs(d) < 9.2e18 && d == std::trunc(d)) {
      return static_cast<int64_t>(d);
    }
  }
  return InvalidArgumentError("expected an integer, got " + Snippet(j));
}

Result<double> JsonDouble(const Json& j) {
  if (j.is_number()) return j.get<double>();
  return InvalidArgumentError("expected a number, got " + Snippet(j));
}

Result<std::string> JsonString(const Json& j) {
  if (j.is_string()) return j.get<std::string>();
  return InvalidArgumentError("expected a string, got " + Snippet(j));
}

Result<DType> JsonDType(const Json& j) {
  SLUICE_ASSIGN_OR_RETURN(std::string s, JsonString(j));
  return DTypeFromName(s);
}

// [2, null, 3] (null or -1: unknown dim); null or "unknown": unknown rank.
Result<PartialShape> JsonShape(const Json& j) {
  if (j.is_null() || (j.is_string() && j.get<std::string>() == "unknown")) {
    return PartialShape::UnknownRank();
  }
  if (!j.is_array()) return InvalidArgumentError("expected a shape (a list of dims), got " + Snippet(j));
  if (j.size() > static_cast<size_t>(kMaxTensorRank)) {
    return InvalidArgumentError("shape rank exceeds " + std::to_string(kMaxTensorRank));
  }
  std::vector<int64_t> dims;
  for (const Json& d : j) {
    if (d.is_null()) {
      dims.push_back(-1);
      continue;
    }
    SLUICE_ASSIGN_OR_RETURN(int64_t v, JsonInt(d));
    if (v < -1) return InvalidArgumentError("shape dim " + std::to_string(v) + " < -1");
    dims.push_back(v);
  }
  return PartialShape(std::move(dims));
}

template <typename T, typename F>
Result<std::vector<T>> JsonList(const Json& j, F&& each) {
  if (!j.is_array()) return InvalidArgumentError("expected a list, got " + Snippet(j));
  std::vector<T> out;
  for (const Json& e : j) {
    SLUICE_ASSIGN_OR_RETURN(T v, each(e));
    out.push_back(std::move(v));
  }
  return out;
}

// A scalar JSON value as a tensor of `dtype` (kInvalid: int64, float32, bool or string by
// its JSON type).
Result<DType> InferTensorDType(const Json& v) {
  if (v.is_boolean()) return DType::kBool;
  if (v.is_number_integer() || v.is_number_unsigned()) return DType::kInt64;
  if (v.is_number_float()) return DType::kFloat32;
  if (v.is_string()) return DType::kString;
  return InvalidArgumentError("cannot infer a tensor dtype from " + Snippet(v));
}

Status SetTensorValue(Tensor* t, int64_t i, const Json& v) {
  switch (t->dtype()) {
    case DType::kBool:
      if (!v.is_boolean()) return InvalidArgumentError("expected a bool, got " + Snippet(v));
      t->mutable_data<bool>()[i] = v.get<bool>();
      return Status::OK();
    case DType::kString: {
      SLUICE_ASSIGN_OR_RETURN(t->mutable_data<std::string>()[i], JsonString(v));
      return Status::OK();
    }
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kFloat32:
    case DType::kFloat64: {
      SLUICE_ASSIGN_OR_RETURN(double d, JsonDouble(v));
      if (t->dtype() == DType::kFloat16) t->mutable_data<Half>()[i] = Half::FromFloat(float(d));
      if (t->dtype() == DType::kBFloat16) t->mutable_data<BFloat16>()[i] = BFloat16::FromFloat(float(d));
      if (t->dtype() == DType::kFloat32) t->mutable_data<float>()[i] = static_cast<float>(d);
      if (t->dtype() == DType::kFloat64) t->mutable_data<double>()[i] = d;
      return Status::OK();
    }
    default: {
      SLUICE_ASSIGN_OR_RETURN(int64_t x, JsonInt(v));
      // A value the dtype cannot hold is an error, not a wrapped byte.
      int64_t lo = std::numeric_limits<int64_t>::min();
      int64_t hi = std::numeric_limits<int64_t>::max();
      if (t->dtype() == DType::kUInt8) lo = 0, hi = 255;
      if (t->dtype() == DType::kInt8) lo = -128, hi = 127;
      if (t->dtype() == DType::kInt16) lo = -32768, hi = 32767;
      if (t->dtype() == DType::kInt32) {
        lo = std::numeric_limits<int32_t>::min();
        hi = std::numeric_limits<int32_t>::max();
      }
      if (x < lo || x > hi) {
        return InvalidArgumentError("value " + std::to_string(x) +
                                    " is out of range for dtype " +
                                    std::string(DTypeName(t->dtype())));
      }
      switch (t->dtype()) {
        case DType::kUInt8: t->mutable_data<uint8_t>()[i] = static_cast<uint8_t>(x); break;
        case DType::kInt8: t->mutable_data<int8_t>()[i] = static_cast<int8_t>(x); break;
        case DType::kInt16: t->mutable_data<int16_t>()[i] = static_cast<int16_t>(x); break;
        case DType::kInt32: t->mutable_data<int32_t>()[i] = static_cast<int32_t>(x); break;
        case DType::kInt64: t->mutable_data<int64_t>()[i] = x; break;
        default: return InvalidArgumentError("unsupported tensor dtype");
      }
      return Status::OK();
    }
  }
}

// A tensor: a scalar or flat list (dtype inferred), or {"dtype", "shape", "values"}.
Result<Tensor> JsonTensor(const Json& j) {
  Json values = j;
  DType dtype = DType::kInvalid;
  std::optional<std::vector<int64_t>> shape;
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) {
      if (k != "dtype" && k != "shape" && k != "values") {
        return InvalidArgumentError("unknown tensor field '" + Clip(k) + "' (dtype, shape, values)");
      }
    }
    if (!j.contains("values")) return InvalidArgumentError("tensor needs \"values\"");
    values = j["values"];
    if (j.contains("dtype")) {
      SLUICE_ASSIGN_OR_RETURN(dtype, JsonDType(j["dtype"]));
    }
    if (j.contains("shape")) {
      SLUICE_ASSIGN_OR_RETURN(auto s, JsonList<int64_t>(j["shape"], JsonInt));
      if (s.size() > static_cast<size_t>(kMaxTensorRank)) {
        return InvalidArgumentError("tensor rank exceeds " + std::to_string(kMaxTensorRank));
      }
      for (int64_t d : s) {
        if (d < 0) return InvalidArgumentError("tensor dims must be >= 0");
      }
      shape = std::move(s);
    }
  }
  const bool scalar = !values.is_array();
  const size_t count = scalar ? 1 : values.size();
  if (dtype == DType::kInvalid) {
    if (count == 0) return InvalidArgumentError("an empty tensor needs a \"dtype\"");
    SLUICE_ASSIGN_OR_RETURN(dtype, InferTensorDType(scalar ? values : values[0]));
    if (dtype == DType::kInt64 && !scalar) {
      for (const Json& v : values) {
        if (v.is_number_float()) dtype = DType::kFloat32;
      }
    }
  }
  if (!shape) {
    shape = scalar ? std::vector<int64_t>{} : std::vector<int64_t>{static_cast<int64_t>(count)};
  }
  uint64_t n = 1;
  for (int64_t d : *shape) {
    if (d != 0 && n > count / static_cast<uint64_t>(d)) {
      return InvalidArgumentError("tensor shape needs more than the " + std::to_string(count) +
                                  " values given");
    }
    n *= static_cast<uint64_t>(d);
  }
  if (n != count) {
    return InvalidArgumentError("tensor shape has " + std::to_string(n) + " elements, " +
                                std::to_string(count) + " values given");
  }
  SLUICE_ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(dtype, Shape(*shape)));
  for (size_t i = 0; i < count; ++i) {
    SLUICE_RETURN_IF_ERROR(SetTensorValue(&t, static_cast<int64_t>(i), scalar ? values : values[i]));
  }
  return t;
}

Result<AttrValue> ConvertTo(const Json& j, std::string_view type) {
  if (type == "bool") {
    if (!j.is_boolean()) return InvalidArgumentError("expected a bool, got " + Snippet(j));
    return AttrValue(j.get<bool>());
  }
  if (type == "int") {
    SLUICE_ASSIGN_OR_RETURN(int64_t v, JsonInt(j));
    return AttrValue(v);
  }
  if (type == "float") {
    SLUICE_ASSIGN_OR_RETURN(double v, JsonDouble(j));
    return AttrValue(v);
  }
  if (type == "string") {
    SLUICE_ASSIGN_OR_RETURN(std::string v, JsonString(j));
    return AttrValue(std::move(v));
  }
  if (type == "dtype") {
    SLUICE_ASSIGN_OR_RETURN(DType v, JsonDType(j));
    return AttrValue(v);
  }
  if (type == "shape") {
    SLUICE_ASSIGN_OR_RETURN(PartialShape v, JsonShape(j));
    return AttrValue(std::move(v));
  }
  if (type == "tensor") {
    SLUICE_ASSIGN_OR_RETURN(Tensor v, JsonTensor(j));
    return AttrValue(std::move(v));
  }
  if (type == "list(int)") {
    SLUICE_ASSIGN_OR_RETURN(auto v, JsonList<int64_t>(j, JsonInt));
    return AttrValue(std::move(v));
  }
  if (type == "list(float)") {
    SLUICE_ASSIGN_OR_RETURN(auto v, JsonList<double>(j, JsonDouble));
    return AttrValue(std::move(v));
  }
  if (type == "list(string)") {
    SLUICE_ASSIGN_OR_RETURN(auto v, JsonList<std::string>(j, JsonString));
    return AttrValue(std::move(v));
  }
  if (type == "list(dtype)") {
    SLUICE_ASSIGN_OR_RETURN(auto v, JsonList<DType>(j, JsonDType));
    return AttrValue(std::move(v));
  }
  if (type == "list(shape)") {
    SLUICE_ASSIGN_OR_RETURN(auto v, JsonList<PartialShape>(j, JsonShape));
    return AttrValue(std::move(v));
  }
  if (type == "list(tensor)") {
    SLUICE_ASSIGN_OR_RETURN(auto v, JsonList<Tensor>(j, JsonTensor));
    return AttrValue(std::move(v));
  }
  return InvalidArgumentError("unknown attribute type '" + std::string(type) + "'");
}

// The explicit typed forms: {"<type>": value} with one key.
const std::map<std::string, std::string, std::less<>>& TypedForms() {
  static const auto* forms = new std::map<std::string, std::string, std::less<>>{
      {"bool", "bool"},           {"int", "int"},
      {"float", "float"},         {"string", "string"},
      {"dtype", "dtype"},         {"shape", "shape"},
      {"tensor", "tensor"},       {"ints", "list(int)"},
      {"floats", "list(float)"},  {"strings", "list(string)"},
      {"dtypes", "list(dtype)"},  {"shapes", "list(shape)"},
      {"tensors", "list(tensor)"}};
  return *forms;
}

// The value's type from its JSON form alone.
Result<AttrValue> InferAttr(const Json& j) {
  if (j.is_boolean()) return AttrValue(j.get<bool>());
  if (j.is_number_integer() || j.is_number_unsigned()) return ConvertTo(j, "int");
  if (j.is_number_float()) return AttrValue(j.get<double>());
  if (j.is_string()) return AttrValue(j.get<std::string>());
  if (j.is_object()) {
    if (j.size() != 1 || !TypedForms().count(j.begin().key())) {
      std::string forms;
      for (const auto& [k, t] : TypedForms()) forms += (forms.empty() ? "" : ", ") + k;
      return InvalidArgumentError("an object attribute value must have one key naming its type (" +
                                  forms + "), got " + Snippet(j));
    }
    return ConvertTo(j.begin().value(), TypedForms().find(j.begin().key())->second);
  }
  if (j.is_array()) {
    bool all_int = true, all_num = true, all_str = true, all_arr = true;
    for (const Json& e : j) {
      all_int = all_int && (e.is_number_integer() || e.is_number_unsigned());
      all_num = all_num && e.is_number();
      all_str = all_str && e.is_string();
      all_arr = all_arr && (e.is_array() || e.is_null());
    }
    if (all_int) return ConvertTo(j, "list(int)");  // also the empty list
    if (all_num) return ConvertTo(j, "list(float)");
    if (all_str) return ConvertTo(j, "list(string)");
    if (all_arr) return ConvertTo(j, "list(shape)");
    return ConvertTo(j, "list(tensor)");
  }
  return InvalidArgumentError("cannot type the attribute value " + Snippet(j));
}

// Attributes typed by the op's or kernel's declared types (graph/op_def.h): the user's
// JSON value is converted to the declared type (a string to a dtype, a list of ints to a
// shape or to floats, ...). Explicitly typed values ({"dtype": ...}), attributes of type
// "any" and undeclared names (which the registry then refuses, naming the closest valid
// one) are typed from their JSON form.
Result<AttrMap> ParseAttrs(const Json& j, const std::vector<AttrDef>& defs) {
  AttrMap attrs;
  if (j.is_null()) return attrs;
  if (!j.is_object()) return InvalidArgumentError("\"attrs\" must be an object");
  for (const auto& [name, value] : j.items()) {
    if (name == "seed" && value.is_null()) {
      // Drawn like the Dataset API's unseeded ops (the global seed, when set, decides).
      attrs[name] = static_cast<int64_t>(ResolveSeed(std::nullopt));
      continue;
    }
    const AttrDef* def = nullptr;
    for (const AttrDef& d : defs) {
      if (d.name == name) def = &d;
    }
    Result<AttrValue> v = def != nullptr && def->type != AttrType::kAny && !value.is_object()
                              ? ConvertTo(value, AttrTypeName(def->type))
                              : InferAttr(value);
    if (!v.ok()) {
      return v.status().WithContext(
          "attribute '" + Clip(name) + "'" +
          (def != nullptr ? " (" + std::string(AttrTypeName(def->type)) + ")" : ""));
    }
    attrs[name] = std::move(v).value();
  }
  return attrs;
}

Result<Function> ParseFunction(const Json& j) {
  if (j.is_string()) {
    SLUICE_RETURN_IF_ERROR(CheckName("kernel", j.get<std::string>()));
    return Function::Kernel(j.get<std::string>(), {});
  }
  if (!j.is_object() || !j.contains("kernel") || !j["kernel"].is_string()) {
    return InvalidArgumentError(
        "a function is a kernel name or {\"kernel\": name, \"attrs\": {...}}, got " + Snippet(j));
  }
  for (const auto& [k, v] : j.items()) {
    if (k != "kernel" && k != "attrs") {
      return InvalidArgumentError("unknown function field '" + Clip(k) + "' (kernel, attrs)");
    }
  }
  const Json raw = j.value("attrs", Json::object());
  const std::string name = j["kernel"].get<std::string>();
  SLUICE_RETURN_IF_ERROR(CheckName("kernel", name));
  const KernelDef* def = BuiltinRegistry().FindKernel(name);
  auto attrs = ParseAttrs(raw, def ? def->attrs() : std::vector<AttrDef>{});
  if (!attrs.ok()) return attrs.status().WithContext("kernel " + name);
  return Function::Kernel(name, *attrs);
}

class SpecParser {
 public:
  Result<Dataset> Node(const Json& j, const std::string& path, int depth) {
    auto r = NodeInternal(j, path, depth);
    if (!r.ok() && !r.status().message().starts_with(kPathMark)) {
      return r.status().WithContext(std::string(kPathMark) + path);
    }
    return r;
  }

 private:
  static constexpr std::string_view kPathMark = "at ";

  // A stage of a chain: `j` without "input", fed by `prev` (first input).
  Result<Dataset> Stage(const Json& j, const Dataset& prev, const std::string& path, int depth) {
    auto r = NodeInternal(j, path, depth, &prev);
    if (!r.ok() && !r.status().message().starts_with(kPathMark)) {
      return r.status().WithContext(std::string(kPathMark) + path);
    }
    return r;
  }

  Result<Dataset> NodeInternal(const Json& j, const std::string& path, int depth,
                               const Dataset* prev = nullptr) {
    if (depth > kMaxGraphDepth) {
      return InvalidArgumentError("the spec nests deeper than " + std::to_string(kMaxGraphDepth));
    }
    if (++num_nodes_ > kMaxGraphNodes) {
      return InvalidArgumentError("the spec has more than " + std::to_string(kMaxGraphNodes) +
                                  " datasets");
    }
    if (j.is_array() && prev == nullptr) {
      // A chain: each stage's input is the stage before it.
      if (j.empty()) return InvalidArgumentError("an empty chain of stages");
      SLUICE_ASSIGN_OR_RETURN(Dataset ds, Node(j[0], path + "[0]", depth + 1));
      for (size_t i = 1; i < j.size(); ++i) {
        SLUICE_ASSIGN_OR_RETURN(
            ds, Stage(j[i], ds, path + "[" + std::to_string(i) + "]", depth + static_cast<int>(i)));
      }
      return ds;
    }
    if (!j.is_object()) {
      return InvalidArgumentError("a dataset must be an object (or a list of stages), got " +
                                  Snippet(j));
    }
    if (prev != nullptr && j.contains("input")) {
      return InvalidArgumentError("a stage of a chain takes its input from the stage before it; "
                                  "drop \"input\" (\"inputs\" adds further inputs)");
    }
    if (j.contains("ref")) {
      if (prev != nullptr) return InvalidArgumentError("a chain stage cannot be a reference");
      if (j.size() != 1 || !j["ref"].is_string()) {
        return InvalidArgumentError("a reference is {\"ref\": \"name\"} alone");
      }
      auto it = named_.find(j["ref"].get<std::string>());
      if (it == named_.end()) {
        return NotFoundError("no dataset named '" + Clip(j["ref"].get<std::string>()) +
                             "' was defined before this reference");
      }
      return it->second;
    }
    static const std::set<std::string> kFields = {"op", "attrs", "input", "inputs",
                                                  "function", "functions", "name", "comment"};
    for (const auto& [k, v] : j.items()) {
      if (!kFields.count(k)) {
        return InvalidArgumentError("unknown field '" + Clip(k) +
                                    "' (op, attrs, input, inputs, function, functions, name, "
                                    "comment; or ref)");
      }
    }
    if (!j.contains("op") || !j["op"].is_string()) {
      return InvalidArgumentError("a dataset needs \"op\" (a string)");
    }
    if (j.contains("input") && j.contains("inputs")) {
      return InvalidArgumentError("give \"input\" or \"inputs\", not both");
    }
    if (j.contains("function") && j.contains("functions")) {
      return InvalidArgumentError("give \"function\" or \"functions\", not both");
    }
    const std::string op = j["op"].get<std::string>();
    SLUICE_RETURN_IF_ERROR(CheckName("op", op));
    std::vector<DatasetPtr> inputs;
    if (prev != nullptr) inputs.push_back(NodeOf(*prev));
    if (j.contains("input")) {
      SLUICE_ASSIGN_OR_RETURN(Dataset in, Node(j["input"], path + ".input", depth + 1));
      inputs.push_back(NodeOf(in));
    } else if (j.contains("inputs")) {
      if (!j["inputs"].is_array()) return InvalidArgumentError("\"inputs\" must be a list");
      for (size_t i = 0; i < j["inputs"].size(); ++i) {
        SLUICE_ASSIGN_OR_RETURN(
            Dataset in, Node(j["inputs"][i], path + ".inputs[" + std::to_string(i) + "]", depth + 1));
        inputs.push_back(NodeOf(in));
      }
    }
    std::vector<Function> functions;
    const Json fns = j.contains("function")    ? Json::array({j["function"]})
                     : j.contains("functions") ? j["functions"]
                                               : Json::array();
    if (!fns.is_array()) return InvalidArgumentError("\"functions\" must be a list");
    for (size_t i = 0; i < fns.size(); ++i) {
      auto f = ParseFunction(fns[i]);
      if (!f.ok()) return f.status().WithContext(op + ": function " + std::to_string(i));
      functions.push_back(std::move(f).value());
    }
    const Json raw = j.value("attrs", Json::object());
    const OpDef* def = BuiltinRegistry().FindOp(op);
    auto attrs = ParseAttrs(raw, def ? def->attrs() : std::vector<AttrDef>{});
    if (!attrs.ok()) return attrs.status().WithContext(op);
    SLUICE_ASSIGN_OR_RETURN(DatasetPtr node,
                            BuiltinRegistry().CreateOp(
                                op, OpArgs{std::move(attrs).value(), inputs, functions}));
    Dataset ds = DatasetOf(std::move(node));
    if (j.contains("name")) {
      if (!j["name"].is_string()) return InvalidArgumentError("\"name\" must be a string");
      if (!named_.emplace(j["name"].get<std::string>(), ds).second) {
        return InvalidArgumentError("dataset name '" + Clip(j["name"].get<std::string>()) +
                                    "' is defined twice");
      }
    }
    return ds;
  }

  std::map<std::string, Dataset> named_;
  int64_t num_nodes_ = 0;
};

Result<Options> ParseOptions(const Json& j) {
  Options o;
  if (!j.is_object()) return InvalidArgumentError("\"options\" must be an object");
  auto get_bool = [](const Json& v, const std::string& key) -> Result<bool> {
    if (!v.is_boolean()) return InvalidArgumentError("options." + key + " must be a bool");
    return v.get<bool>();
  };
  auto get_int = [](const Json& v, const std::string& key) -> Result<int64_t> {
    auto r = JsonInt(v);
    if (!r.ok()) return r.status().WithContext("options." + key);
    return r;
  };
  for (const auto& [k, v] : j.items()) {
    if (k == "deterministic") {
      SLUICE_ASSIGN_OR_RETURN(o.deterministic, get_bool(v, k));
    } else if (k == "inline_execution") {
      SLUICE_ASSIGN_OR_RETURN(o.inline_execution, get_bool(v, k));
    } else if (k == "autotune" && v.is_object()) {
      for (const auto& [ak, av] : v.items()) {
        const std::string key = "autotune." + ak;
        if (ak == "enabled") {
          SLUICE_ASSIGN_OR_RETURN(o.autotune.enabled, get_bool(av, key));
        } else if (ak == "cpu_budget") {
          SLUICE_ASSIGN_OR_RETURN(o.autotune.cpu_budget, get_int(av, key));
        } else if (ak == "ram_budget") {
          SLUICE_ASSIGN_OR_RETURN(o.autotune.ram_budget, get_int(av, key));
        } else if (ak == "initial_parallelism") {
          SLUICE_ASSIGN_OR_RETURN(o.autotune.initial_parallelism, get_int(av, key));
        } else {
          return InvalidArgumentError("unknown option '" + Clip(key) +
                                      "' (enabled, cpu_budget, ram_budget, initial_parallelism)");
        }
      }
    } else if (k == "optimization" && v.is_object()) {
      for (const auto& [ok, ov] : v.items()) {
        if (ok == "apply_default_optimizations") {
          SLUICE_ASSIGN_OR_RETURN(o.optimization.apply_default_optimizations,
                                  get_bool(ov, "optimization." + ok));
        } else if (ok == "passes" && ov.is_object()) {
          for (const auto& [pass, on] : ov.items()) {
            SLUICE_ASSIGN_OR_RETURN(bool b, get_bool(on, "optimization.passes." + pass));
            o.optimization.Set(pass, b);
          }
        } else {
          return InvalidArgumentError("unknown option 'optimization." + ok +
                                      "' (apply_default_optimizations, passes: {name: bool})");
        }
      }
    } else if (k == "threading" && v.is_object()) {
      for (const auto& [tk, tv] : v.items()) {
        if (tk != "private_threadpool_size") {
          return InvalidArgumentError("unknown option 'threading." + tk +
                                      "' (private_threadpool_size)");
        }
        SLUICE_ASSIGN_OR_RETURN(o.threading.private_threadpool_size,
                                get_int(tv, "threading." + tk));
      }
    } else if (k == "files" && v.is_object()) {
      for (const auto& [fk, fv] : v.items()) {
        const std::string key = "files." + fk;
        if (fk != "allowed_roots" && fk != "allowed_write_roots") {
          return InvalidArgumentError("unknown option '" + key +
                                      "' (allowed_roots, allowed_write_roots)");
        }
        if (!fv.is_array()) {
          return InvalidArgumentError("options." + key + " must be a list of strings");
        }
        std::vector<std::string> roots;
        for (const auto& r : fv) {
          if (!r.is_string()) {
            return InvalidArgumentError("options." + key + " must be a list of strings");
          }
          roots.push_back(r.get<std::string>());
        }
        (fk == "allowed_roots" ? o.files.allowed_roots : o.files.allowed_write_roots) =
            std::move(roots);
      }
    } else {
      return InvalidArgumentError("unknown option '" + Clip(k) +
                                  "' (deterministic, inline_execution, autotune: {...}, "
                                  "optimization: {...}, threading: {...}, files: {...})");
    }
  }
  return o;
}

Result<Dataset> ParseSpec(const Json& j) {
  if (!j.is_object()) return InvalidArgumentError("a spec must be a JSON object");
  // A GraphDef in protobuf's JSON mapping.
  if (j.contains("node")) {
    graph::GraphDef def;
    auto s = google::protobuf::util::JsonStringToMessage(j.dump(), &def);
    if (!s.ok()) return InvalidArgumentError("GraphDef JSON: " + std::string(s.message()));
    return DatasetFromGraphDef(def);
  }
  // A bare dataset node.
  if (j.contains("op")) return SpecParser().Node(j, "dataset", 0);
  for (const auto& [k, v] : j.items()) {
    if (k != "version" && k != "options" && k != "dataset" && k != "description") {
      return InvalidArgumentError("unknown top-level field '" + Clip(k) +
                                  "' (version, description, options, dataset)");
    }
  }
  if (j.contains("version") && j["version"] != 1) {
    return InvalidArgumentError("spec version " + Snippet(j["version"]) + " is not supported (1)");
  }
  if (!j.contains("dataset")) return InvalidArgumentError("a spec needs \"dataset\"");
  // Options first: ops that touch files while being built (ListFiles, ImageFolder, Idx,
  // vocabularies) stay inside the spec's file roots.
  Options o;
  if (j.contains("options")) {
    SLUICE_ASSIGN_OR_RETURN(o, ParseOptions(j["options"]));
  }
  std::unique_ptr<Env> confined = NewConfinedEnvFor(BuildEnv(), o.files);
  ScopedBuildEnv build_env(confined.get());
  SLUICE_ASSIGN_OR_RETURN(Dataset ds, SpecParser().Node(j["dataset"], "dataset", 0));
  if (j.contains("options")) ds = ds.WithOptions(o);
  return ds;
}

}  // namespace

Result<Dataset> ParsePipelineSpec(std::string_view text, std::string_view source) {
  // nlohmann's dump() and this loader's walk recurse per level: refuse deep nesting first.
  if (int64_t at = FindTooDeep(text, kMaxJsonDepth); at >= 0) {
    return InvalidArgumentError(std::string(source) + ": JSON nests deeper than " +
                                std::to_string(kMaxJsonDepth) + " levels at byte offset " +
                                std::to_string(at));
  }
  Json j;
  try {
    j = Json::parse(text.begin(), text.end());
  } catch (const Json::exception& e) {
    // nlohmann quotes the last token read, which may be long.
    std::string what = e.what();
    if (what.size() > 160) what = what.substr(0, 157) + "...";
    return InvalidArgumentError(std::string(source) + ": not valid JSON: " + what);
  }
  auto r = ParseSpec(j);
  if (!r.ok()) {
    // Ops and kernels quote the values they reject (an unknown compression, a file name):
    // whatever they echo, the message stays bounded.
    constexpr size_t kMaxMessage = 4096;
    const Status status = r.status();  // a copy: message() refers into it
    const std::string& m = status.message();
    if (m.size() <= kMaxMessage) return status.WithContext(source);
    return Status(status.code(),
                  std::string(source) + ": " + m.substr(0, kMaxMessage) + "... (" +
                      std::to_string(m.size() - kMaxMessage) + " more characters)");
  }
  return r;
}

Result<Dataset> LoadPipelineSpec(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return ErrnoToStatus(errno, "cannot open pipeline spec", path);
  constexpr size_t kMaxSpecBytes = 64 << 20;
  std::string text;
  char buf[1 << 16];
  while (f.read(buf, sizeof(buf)) || f.gcount() > 0) {
    text.append(buf, static_cast<size_t>(f.gcount()));
    if (text.size() > kMaxSpecBytes) {
      return InvalidArgumentError("pipeline spec '" + path + "' is larger than 64 MiB");
    }
  }
  if (f.bad()) return DataLossError("error reading pipeline spec '" + path + "'");
  return ParsePipelineSpec(text, path);
}

}  // namespace sluice
