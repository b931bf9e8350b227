#include "runtime/random_access.h"

namespace sluice {

Result<Element> RandomAccess::GatherRows(std::span<const int64_t>) {
  return InternalError("GatherRows called on rows that do not gather from memory");
}

}  // namespace sluice
