// Text kernels: split, byte_tokenize, vocab_lookup, tokenize (fused split + lookup),
// truncate, pad, sequence_length. Registered by RegisterTextKernels (src/ops/ops.h).
//
// Every kernel works on one component of the element, chosen by the attribute
// `component` (int, default 0); the other components pass through unchanged (names
// kept), except sequence_length, whose output is the length alone. All are
// deterministic and skippable, and declare their output spec.
//
//  split(component)
//      string scalar -> string [n]: the tokens between runs of ASCII whitespace (space,
//      \t, \n, \v, \f, \r), as Python's bytes.split() with no argument: leading and
//      trailing whitespace give no empty tokens, "" and all-whitespace give [0]. Every
//      other byte, including non-ASCII UTF-8 and control bytes other than those six, is
//      part of a token. (Python's str.split() also splits on Unicode spaces such as
//      U+00A0 and \x1c-\x1f; this kernel does not.)
//  byte_tokenize(offset = 0, component)
//      string scalar -> int32 [len]: each byte as an unsigned value 0..255, plus offset
//      (offset + 255 must fit in int32).
//  vocab_lookup(vocab_file, num_oov_buckets = 0, default_value = -1, component)
//      string tensor (any rank; typically the [n] output of split) -> int64 ids of the
//      same shape. The vocabulary file is loaded when the kernel is created (format,
//      limits, errors and the OOV hash: src/ops/text/vocab.h). In-vocabulary tokens get
//      their line number; others default_value, or, with num_oov_buckets > 0,
//      vocab_size + FNV-1a-64(token) % num_oov_buckets.
//  tokenize(vocab_file, lowercase = false, num_oov_buckets = 0, default_value = -1,
//           component)
//      string scalar -> int64 [n]: split followed by vocab_lookup in one pass, without
//      building the token strings; equal to the two kernels in sequence. lowercase maps
//      ASCII A-Z to a-z before splitting (other bytes are left alone).
//  truncate(max_length, component)
//      any dtype, rank >= 1: the first min(max_length, dim 0) rows along dimension 0
//      (a zero-copy slice).
//  pad(length, value = zero / "", truncate = false, component)
//      any dtype, rank >= 1: pads dimension 0 to `length` rows filled with `value` (an
//      int, float, bool or string attribute, or a scalar tensor; it must be representable
//      in the component's dtype: strings only for string components, integers in range,
//      floats only for float components). Longer inputs are an error, or cut to `length`
//      when truncate = true.
//  sequence_length(component)
//      any dtype, rank >= 1 -> one int64 scalar: dimension 0 of the component (the
//      length_fn of bucket_by_sequence_length).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <span>
#include <variant>

#include "graph/attr.h"
#include "ops/ops.h"
#include "ops/text/vocab.h"

