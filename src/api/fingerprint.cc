// DatasetFingerprint: a stable 128-bit digest of the canonical graph.
//
// Every value is fed as a type tag plus a length-prefixed little-endian encoding into two
// FNV-1a-64 streams with different offset bases, each finished with a SplitMix64 avalanche.
// Nodes are hashed bottom-up and memoized by node, so a shared node costs one visit and
// hashes as its copies would; only node contents enter the digest, never addresses.
#include <cstdio>
#include <cstring>
#include <map>

#include "api/serialize_internal.h"
#include "graph/dataset_access.h"
#include "sluice/random.h"
#include "sluice/serialize.h"

namespace sluice {
namespace {

class Hasher {
 public:
  void Bytes(const void* data, size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < n; ++i) {
      a_ = (a_ ^ p[i]) * kPrime;
      b_ = (b_ ^ p[i]) * kPrime;
    }
  }
  void U64(uint64_t v) {
    unsigned char buf[8];
    for (int i = 0; i < 8; ++i) buf[i] = static_cast<unsigned char>(v >> (8 * i));
    Bytes(buf, 8);
  }
  void Tag(char t) { Bytes(&t, 1); }
  void Str(std::string_view s) {
    U64(s.size());
    Bytes(s.data(), s.size());
  }
  std::pair<uint64_t, uint64_t> Finish() const { return {Mix64(a_), Mix64(b_ ^ 0x5bd1e995ULL)}; }

 private:
  static constexpr uint64_t kPrime = 0x100000001b3ULL;
  uint64_t a_ = 0xcbf29ce484222325ULL;
  uint64_t b_ = 0x84222325cbf29ce4ULL;
};

bool IsSeedAttr(std::string_view name) { return name == "seed" || name == "seed2"; }

void HashShape(const PartialShape& s, Hasher* h) {
  h->U64(static_cast<uint64_t>(static_cast<int64_t>(s.rank())));
  for (int i = 0; i < s.rank(); ++i) h->U64(static_cast<uint64_t>(s.dim(i)));
}

void HashTensor(const Tensor& t, Hasher* h) {
  h->U64(static_cast<uint64_t>(t.dtype()));
  if (!t.valid()) return;
  h->U64(static_cast<uint64_t>(t.rank()));
  for (int64_t d : t.shape().dims()) h->U64(static_cast<uint64_t>(d));
  if (t.dtype() == DType::kString) {
    for (const std::string& s : t.flat<std::string>()) h->Str(s);
  } else {
    h->Bytes(t.raw_data(), static_cast<size_t>(t.num_elements()) * DTypeSize(t.dtype()));
  }
}

void HashAttr(const AttrValue& v, Hasher* h) {
  h->U64(v.index());
  std::visit(
      [h](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool>) {
          h->U64(x ? 1 : 0);
        } else if constexpr (std::is_same_v<T, int64_t>) {
          h->U64(static_cast<uint64_t>(x));
        } else if constexpr (std::is_same_v<T, double>) {
          uint64_t bits;
          std::memcpy(&bits, &x, 8);
          h->U64(bits);
        } else if constexpr (std::is_same_v<T, std::string>) {
          h->Str(x);
        } else if constexpr (std::is_same_v<T, DType>) {
          h->U64(static_cast<uint64_t>(x));
        } else if constexpr (std::is_same_v<T, PartialShape>) {
          HashShape(x, h);
        } else if constexpr (std::is_same_v<T, Tensor>) {
          HashTensor(x, h);
        } else {
          h->U64(x.size());
          for (const auto& e : x) {
            using E = std::decay_t<decltype(e)>;
            if constexpr (std::is_same_v<E, PartialShape>) {
              HashShape(e, h);
            } else if constexpr (std::is_same_v<E, Tensor>) {
              HashTensor(e, h);
            } else if constexpr (std::is_same_v<E, std::string>) {
              h->Str(e);
            } else if constexpr (std::is_same_v<E, double>) {
              uint64_t bits;
              std::memcpy(&bits, &e, 8);
              h->U64(bits);
            } else {
              h->U64(static_cast<uint64_t>(e));
            }
          }
        }
      },
      v);
}

void HashAttrs(const AttrMap& attrs, Hasher* h) {
  // AttrMap is ordered by name, so iteration is canonical.
  uint64_t n = 0;
  for (const auto& [name, v] : attrs) n += IsSeedAttr(name) ? 0 : 1;
  h->U64(n);
  for (const auto& [name, v] : attrs) {
    if (IsSeedAttr(name)) continue;
    h->Str(name);
    HashAttr(v, h);
  }
}

using Digest = std::pair<uint64_t, uint64_t>;

// `local_ok`: local callables enter by their name (PipelineFingerprint) instead of
// failing.
Result<Digest> HashNode(const DatasetPtr& node,
                        std::map<const DatasetNode*, Digest>* memo,
                        bool local_ok = false) {
  auto it = memo->find(node.get());
  if (it != memo->end()) return it->second;
  if (!local_ok) SLUICE_RETURN_IF_ERROR(CheckFunctionsSerializable(*node));
  Hasher h;
  h.Str("sluice.node.v1");
  h.Str(node->op());
  HashAttrs(node->attrs(), &h);
  h.U64(node->inputs().size());
  for (const DatasetPtr& in : node->inputs()) {
    SLUICE_ASSIGN_OR_RETURN(Digest d, HashNode(in, memo, local_ok));
    h.U64(d.first);
    h.U64(d.second);
  }
  h.U64(node->functions().size());
  for (const Function& f : node->functions()) {
    h.Str(f.name());
    HashAttrs(f.attrs(), &h);
  }
  // Local callables declare no attributes: their output types tell casts apart.
  if (local_ok) h.Str(node->element_spec().ToString());
  Digest d = h.Finish();
  memo->emplace(node.get(), d);
  return d;
}

std::string Hex(const Digest& d) {
  char buf[33];
  std::snprintf(buf, sizeof(buf), "%016llx%016llx",
                static_cast<unsigned long long>(d.first),
                static_cast<unsigned long long>(d.second));
  return std::string(buf);
}

}  // namespace

Result<std::string> DatasetFingerprint(const Dataset& dataset) {
  SLUICE_RETURN_IF_ERROR(dataset.status());
  std::map<const DatasetNode*, Digest> memo;
  SLUICE_ASSIGN_OR_RETURN(Digest d, HashNode(NodeOf(dataset), &memo));
  return Hex(d);
}

std::string PipelineFingerprint(const DatasetPtr& node) {
  std::map<const DatasetNode*, Digest> memo;
  Result<Digest> d = HashNode(node, &memo, /*local_ok=*/true);
  return d.ok() ? Hex(*d) : std::string();
}

}  // namespace sluice
