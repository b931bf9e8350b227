// Shape and comparison kernels:
//   expand_dims(axis, component=0): inserts a dimension of size 1 at `axis` (negative
//     counts from the end: -1 appends). Zero-copy.
//   reshape(shape, component=0): the same values in `shape` (one dim may be -1: inferred).
//     Zero-copy.
//   compare(op, value, component=0): a predicate on a numeric scalar: `x <op> value` with op
//     one of less, less_equal, equal, not_equal, greater_equal, greater.
#include <limits>

#include "graph/attr.h"
#include "ops/ops.h"

namespace sluice {

Result<Tensor> CastTensor(const Tensor& in, DType to);  // basic_kernels.cc

namespace {

Status CheckComponent(std::string_view kernel, const Element& e, int64_t comp) {
  if (comp < 0 || static_cast<size_t>(comp) >= e.size()) {
    return InvalidArgumentError(std::string(kernel) + ": component " + std::to_string(comp) +
                                " out of range for " + std::to_string(e.size()) + " components");
  }
  return Status::OK();
}

// axis in [-(rank+1), rank] -> [0, rank]; -1 when out of range.
int NormalizeAxis(int64_t axis, int rank) {
  const int64_t a = axis < 0 ? axis + rank + 1 : axis;
  return a < 0 || a > rank ? -1 : static_cast<int>(a);
}

// `target` with its -1 dim inferred for `n` elements.
Result<Shape> ResolveShape(const std::vector<int64_t>& target, int64_t n) {
  int64_t known = 1;
  int unknown = -1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == -1) {
      unknown = static_cast<int>(i);
    } else {
      known *= target[i];  // bounded when the kernel is made
    }
  }
  std::vector<int64_t> dims = target;
  if (unknown >= 0) {
    if (known == 0 || n % known != 0) {
      return InvalidArgumentError("reshape: cannot reshape " + std::to_string(n) +
                                  " elements to " + PartialShape(target).ToString());
    }
    dims[unknown] = n / known;
  } else if (known != n) {
    return InvalidArgumentError("reshape: cannot reshape " + std::to_string(n) + " elements to " +
                                PartialShape(target).ToString());
  }
  return Shape(dims);
}

}  // namespace

