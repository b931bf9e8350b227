#include "formats/example_parser.h"

#include <algorithm>
#include <array>
#include <climits>
#include <cstring>
#include <list>
#include <set>

#include "core/coding.h"
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

// ---- The wire scanner ----
//
// Examples are read straight from their bytes, the way TensorFlow's fast parser
// (example_proto_fast_parsing.cc) does: no message objects, and each value is copied
// once, from the serialized bytes into the output tensor (protobuf would copy every bytes
// value into its message first). The scanner reads the part of the wire format whose
// meaning is plain: known fields at most once each (lists: any number of values, packed,
// unpacked or both), map entries with distinct ASCII keys, and unknown fields, which it
// skips as protobuf does (a known field number with another wire type is unknown too).
// Anything else, valid or not (a message field twice, which protobuf merges; duplicate
// keys; non-ASCII keys, which proto3 checks for UTF-8; groups; malformed bytes) goes to
// protobuf, which rejects it or parses it, and the scanner then reads protobuf's own
// serialization of the message. So what is accepted and what it means are protobuf's on
// every input; tests and the example fuzzer compare the two paths.

// Reads protobuf's wire format with the varint and fixed-width readers of core/coding.h.
class WireReader {
 public:
  explicit WireReader(std::string_view s) : in_(s) {}
  bool done() const { return in_.empty(); }
  // At most 10 bytes, and a 10th byte of 0 or 1 (no bits past 64).
  bool Varint(uint64_t* v) { return GetVarint64(&in_, v); }
  bool Tag(uint32_t* field, uint32_t* type) {
    uint64_t t;
    if (!Varint32(&t) || t > 0xffffffffu) return false;
    *field = static_cast<uint32_t>(t >> 3);
    *type = static_cast<uint32_t>(t & 7);
    return *field != 0;
  }
  // A length-delimited value.
  bool Bytes(std::string_view* v) {
    uint64_t n;
    if (!Varint32(&n) || n > in_.size()) return false;
    *v = in_.substr(0, n);
    in_.remove_prefix(n);
    return true;
  }
  bool Fixed32(uint32_t* v) { return GetFixed32(&in_, v); }
  // Skips a field whose tag was just read. Groups (deprecated) are skipped only in
  // protobuf's own serialization (`canonical`), where they are known to be well formed.
  bool Skip(uint32_t field, uint32_t type, bool canonical, int depth = 0) {
    uint64_t x;
    std::string_view v;
    switch (type) {
      case 0: return Varint(&x);
      case 1: return Advance(8);
      case 2: return Bytes(&v);
      case 5: return Advance(4);
      case 3: {
        if (!canonical || depth > 100) return false;
        uint32_t f, t;
        while (Tag(&f, &t)) {
          if (t == 4) return f == field;
          if (!Skip(f, t, canonical, depth + 1)) return false;
        }
        return false;
      }
      default: return false;
    }
  }

 private:
  // Tags and lengths take at most 5 bytes, as protobuf reads them.
  bool Varint32(uint64_t* v) {
    const size_t before = in_.size();
    return GetVarint64(&in_, v) && before - in_.size() <= 5;
  }
  bool Advance(size_t n) {
    if (in_.size() < n) return false;
    in_.remove_prefix(n);
    return true;
  }
  std::string_view in_;
};

constexpr uint32_t kVarintWire = 0, kLenWire = 2, kFixed32Wire = 5;

// Adds to *n the varints in a packed run, checking that each ends within 10 bytes (the
// 10th at most 1, as WireReader::Varint).
bool CountPackedVarints(std::string_view v, int64_t* n) {
  int64_t count = 0;
  int run = 0;  // continuation bytes so far in the current varint
  for (char ch : v) {
    const auto b = static_cast<uint8_t>(ch);
    if (b < 0x80) {
      if (run == 9 && b > 1) return false;
      ++count;
      run = 0;
    } else if (++run == 10) {
      return false;
    }
  }
  *n += count;
  return run == 0;
}

// Decodes a packed run that CountPackedVarints accepted; returns the values written.
int64_t DecodePackedVarints(std::string_view v, int64_t* out) {
  const auto* p = reinterpret_cast<const uint8_t*>(v.data());
  const uint8_t* end = p + v.size();
  int64_t* const first = out;
  while (p < end) {
    uint64_t b = *p++;
    uint64_t x = b & 0x7f;
    for (int shift = 7; b >= 0x80; shift += 7) {
      b = *p++;
      x |= (b & 0x7f) << shift;
    }
    *out++ = static_cast<int64_t>(x);
  }
  return out - first;
}

