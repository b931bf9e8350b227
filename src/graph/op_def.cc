#include "graph/op_def.h"

#include <algorithm>

namespace sluice {

std::string_view AttrTypeName(AttrType t) {
  switch (t) {
    case AttrType::kBool: return "bool";
    case AttrType::kInt: return "int";
    case AttrType::kFloat: return "float";
    case AttrType::kString: return "string";
    case AttrType::kDType: return "dtype";
    case AttrType::kShape: return "shape";
    case AttrType::kIntList: return "list(int)";
    case AttrType::kFloatList: return "list(float)";
    case AttrType::kStringList: return "list(string)";
    case AttrType::kDTypeList: return "list(dtype)";
    case AttrType::kShapeList: return "list(shape)";
    case AttrType::kTensor: return "tensor";
    case AttrType::kTensorList: return "list(tensor)";
    case AttrType::kAny: return "any";
  }
  return "?";
}

namespace {

// True when v holds an empty list of any element type.
bool IsEmptyList(const AttrValue& v) {
  return std::visit(
      [](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::vector<int64_t>> ||
                      std::is_same_v<T, std::vector<double>> ||
                      std::is_same_v<T, std::vector<std::string>> ||
                      std::is_same_v<T, std::vector<DType>> ||
                      std::is_same_v<T, std::vector<PartialShape>> ||
                      std::is_same_v<T, std::vector<Tensor>>) {
          return x.empty();
        } else {
          return false;
        }
      },
      v);
}

bool IsListType(AttrType t) {
  return t == AttrType::kIntList || t == AttrType::kFloatList || t == AttrType::kStringList ||
         t == AttrType::kDTypeList || t == AttrType::kShapeList || t == AttrType::kTensorList;
}

template <typename Def>
const AttrDef* Find(const std::vector<AttrDef>& attrs, std::string_view name) {
  for (const AttrDef& a : attrs) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

Status ValidateAttrs(std::string_view owner, const std::vector<AttrDef>& defs,
                     const AttrMap& attrs) {
  for (const auto& [name, value] : attrs) {
    const AttrDef* def = nullptr;
    for (const AttrDef& a : defs) {
      if (a.name == name) def = &a;
    }
    if (def == nullptr) {
      std::vector<std::string_view> names;
      for (const AttrDef& a : defs) names.push_back(a.name);
      const std::string close = ClosestName(name, names);
      std::string msg = std::string(owner) + ": unknown attribute '" +
                        (name.size() > 64 ? name.substr(0, 64) + "..." : name) + "'";
      if (!close.empty()) {
        msg += "; did you mean '" + close + "'?";
      } else if (names.empty()) {
        msg += "; it takes no attributes";
      } else {
        msg += "; valid attributes:";
        for (size_t i = 0; i < names.size(); ++i) {
          msg += (i ? ", " : " ") + std::string(names[i]);
        }
      }
      return InvalidArgumentError(msg);
    }
    if (!AttrValueHasType(value, def->type)) {
      std::string shown = AttrValueDebugString(value);
      if (shown.size() > 64) shown = shown.substr(0, 64) + "...";
      return InvalidArgumentError(std::string(owner) + ": attribute '" + name + "' must be " +
                                  std::string(AttrTypeName(def->type)) + ", got " + shown);
    }
  }
  for (const AttrDef& a : defs) {
    if (a.required() && attrs.find(a.name) == attrs.end()) {
      return InvalidArgumentError(std::string(owner) + ": missing attribute '" + a.name +
                                  "' (" + std::string(AttrTypeName(a.type)) + ": " + a.doc +
                                  ")");
    }
  }
  return Status::OK();
}

std::string_view KindName(Function::Kind k) {
  switch (k) {
    case Function::Kind::kElement: return "an element -> element function";
    case Function::Kind::kPredicate: return "a predicate";
    case Function::Kind::kDataset: return "an element -> dataset function";
    case Function::Kind::kInvalid: break;
  }
  return "an invalid function";
}

}  // namespace

bool AttrValueHasType(const AttrValue& v, AttrType t) {
  switch (t) {
    case AttrType::kAny: return true;
    case AttrType::kBool: return std::holds_alternative<bool>(v);
    case AttrType::kInt: return std::holds_alternative<int64_t>(v);
    case AttrType::kFloat:
      return std::holds_alternative<double>(v) || std::holds_alternative<int64_t>(v);
    case AttrType::kString: return std::holds_alternative<std::string>(v);
    case AttrType::kDType: return std::holds_alternative<DType>(v);
    case AttrType::kShape: return std::holds_alternative<PartialShape>(v);
    case AttrType::kTensor: return std::holds_alternative<Tensor>(v);
    default: break;
  }
  if (IsListType(t) && IsEmptyList(v)) return true;
  switch (t) {
    case AttrType::kIntList: return std::holds_alternative<std::vector<int64_t>>(v);
    case AttrType::kFloatList:
      return std::holds_alternative<std::vector<double>>(v) ||
             std::holds_alternative<std::vector<int64_t>>(v);
    case AttrType::kStringList: return std::holds_alternative<std::vector<std::string>>(v);
    case AttrType::kDTypeList: return std::holds_alternative<std::vector<DType>>(v);
    case AttrType::kShapeList: return std::holds_alternative<std::vector<PartialShape>>(v);
    case AttrType::kTensorList: return std::holds_alternative<std::vector<Tensor>>(v);
    default: return false;
  }
}

const AttrDef* OpDef::FindAttr(std::string_view name) const {
  return Find<OpDef>(attrs_, name);
}

const AttrDef* KernelDef::FindAttr(std::string_view name) const {
  return Find<KernelDef>(attrs_, name);
}

Status OpDef::Validate(const OpArgs& args) const {
  const int n = static_cast<int>(args.inputs.size());
  if (n < min_inputs_ || (max_inputs_ >= 0 && n > max_inputs_)) {
    std::string want = max_inputs_ < 0               ? "at least " + std::to_string(min_inputs_)
                       : min_inputs_ == max_inputs_ ? std::to_string(min_inputs_)
                                                    : std::to_string(min_inputs_) + " to " +
                                                          std::to_string(max_inputs_);
    return InvalidArgumentError(name_ + ": expects " + want + " input(s), got " +
                                std::to_string(n));
  }
  for (const DatasetPtr& in : args.inputs) {
    if (in == nullptr) return InvalidArgumentError(name_ + ": an input is null");
  }
  if (args.functions.size() != functions_.size()) {
    return InvalidArgumentError(name_ + ": expects " + std::to_string(functions_.size()) +
                                " function(s), got " + std::to_string(args.functions.size()));
  }
  for (size_t i = 0; i < functions_.size(); ++i) {
    const Function& f = args.functions[i];
    const Function::Kind want = functions_[i];
    const Function::Kind k = f.valid() ? f.kind() : Function::Kind::kInvalid;
    if (k == want) continue;
    if (want == Function::Kind::kPredicate && k == Function::Kind::kElement) continue;
    return InvalidArgumentError(name_ + ": function '" + (f.valid() ? f.name() : "") +
                                "' must be " + std::string(KindName(want)));
  }
  return ValidateAttrs(name_, attrs_, args.attrs);
}

bool OpDef::ReadsSeedMix(const AttrMap& attrs) const {
  switch (traits_.seed_mix) {
    case SeedMix::kNone: return false;
    case SeedMix::kAlways:
    case SeedMix::kUnknown: return true;
    case SeedMix::kWhenAttrTrue: {
      auto it = attrs.find(traits_.seed_mix_attr);
      if (it != attrs.end()) {
        if (const bool* b = std::get_if<bool>(&it->second)) return *b;
      }
      const AttrDef* def = FindAttr(traits_.seed_mix_attr);
      if (def && def->default_value) {
        if (const bool* b = std::get_if<bool>(&*def->default_value)) return *b;
      }
      return true;
    }
  }
  return true;
}

Status KernelDef::Validate(const AttrMap& attrs) const {
  return ValidateAttrs("kernel " + name_, attrs_, attrs);
}

std::string ClosestName(std::string_view name, const std::vector<std::string_view>& candidates) {
  // Levenshtein distance with one row; names are short.
  auto distance = [](std::string_view a, std::string_view b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
      size_t diag = row[0];
      row[0] = i;
      for (size_t j = 1; j <= b.size(); ++j) {
        const size_t up = row[j];
        row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
        diag = up;
      }
    }
    return row[b.size()];
  };
  if (name.size() > 256) return "";
  std::string best;
  size_t best_d = SIZE_MAX;
  for (std::string_view c : candidates) {
    const size_t d = distance(name, c);
    if (d < best_d) {
      best_d = d;
      best = std::string(c);
    }
  }
  const size_t longer = std::max(name.size(), best.size());
  if (best.empty() || best_d * 3 > longer) return "";
  return best;
}

}  // namespace sluice
