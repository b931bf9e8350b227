// libFuzzer target: ClientHeartbeatRequest as the dispatcher receives it (untrusted
// bytes), through the transport-free Dispatcher::ClientHeartbeat (fuzz/service_fuzz.h).
// Never a crash, a hang or an unbounded allocation; tasks listed are the job's.
#include <cstddef>
#include <cstdint>

#include "service_fuzz.h"

using namespace sluice::service;  // NOLINT

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ClientHeartbeatRequest req;
  if (!req.ParseFromArray(data, static_cast<int>(size))) return 0;
  fuzz::Harness& h = fuzz::Get();
  ClientHeartbeatResponse resp;
  sluice::Status s = h.dispatcher->ClientHeartbeat(req, &resp);
  if (s.ok()) {
    auto st = h.dispatcher->StateForTest();
    for (const auto& t : resp.task())
      fuzz::Check(st.FindTask(t.task_id())->job_id == req.job_id());
  }
  return 0;
}