// Reads a list message (BytesList, FloatList, Int64List): counts its values into *count
// and, with `dst`, stores them in dst's flat storage from element `offset` on (room is
// the caller's to check). False when the scanner does not take the bytes.
bool ReadList(Feature::KindCase kind, std::string_view body, bool canonical, int64_t* count,
              Tensor* dst = nullptr, int64_t offset = 0) {
  WireReader r(body);
  int64_t n = 0;
  std::string* strings = nullptr;
  float* floats = nullptr;
  int64_t* ints = nullptr;
  if (dst != nullptr) {
    if (kind == Feature::kBytesList) strings = dst->mutable_data<std::string>() + offset;
    if (kind == Feature::kFloatList) floats = dst->mutable_data<float>() + offset;
    if (kind == Feature::kInt64List) ints = dst->mutable_data<int64_t>() + offset;
  }
  while (!r.done()) {
    uint32_t field, type;
    if (!r.Tag(&field, &type)) return false;
    std::string_view v;
    uint64_t x = 0;
    uint32_t bits = 0;
    if (field != 1) {
      if (!r.Skip(field, type, canonical)) return false;
    } else if (kind == Feature::kBytesList && type == kLenWire) {
      if (!r.Bytes(&v)) return false;
      if (strings) strings[n].assign(v.data(), v.size());
      ++n;
    } else if (kind == Feature::kFloatList && type == kFixed32Wire) {
      if (!r.Fixed32(&bits)) return false;
      if (floats) std::memcpy(floats + n, &bits, 4);
      ++n;
    } else if (kind == Feature::kFloatList && type == kLenWire) {
      if (!r.Bytes(&v) || v.size() % 4 != 0) return false;
      if (floats) std::memcpy(floats + n, v.data(), v.size());
      n += static_cast<int64_t>(v.size() / 4);
    } else if (kind == Feature::kInt64List && type == kVarintWire) {
      if (!r.Varint(&x)) return false;
      if (ints) ints[n] = static_cast<int64_t>(x);
      ++n;
    } else if (kind == Feature::kInt64List && type == kLenWire) {
      if (!r.Bytes(&v)) return false;
      if (ints) {
        n += DecodePackedVarints(v, ints + n);
      } else if (!CountPackedVarints(v, &n)) {
        return false;
      }
    } else if (!r.Skip(field, type, canonical)) {  // field 1 with another wire type
      return false;
    }
  }
  *count = n;
  return true;
}

// One Feature: which list it holds and the list message's bytes.
struct FeatureView {
  Feature::KindCase kind = Feature::KIND_NOT_SET;
  std::string_view list;
  int64_t count = 0;  // values in the list
  bool canonical = false;
};

// Calls on_field(field, bytes) for each length-delimited field numbered 1..max_field of a
// message, in order, skipping every other field (unknown fields included).
template <typename OnField>
bool ForEachLenField(std::string_view body, uint32_t max_field, bool canonical,
                     const OnField& on_field) {
  WireReader r(body);
  while (!r.done()) {
    uint32_t field, type;
    std::string_view value;
    if (!r.Tag(&field, &type)) return false;
    if (field > max_field || type != kLenWire) {
      if (!r.Skip(field, type, canonical)) return false;
    } else if (!r.Bytes(&value) || !on_field(field, value)) {
      return false;
    }
  }
  return true;
}

// Calls on_value(bytes) for each element of a repeated message field 1 (map entries,
// FeatureList steps).
template <typename OnValue>
bool ForEachField1(std::string_view body, bool canonical, const OnValue& on_value) {
  return ForEachLenField(body, 1, canonical,
                         [&](uint32_t, std::string_view v) { return on_value(v); });
}

bool ScanFeature(std::string_view body, bool canonical, FeatureView* out) {
  *out = FeatureView();
  out->canonical = canonical;
  return ForEachLenField(body, 3, canonical, [&](uint32_t field, std::string_view list) {
    // A second list would replace or merge into the first (oneof): protobuf's call.
    if (out->kind != Feature::KIND_NOT_SET) return false;
    out->list = list;
    out->kind = field == 1   ? Feature::kBytesList
                : field == 2 ? Feature::kFloatList
                             : Feature::kInt64List;
    return ReadList(out->kind, out->list, canonical, &out->count);
  });
}

// Copies a scanned Feature's values into dst's flat storage from element `offset` on
// (room is checked by the caller, the kind by CheckKind).
void CopyValues(const FeatureView& f, Tensor* dst, int64_t offset) {
  int64_t n;
  if (f.kind != Feature::KIND_NOT_SET) ReadList(f.kind, f.list, f.canonical, &n, dst, offset);
}

