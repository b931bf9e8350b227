// libFuzzer target: GetOrCreateJobRequest as the dispatcher receives it (untrusted
// bytes), through the transport-free Dispatcher::GetOrCreateJob (fuzz/service_fuzz.h).
// Never a crash, a hang or an unbounded allocation; an answer names a live job with the
// client in it.
#include <cstddef>
#include <cstdint>

#include "service_fuzz.h"

using namespace sluice::service;  // NOLINT

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  GetOrCreateJobRequest req;
  if (!req.ParseFromArray(data, static_cast<int>(size))) return 0;
  fuzz::Harness& h = fuzz::Get();
  GetOrCreateJobResponse resp;
  sluice::Status s = h.dispatcher->GetOrCreateJob(req, &resp);
  if (s.ok()) {
    auto st = h.dispatcher->StateForTest();
    const auto* j = st.FindJob(resp.job_id());
    fuzz::Check(j != nullptr && j->clients.count(resp.client_id()) == 1);
  }
  return 0;
}
