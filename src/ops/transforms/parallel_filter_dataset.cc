// TODO(issue 3): being written.
#include "ops/ops.h"
namespace sluice {
void RegisterParallelFilterDataset(Registry*) {}
}  // namespace sluice
