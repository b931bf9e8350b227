// RegisterBuiltins: the one place that lists every builtin op and kernel.
#include "ops/ops.h"

namespace sluice {

void RegisterBuiltins(Registry* r) {
  // Sources.
  RegisterRangeDataset(r);
  RegisterFromTensorsDataset(r);
  // Transformations.
  RegisterMapDataset(r);
  RegisterBatchDataset(r);
  RegisterUnbatchDataset(r);
  // Kernels.
  RegisterBasicKernels(r);
}

}  // namespace sluice
