// Checkpoint helpers for ops that read several inputs and keep a flag per input
// (ChooseFromDatasets, SampleFromDatasets: which inputs are exhausted). The flags are
// saved as "<name>_<i>" = 0/1 under the iterator's prefix, then every input in order.
#ifndef SLUICE_OPS_INPUT_FLAGS_H_
#define SLUICE_OPS_INPUT_FLAGS_H_

#include <string>
#include <string_view>
#include <vector>

#include "runtime/checkpoint.h"
#include "runtime/iterator_base.h"

namespace sluice {

inline Status SaveInputsAndFlags(CheckpointWriter* w, const std::string& prefix,
                                 std::string_view name, const std::vector<bool>& flags,
                                 const std::vector<IteratorPtr>& inputs) {
  for (size_t i = 0; i < flags.size(); ++i) {
    w->WriteInt(prefix, std::string(name) + "_" + std::to_string(i), flags[i] ? 1 : 0);
  }
  for (const auto& in : inputs) SLUICE_RETURN_IF_ERROR(in->Save(w));
  return Status::OK();
}

// Restores into `flags` (already sized) and `inputs`.
inline Status RestoreInputsAndFlags(const CheckpointReader& r, const std::string& prefix,
                                    std::string_view name, std::vector<bool>* flags,
                                    std::vector<IteratorPtr>* inputs) {
  for (size_t i = 0; i < flags->size(); ++i) {
    SLUICE_ASSIGN_OR_RETURN(int64_t x,
                            r.ReadInt(prefix, std::string(name) + "_" + std::to_string(i)));
    (*flags)[i] = x != 0;
  }
  for (auto& in : *inputs) SLUICE_RETURN_IF_ERROR(in->Restore(r));
  return Status::OK();
}

}  // namespace sluice

#endif  // SLUICE_OPS_INPUT_FLAGS_H_