// The fields of a message made of length-delimited fields numbered 1..N, each at most
// once (Example: features; SequenceExample: context, feature_lists; a map entry: key,
// value). Fields not present stay empty.
template <size_t N>
bool ScanFields(std::string_view body, bool canonical,
                std::array<std::string_view, N>* fields) {
  std::array<bool, N> seen{};
  return ForEachLenField(body, N, canonical, [&](uint32_t field, std::string_view v) {
    if (seen[field - 1]) return false;
    seen[field - 1] = true;
    (*fields)[field - 1] = v;
    return true;
  });
}

// Scans a message whose map<string, V> is field 1 (Features.feature,
// FeatureLists.feature_list), calling on_entry(key, V's bytes) for each entry (an entry
// without a value has V's default, empty bytes). Keys must be ASCII (protobuf checks
// proto3 strings for UTF-8; ASCII is trivially valid) unless `canonical`.
template <typename OnEntry>
bool ScanMap(std::string_view body, bool canonical, const OnEntry& on_entry) {
  return ForEachField1(body, canonical, [&](std::string_view entry) {
    std::array<std::string_view, 2> kv;  // key, value
    if (!ScanFields(entry, canonical, &kv)) return false;
    const std::string_view key = kv[0], value = kv[1];
    if (!canonical) {
      for (char c : key) {
        if (static_cast<unsigned char>(c) >= 0x80) return false;
      }
    }
    return on_entry(key, value);
  });
}

// Whether two of `entries` (pairs of key and anything) have the same key: which one wins
// is protobuf's business.
template <typename Entry>
bool HasDuplicateKeys(const std::vector<Entry>& entries) {
  if (entries.size() <= 8) {
    for (size_t i = 0; i < entries.size(); ++i) {
      for (size_t j = i + 1; j < entries.size(); ++j) {
        if (entries[i].first == entries[j].first) return true;
      }
    }
    return false;
  }
  std::vector<std::string_view> keys;
  keys.reserve(entries.size());
  for (const Entry& e : entries) keys.push_back(e.first);
  std::sort(keys.begin(), keys.end());
  return std::adjacent_find(keys.begin(), keys.end()) != keys.end();
}

// An Example's features (or a SequenceExample's context), by key.
struct FeaturesView {
  std::vector<std::pair<std::string_view, FeatureView>> features;
  const FeatureView* Find(std::string_view key) const {
    for (const auto& [k, f] : features) {
      if (k == key) return &f;
    }
    return nullptr;
  }
};

bool ScanFeatures(std::string_view body, bool canonical, FeaturesView* out) {
  out->features.clear();
  return ScanMap(body, canonical,
                 [&](std::string_view key, std::string_view value) {
                   auto& [k, f] = out->features.emplace_back();
                   k = key;
                   return ScanFeature(value, canonical, &f);
                 }) &&
         (canonical || !HasDuplicateKeys(out->features));
}

bool ScanExample(std::string_view bytes, bool canonical, FeaturesView* view) {
  std::array<std::string_view, 1> fields;
  return ScanFields(bytes, canonical, &fields) && ScanFeatures(fields[0], canonical, view);
}

// Scans `serialized` as a `Message` with scan(bytes, canonical); when the scanner will not
// take it, protobuf parses it (or rejects it: false) and the re-serialized message, kept
// in `keep` for the views into it, is scanned instead.
template <typename Message, typename Scan>
Result<bool> ScanOrCanonicalize(std::string_view serialized, std::list<std::string>* keep,
                                const Scan& scan) {
  if (scan(serialized, false)) return true;
  std::string* canonical = &keep->emplace_back();
  // A plain message, not one on an Arena: under TSan, destroying an Arena that held such
  // an Example (duplicate keys) crashed in Debian's libprotobuf (MapFieldBase::Destruct
  // deleting memory TSan's allocator did not hand out); ASan saw nothing wrong.
  Message m;
  if (serialized.size() > INT_MAX ||
      !m.ParseFromArray(serialized.data(), static_cast<int>(serialized.size()))) {
    return false;
  }
  if (!m.SerializeToString(canonical) || !scan(*canonical, true)) {
    return InternalError("protobuf's serialization of a " + m.GetTypeName() +
                         " was not scanned");
  }
  return true;
}

Status CheckKind(const FeatureView& f, DType dtype, std::string_view who,
                 const std::string& what, const std::string& where) {
  if (f.kind == Feature::KIND_NOT_SET || f.kind == KindFor(dtype)) return Status::OK();
  return InvalidArgumentError(std::string(who) + ": " + what + " has " +
                              std::string(KindName(f.kind)) + " but dtype " +
                              std::string(DTypeName(dtype)) + " needs " +
                              std::string(KindName(KindFor(dtype))) + where);
}

Shape WithLeading(int64_t d, const Shape& s) {
  Shape out = s;
  out.InsertDim(0, d);
  return out;
}

