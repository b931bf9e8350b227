// The shared harness of the service's request fuzzers (fuzz/service_*_fuzzer.cc): one
// dispatcher (no journal: the fuzzers exercise the logic, not fsync) seeded with a
// dataset, a DYNAMIC job, and one worker running the job's task, so a mutated request
// can name ids that exist. Every 2000 inputs both are rebuilt, which
// bounds the state the requests grow (jobs, workers, clients).
//
// Each fuzzer parses its input as one request message (the bytes a server would get;
// gRPC bounds them by the servers' maximum message size), hands it to the
// transport-free method the server would call, and checks the answer's invariants.
#ifndef SLUICE_FUZZ_SERVICE_FUZZ_H_
#define SLUICE_FUZZ_SERVICE_FUZZ_H_

#include <google/protobuf/stubs/logging.h>

#include <cstdlib>
#include <memory>

#include "service/dispatcher.h"
#include "service/dispatcher_client.h"
#include "service/worker.h"
#include "sluice/dataset.h"
#include "sluice/serialize.h"

namespace sluice::service::fuzz {

inline void Check(bool ok) {
  if (!ok) abort();
}

struct Harness {
  std::unique_ptr<Dispatcher> dispatcher;
  std::unique_ptr<Worker> worker;
  int64_t inputs = 0;

  Harness() { Reset(); }
  void Reset() {
    worker.reset();
    DispatcherConfig c;
    c.worker_timeout_ms = 1 << 30;
    c.client_timeout_ms = 1 << 30;
    dispatcher = std::make_unique<Dispatcher>(c);
    Check(dispatcher->Start().ok());
    Dataset ds = Dataset::Range(1000);
    GetOrRegisterDatasetRequest r;
    r.set_graph(*SerializeDataset(ds, GraphFormat::kBinary));
    r.set_fingerprint(*DatasetFingerprint(ds));
    GetOrRegisterDatasetResponse rr;
    Check(dispatcher->GetOrRegisterDataset(r, &rr).ok());
    GetOrCreateJobRequest j;
    j.set_dataset_id(rr.dataset_id());
    j.set_job_name("job");
    j.set_sharding_policy(DYNAMIC);
    GetOrCreateJobResponse jr;
    Check(dispatcher->GetOrCreateJob(j, &jr).ok());
    WorkerConfig wc;
    wc.address = "w0";
    wc.heartbeat_interval_ms = 1 << 30;
    wc.get_element_wait_ms = 0;
    worker = std::make_unique<Worker>(
        wc, std::make_shared<InProcessDispatcherClient>(dispatcher.get()));
    Check(worker->Start().ok());
  }
  // Called once per input.
  void Tick() {
    if (++inputs % 2000 == 0) Reset();
  }
};

inline Harness& Get() {
  static Harness* h = [] {
    google::protobuf::SetLogHandler(nullptr);  // invalid UTF-8 is logged otherwise
    return new Harness();
  }();
  h->Tick();
  return *h;
}

}  // namespace sluice::service::fuzz

#endif  // SLUICE_FUZZ_SERVICE_FUZZ_H_
