// Op metadata (src/graph/op_def.h): every registered op and kernel declares a definition and
// has a case in tests/testing/op_cases.cc; declared defaults are the ones the factories use;
// declared traits match what the ops and kernels do; the registry refuses what the
// definitions do not allow (unknown attributes with the closest name, wrong types, missing
// attributes, wrong inputs or functions) and a name registered twice.
#include <gtest/gtest.h>

#include <set>

#include "api/builtins.h"
#include "api/dataset_internal.h"
#include "graph/registry.h"
#include "ops/ops.h"
#include "testing/op_cases.h"

namespace sluice {
namespace {

using namespace testing;  // NOLINT: the shared op cases and helpers

TEST(OpDefTest, BuiltinsRegisterWithoutError) {
  EXPECT_TRUE(BuiltinRegistry().status().ok()) << BuiltinRegistry().status();
}

// Every op and kernel: a summary, documented attributes with distinct names, and a case.
TEST(OpDefTest, EveryOpAndKernelHasMetadataAndACase) {
  const Registry& r = BuiltinRegistry();
  std::vector<std::string> problems;
  auto check_attrs = [&](const std::string& who, const std::vector<AttrDef>& attrs) {
    std::set<std::string> seen;
    for (const AttrDef& a : attrs) {
      if (a.doc.empty()) problems.push_back(who + ": attribute '" + a.name + "' has no doc");
      if (!seen.insert(a.name).second) problems.push_back(who + ": '" + a.name + "' twice");
      if (a.default_value && !AttrValueHasType(*a.default_value, a.type)) {
        problems.push_back(who + ": the default of '" + a.name + "' is not a " +
                           std::string(AttrTypeName(a.type)));
      }
    }
  };
  for (const std::string& name : r.OpNames()) {
    const OpDef* d = r.FindOp(name);
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(d->name(), name);
    if (d->summary().empty()) problems.push_back("op " + name + ": no summary");
    if (d->traits().seed_mix == SeedMix::kUnknown) {
      problems.push_back("op " + name + ": seed_mix not declared");
    }
    if (d->traits().seed_mix == SeedMix::kWhenAttrTrue &&
        d->FindAttr(d->traits().seed_mix_attr) == nullptr) {
      problems.push_back("op " + name + ": seed_mix_attr names no attribute");
    }
    if (d->traits().splittable && !d->traits().source) {
      problems.push_back("op " + name + ": splittable but not a source");
    }
    if (d->traits().async && !d->traits().buffering) {
      problems.push_back("op " + name + ": async but not buffering");
    }
    check_attrs("op " + name, d->attrs());
    if (!OpCases().count(name)) problems.push_back("op " + name + ": no case in op_cases.cc");
  }
  for (const std::string& name : r.KernelNames()) {
    const KernelDef* d = r.FindKernel(name);
    ASSERT_NE(d, nullptr);
    if (d->summary().empty()) problems.push_back("kernel " + name + ": no summary");
    check_attrs("kernel " + name, d->attrs());
    if (!KernelCases().count(name)) {
      problems.push_back("kernel " + name + ": no case in op_cases.cc");
    }
  }
  std::string all;
  for (const std::string& p : problems) all += "\n  " + p;
  EXPECT_TRUE(problems.empty()) << all;
}

// `ds`, or its first 16 elements when it is endless (a Random node alone).
Dataset Bounded(const Dataset& ds) {
  return ds.Cardinality() == kInfiniteCardinality ? ds.Take(16) : ds;
}

// The nodes of `root`'s graph whose op is `op`.
void FindNodes(const DatasetPtr& root, std::string_view op, std::vector<DatasetPtr>* out) {
  if (root->op() == op) out->push_back(root);
  for (const DatasetPtr& in : root->inputs()) FindNodes(in, op, out);
}

// `attrs` with every declared default spelled out (`fill`) or with every attribute that
// equals its declared default removed (!fill); how many attributes changed.
int WithDefaults(const std::vector<AttrDef>& defs, bool fill, AttrMap* attrs) {
  int changed = 0;
  for (const AttrDef& a : defs) {
    if (!a.default_value) continue;
    auto it = attrs->find(a.name);
    if (fill && it == attrs->end()) {
      (*attrs)[a.name] = *a.default_value;
      ++changed;
    } else if (!fill && it != attrs->end() &&
               AttrValueDebugString(it->second) == AttrValueDebugString(*a.default_value)) {
      attrs->erase(it);
      ++changed;
    }
  }
  return changed;
}

// Declared defaults are what the factories use: each case's node, rebuilt once with every
// defaulted attribute spelled out and once with every attribute that equals its declared
// default left out, yields the same elements and spec both ways.
TEST(OpDefTest, DeclaredOpDefaultsAreTheFactoriesDefaults) {
  Files files;
  int exercised = 0;
  for (const auto& [op, make] : OpCases()) {
    SCOPED_TRACE("op " + op);
    const OpDef* def = BuiltinRegistry().FindOp(op);
    ASSERT_NE(def, nullptr);
    Dataset ds = make(files);
    ASSERT_TRUE(ds.ok()) << ds.status();
    std::vector<DatasetPtr> nodes;
    FindNodes(NodeOf(ds), op, &nodes);
    ASSERT_FALSE(nodes.empty());
    const DatasetPtr& node = nodes[0];
    OpArgs full{node->attrs(), node->inputs(), node->functions()};
    OpArgs bare = full;
    const int changed = WithDefaults(def->attrs(), true, &full.attrs) +
                        WithDefaults(def->attrs(), false, &bare.attrs);
    if (changed == 0) continue;
    exercised += changed;
    auto a = BuiltinRegistry().CreateOp(op, full);
    auto b = BuiltinRegistry().CreateOp(op, bare);
    ASSERT_TRUE(a.ok()) << a.status();
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ((*a)->element_spec(), (*b)->element_spec());
    EXPECT_EQ((*a)->Cardinality(), (*b)->Cardinality());
    ExpectSameElements(Collect(Bounded(DatasetOf(*a))), Collect(Bounded(DatasetOf(*b))));
  }
  EXPECT_GT(exercised, 30);
}

// The first node of `root`'s graph with a function named `kernel`, and that function's index.
std::pair<DatasetPtr, size_t> FindKernelUse(const DatasetPtr& root, std::string_view kernel) {
  for (size_t i = 0; i < root->functions().size(); ++i) {
    if (root->functions()[i].name() == kernel) return {root, i};
  }
  for (const DatasetPtr& in : root->inputs()) {
    auto found = FindKernelUse(in, kernel);
    if (found.first) return found;
  }
  return {nullptr, 0};
}

TEST(OpDefTest, DeclaredKernelDefaultsAndTraitsAreTheKernels) {
  Files files;
  int rebuilt = 0;
  for (const auto& [kernel, make] : KernelCases()) {
    SCOPED_TRACE("kernel " + kernel);
    const KernelDef* def = BuiltinRegistry().FindKernel(kernel);
    ASSERT_NE(def, nullptr);
    Dataset ds = make(files);
    ASSERT_TRUE(ds.ok()) << ds.status();
    auto [node, index] = FindKernelUse(NodeOf(ds), kernel);
    ASSERT_NE(node, nullptr);
    const Function& f = node->functions()[index];
    // Traits and kind as declared.
    EXPECT_EQ(f.traits().is_random, def->traits().is_random);
    EXPECT_EQ(f.traits().skippable, def->traits().skippable);
    EXPECT_EQ(f.traits().stateful, def->traits().stateful);
    EXPECT_EQ(f.traits().cheap, def->traits().cheap);
    EXPECT_EQ(f.kind(), def->kind());
    // Defaults, both ways (as for ops).
    AttrMap full = f.attrs(), bare = f.attrs();
    const int changed = WithDefaults(def->attrs(), true, &full) +
                        WithDefaults(def->attrs(), false, &bare);
    if (changed == 0) continue;
    rebuilt += changed;
    auto fa = BuiltinRegistry().CreateKernel(kernel, full);
    auto fb = BuiltinRegistry().CreateKernel(kernel, bare);
    ASSERT_TRUE(fa.ok()) << fa.status();
    ASSERT_TRUE(fb.ok()) << fb.status();
    OpArgs args{node->attrs(), node->inputs(), node->functions()};
    args.functions[index] = *fa;
    auto a = BuiltinRegistry().CreateOp(node->op(), args);
    args.functions[index] = *fb;
    auto b = BuiltinRegistry().CreateOp(node->op(), args);
    ASSERT_TRUE(a.ok()) << a.status();
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ((*a)->element_spec(), (*b)->element_spec());
    ExpectSameElements(Collect(Bounded(DatasetOf(*a))), Collect(Bounded(DatasetOf(*b))));
  }
  EXPECT_GT(rebuilt, 30);
}

// The async trait is what the iterators do: the live tree's `async` flag of each case's
// nodes equals its op's declared trait.
TEST(OpDefTest, AsyncTraitMatchesTheIterators) {
  Files files;
  for (const auto& [op, make] : OpCases()) {
    SCOPED_TRACE("op " + op);
    Dataset ds = make(files);
    ASSERT_TRUE(ds.ok()) << ds.status();
    Options o;
    o.autotune.enabled = false;
    auto it = MakeIteratorAsBuilt(ds, o);
    ASSERT_TRUE(it.ok()) << it.status();
    ASSERT_TRUE((*it)->GetNext().ok());
    for (const IteratorStats& s : (*it)->Stats()) {
      const OpDef* def = BuiltinRegistry().FindOp(s.name);
      ASSERT_NE(def, nullptr) << s.name;
      EXPECT_EQ(s.async, def->traits().async) << s.prefix;
    }
  }
}

Status Build(std::string_view op, AttrMap attrs, std::vector<Dataset> inputs = {},
             std::vector<Function> fns = {}) {
  return Dataset::FromOp(op, std::move(attrs), std::move(inputs), std::move(fns)).status();
}

TEST(OpDefTest, UnknownAttributeNamesTheClosestValidName) {
  Status s = Build("Batch", {{"batch_size", int64_t{2}}, {"drop_reminder", true}},
                   {Dataset::Range(4)});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("unknown attribute 'drop_reminder'"), std::string::npos) << s;
  EXPECT_NE(s.message().find("did you mean 'drop_remainder'"), std::string::npos) << s;

