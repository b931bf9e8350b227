// OpDef and KernelDef: what every registered op and kernel declares about itself.
//
// The registry keeps one definition per name. It is the single place where an op's
// attributes (name, type, default, documentation), its inputs and functions, and its traits
// live; the registry validates every node and kernel against it before the factory runs, so
// a misspelled attribute is an error that names the op and the closest valid name, and the
// spec loader, serializer, optimizer, autotune model and `sluice ops` all read the same
// facts instead of keeping string lists of op names.
//
//   r->RegisterOp(OpDef("Batch")
//                     .Summary("Combines consecutive elements into batches.")
//                     .Inputs(1)
//                     .Attr("batch_size", AttrType::kInt, "Elements per batch (> 0).")
//                     .Attr("drop_remainder", AttrType::kBool, false,
//                           "Drop a final batch smaller than batch_size."),
//                 MakeBatch);
//
// Defaults declared here are documentation the registry checks: the metadata meta-test
// (tests/framework/op_def_test.cc) builds every op and kernel with and without its declared
// defaults spelled out and requires the same elements, so a declared default cannot drift
// from the factory's.
//
// Thread-safety: plain values.
#ifndef SLUICE_GRAPH_OP_DEF_H_
#define SLUICE_GRAPH_OP_DEF_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graph/dataset_node.h"
#include "sluice/dataset.h"

namespace sluice {

// The type of an attribute. Numbers coerce where no precision is lost: an int is accepted
// where a float is declared, a list of ints where a list of floats is, and an empty list
// for any list type (a JSON `[]` has no element type). kAny is for the few attributes that
// take several types (documented with the attribute).
enum class AttrType {
  kBool,
  kInt,
  kFloat,
  kString,
  kDType,
  kShape,
  kIntList,
  kFloatList,
  kStringList,
  kDTypeList,
  kShapeList,
  kTensor,
  kTensorList,
  kAny,
};
// "bool", "int", "float", "string", "dtype", "shape", "list(int)", ..., "any".
std::string_view AttrTypeName(AttrType t);
// Whether `v` is acceptable for an attribute of type `t` (with the coercions above).
bool AttrValueHasType(const AttrValue& v, AttrType t);

struct AttrDef {
  std::string name;
  AttrType type = AttrType::kAny;
  // The value used when the attribute is absent; nullopt for a required attribute.
  std::optional<AttrValue> default_value;
  std::string doc;
  // Optional although it has no fixed default: its absence means what `doc` says (e.g.
  // Window's shift defaults to its size).
  bool optional = false;
  bool required() const { return !default_value.has_value() && !optional; }
};

// Whether an op reads the iterator context's seed_mix (which varies per epoch and per
// top-level iterator), so that its output differs between iterations.
enum class SeedMix {
  kUnknown,     // not declared: treated as reading it (the safe answer)
  kNone,        // never reads it (given inputs that do not)
  kAlways,      // always reads it
  kWhenAttrTrue,  // reads it when the bool attribute `seed_mix_attr` is true (its default
                  // when absent)
};

// How an op serves row i of its output (its iterator's RandomAccess, runtime/
// random_access.h).
enum class RowAccess {
  kNone,    // only in order
  kSource,  // a source that serves any row (range, slices, idx, image_folder, list_files)
  kInputs,  // row i from row i of each input, when every input serves rows and no function
            // is random or stateful (map, zip, a memory cache)
  kSlice,   // a contiguous range of its one input's rows (take, skip): row i is input
            // row i + offset, whatever the input's cardinality
};

// What an op is. Every field is a fact the optimizer, the autotune model, the bottleneck
// doctor or the service may rely on, so declare only what holds for every node of the op.
struct OpTraits {
  // Produces elements from attributes or files, with no dataset input.
  bool source = false;
  // A source whose work can be divided into splits handed out by a split provider.
  bool splittable = false;
  // Calls its inputs on its own threads (prefetch, parallel ops): its buffer decouples the
  // consumer from its inputs and it owns tunable parallelism or buffer size.
  bool async = false;
  // Holds elements between calls (prefetch and parallel ops' buffers, shuffle, cache,
  // window, group_by_window...): it charges the pipeline's RAM budget.
  bool buffering = false;
  // Draws random numbers itself (not through its functions): shuffle, list_files.
  bool random = false;
  // Keeps state across iterations or epochs beyond its position (a memory cache).
  bool stateful = false;
  // Exactly one output per input element, in order (map, enumerate, prefetch): its visit
  // ratio equals its input's.
  bool elementwise = false;
  // Interleaves inputs it creates from a dataset function (interleave, flat_map): the
  // autotune model treats its inputs' parallelism as its own.
  bool interleave = false;
  SeedMix seed_mix = SeedMix::kUnknown;
  std::string seed_mix_attr;  // for SeedMix::kWhenAttrTrue
  // Whether the op can serve row i of its output by index (random access, which
  // GlobalShuffle needs; graph/random_access.h reads it).
  RowAccess row_access = RowAccess::kNone;
};

// An op: attributes, inputs, functions and traits.
class OpDef {
 public:
  OpDef() = default;
  explicit OpDef(std::string name) : name_(std::move(name)) {}

