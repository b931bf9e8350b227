// libFuzzer target: WorkerHeartbeatRequest as the dispatcher receives it (untrusted
// bytes), through the transport-free Dispatcher::WorkerHeartbeat (fuzz/service_fuzz.h).
// Never a crash, a hang or an unbounded allocation; new tasks are the worker's own.
#include <cstddef>
#include <cstdint>

#include "service_fuzz.h"

using namespace sluice::service;  // NOLINT

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  WorkerHeartbeatRequest req;
  if (!req.ParseFromArray(data, static_cast<int>(size))) return 0;
  fuzz::Harness& h = fuzz::Get();
  WorkerHeartbeatResponse resp;
  sluice::Status s = h.dispatcher->WorkerHeartbeat(req, &resp);
  if (s.ok()) {
    auto st = h.dispatcher->StateForTest();
    for (const auto& t : resp.new_task())
      fuzz::Check(st.FindTask(t.task_id())->worker == req.worker_address());
  }
  return 0;
}
