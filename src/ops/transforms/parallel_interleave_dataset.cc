// TODO(issue 3): being written.
#include "ops/ops.h"
namespace sluice {
void RegisterParallelInterleaveDataset(Registry*) {}
}  // namespace sluice