  s = Build("Repeat", {{"cont", int64_t{2}}}, {Dataset::Range(4)});
  EXPECT_NE(s.message().find("did you mean 'count'"), std::string::npos) << s;

  auto k = Function::Kernel("normalize", {{"mean", 0.5}, {"std", 0.5}, {"layuot", std::string("HWC")}});
  ASSERT_FALSE(k.ok());
  EXPECT_NE(k.status().message().find("kernel normalize: unknown attribute 'layuot'"),
            std::string::npos)
      << k.status();
  EXPECT_NE(k.status().message().find("did you mean 'layout'"), std::string::npos);

  // Nothing close: the valid names are listed.
  s = Build("Shard", {{"num_shards", int64_t{2}}, {"index", int64_t{0}}, {"zzzzzz", 1.0}},
            {Dataset::Range(4)});
  EXPECT_NE(s.message().find("valid attributes: num_shards, index"), std::string::npos) << s;
  // An op without attributes says so.
  s = Build("Unbatch", {{"x", true}}, {Dataset::Range(4).Batch(2)});
  EXPECT_NE(s.message().find("takes no attributes"), std::string::npos) << s;
}

TEST(OpDefTest, TypesPresenceInputsAndFunctionsAreChecked) {
  Status s = Build("Batch", {{"batch_size", std::string("2")}}, {Dataset::Range(4)});
  EXPECT_NE(s.message().find("attribute 'batch_size' must be int, got \"2\""),
            std::string::npos)
      << s;
  s = Build("Batch", {}, {Dataset::Range(4)});
  EXPECT_NE(s.message().find("missing attribute 'batch_size'"), std::string::npos) << s;
  s = Build("Batch", {{"batch_size", int64_t{2}}});
  EXPECT_NE(s.message().find("expects 1 input(s), got 0"), std::string::npos) << s;
  s = Build("Zip", {});
  EXPECT_NE(s.message().find("expects at least 1 input(s), got 0"), std::string::npos) << s;
  auto pred = Function::Kernel("compare", {{"op", std::string("less")}, {"value", 1.0}});
  ASSERT_TRUE(pred.ok());
  s = Build("Map", {}, {Dataset::Range(4)});
  EXPECT_NE(s.message().find("expects 1 function(s), got 0"), std::string::npos) << s;
  s = Build("FlatMap", {}, {Dataset::Range(4)}, {*pred});
  EXPECT_NE(s.message().find("must be an element -> dataset function"), std::string::npos) << s;
  // An int where a float is declared is fine; a list of ints where floats are, too.
  EXPECT_TRUE(Function::Kernel("compare", {{"op", std::string("less")}, {"value", int64_t{1}}}).ok());
  // Unknown op and kernel names suggest the closest.
  s = Build("Shufle", {{"buffer_size", int64_t{2}}}, {Dataset::Range(4)});
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("did you mean 'Shuffle'"), std::string::npos) << s;
  auto k = Function::Kernel("normalise", {});
  EXPECT_NE(k.status().message().find("did you mean 'normalize'"), std::string::npos);
}

