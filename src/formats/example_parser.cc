#include "formats/example_parser.h"

#include <google/protobuf/arena.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <set>

#include "formats/proto/example.pb.h"

namespace sluice {
namespace {

using tensorflow::Feature;

std::string Where(bool batched, size_t index) {
  return batched ? " (example " + std::to_string(index) + " of the batch)" : "";
}

Feature::KindCase KindFor(DType dtype) {
  switch (dtype) {
    case DType::kInt64:
      return Feature::kInt64List;
    case DType::kFloat32:
      return Feature::kFloatList;
    default:
      return Feature::kBytesList;
  }
}

std::string_view KindName(Feature::KindCase k) {
  switch (k) {
    case Feature::kInt64List:
      return "int64_list";
    case Feature::kFloatList:
      return "float_list";
    case Feature::kBytesList:
      return "bytes_list";
    default:
      return "no list";
  }
}

int64_t ValueCount(const Feature& f) {
  switch (f.kind_case()) {
    case Feature::kInt64List:
      return f.int64_list().value_size();
    case Feature::kFloatList:
      return f.float_list().value_size();
    case Feature::kBytesList:
      return f.bytes_list().value_size();
    default:
      return 0;
  }
}

// Copies f's values into dst's flat storage starting at element `offset` (room is checked
// by the caller; the kind by CheckKind).
void CopyValues(const Feature& f, Tensor* dst, int64_t offset) {
  switch (f.kind_case()) {
    case Feature::kInt64List: {
      const auto& v = f.int64_list().value();
      std::copy(v.begin(), v.end(), dst->mutable_data<int64_t>() + offset);
      return;
    }
    case Feature::kFloatList: {
      const auto& v = f.float_list().value();
      std::copy(v.begin(), v.end(), dst->mutable_data<float>() + offset);
      return;
    }
    case Feature::kBytesList: {
      std::string* out = dst->mutable_data<std::string>() + offset;
      for (const std::string& s : f.bytes_list().value()) *out++ = s;
      return;
    }
    default:
      return;
  }
}

Status CheckKind(const Feature& f, DType dtype, std::string_view who,
                 const std::string& what, const std::string& where) {
  if (f.kind_case() == Feature::KIND_NOT_SET || f.kind_case() == KindFor(dtype)) {
    return Status::OK();
  }
  return InvalidArgumentError(std::string(who) + ": " + what + " has " +
                              std::string(KindName(f.kind_case())) + " but dtype " +
                              std::string(DTypeName(dtype)) + " needs " +
                              std::string(KindName(KindFor(dtype))) + where);
}

const Feature* FindFeature(const tensorflow::Features& features, const std::string& key) {
  const auto& m = features.feature();
  auto it = m.find(key);
  return it == m.end() ? nullptr : &it->second;
}

Shape WithLeading(int64_t d, const Shape& s) {
  Shape out = s;
  out.InsertDim(0, d);
  return out;
}

// Parses the features of `examples` (one Features message each; null = no features).
Result<std::vector<Tensor>> ParseFeatures(
    const std::vector<const tensorflow::Features*>& examples, bool batched,
    const std::vector<FeatureConfig>& features, std::string_view who) {
  static const tensorflow::Features kEmpty;
  const int64_t batch = static_cast<int64_t>(examples.size());
  std::vector<Tensor> out;
  out.reserve(features.size());
  std::vector<const Feature*> found(examples.size());
  for (const FeatureConfig& fc : features) {
    const std::string what = "key '" + fc.key + "'";
    for (size_t b = 0; b < examples.size(); ++b) {
      found[b] = FindFeature(examples[b] ? *examples[b] : kEmpty, fc.key);
      if (found[b] != nullptr) {
        SLUICE_RETURN_IF_ERROR(
            CheckKind(*found[b], fc.dtype, who, what, Where(batched, b)));
      }
    }
    if (fc.kind == FeatureKind::kFixed) {
      const int64_t n = fc.shape.num_elements();
      auto missing = [&](size_t b) {
        return InvalidArgumentError(std::string(who) + ": " + what +
                                    " is required but missing" + Where(batched, b));
      };
      if (!batched && found[0] == nullptr) {
        if (!fc.default_value.valid()) return missing(0);
        out.push_back(fc.default_value);  // shared: tensors are immutable once handed on
        continue;
      }
      SLUICE_ASSIGN_OR_RETURN(
          Tensor t,
          Tensor::Allocate(fc.dtype, batched ? WithLeading(batch, fc.shape) : fc.shape));
      for (size_t b = 0; b < examples.size(); ++b) {
        if (found[b] == nullptr) {
          if (!fc.default_value.valid()) return missing(b);
          SLUICE_RETURN_IF_ERROR(
              CopyIntoRow(fc.default_value, &t, static_cast<int64_t>(b)));
          continue;
        }
        const int64_t count = ValueCount(*found[b]);
        if (count != n) {
          return InvalidArgumentError(std::string(who) + ": " + what + " has " +
                                      std::to_string(count) + " values but shape " +
                                      fc.shape.ToString() + " needs " +
                                      std::to_string(n) + Where(batched, b));
        }
        CopyValues(*found[b], &t, static_cast<int64_t>(b) * n);
      }
      out.push_back(std::move(t));
    } else {
      int64_t longest = 0;
      for (const Feature* f : found) {
        if (f) longest = std::max(longest, ValueCount(*f));
      }
      Shape shape = batched ? Shape{batch, longest} : Shape{longest};
      SLUICE_ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(fc.dtype, std::move(shape)));
      if (fc.dtype != DType::kString && t.nbytes() > 0) {
        memset(t.mutable_data<char>(), 0, t.nbytes());  // the padding
      }
      for (size_t b = 0; b < examples.size(); ++b) {
        if (found[b]) CopyValues(*found[b], &t, static_cast<int64_t>(b) * longest);
      }
      out.push_back(std::move(t));
    }
  }
  return out;
}

Status ParseError(std::string_view who, std::string_view type, size_t bytes, bool batched,
                  size_t index) {
  return InvalidArgumentError(
      std::string(who) + ": could not parse a serialized tf.train." + std::string(type) +
      " (" + std::to_string(bytes) + " bytes)" + Where(batched, index));
}

}  // namespace