  OpDef& Summary(std::string s) {
    summary_ = std::move(s);
    return *this;
  }
  // Exactly n dataset inputs.
  OpDef& Inputs(int n) {
    min_inputs_ = max_inputs_ = n;
    return *this;
  }
  // At least `min` inputs, no upper bound (zip, concatenate's variadic forms).
  OpDef& VariadicInputs(int min) {
    min_inputs_ = min;
    max_inputs_ = -1;
    return *this;
  }
  // The functions the op takes, in order, by kind (a predicate slot also takes an element
  // function returning one bool).
  OpDef& Functions(std::vector<Function::Kind> kinds) {
    functions_ = std::move(kinds);
    return *this;
  }
  // A required attribute.
  OpDef& Attr(std::string name, AttrType type, std::string doc) {
    attrs_.push_back({std::move(name), type, std::nullopt, std::move(doc)});
    return *this;
  }
  // An optional attribute and its default.
  OpDef& Attr(std::string name, AttrType type, AttrValue default_value, std::string doc) {
    attrs_.push_back({std::move(name), type, std::move(default_value), std::move(doc)});
    return *this;
  }
  // An optional attribute whose default depends on others (documented in `doc`).
  OpDef& OptionalAttr(std::string name, AttrType type, std::string doc) {
    attrs_.push_back({std::move(name), type, std::nullopt, std::move(doc), /*optional=*/true});
    return *this;
  }
  OpDef& Traits(OpTraits t) {
    traits_ = std::move(t);
    return *this;
  }
  // Internal ops are built by other ops or the optimizer, never by users or specs; they
  // are listed by `sluice ops --all` only.
  OpDef& Internal() {
    internal_ = true;
    return *this;
  }

  const std::string& name() const { return name_; }
  const std::string& summary() const { return summary_; }
  int min_inputs() const { return min_inputs_; }
  int max_inputs() const { return max_inputs_; }  // -1: unbounded
  const std::vector<Function::Kind>& functions() const { return functions_; }
  const std::vector<AttrDef>& attrs() const { return attrs_; }
  const AttrDef* FindAttr(std::string_view name) const;
  const OpTraits& traits() const { return traits_; }
  bool internal() const { return internal_; }

  // Checks a node's parts against this definition: input count, function kinds, and each
  // attribute's name (an unknown one names the closest declared name), type and presence.
  Status Validate(const OpArgs& args) const;
  // Whether a node with these attributes reads seed_mix (traits().seed_mix resolved).
  bool ReadsSeedMix(const AttrMap& attrs) const;

 private:
  std::string name_;
  std::string summary_;
  int min_inputs_ = 0;
  int max_inputs_ = 0;
  std::vector<Function::Kind> functions_;
  std::vector<AttrDef> attrs_;
  OpTraits traits_;
  bool internal_ = false;
};

// A kernel: its attributes, the kind of function it makes and the traits every function it
// makes has (the meta-test checks the made function against them).
class KernelDef {
 public:
  KernelDef() = default;
  explicit KernelDef(std::string name) : name_(std::move(name)) {}

  KernelDef& Summary(std::string s) {
    summary_ = std::move(s);
    return *this;
  }
  KernelDef& Kind(Function::Kind k) {
    kind_ = k;
    return *this;
  }
  KernelDef& Attr(std::string name, AttrType type, std::string doc) {
    attrs_.push_back({std::move(name), type, std::nullopt, std::move(doc)});
    return *this;
  }
  KernelDef& Attr(std::string name, AttrType type, AttrValue default_value, std::string doc) {
    attrs_.push_back({std::move(name), type, std::move(default_value), std::move(doc)});
    return *this;
  }
  // An optional attribute whose default depends on others (documented in `doc`).
  KernelDef& OptionalAttr(std::string name, AttrType type, std::string doc) {
    attrs_.push_back({std::move(name), type, std::nullopt, std::move(doc), /*optional=*/true});
    return *this;
  }
  KernelDef& AddAttr(AttrDef a) {
    attrs_.push_back(std::move(a));
    return *this;
  }
  KernelDef& Traits(FunctionTraits t) {
    traits_ = t;
    return *this;
  }

  const std::string& name() const { return name_; }
  const std::string& summary() const { return summary_; }
  Function::Kind kind() const { return kind_; }
  const std::vector<AttrDef>& attrs() const { return attrs_; }
  const AttrDef* FindAttr(std::string_view name) const;
  const FunctionTraits& traits() const { return traits_; }

  // Checks attribute names, types and presence (as OpDef::Validate).
  Status Validate(const AttrMap& attrs) const;

 private:
  std::string name_;
  std::string summary_;
  Function::Kind kind_ = Function::Kind::kElement;
  std::vector<AttrDef> attrs_;
  FunctionTraits traits_;
};

// The name in `candidates` closest to `name` by edit distance, or "" when none is close
// (more than a third of the longer name differs).
std::string ClosestName(std::string_view name, const std::vector<std::string_view>& candidates);

}  // namespace sluice

#endif  // SLUICE_GRAPH_OP_DEF_H_
