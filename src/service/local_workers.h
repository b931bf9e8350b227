// The workers started in this process (WorkServer), by address, so that a distributed
// dataset with target_workers="LOCAL" reads them without the network.
//
// Thread-safety: thread-safe. Unregister waits until no client is inside the worker.
#ifndef SLUICE_SERVICE_LOCAL_WORKERS_H_
#define SLUICE_SERVICE_LOCAL_WORKERS_H_

#include <memory>
#include <string>
#include <vector>

#include "service/grpc_transport.h"
#include "service/worker.h"

namespace sluice::service {

void RegisterLocalWorker(const std::string& address, Worker* worker);
void UnregisterLocalWorker(const std::string& address);
bool IsLocalWorker(const std::string& address);
// Worker::Nudge on the local worker at `address`, if there is one.
void NudgeLocalWorker(const std::string& address);
// Worker::HeartbeatNow on the local worker at `address` (Unavailable once it is gone).
Status HeartbeatLocalWorker(const std::string& address);
// Reads the local worker at `address` directly (Unavailable once it is gone).
std::unique_ptr<WorkerClient> MakeLocalWorkerClient(const std::string& address);
// Takes one element from a local worker without coding it.
Status TakeFromLocalWorker(const std::string& address, int64_t task_id, Element* element,
                           Worker::TakeResult* result);
// The same for a trainer of a cross-trainer-cache job (Worker::Take).
Status TakeFromLocalWorker(const std::string& address, int64_t task_id,
                           const std::string& trainer_id, Element* element,
                           Worker::TakeResult* result, int64_t* skipped);

}  // namespace sluice::service

#endif  // SLUICE_SERVICE_LOCAL_WORKERS_H_