Status ValidateFeatureConfigs(std::vector<FeatureConfig>* features,
                              const std::vector<SequenceFeatureConfig>& sequence,
                              std::string_view who) {
  std::set<std::string_view> keys;
  auto check_key = [&](const std::string& key) -> Status {
    if (!keys.insert(key).second) {
      return InvalidArgumentError(std::string(who) + ": duplicate key '" + key + "'");
    }
    return Status::OK();
  };
  auto check_dtype = [&](const std::string& key, DType d) -> Status {
    if (d == DType::kInt64 || d == DType::kFloat32 || d == DType::kString)
      return Status::OK();
    return InvalidArgumentError(std::string(who) + ": key '" + key + "' has dtype " +
                                std::string(DTypeName(d)) +
                                "; features are int64, float32 or string");
  };
  for (FeatureConfig& fc : *features) {
    SLUICE_RETURN_IF_ERROR(check_key(fc.key));
    SLUICE_RETURN_IF_ERROR(check_dtype(fc.key, fc.dtype));
    if (fc.kind == FeatureKind::kVar) {
      if (fc.default_value.valid()) {
        return InvalidArgumentError(std::string(who) + ": key '" + fc.key +
                                    "' is a var feature and takes no default");
      }
      continue;
    }
    for (int64_t d : fc.shape.dims()) {
      if (d < 0) {
        return InvalidArgumentError(std::string(who) + ": key '" + fc.key +
                                    "' has shape " + fc.shape.ToString() +
                                    " with a negative dimension");
      }
    }
    if (!fc.default_value.valid()) continue;
    const Tensor& d = fc.default_value;
    if (d.dtype() != fc.dtype) {
      return InvalidArgumentError(std::string(who) + ": default of key '" + fc.key +
                                  "' is " + std::string(DTypeName(d.dtype())) +
                                  ", the feature is " + std::string(DTypeName(fc.dtype)));
    }
    auto reshaped = d.Reshape(fc.shape);
    if (!reshaped.ok()) {
      return InvalidArgumentError(std::string(who) + ": default of key '" + fc.key +
                                  "' has shape " + d.shape().ToString() +
                                  ", the feature " + fc.shape.ToString());
    }
    fc.default_value = std::move(reshaped).value();
  }
  for (const SequenceFeatureConfig& sc : sequence) {
    SLUICE_RETURN_IF_ERROR(check_key(sc.key));
    SLUICE_RETURN_IF_ERROR(check_dtype(sc.key, sc.dtype));
    for (int64_t d : sc.shape.dims()) {
      if (d < 0) {
        return InvalidArgumentError(std::string(who) + ": sequence key '" + sc.key +
                                    "' has a negative dimension in " +
                                    sc.shape.ToString());
      }
    }
  }
  return Status::OK();
}