// Parses the features of `examples` (one scanned Features message each).
Result<std::vector<Tensor>> ParseFeatures(const std::vector<FeaturesView>& examples,
                                          bool batched,
                                          const std::vector<FeatureConfig>& features,
                                          std::string_view who) {
  const int64_t batch = static_cast<int64_t>(examples.size());
  std::vector<Tensor> out;
  out.reserve(features.size());
  std::vector<const FeatureView*> found(examples.size());
  for (const FeatureConfig& fc : features) {
    const std::string what = "key '" + fc.key + "'";
    for (size_t b = 0; b < examples.size(); ++b) {
      found[b] = examples[b].Find(fc.key);
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
        const int64_t count = found[b]->count;
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
      for (const FeatureView* f : found) {
        if (f) longest = std::max(longest, f->count);
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

bool ScansExampleDirectly(std::string_view serialized) {
  FeaturesView view;
  return ScanExample(serialized, false, &view);
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
  std::vector<FeaturesView> examples(serialized.size());
  std::list<std::string> canonical;
  for (size_t i = 0; i < serialized.size(); ++i) {
    FeaturesView& view = examples[i];
    auto scan = [&view](std::string_view bytes, bool is_canonical) {
      return ScanExample(bytes, is_canonical, &view);
    };
    SLUICE_ASSIGN_OR_RETURN(
        bool ok, ScanOrCanonicalize<tensorflow::Example>(serialized[i], &canonical, scan));
    if (!ok) return ParseError(who, "Example", serialized[i].size(), batched, i);
  }
  return ParseFeatures(examples, batched, features, who);
}

Result<std::vector<Tensor>> ParseSequenceExample(
    std::string_view serialized, const std::vector<FeatureConfig>& context,
    const std::vector<SequenceFeatureConfig>& sequence, std::string_view who) {
  FeaturesView context_view;
  // Feature lists by key: each list's steps.
  std::vector<std::pair<std::string_view, std::vector<FeatureView>>> lists;
  auto scan = [&](std::string_view bytes, bool is_canonical) {
    std::array<std::string_view, 2> fields;
    lists.clear();
    auto on_list = [&](std::string_view key, std::string_view value) {
      auto& list = lists.emplace_back();
      list.first = key;
      std::vector<FeatureView>& steps = list.second;
      // FeatureList: repeated Feature feature = 1.
      return ForEachField1(value, is_canonical, [&](std::string_view step) {
        return ScanFeature(step, is_canonical, &steps.emplace_back());
      });
    };
    return ScanFields(bytes, is_canonical, &fields) &&
           ScanFeatures(fields[0], is_canonical, &context_view) &&
           ScanMap(fields[1], is_canonical, on_list) &&
           (is_canonical || !HasDuplicateKeys(lists));
  };
  std::list<std::string> canonical;
  SLUICE_ASSIGN_OR_RETURN(
      bool ok, ScanOrCanonicalize<tensorflow::SequenceExample>(serialized, &canonical, scan));
  if (!ok) return ParseError(who, "SequenceExample", serialized.size(), false, 0);
  SLUICE_ASSIGN_OR_RETURN(std::vector<Tensor> out,
                          ParseFeatures({context_view}, false, context, who));
  for (const SequenceFeatureConfig& sc : sequence) {
    const std::string what = "feature list '" + sc.key + "'";
    auto it = std::find_if(lists.begin(), lists.end(),
                           [&](const auto& l) { return l.first == sc.key; });
    if (it == lists.end()) {
      if (!sc.allow_missing) {
        return InvalidArgumentError(std::string(who) + ": " + what +
                                    " is required but missing");
      }
      out.push_back(Tensor::Zeros(sc.dtype, WithLeading(0, sc.shape)));
      continue;
    }
    const std::vector<FeatureView>& steps = it->second;
    const int64_t n = sc.shape.num_elements();
    SLUICE_ASSIGN_OR_RETURN(
        Tensor t, Tensor::Allocate(sc.dtype, WithLeading(static_cast<int64_t>(steps.size()),
                                                         sc.shape)));
    for (size_t i = 0; i < steps.size(); ++i) {
      const std::string where = " (step " + std::to_string(i) + ")";
      SLUICE_RETURN_IF_ERROR(CheckKind(steps[i], sc.dtype, who, what, where));
      const int64_t count = steps[i].count;
      if (count != n) {
        return InvalidArgumentError(std::string(who) + ": " + what + " has " +
                                    std::to_string(count) + " values but shape " +
                                    sc.shape.ToString() + " needs " + std::to_string(n) +
                                    where);
      }
      CopyValues(steps[i], &t, static_cast<int64_t>(i) * n);
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
