// Dataset-valued kernels (element -> Dataset), for flat_map, interleave and
// group_by_window, so that pipelines which open files per element serialize:
//   tfrecord_dataset, text_line_dataset, fixed_length_record_dataset: a file name (string
//     scalar in `component`, default 0) -> the records of that file. Other attributes are
//     the source op's (compression, buffer_size, record_bytes, header_bytes, ...).
//   from_tensor_slices: an element -> the dataset of its slices along dimension 0.
//   window_batch(batch_size, drop_remainder=false): group_by_window's reduce function
//     that batches the window.
#include "graph/attr.h"
#include "graph/dataset_access.h"
#include "ops/op_util.h"
#include "ops/ops.h"

namespace sluice {
namespace {

// kernel `name` -> op `op` with filenames = [the element's file name].
void RegisterFileDatasetKernel(Registry* r, const std::string& name, const std::string& op) {
  // The op's attributes, less the file name, which comes from the element.
  const OpDef* op_def = r->FindOp(op);
  KernelDef def = KernelDef(name)
                      .Summary("The " + op + " dataset of the file named by a string "
                               "component (for interleave and flat_map).")
                      .Kind(Function::Kind::kDataset)
                      .Attr("component", AttrType::kInt, int64_t{0}, "The component it works on.");
  if (op_def != nullptr) {
    for (const AttrDef& a : op_def->attrs()) {
      if (a.name != "filenames") def.AddAttr(a);
    }
  }
  r->RegisterKernel(std::move(def), [name, op](const AttrMap& attrs) -> Result<Function> {
     SLUICE_ASSIGN_OR_RETURN(int64_t comp, GetAttrOr<int64_t>(attrs, name, "component", 0));
     if (comp < 0) {
       return InvalidArgumentError(name + ": component must be >= 0, got " + std::to_string(comp));
     }
     if (attrs.count("filenames")) {
       return InvalidArgumentError(name + ": the file name comes from the element; drop the "
                                   "'filenames' attribute");
     }
     AttrMap op_attrs = attrs;
     op_attrs.erase("component");
     // Validates the op's attributes now, with a placeholder file name (sources open their
     // files when iterated, not when built).
     op_attrs["filenames"] = std::vector<std::string>{"<file>"};
     Dataset probe = BuildDataset(op, op_attrs);
     if (!probe.ok()) return probe.status().WithContext(name);
     const ElementSpec out_spec = probe.element_spec();
     return MakeKernelFunction(
         name, attrs, nullptr, {.is_random = false},
         [out_spec](const ElementSpec&) -> Result<ElementSpec> { return out_spec; },
         nullptr,
         [name, op, op_attrs, comp](Element e, FunctionContext&) -> Result<Dataset> {
           if (static_cast<size_t>(comp) >= e.size() || e[comp].dtype() != DType::kString ||
               e[comp].num_elements() != 1) {
             return InvalidArgumentError(name + ": component " + std::to_string(comp) +
                                         " must be a string scalar (a file name), got " +
                                         e.DebugString(2));
           }
           AttrMap a = op_attrs;
           a["filenames"] = std::vector<std::string>{e[comp].flat<std::string>()[0]};
           return BuildDataset(op, std::move(a));
         });
   });
}

}  // namespace

void RegisterDatasetKernels(Registry* r) {
  RegisterFileDatasetKernel(r, "tfrecord_dataset", "TFRecord");
  RegisterFileDatasetKernel(r, "text_line_dataset", "TextLine");
  RegisterFileDatasetKernel(r, "fixed_length_record_dataset", "FixedLengthRecord");

  r->RegisterKernel(KernelDef("from_tensor_slices")
                        .Summary("The dataset of the element's slices along dimension 0.")
                        .Kind(Function::Kind::kDataset),
                    [](const AttrMap& attrs) -> Result<Function> {
                      return MakeKernelFunction(
                          "from_tensor_slices", attrs, nullptr, {.is_random = false},
                          [](const ElementSpec& in) -> Result<ElementSpec> {
                            return UnbatchedSpec(in);
                          },
                          nullptr,
                          [](Element e, FunctionContext&) -> Result<Dataset> {
                            // BuildDataset: Dataset::FromOp and the fluent methods are
                            // the API layer's.
                            std::vector<std::string> names =
                                e.names() ? *e.names() : std::vector<std::string>{};
                            return BuildDataset("FromTensorSlices",
                                                {{"components", e.ToVector()},
                                                 {"names", std::move(names)}});
                          });
                    });

  r->RegisterKernel(
      KernelDef("window_batch")
          .Summary("group_by_window's reduce function: the window, batched.")
          .Kind(Function::Kind::kDataset)
          .Attr("batch_size", AttrType::kInt, "Elements per batch, >= 1.")
          .Attr("drop_remainder", AttrType::kBool, false, "Drop a last partial batch."),
      [](const AttrMap& attrs) -> Result<Function> {
     SLUICE_ASSIGN_OR_RETURN(int64_t batch, GetAttr<int64_t>(attrs, "window_batch", "batch_size"));
     SLUICE_ASSIGN_OR_RETURN(bool drop,
                             GetAttrOr<bool>(attrs, "window_batch", "drop_remainder", false));
     if (batch < 1) {
       return InvalidArgumentError("window_batch: batch_size must be >= 1, got " +
                                   std::to_string(batch));
     }
     return MakeKernelFunction(
         "window_batch", attrs, nullptr, {.is_random = false}, nullptr, nullptr,
         [batch, drop](Element, FunctionContext& ctx) -> Result<Dataset> {
           if (ctx.window() == nullptr) {
             return InvalidArgumentError(
                 "window_batch: not called by group_by_window (no window to batch)");
           }
           return BuildDataset("Batch", {{"batch_size", batch}, {"drop_remainder", drop}},
                                  {*ctx.window()});
         });
   });
}

}  // namespace sluice