Result<std::vector<Tensor>> ParseExamples(std::span<const std::string> serialized,
                                          bool batched,
                                          const std::vector<FeatureConfig>& features,
                                          std::string_view who) {
  if (!batched && serialized.size() != 1) {
    return InvalidArgumentError(std::string(who) +
                                ": expected one serialized Example, got " +
                                std::to_string(serialized.size()));
  }
  google::protobuf::Arena arena;
  std::vector<const tensorflow::Features*> examples;
  examples.reserve(serialized.size());
  for (size_t i = 0; i < serialized.size(); ++i) {
    const std::string& s = serialized[i];
    auto* ex = google::protobuf::Arena::CreateMessage<tensorflow::Example>(&arena);
    if (s.size() > INT_MAX || !ex->ParseFromArray(s.data(), static_cast<int>(s.size()))) {
      return ParseError(who, "Example", s.size(), batched, i);
    }
    examples.push_back(ex->has_features() ? &ex->features() : nullptr);
  }
  return ParseFeatures(examples, batched, features, who);
}

Result<std::vector<Tensor>> ParseSequenceExample(
    std::string_view serialized, const std::vector<FeatureConfig>& context,
    const std::vector<SequenceFeatureConfig>& sequence, std::string_view who) {
  google::protobuf::Arena arena;
  auto* ex = google::protobuf::Arena::CreateMessage<tensorflow::SequenceExample>(&arena);
  if (serialized.size() > INT_MAX ||
      !ex->ParseFromArray(serialized.data(), static_cast<int>(serialized.size()))) {
    return ParseError(who, "SequenceExample", serialized.size(), false, 0);
  }
  SLUICE_ASSIGN_OR_RETURN(
      std::vector<Tensor> out,
      ParseFeatures({ex->has_context() ? &ex->context() : nullptr}, false, context, who));
  const auto& lists = ex->feature_lists().feature_list();
  for (const SequenceFeatureConfig& sc : sequence) {
    const std::string what = "feature list '" + sc.key + "'";
    auto it = lists.find(sc.key);
    if (it == lists.end()) {
      if (!sc.allow_missing) {
        return InvalidArgumentError(std::string(who) + ": " + what +
                                    " is required but missing");
      }
      out.push_back(Tensor::Zeros(sc.dtype, WithLeading(0, sc.shape)));
      continue;
    }
    const auto& steps = it->second.feature();
    const int64_t n = sc.shape.num_elements();
    SLUICE_ASSIGN_OR_RETURN(
        Tensor t, Tensor::Allocate(sc.dtype, WithLeading(steps.size(), sc.shape)));
    for (int i = 0; i < steps.size(); ++i) {
      const std::string where = " (step " + std::to_string(i) + ")";
      SLUICE_RETURN_IF_ERROR(CheckKind(steps[i], sc.dtype, who, what, where));
      const int64_t count = ValueCount(steps[i]);
      if (count != n) {
        return InvalidArgumentError(std::string(who) + ": " + what + " has " +
                                    std::to_string(count) + " values but shape " +
                                    sc.shape.ToString() + " needs " + std::to_string(n) +
                                    where);
      }
      CopyValues(steps[i], &t, int64_t{i} * n);
    }
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<TensorSpec> ExampleOutputSpecs(const std::vector<FeatureConfig>& features,
                                           int rank, int64_t batch) {
  std::vector<TensorSpec> out;
  for (const FeatureConfig& fc : features) {
    PartialShape shape = PartialShape::UnknownRank();
    if (rank >= 0) {
      shape = fc.kind == FeatureKind::kFixed ? PartialShape(fc.shape)
                                             : PartialShape{PartialShape::kUnknownDim};
      if (rank == 1) shape = shape.WithLeadingDim(batch);
    }
    out.push_back({fc.dtype, std::move(shape)});
  }
  return out;
}

}  // namespace sluice