namespace sluice {
namespace {

constexpr std::array<bool, 256> MakeSpaceTable() {
  std::array<bool, 256> t{};
  for (unsigned char c : {' ', '\t', '\n', '\v', '\f', '\r'}) t[c] = true;
  return t;
}
constexpr std::array<bool, 256> kIsSpace = MakeSpaceTable();
inline bool IsSpace(char c) { return kIsSpace[static_cast<unsigned char>(c)]; }

// Calls f(token) for each whitespace-separated token of s.
template <typename F>
inline void ForEachToken(std::string_view s, F&& f) {
  const char* p = s.data();
  const char* const end = p + s.size();
  while (true) {
    while (p < end && IsSpace(*p)) ++p;
    if (p == end) return;
    const char* b = p;
    while (p < end && !IsSpace(*p)) ++p;
    f(std::string_view(b, static_cast<size_t>(p - b)));
  }
}

std::string Describe(const Tensor& t) {
  return std::string(DTypeName(t.dtype())) + t.shape().ToString();
}

// Reads the `component` attribute.
Result<int64_t> ComponentAttr(const AttrMap& attrs, std::string_view kernel) {
  SLUICE_ASSIGN_OR_RETURN(int64_t c, GetAttrOr<int64_t>(attrs, kernel, "component", 0));
  if (c < 0) {
    return InvalidArgumentError(std::string(kernel) +
                                ": attribute 'component' must be >= 0, got " +
                                std::to_string(c));
  }
  return c;
}

Status MissingComponent(std::string_view kernel, int64_t comp, size_t size) {
  return InvalidArgumentError(std::string(kernel) + ": component " +
                              std::to_string(comp) + " does not exist in an element of " +
                              std::to_string(size) + " components");
}

// The component a kernel works on, checked: `want_rank` 0 = scalar, 1 = rank >= 1,
// -1 = any; `string_only` requires a string tensor.
Result<Tensor*> Component(Element& e, int64_t comp, std::string_view kernel,
                          int want_rank, bool string_only) {
  if (static_cast<size_t>(comp) >= e.size())
    return MissingComponent(kernel, comp, e.size());
  Tensor& t = e[comp];
  const bool rank_ok = want_rank < 0 || (want_rank == 0 ? t.rank() == 0 : t.rank() >= 1);
  if (!rank_ok || (string_only && t.dtype() != DType::kString)) {
    std::string want = string_only ? "a string " : "a ";
    want += want_rank == 0 ? "scalar" : want_rank == 1 ? "tensor of rank >= 1" : "tensor";
    return InvalidArgumentError(std::string(kernel) + ": component " +
                                std::to_string(comp) + " must be " + want + ", got " +
                                Describe(t));
  }
  return &t;
}

// The same check on a spec; null when the spec is unknown.
Result<const TensorSpec*> SpecComponent(const ElementSpec& in, int64_t comp,
                                        std::string_view kernel, int want_rank,
                                        bool string_only) {
  if (in.unknown) return static_cast<const TensorSpec*>(nullptr);
  if (static_cast<size_t>(comp) >= in.size())
    return MissingComponent(kernel, comp, in.size());
  const TensorSpec& s = in[comp];
  const int r = s.shape.rank();  // -1: unknown
  const bool rank_ok = r < 0 || want_rank < 0 || (want_rank == 0 ? r == 0 : r >= 1);
  if (!rank_ok || (string_only && s.dtype != DType::kString)) {
    std::string want = string_only ? "a string " : "a ";
    want += want_rank == 0 ? "scalar" : want_rank == 1 ? "tensor of rank >= 1" : "tensor";
    return InvalidArgumentError(std::string(kernel) + ": component " +
                                std::to_string(comp) + " must be " + want + ", got " +
                                s.ToString());
  }
  return &s;
}

// The input spec with component `comp` replaced by `out` (the unknown spec stays
// unknown).
ElementSpec ReplaceSpec(const ElementSpec& in, int64_t comp, TensorSpec out) {
  if (in.unknown) return in;
  ElementSpec s = in;
  s.components[comp] = std::move(out);
  return s;
}

Result<int64_t> NonNegativeAttr(const AttrMap& attrs, std::string_view kernel,
                                std::string_view name) {
  SLUICE_ASSIGN_OR_RETURN(int64_t v, GetAttr<int64_t>(attrs, kernel, name));
  if (v < 0) {
    return InvalidArgumentError(std::string(kernel) + ": attribute '" +
                                std::string(name) + "' must be >= 0, got " +
                                std::to_string(v));
  }
  return v;
}

// vocab_file, num_oov_buckets, default_value of vocab_lookup and tokenize.
struct LookupConfig {
  std::shared_ptr<const Vocab> vocab;
  OovOptions oov;
};

// `def` with the attributes ReadLookupAttrs reads declared.
KernelDef WithLookupAttrs(KernelDef def) {
  return def
      .Attr("vocab_file", AttrType::kString,
            "One token per line; a token's id is its line number.")
      .Attr("num_oov_buckets", AttrType::kInt, int64_t{0},
            "Hash unknown tokens into this many ids after the vocabulary.")
      .Attr("default_value", AttrType::kInt, int64_t{-1},
            "Id of unknown tokens when num_oov_buckets is 0.");
}

Result<LookupConfig> ReadLookupAttrs(const AttrMap& attrs, std::string_view kernel) {
  LookupConfig c;
  SLUICE_ASSIGN_OR_RETURN(std::string file,
                          GetAttr<std::string>(attrs, kernel, "vocab_file"));
  SLUICE_ASSIGN_OR_RETURN(c.oov.num_oov_buckets,
                          GetAttrOr<int64_t>(attrs, kernel, "num_oov_buckets", 0));
  SLUICE_ASSIGN_OR_RETURN(c.oov.default_value,
                          GetAttrOr<int64_t>(attrs, kernel, "default_value", -1));
  if (c.oov.num_oov_buckets < 0) {
    return InvalidArgumentError(std::string(kernel) +
                                ": attribute 'num_oov_buckets' must be >= 0, got " +
                                std::to_string(c.oov.num_oov_buckets));
  }
  auto vocab = Vocab::Load(file);
  if (!vocab.ok()) return vocab.status().WithContext(kernel);
  c.vocab = std::move(vocab).value();
  return c;
}

// ---- pad values ----

// A padding value as given: default (zero / ""), integer, float, bool or string.
using PadValue = std::variant<std::monostate, int64_t, double, bool, std::string>;

Result<PadValue> ReadPadValue(const AttrMap& attrs) {
  auto it = attrs.find("value");
  if (it == attrs.end()) return PadValue{};
  const AttrValue& v = it->second;
  if (auto* i = std::get_if<int64_t>(&v)) return PadValue{*i};
  if (auto* d = std::get_if<double>(&v)) return PadValue{*d};
  if (auto* b = std::get_if<bool>(&v)) return PadValue{*b};
  if (auto* s = std::get_if<std::string>(&v)) return PadValue{*s};
  if (auto* t = std::get_if<Tensor>(&v); t && t->valid() && t->rank() == 0) {
    switch (t->dtype()) {
      case DType::kString:
        return PadValue{t->scalar<std::string>()};
      case DType::kBool:
        return PadValue{t->scalar<bool>()};
      case DType::kFloat16:
        return PadValue{double{t->scalar<Half>().ToFloat()}};
      case DType::kBFloat16:
        return PadValue{double{t->scalar<BFloat16>().ToFloat()}};
      case DType::kFloat32:
        return PadValue{double{t->scalar<float>()}};
      case DType::kFloat64:
        return PadValue{t->scalar<double>()};
      case DType::kUInt8:
        return PadValue{int64_t{t->scalar<uint8_t>()}};
      case DType::kInt8:
        return PadValue{int64_t{t->scalar<int8_t>()}};
      case DType::kInt16:
        return PadValue{int64_t{t->scalar<int16_t>()}};
      case DType::kInt32:
        return PadValue{int64_t{t->scalar<int32_t>()}};
      case DType::kInt64:
        return PadValue{t->scalar<int64_t>()};
      default:
        break;
    }
  }
  return InvalidArgumentError(
      "pad: attribute 'value' must be an int, float, bool or string, "
      "or a scalar tensor of those, got " +
      AttrValueDebugString(v));
}

template <typename T>
Result<Tensor> IntegerScalarOf(int64_t v) {
  if constexpr (std::is_same_v<T, bool>) {
    return Tensor::Scalar<bool>(v != 0);
  } else {
    if (v < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
        (v > 0 && static_cast<uint64_t>(v) >
                      static_cast<uint64_t>(std::numeric_limits<T>::max()))) {
      return InvalidArgumentError("pad: value " + std::to_string(v) +
                                  " does not fit in " +
                                  std::string(DTypeName(DTypeOf<T>::value)));
    }
    return Tensor::Scalar<T>(static_cast<T>(v));
  }
}

// The padding value as a scalar of `dtype`.
Result<Tensor> PadScalar(const PadValue& value, DType dtype) {
  const std::string dname(DTypeName(dtype));
  if (dtype == DType::kString) {
    if (std::holds_alternative<std::monostate>(value))
      return Tensor::Scalar(std::string());
    if (auto* s = std::get_if<std::string>(&value)) return Tensor::Scalar(*s);
    return InvalidArgumentError("pad: a string component needs a string padding value");
  }
  if (std::holds_alternative<std::string>(value)) {
    return InvalidArgumentError("pad: a string padding value cannot pad a " + dname +
                                " component");
  }
  if (std::holds_alternative<std::monostate>(value)) return Tensor::Zeros(dtype, Shape{});
  const bool is_float = dtype == DType::kFloat16 || dtype == DType::kBFloat16 ||
                        dtype == DType::kFloat32 || dtype == DType::kFloat64;
  if (auto* d = std::get_if<double>(&value)) {
    if (!is_float) {
      if (*d != std::trunc(*d) || std::fabs(*d) > 9.0e15) {
        return InvalidArgumentError("pad: float padding value " + std::to_string(*d) +
                                    " cannot pad a " + dname + " component");
      }
    } else {
      switch (dtype) {
        case DType::kFloat16:
          return Tensor::Scalar(Half::FromFloat(static_cast<float>(*d)));
        case DType::kBFloat16:
          return Tensor::Scalar(BFloat16::FromFloat(static_cast<float>(*d)));
        case DType::kFloat32:
          return Tensor::Scalar(static_cast<float>(*d));
        default:
          return Tensor::Scalar(*d);
      }
    }
  }
  int64_t iv = 0;
  if (auto* i = std::get_if<int64_t>(&value)) iv = *i;
  if (auto* b = std::get_if<bool>(&value)) iv = *b ? 1 : 0;
  if (auto* d = std::get_if<double>(&value)) iv = static_cast<int64_t>(*d);
  switch (dtype) {
    case DType::kBool:
      return IntegerScalarOf<bool>(iv);
    case DType::kUInt8:
      return IntegerScalarOf<uint8_t>(iv);
    case DType::kInt8:
      return IntegerScalarOf<int8_t>(iv);
    case DType::kInt16:
      return IntegerScalarOf<int16_t>(iv);
    case DType::kInt32:
      return IntegerScalarOf<int32_t>(iv);
    case DType::kInt64:
      return IntegerScalarOf<int64_t>(iv);
    case DType::kFloat16:
      return Tensor::Scalar(Half::FromFloat(static_cast<float>(iv)));
    case DType::kBFloat16:
      return Tensor::Scalar(BFloat16::FromFloat(static_cast<float>(iv)));
    case DType::kFloat32:
      return Tensor::Scalar(static_cast<float>(iv));
    case DType::kFloat64:
      return Tensor::Scalar(static_cast<double>(iv));
    default:
      return InvalidArgumentError("pad: cannot pad a " + dname + " component");
  }
}

// The largest padded tensor pad makes (Tensor::Allocate's bound).
constexpr uint64_t kMaxPadBytes = uint64_t{1} << 40;

// ResourceExhausted when `length` rows of `dims` (dim 0 replaced; unknown dims count as
// 1) of `dtype` exceed kMaxPadBytes.
Status CheckPadSize(int64_t length, std::span<const int64_t> dims, DType dtype) {
  uint64_t bytes = std::max<size_t>(DTypeSize(dtype), 1);
  bool over = static_cast<uint64_t>(length) > kMaxPadBytes / bytes;
  bytes *= static_cast<uint64_t>(length);
  for (size_t i = 1; i < dims.size() && !over && bytes > 0; ++i) {
    if (dims[i] <= 0) continue;
    over = static_cast<uint64_t>(dims[i]) > kMaxPadBytes / bytes;
    bytes *= static_cast<uint64_t>(dims[i]);
  }
  if (!over && bytes <= kMaxPadBytes) return Status::OK();
  return ResourceExhaustedError("pad: length " + std::to_string(length) + " makes a " +
                                std::string(DTypeName(dtype)) +
                                " tensor larger than the limit of " +
                                std::to_string(kMaxPadBytes) + " bytes");
}

// `in` (rank >= 1, dim 0 < length) padded with `fill` rows up to `length` rows.
Result<Tensor> PadRows(const Tensor& in, int64_t length, const Tensor& fill) {
  Shape shape = in.shape();
  shape.set_dim(0, length);
  SLUICE_RETURN_IF_ERROR(CheckPadSize(length, shape.dims(), in.dtype()));
  Result<Tensor> allocated = Tensor::Allocate(in.dtype(), shape);
  if (!allocated.ok()) {
    return ResourceExhaustedError("pad: length " + std::to_string(length) + ": " +
                                  allocated.status().message());
  }
  Tensor out = std::move(allocated).value();
  const int64_t n_in = in.num_elements();
  const int64_t n_out = out.num_elements();
  if (in.dtype() == DType::kString) {
    const std::string* src = in.data<std::string>();
    std::string* dst = out.mutable_data<std::string>();
    std::copy(src, src + n_in, dst);
    std::fill(dst + n_in, dst + n_out, fill.scalar<std::string>());
  } else {
    const size_t es = DTypeSize(in.dtype());
    char* dst = static_cast<char*>(const_cast<void*>(out.raw_data()));
    if (n_in > 0) std::memcpy(dst, in.raw_data(), static_cast<size_t>(n_in) * es);
    const char* v = static_cast<const char*>(fill.raw_data());
    bool zero = true;
    for (size_t b = 0; b < es; ++b) zero = zero && v[b] == 0;
    char* rest = dst + static_cast<size_t>(n_in) * es;
    const size_t count = static_cast<size_t>(n_out - n_in);
    if (zero) {
      std::memset(rest, 0, count * es);
    } else {
      for (size_t i = 0; i < count; ++i) std::memcpy(rest + i * es, v, es);
    }
  }
  return out;
}

constexpr Function::Traits kTraits = {.is_random = false, .skippable = true};

// ---- registration, one kernel each ----

void RegisterSplit(Registry* r) {
  r->RegisterKernel(
      KernelDef("split")
              .Summary("Splits a string scalar on ASCII whitespace into a string [n] of tokens.")
              .Attr("component", AttrType::kInt, int64_t{0}, "The component it works on.")
              .Traits(kTraits),
      [](const AttrMap& attrs) -> Result<Function> {
     static constexpr std::string_view kName = "split";
     SLUICE_ASSIGN_OR_RETURN(int64_t comp, ComponentAttr(attrs, kName));
     return MakeKernelFunction(
         std::string(kName), attrs,
         [comp](Element e, FunctionContext&) -> Result<Element> {
           SLUICE_ASSIGN_OR_RETURN(Tensor * t, Component(e, comp, kName, 0, true));
           const std::string_view s = t->scalar<std::string>();
           int64_t n = 0;
           ForEachToken(s, [&n](std::string_view) { ++n; });
           Tensor out(DType::kString, Shape{n});
           std::string* dst = out.mutable_data<std::string>();
           ForEachToken(s, [&dst](std::string_view tok) { (dst++)->assign(tok); });
           *t = std::move(out);
           return e;
         },
         kTraits,
         [comp](const ElementSpec& in) -> Result<ElementSpec> {
           SLUICE_RETURN_IF_ERROR(SpecComponent(in, comp, kName, 0, true).status());
           return ReplaceSpec(in, comp, {DType::kString, PartialShape{-1}});
         });
   });
}

void RegisterByteTokenize(Registry* r) {
  r->RegisterKernel(
      KernelDef("byte_tokenize")
              .Summary("The bytes of a string scalar as int32 [len], plus offset.")
              .Attr("component", AttrType::kInt, int64_t{0}, "The component it works on.")
              .Attr("offset", AttrType::kInt, int64_t{0}, "Added to every byte.")
              .Traits(kTraits),
      [](const AttrMap& attrs) -> Result<Function> {
     static constexpr std::string_view kName = "byte_tokenize";
     SLUICE_ASSIGN_OR_RETURN(int64_t comp, ComponentAttr(attrs, kName));
     SLUICE_ASSIGN_OR_RETURN(int64_t offset,
                             GetAttrOr<int64_t>(attrs, kName, "offset", 0));
     if (offset < std::numeric_limits<int32_t>::min() ||
         offset > std::numeric_limits<int32_t>::max() - 255) {
       return InvalidArgumentError(
           "byte_tokenize: attribute 'offset' must keep offset + 255 "
           "within int32, got " +
           std::to_string(offset));
     }
     const int32_t off = static_cast<int32_t>(offset);
     return MakeKernelFunction(
         std::string(kName), attrs,
         [comp, off](Element e, FunctionContext&) -> Result<Element> {
           SLUICE_ASSIGN_OR_RETURN(Tensor * t, Component(e, comp, kName, 0, true));
           const std::string& s = t->scalar<std::string>();
           Tensor out(DType::kInt32, Shape{static_cast<int64_t>(s.size())});
           int32_t* dst = out.mutable_data<int32_t>();
           for (size_t i = 0; i < s.size(); ++i) {
             dst[i] = static_cast<int32_t>(static_cast<unsigned char>(s[i])) + off;
           }
           *t = std::move(out);
           return e;
         },
         kTraits,
         [comp](const ElementSpec& in) -> Result<ElementSpec> {
           SLUICE_RETURN_IF_ERROR(SpecComponent(in, comp, kName, 0, true).status());
           return ReplaceSpec(in, comp, {DType::kInt32, PartialShape{-1}});
         });
   });
}

void RegisterVocabLookup(Registry* r) {
  r->RegisterKernel(
      WithLookupAttrs(KernelDef("vocab_lookup")
              .Summary("Maps string tokens to int64 ids through a vocabulary file.")
              .Attr("component", AttrType::kInt, int64_t{0}, "The component it works on.")
              .Traits(kTraits)),
      [](const AttrMap& attrs) -> Result<Function> {
     static constexpr std::string_view kName = "vocab_lookup";
     SLUICE_ASSIGN_OR_RETURN(int64_t comp, ComponentAttr(attrs, kName));
     SLUICE_ASSIGN_OR_RETURN(LookupConfig cfg, ReadLookupAttrs(attrs, kName));
     return MakeKernelFunction(
         std::string(kName), attrs,
         [comp, cfg](Element e, FunctionContext&) -> Result<Element> {
           SLUICE_ASSIGN_OR_RETURN(Tensor * t, Component(e, comp, kName, -1, true));
           Tensor out(DType::kInt64, t->shape());
           int64_t* dst = out.mutable_data<int64_t>();
           const std::string* src = t->data<std::string>();
           const int64_t n = t->num_elements();
           for (int64_t i = 0; i < n; ++i) dst[i] = cfg.vocab->Lookup(src[i], cfg.oov);
           *t = std::move(out);
           return e;
         },
         kTraits,
         [comp](const ElementSpec& in) -> Result<ElementSpec> {
           SLUICE_ASSIGN_OR_RETURN(const TensorSpec* s,
                                   SpecComponent(in, comp, kName, -1, true));
           if (s == nullptr) return in;
           return ReplaceSpec(in, comp, {DType::kInt64, s->shape});
         });
   });
}

void RegisterTokenize(Registry* r) {
  r->RegisterKernel(
      WithLookupAttrs(KernelDef("tokenize")
              .Summary("split then vocab_lookup in one pass (the fast path).")
              .Attr("component", AttrType::kInt, int64_t{0}, "The component it works on.")
              .Attr("lowercase", AttrType::kBool, false, "Lower-case ASCII letters first.")
              .Traits(kTraits)),
      [](const AttrMap& attrs) -> Result<Function> {
     static constexpr std::string_view kName = "tokenize";
     SLUICE_ASSIGN_OR_RETURN(int64_t comp, ComponentAttr(attrs, kName));
     SLUICE_ASSIGN_OR_RETURN(bool lowercase,
                             GetAttrOr<bool>(attrs, kName, "lowercase", false));
     SLUICE_ASSIGN_OR_RETURN(LookupConfig cfg, ReadLookupAttrs(attrs, kName));
     return MakeKernelFunction(
         std::string(kName), attrs,
         [comp, lowercase, cfg](Element e, FunctionContext&) -> Result<Element> {
           SLUICE_ASSIGN_OR_RETURN(Tensor * t, Component(e, comp, kName, 0, true));
           // Per-thread scratch: the ids, then one exact-size copy into the output.
           thread_local std::vector<int64_t> ids;
           thread_local std::string lowered;
           ids.clear();
           std::string_view s = t->scalar<std::string>();
           if (lowercase) {
             lowered.assign(s);
             for (char& c : lowered) {
               if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
             }
             s = lowered;
           }
           const Vocab& vocab = *cfg.vocab;
           ForEachToken(s, [&](std::string_view tok) {
             ids.push_back(vocab.Lookup(tok, cfg.oov));
           });
           Tensor out(DType::kInt64, Shape{static_cast<int64_t>(ids.size())});
           if (!ids.empty()) {
             std::memcpy(out.mutable_data<int64_t>(), ids.data(),
                         ids.size() * sizeof(int64_t));
           }
           *t = std::move(out);
           return e;
         },
         kTraits,
         [comp](const ElementSpec& in) -> Result<ElementSpec> {
           SLUICE_RETURN_IF_ERROR(SpecComponent(in, comp, kName, 0, true).status());
           return ReplaceSpec(in, comp, {DType::kInt64, PartialShape{-1}});
         });
   });
}

void RegisterTruncate(Registry* r) {
  r->RegisterKernel(
      KernelDef("truncate")
              .Summary("The first min(max_length, dim 0) rows (a zero-copy slice).")
              .Attr("component", AttrType::kInt, int64_t{0}, "The component it works on.")
              .Attr("max_length", AttrType::kInt, "Rows kept, >= 0.")
              .Traits(kTraits),
      [](const AttrMap& attrs) -> Result<Function> {
     static constexpr std::string_view kName = "truncate";
     SLUICE_ASSIGN_OR_RETURN(int64_t comp, ComponentAttr(attrs, kName));
     SLUICE_ASSIGN_OR_RETURN(int64_t max_length,
                             NonNegativeAttr(attrs, kName, "max_length"));
     return MakeKernelFunction(
         std::string(kName), attrs,
         [comp, max_length](Element e, FunctionContext&) -> Result<Element> {
           SLUICE_ASSIGN_OR_RETURN(Tensor * t, Component(e, comp, kName, 1, false));
           if (t->dim(0) > max_length) *t = t->Slice(0, max_length);
           return e;
         },
         kTraits,
         [comp, max_length](const ElementSpec& in) -> Result<ElementSpec> {
           SLUICE_ASSIGN_OR_RETURN(const TensorSpec* s,
                                   SpecComponent(in, comp, kName, 1, false));
           if (s == nullptr || !s->shape.rank_known()) return in;
           std::vector<int64_t> dims = s->shape.dims();
           dims[0] = dims[0] < 0 ? -1 : std::min(dims[0], max_length);
           if (max_length == 0) dims[0] = 0;
           return ReplaceSpec(in, comp, {s->dtype, PartialShape(std::move(dims))});
         });
   });
}

void RegisterPad(Registry* r) {
  r->RegisterKernel(
      KernelDef("pad")
              .Summary("Pads (or with truncate, cuts) a vector to length rows.")
              .Attr("component", AttrType::kInt, int64_t{0}, "The component it works on.")
              .Attr("length", AttrType::kInt, "Rows after padding, >= 0.")
              .Attr("truncate", AttrType::kBool, false, "Cut longer vectors to length.")
              .OptionalAttr("value", AttrType::kAny,
                            "The padding value, a scalar of the vector's dtype (default: 0 / \"\").")
              .Traits(kTraits),
      [](const AttrMap& attrs) -> Result<Function> {
     static constexpr std::string_view kName = "pad";
     SLUICE_ASSIGN_OR_RETURN(int64_t comp, ComponentAttr(attrs, kName));
     SLUICE_ASSIGN_OR_RETURN(int64_t length, NonNegativeAttr(attrs, kName, "length"));
     SLUICE_ASSIGN_OR_RETURN(bool truncate,
                             GetAttrOr<bool>(attrs, kName, "truncate", false));
     SLUICE_ASSIGN_OR_RETURN(PadValue value, ReadPadValue(attrs));
     return MakeKernelFunction(
         std::string(kName), attrs,
         [comp, length, truncate, value](Element e, FunctionContext&) -> Result<Element> {
           SLUICE_ASSIGN_OR_RETURN(Tensor * t, Component(e, comp, kName, 1, false));
           const int64_t rows = t->dim(0);
           if (rows > length) {
             if (!truncate) {
               return InvalidArgumentError(
                   "pad: component " + std::to_string(comp) + " has " +
                   std::to_string(rows) + " rows, more than length " +
                   std::to_string(length) + " (set truncate=true to cut it)");
             }
             *t = t->Slice(0, length);
           } else if (rows < length) {
             SLUICE_ASSIGN_OR_RETURN(Tensor fill, PadScalar(value, t->dtype()));
             SLUICE_ASSIGN_OR_RETURN(*t, PadRows(*t, length, fill));
           }
           return e;
         },
         kTraits,
         [comp, length, truncate, value](const ElementSpec& in) -> Result<ElementSpec> {
           SLUICE_ASSIGN_OR_RETURN(const TensorSpec* s,
                                   SpecComponent(in, comp, kName, 1, false));
           if (s == nullptr) return in;
           // A padding value the dtype cannot hold is caught before any data flows.
           SLUICE_RETURN_IF_ERROR(PadScalar(value, s->dtype).status());
           if (!s->shape.rank_known()) return in;
           std::vector<int64_t> dims = s->shape.dims();
           if (dims[0] > length && !truncate) {
             return InvalidArgumentError(
                 "pad: component " + std::to_string(comp) + " has " +
                 std::to_string(dims[0]) + " rows, more than length " +
                 std::to_string(length) + " (set truncate=true to cut it)");
           }
           SLUICE_RETURN_IF_ERROR(CheckPadSize(length, dims, s->dtype));
           dims[0] = length;
           return ReplaceSpec(in, comp, {s->dtype, PartialShape(std::move(dims))});
         });
   });
}

void RegisterSequenceLength(Registry* r) {
  r->RegisterKernel(
      KernelDef("sequence_length")
              .Summary("Dimension 0 of a component as an int64 scalar (the element is the length alone).")
              .Attr("component", AttrType::kInt, int64_t{0}, "The component it works on.")
              .Traits(kTraits),
      [](const AttrMap& attrs) -> Result<Function> {
     static constexpr std::string_view kName = "sequence_length";
     SLUICE_ASSIGN_OR_RETURN(int64_t comp, ComponentAttr(attrs, kName));
     return MakeKernelFunction(
         std::string(kName), attrs,
         [comp](Element e, FunctionContext&) -> Result<Element> {
           SLUICE_ASSIGN_OR_RETURN(Tensor * t, Component(e, comp, kName, 1, false));
           return Element{Tensor::Scalar<int64_t>(t->dim(0))};
         },
         kTraits,
         [comp](const ElementSpec& in) -> Result<ElementSpec> {
           SLUICE_RETURN_IF_ERROR(SpecComponent(in, comp, kName, 1, false).status());
           return ElementSpec{{{DType::kInt64, PartialShape{}}}};
         });
   });
}

}  // namespace

void RegisterTextKernels(Registry* r) {
  RegisterSplit(r);
  RegisterByteTokenize(r);
  RegisterVocabLookup(r);
  RegisterTokenize(r);
  RegisterTruncate(r);
  RegisterPad(r);
  RegisterSequenceLength(r);
}

}  // namespace sluice
