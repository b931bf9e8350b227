// Kernels parse_example and parse_sequence_example (tf.io.parse_example,
// tf.io.parse_single_sequence_example); the parsing itself is in formats/example_parser.
//
// parse_example attrs: keys list(string), kinds list(string) ("fixed" / "var"), dtypes
// list(dtype), shapes list(shape) (var: ignored), defaults list(tensor) (optional; an
// invalid Tensor() = required), component int (optional, default 0: the input component
// holding the serialized proto, a string scalar or a string vector for a batch).
// parse_sequence_example attrs: context_keys/_kinds/_dtypes/_shapes/_defaults (as above,
// all optional together), sequence_keys/_dtypes/_shapes (FixedLenSequenceFeature),
// sequence_allow_missing list(string) (optional: feature lists that may be absent, giving
// [0, ...shape]), component. Scalar input only.
// Output: one component per key (context keys first), named by the keys.
#include <algorithm>

#include "formats/example_parser.h"
#include "graph/attr.h"
#include "ops/ops.h"

namespace sluice {
namespace {

constexpr std::string_view kParseExample = "parse_example";
constexpr std::string_view kParseSequenceExample = "parse_sequence_example";

Result<std::vector<FeatureConfig>> ReadFeatureAttrs(const AttrMap& attrs,
                                                    std::string_view who,
                                                    const std::string& prefix,
                                                    bool optional) {
  const std::string keys_attr = prefix + "keys";
  if (optional && attrs.find(keys_attr) == attrs.end())
    return std::vector<FeatureConfig>{};
  SLUICE_ASSIGN_OR_RETURN(auto keys,
                          GetAttr<std::vector<std::string>>(attrs, who, keys_attr));
  SLUICE_ASSIGN_OR_RETURN(
      auto kinds, GetAttr<std::vector<std::string>>(attrs, who, prefix + "kinds"));
  SLUICE_ASSIGN_OR_RETURN(auto dtypes,
                          GetAttr<std::vector<DType>>(attrs, who, prefix + "dtypes"));
  SLUICE_ASSIGN_OR_RETURN(
      auto shapes, GetAttr<std::vector<PartialShape>>(attrs, who, prefix + "shapes"));
  SLUICE_ASSIGN_OR_RETURN(
      auto defaults, GetAttrOr<std::vector<Tensor>>(attrs, who, prefix + "defaults", {}));
  const size_t n = keys.size();
  if (kinds.size() != n || dtypes.size() != n || shapes.size() != n ||
      (!defaults.empty() && defaults.size() != n)) {
    return InvalidArgumentError(
        std::string(who) + ": " + prefix + "keys, kinds, dtypes, shapes" +
        " (and defaults, when given) must have the same length; got " +
        std::to_string(n) + ", " + std::to_string(kinds.size()) + ", " +
        std::to_string(dtypes.size()) + ", " + std::to_string(shapes.size()) + ", " +
        std::to_string(defaults.size()));
  }
  std::vector<FeatureConfig> out(n);
  for (size_t i = 0; i < n; ++i) {
    FeatureConfig& fc = out[i];
    fc.key = keys[i];
    if (kinds[i] == "fixed") {
      fc.kind = FeatureKind::kFixed;
    } else if (kinds[i] == "var") {
      fc.kind = FeatureKind::kVar;
    } else {
      return InvalidArgumentError(std::string(who) + ": kind of key '" + keys[i] +
                                  "' is '" + kinds[i] +
                                  "'; expected \"fixed\" or \"var\"");
    }
    fc.dtype = dtypes[i];
    if (fc.kind == FeatureKind::kFixed) {
      if (!shapes[i].fully_defined()) {
        return InvalidArgumentError(std::string(who) + ": fixed key '" + keys[i] +
                                    "' needs a fully defined shape, got " +
                                    shapes[i].ToString());
      }
      fc.shape = Shape(shapes[i].dims());
    }
    if (!defaults.empty()) fc.default_value = defaults[i];
  }
  return out;
}

Result<std::vector<SequenceFeatureConfig>> ReadSequenceAttrs(const AttrMap& attrs,
                                                             std::string_view who) {
  if (attrs.find("sequence_keys") == attrs.end())
    return std::vector<SequenceFeatureConfig>{};
  SLUICE_ASSIGN_OR_RETURN(auto keys,
                          GetAttr<std::vector<std::string>>(attrs, who, "sequence_keys"));
  SLUICE_ASSIGN_OR_RETURN(auto dtypes,
                          GetAttr<std::vector<DType>>(attrs, who, "sequence_dtypes"));
  SLUICE_ASSIGN_OR_RETURN(
      auto shapes, GetAttr<std::vector<PartialShape>>(attrs, who, "sequence_shapes"));
  SLUICE_ASSIGN_OR_RETURN(auto allow, GetAttrOr<std::vector<std::string>>(
                                          attrs, who, "sequence_allow_missing", {}));
  if (dtypes.size() != keys.size() || shapes.size() != keys.size()) {
    return InvalidArgumentError(
        std::string(who) +
        ": sequence_keys, sequence_dtypes and sequence_shapes must have "
        "the same length");
  }
  std::vector<SequenceFeatureConfig> out(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    out[i].key = keys[i];
    out[i].dtype = dtypes[i];
    if (!shapes[i].fully_defined()) {
      return InvalidArgumentError(std::string(who) + ": sequence key '" + keys[i] +
                                  "' needs a fully defined shape, got " +
                                  shapes[i].ToString());
    }
    out[i].shape = Shape(shapes[i].dims());
    out[i].allow_missing = std::find(allow.begin(), allow.end(), keys[i]) != allow.end();
  }
  for (const std::string& a : allow) {
    if (std::find(keys.begin(), keys.end(), a) == keys.end()) {
      return InvalidArgumentError(std::string(who) + ": sequence_allow_missing names '" +
                                  a + "', which is not a sequence key");
    }
  }
  return out;
}

// The serialized input of `e`: a string scalar or (when batches are allowed) vector.
Result<const Tensor*> SerializedInput(const Element& e, int64_t comp, bool allow_batch,
                                      std::string_view who) {
  if (comp < 0 || static_cast<size_t>(comp) >= e.size()) {
    return InvalidArgumentError(std::string(who) + ": component " + std::to_string(comp) +
                                " does not exist in an element of " +
                                std::to_string(e.size()));
  }
  const Tensor& t = e[comp];
  if (t.dtype() != DType::kString || t.rank() > (allow_batch ? 1 : 0)) {
    return InvalidArgumentError(
        std::string(who) + ": component " + std::to_string(comp) + " must be a string " +
        (allow_batch ? "scalar or vector" : "scalar") + " of serialized protos, got " +
        std::string(DTypeName(t.dtype())) + t.shape().ToString());
  }
  return &t;
}

// Checks the input spec; returns the serialized component's rank (-1 unknown) and batch.
Result<std::pair<int, int64_t>> InputShape(const ElementSpec& in, int64_t comp,
                                           bool allow_batch, std::string_view who) {
  if (in.unknown) return std::pair<int, int64_t>{allow_batch ? -1 : 0, -1};
  if (comp < 0 || static_cast<size_t>(comp) >= in.size()) {
    return InvalidArgumentError(std::string(who) + ": component " + std::to_string(comp) +
                                " does not exist in " + in.ToString());
  }
  const TensorSpec& s = in[comp];
  if (s.dtype != DType::kString || s.shape.rank() > (allow_batch ? 1 : 0)) {
    return InvalidArgumentError(
        std::string(who) + ": component " + std::to_string(comp) + " must be a string " +
        (allow_batch ? "scalar or vector" : "scalar") + ", got " + s.ToString());
  }
  int rank = s.shape.rank();
  if (!allow_batch) rank = 0;
  return std::pair<int, int64_t>{rank, rank == 1 ? s.shape.dim(0) : -1};
}

std::vector<std::string> KeysOf(const std::vector<FeatureConfig>& f) {
  std::vector<std::string> k;
  for (const FeatureConfig& c : f) k.push_back(c.key);
  return k;
}

Result<Function> MakeParseExample(const AttrMap& attrs) {
  SLUICE_ASSIGN_OR_RETURN(std::vector<FeatureConfig> features,
                          ReadFeatureAttrs(attrs, kParseExample, "", /*optional=*/false));
  SLUICE_RETURN_IF_ERROR(ValidateFeatureConfigs(&features, {}, kParseExample));
  SLUICE_ASSIGN_OR_RETURN(int64_t comp,
                          GetAttrOr<int64_t>(attrs, kParseExample, "component", 0));
  Names names = MakeNames(KeysOf(features));
  auto shared = std::make_shared<const std::vector<FeatureConfig>>(std::move(features));
  return MakeKernelFunction(
      std::string(kParseExample), attrs,
      [shared, names, comp](Element e, FunctionContext&) -> Result<Element> {
        SLUICE_ASSIGN_OR_RETURN(const Tensor* in,
                                SerializedInput(e, comp, true, kParseExample));
        SLUICE_ASSIGN_OR_RETURN(std::vector<Tensor> out,
                                ParseExamples(in->flat<std::string>(), in->rank() == 1,
                                              *shared, kParseExample));
        return Element(std::move(out), names);
      },
      {.is_random = false, .skippable = true},
      [shared, names, comp](const ElementSpec& in) -> Result<ElementSpec> {
        SLUICE_ASSIGN_OR_RETURN(auto shape, InputShape(in, comp, true, kParseExample));
        ElementSpec out;
        out.components = ExampleOutputSpecs(*shared, shape.first, shape.second);
        out.names = names;
        return out;
      });
}

Result<Function> MakeParseSequenceExample(const AttrMap& attrs) {
  SLUICE_ASSIGN_OR_RETURN(
      std::vector<FeatureConfig> context,
      ReadFeatureAttrs(attrs, kParseSequenceExample, "context_", /*optional=*/true));
  SLUICE_ASSIGN_OR_RETURN(std::vector<SequenceFeatureConfig> sequence,
                          ReadSequenceAttrs(attrs, kParseSequenceExample));
  SLUICE_RETURN_IF_ERROR(
      ValidateFeatureConfigs(&context, sequence, kParseSequenceExample));
  if (context.empty() && sequence.empty()) {
    return InvalidArgumentError(std::string(kParseSequenceExample) +
                                ": no context_keys or sequence_keys given");
  }
  SLUICE_ASSIGN_OR_RETURN(
      int64_t comp, GetAttrOr<int64_t>(attrs, kParseSequenceExample, "component", 0));
  std::vector<std::string> keys = KeysOf(context);
  for (const SequenceFeatureConfig& s : sequence) keys.push_back(s.key);
  Names names = MakeNames(std::move(keys));
  auto ctx_cfg = std::make_shared<const std::vector<FeatureConfig>>(std::move(context));
  auto seq_cfg =
      std::make_shared<const std::vector<SequenceFeatureConfig>>(std::move(sequence));
  return MakeKernelFunction(
      std::string(kParseSequenceExample), attrs,
      [ctx_cfg, seq_cfg, names, comp](Element e, FunctionContext&) -> Result<Element> {
        SLUICE_ASSIGN_OR_RETURN(const Tensor* in,
                                SerializedInput(e, comp, false, kParseSequenceExample));
        SLUICE_ASSIGN_OR_RETURN(std::vector<Tensor> out,
                                ParseSequenceExample(in->scalar<std::string>(), *ctx_cfg,
                                                     *seq_cfg, kParseSequenceExample));
        return Element(std::move(out), names);
      },
      {.is_random = false, .skippable = true},
      [ctx_cfg, seq_cfg, names, comp](const ElementSpec& in) -> Result<ElementSpec> {
        SLUICE_RETURN_IF_ERROR(InputShape(in, comp, false, kParseSequenceExample));
        ElementSpec out;
        out.components = ExampleOutputSpecs(*ctx_cfg, 0, -1);
        for (const SequenceFeatureConfig& s : *seq_cfg) {
          out.components.push_back(
              {s.dtype, PartialShape(s.shape).WithLeadingDim(PartialShape::kUnknownDim)});
        }
        out.names = names;
        return out;
      });
}

}  // namespace

void RegisterExampleKernels(Registry* r) {
  auto features = [](KernelDef d, const std::string& prefix, const std::string& what) {
    const bool optional = !prefix.empty();
    auto list = [&](KernelDef d, const std::string& name, AttrType type, std::string doc) {
      if (optional) return std::move(d).OptionalAttr(prefix + name, type, std::move(doc));
      return std::move(d).Attr(prefix + name, type, std::move(doc));
    };
    d = list(std::move(d), "keys", AttrType::kStringList, what + " feature names.");
    d = list(std::move(d), "kinds", AttrType::kStringList,
             "Per key: \"fixed\" (FixedLenFeature) or \"var\" (VarLenFeature).");
    d = list(std::move(d), "dtypes", AttrType::kDTypeList, "Per key: int64, float32 or string.");
    d = list(std::move(d), "shapes", AttrType::kShapeList, "Per key: the value's shape.");
    return std::move(d).Attr(prefix + "defaults", AttrType::kTensorList, std::vector<Tensor>{},
                             "Per key: the value of a missing fixed feature (empty: "
                             "missing is an error).");
  };
  r->RegisterKernel(
      features(KernelDef(std::string(kParseExample))
                   .Summary("Parses a serialized tf.train.Example into one tensor per key.")
                   .Attr("component", AttrType::kInt, int64_t{0}, "The component it works on.")
                   .Traits({.skippable = true}),
               "", "The"),
      MakeParseExample);
  r->RegisterKernel(
      features(KernelDef(std::string(kParseSequenceExample))
                   .Summary("Parses a serialized tf.train.SequenceExample: context features, "
                            "then one [steps, ...] tensor per sequence feature.")
                   .Attr("component", AttrType::kInt, int64_t{0}, "The component it works on.")
                   .OptionalAttr("sequence_keys", AttrType::kStringList,
                                 "Sequence feature names.")
                   .OptionalAttr("sequence_dtypes", AttrType::kDTypeList,
                                 "Per sequence key: int64, float32 or string.")
                   .OptionalAttr("sequence_shapes", AttrType::kShapeList,
                                 "Per sequence key: one step's shape.")
                   .Attr("sequence_allow_missing", AttrType::kStringList,
                         std::vector<std::string>{},
                         "Sequence keys that may be absent (then 0 steps).")
                   .Traits({.skippable = true}),
               "context_", "Context"),
      MakeParseSequenceExample);
}

}  // namespace sluice