TEST(OpDefTest, RegisteringANameTwiceIsAnError) {
  Registry r;
  RegisterBuiltins(&r);
  ASSERT_TRUE(r.status().ok()) << r.status();
  r.RegisterOp(OpDef("Batch").Summary("again").Inputs(1),
               [](OpArgs) -> Result<DatasetPtr> { return InternalError("unreachable"); });
  EXPECT_EQ(r.status().code(), StatusCode::kAlreadyExists);
  EXPECT_NE(r.status().message().find("op 'Batch' is already registered"), std::string::npos);
  // Every later lookup reports it, so the duplicate cannot go unnoticed.
  auto made = r.CreateOp("Range", OpArgs{{{"stop", int64_t{3}}}, {}, {}});
  EXPECT_EQ(made.status().code(), StatusCode::kAlreadyExists);

  Registry k;
  k.RegisterKernel(KernelDef("x").Summary("x"), [](const AttrMap&) -> Result<Function> {
    return InternalError("unreachable");
  });
  k.RegisterKernel(KernelDef("x").Summary("x"), [](const AttrMap&) -> Result<Function> {
    return InternalError("unreachable");
  });
  EXPECT_EQ(k.status().code(), StatusCode::kAlreadyExists);
  // An op and a kernel share one namespace.
  Registry both;
  both.RegisterKernel(KernelDef("y").Summary("y"), [](const AttrMap&) -> Result<Function> {
    return InternalError("unreachable");
  });
  both.RegisterOp(OpDef("y").Summary("y"),
                  [](OpArgs) -> Result<DatasetPtr> { return InternalError("unreachable"); });
  EXPECT_EQ(both.status().code(), StatusCode::kAlreadyExists);
}

TEST(OpDefTest, ClosestName) {
  EXPECT_EQ(ClosestName("drop_reminder", {"batch_size", "drop_remainder"}), "drop_remainder");
  EXPECT_EQ(ClosestName("layuot", {"component", "mean", "std", "layout", "scale"}), "layout");
  EXPECT_EQ(ClosestName("completely_different", {"count"}), "");
  EXPECT_EQ(ClosestName("x", {}), "");
}

}  // namespace
}  // namespace sluice
