// libFuzzer target: GetSplitsRequest as the dispatcher receives it (untrusted bytes),
// through the transport-free Dispatcher::GetSplits (fuzz/service_fuzz.h). Never a crash,
// a hang or an unbounded allocation; a lease is a non-empty range within the dataset's
// splits.
#include <cstddef>
#include <cstdint>

#include "service_fuzz.h"

using namespace sluice::service;  // NOLINT

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  GetSplitsRequest req;
  if (!req.ParseFromArray(data, static_cast<int>(size))) return 0;
  fuzz::Harness& h = fuzz::Get();
  GetSplitsResponse resp;
  sluice::Status s = h.dispatcher->GetSplits(req, &resp);
  if (s.ok() && !resp.end_of_splits())
    fuzz::Check(resp.begin() >= 0 && resp.end() > resp.begin() && resp.end() <= 1000 &&
                resp.end() - resp.begin() <= kMaxLeaseSplits);
  return 0;
}
