// libFuzzer target: ReleaseJobClientRequest as the dispatcher receives it (untrusted
// bytes), through the transport-free Dispatcher::ReleaseJobClient (fuzz/service_fuzz.h).
// Never a crash, a hang or an unbounded allocation; releasing is idempotent.
#include <cstddef>
#include <cstdint>

#include "service_fuzz.h"

using namespace sluice::service;  // NOLINT

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ReleaseJobClientRequest req;
  if (!req.ParseFromArray(data, static_cast<int>(size))) return 0;
  fuzz::Harness& h = fuzz::Get();
  ReleaseJobClientResponse resp;
  sluice::Status s = h.dispatcher->ReleaseJobClient(req, &resp);
  if (s.ok()) fuzz::Check(h.dispatcher->ReleaseJobClient(req, &resp).ok());
  return 0;
}