void RegisterTensorKernels(Registry* r) {
  r->RegisterKernel(
      KernelDef("expand_dims")
              .Summary("Inserts a dimension of size 1 at axis.")
              .Attr("axis", AttrType::kInt, "Where the new dimension goes (negative: from the end).")
              .Attr("component", AttrType::kInt, int64_t{0}, "The component it works on.")
              .Traits({.skippable = true, .cheap = true}),
      [](const AttrMap& attrs) -> Result<Function> {
     SLUICE_ASSIGN_OR_RETURN(int64_t axis, GetAttr<int64_t>(attrs, "expand_dims", "axis"));
     SLUICE_ASSIGN_OR_RETURN(int64_t comp, GetAttrOr<int64_t>(attrs, "expand_dims", "component", 0));
     return MakeKernelFunction(
         "expand_dims", attrs,
         [axis, comp](Element e, FunctionContext&) -> Result<Element> {
           SLUICE_RETURN_IF_ERROR(CheckComponent("expand_dims", e, comp));
           const Shape& s = e[comp].shape();
           const int a = NormalizeAxis(axis, s.rank());
           if (a < 0) {
             return InvalidArgumentError("expand_dims: axis " + std::to_string(axis) +
                                         " out of range for shape " + s.ToString());
           }
           std::vector<int64_t> dims = s.ToVector();
           dims.insert(dims.begin() + a, 1);
           SLUICE_ASSIGN_OR_RETURN(e[comp], e[comp].Reshape(Shape(dims)));
           return e;
         },
         {.is_random = false, .skippable = true, .cheap = true},
         [axis, comp](const ElementSpec& in) -> Result<ElementSpec> {
           if (in.unknown) return in;
           if (comp < 0 || static_cast<size_t>(comp) >= in.size()) {
             return InvalidArgumentError("expand_dims: component " + std::to_string(comp) +
                                         " out of range for " + std::to_string(in.size()) +
                                         " components");
           }
           ElementSpec out = in;
           const PartialShape& s = in[comp].shape;
           if (!s.rank_known()) return out;
           const int a = NormalizeAxis(axis, s.rank());
           if (a < 0) {
             return InvalidArgumentError("expand_dims: axis " + std::to_string(axis) +
                                         " out of range for shape " + s.ToString());
           }
           std::vector<int64_t> dims;
           for (int i = 0; i < s.rank(); ++i) dims.push_back(s.dim(i));
           dims.insert(dims.begin() + a, 1);
           out.components[comp].shape = PartialShape(std::move(dims));
           return out;
         });
   });

  r->RegisterKernel(
      KernelDef("reshape")
              .Summary("Gives a component a new shape with the same number of values.")
              .Attr("shape", AttrType::kIntList, "The new shape; one dimension may be -1.")
              .Attr("component", AttrType::kInt, int64_t{0}, "The component it works on.")
              .Traits({.skippable = true, .cheap = true}),
      [](const AttrMap& attrs) -> Result<Function> {
     SLUICE_ASSIGN_OR_RETURN(auto target, GetAttr<std::vector<int64_t>>(attrs, "reshape", "shape"));
     SLUICE_ASSIGN_OR_RETURN(int64_t comp, GetAttrOr<int64_t>(attrs, "reshape", "component", 0));
     int unknowns = 0;
     int64_t known = 1;
     for (int64_t d : target) {
       if (d < -1) return InvalidArgumentError("reshape: dim " + std::to_string(d) + " < -1");
       if (d == -1) {
         ++unknowns;
         continue;
       }
       if (d != 0 && known > std::numeric_limits<int64_t>::max() / 4 / d) {
         return InvalidArgumentError("reshape: shape " + PartialShape(target).ToString() +
                                     " has too many elements");
       }
       known *= d;
     }
     if (unknowns > 1) {
       return InvalidArgumentError("reshape: at most one dim may be -1, got " +
                                   PartialShape(target).ToString());
     }
     return MakeKernelFunction(
         "reshape", attrs,
         [target, comp](Element e, FunctionContext&) -> Result<Element> {
           SLUICE_RETURN_IF_ERROR(CheckComponent("reshape", e, comp));
           SLUICE_ASSIGN_OR_RETURN(Shape s, ResolveShape(target, e[comp].num_elements()));
           SLUICE_ASSIGN_OR_RETURN(e[comp], e[comp].Reshape(std::move(s)));
           return e;
         },
         {.is_random = false, .skippable = true, .cheap = true},
         [target, comp](const ElementSpec& in) -> Result<ElementSpec> {
           if (in.unknown) return in;
           if (comp < 0 || static_cast<size_t>(comp) >= in.size()) {
             return InvalidArgumentError("reshape: component " + std::to_string(comp) +
                                         " out of range for " + std::to_string(in.size()) +
                                         " components");
           }
           ElementSpec out = in;
           PartialShape shape(target);
           const PartialShape& s = in[comp].shape;
           bool defined = s.rank_known();
           int64_t n = 1;
           for (int i = 0; defined && i < s.rank(); ++i) {
             defined = s.dim(i) >= 0;
             if (defined) n *= s.dim(i);
           }
           if (defined) {
             SLUICE_ASSIGN_OR_RETURN(Shape resolved, ResolveShape(target, n));
             shape = PartialShape(resolved);
           }
           out.components[comp].shape = std::move(shape);
           return out;
         });
   });

  r->RegisterKernel(
      KernelDef("compare")
              .Summary("A predicate: component <op> value for a numeric scalar.")
              .Kind(Function::Kind::kPredicate)
              .Attr("op", AttrType::kString,
                    "less, less_equal, equal, not_equal, greater or greater_equal.")
              .Attr("value", AttrType::kFloat, "The number compared with.")
              .Attr("component", AttrType::kInt, int64_t{0}, "The component it works on.")
              .Traits({}),
      [](const AttrMap& attrs) -> Result<Function> {
     SLUICE_ASSIGN_OR_RETURN(std::string op, GetAttr<std::string>(attrs, "compare", "op"));
     SLUICE_ASSIGN_OR_RETURN(double value, GetAttr<double>(attrs, "compare", "value"));
     SLUICE_ASSIGN_OR_RETURN(int64_t comp, GetAttrOr<int64_t>(attrs, "compare", "component", 0));
     static const std::map<std::string, bool (*)(double, double), std::less<>> kOps = {
         {"less", [](double a, double b) { return a < b; }},
         {"less_equal", [](double a, double b) { return a <= b; }},
         {"equal", [](double a, double b) { return a == b; }},
         {"not_equal", [](double a, double b) { return a != b; }},
         {"greater_equal", [](double a, double b) { return a >= b; }},
         {"greater", [](double a, double b) { return a > b; }}};
     auto it = kOps.find(op);
     if (it == kOps.end()) {
       return InvalidArgumentError("compare: op must be less, less_equal, equal, not_equal, "
                                   "greater_equal or greater, got '" + op + "'");
     }
     auto cmp = it->second;
     return MakeKernelFunction(
         "compare", attrs, nullptr, {.is_random = false}, nullptr,
         [cmp, value, comp](const Element& e, FunctionContext&) -> Result<bool> {
           SLUICE_RETURN_IF_ERROR(CheckComponent("compare", e, comp));
           const Tensor& t = e[comp];
           if (t.num_elements() != 1 || t.dtype() == DType::kString) {
             return InvalidArgumentError("compare: component " + std::to_string(comp) +
                                         " must be a numeric scalar, got " + t.DebugString(2));
           }
           SLUICE_ASSIGN_OR_RETURN(Tensor d, CastTensor(t, DType::kFloat64));
           return cmp(d.scalar<double>(), value);
         });
   });
}

}  // namespace sluice
