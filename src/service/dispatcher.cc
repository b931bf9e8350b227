#include "service/dispatcher.h"

#include <chrono>

#include "runtime/split_provider.h"
#include "sluice/serialize.h"

namespace sluice::service {
namespace {

int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

DispatcherConfig WithClock(DispatcherConfig c) {
  if (!c.clock) c.clock = SteadyMs;
  return c;
}

bool StaticSharding(ProcessingMode p) { return p != OFF && p != DYNAMIC; }

}  // namespace

Dispatcher::Dispatcher(DispatcherConfig config) : config_(WithClock(std::move(config))) {}

Status Dispatcher::Start() {
  MutexLock l(&mu_);
  if (started_) return FailedPreconditionError("dispatcher: already started");
  if (!config_.work_dir.empty()) {
    SLUICE_ASSIGN_OR_RETURN(auto opened, Journal::Open(config_.work_dir + "/journal"));
    for (const std::string& rec : opened.second.records) {
      Update u;
      if (!u.ParseFromString(rec)) {
        return DataLossError("dispatcher: journal " + opened.first.path() + ": record " +
                             std::to_string(updates_replayed_) + " does not parse");
      }
      Status s = state_.Apply(u);
      if (!s.ok()) return s.WithContext("dispatcher: replaying " + opened.first.path());
      ++updates_replayed_;
    }
    journal_dropped_bytes_ = opened.second.dropped_bytes;
    journal_.emplace(std::move(opened.first));
  }
  // Everyone known gets a fresh timeout.
  const int64_t now = Now();
  for (const auto& [addr, w] : state_.workers()) {
    if (!w.removed) worker_seen_[addr] = now;
  }
  for (const auto& [id, j] : state_.jobs()) {
    for (int64_t c : j.clients) client_seen_[c] = {id, now};
  }
  started_ = true;
  return Status::OK();
}

Status Dispatcher::Commit(const Update& u) {
  if (!started_) return FailedPreconditionError("dispatcher: not started");
  if (journal_) {
    std::string bytes;
    if (!u.SerializeToString(&bytes))
      return InternalError("dispatcher: update does not serialize");
    SLUICE_RETURN_IF_ERROR(journal_->Append(bytes));
  }
  Status s = state_.Apply(u);
  // Journaled but refused: the journal would replay it into the same refusal.
  if (!s.ok()) return InternalError(s.message());
  return Status::OK();
}

Status Dispatcher::GetOrRegisterDataset(const GetOrRegisterDatasetRequest& req,
                                        GetOrRegisterDatasetResponse* resp) {
  if (static_cast<int64_t>(req.graph().size()) > kMaxGraphBytes) {
    return InvalidArgumentError("dispatcher: graph of " +
                                std::to_string(req.graph().size()) +
                                " bytes over the limit");
  }
  {
    MutexLock l(&mu_);
    if (const auto* d = state_.FindDatasetByFingerprint(req.fingerprint())) {
      if (d->graph == req.graph()) {
        resp->set_dataset_id(d->id);
        return Status::OK();
      }
    }
  }
  // Rebuilding the graph checks it and tells whether (and how) it splits.
  SLUICE_ASSIGN_OR_RETURN(Dataset ds,
                          DeserializeDataset(req.graph(), GraphFormat::kBinary));
  SLUICE_ASSIGN_OR_RETURN(std::string fp, DatasetFingerprint(ds));
  if (fp != req.fingerprint()) {
    return InvalidArgumentError("dispatcher: fingerprint " + req.fingerprint() +
                                " does not match the graph's (" + fp + ")");
  }
  int64_t num_splits = -1;
  bool file_source = false;
  if (auto provider = ds.MakeSplitProvider(); provider.ok()) {
    num_splits = (*provider)->Cardinality();
    if (num_splits < 0) num_splits = -1;
    file_source = dynamic_cast<ListSplitProvider*>(provider->get()) != nullptr;
  }
  MutexLock l(&mu_);
  if (const auto* d = state_.FindDatasetByFingerprint(fp)) {
    resp->set_dataset_id(d->id);  // registered meanwhile, or the same graph spelled apart
    return Status::OK();
  }
  Update u;
  auto* r = u.mutable_register_dataset();
  r->set_dataset_id(state_.next_dataset_id());
  r->set_fingerprint(fp);
  r->set_graph(req.graph());
  r->set_num_splits(num_splits);
  r->set_file_source(file_source);
  SLUICE_RETURN_IF_ERROR(Commit(u));
  resp->set_dataset_id(r->dataset_id());
  return Status::OK();
}

bool Dispatcher::WantsTaskOnNewWorker(const DispatcherState::Job& job) const {
  if (job.released) return false;
  // Coordinated reads map rounds onto the job's tasks: the set is fixed at creation.
  if (job.num_consumers > 0) return false;
  if (job.policy == OFF) return !state_.JobFinished(job);
  return job.policy == DYNAMIC && state_.SplitsLeft(job);
}

bool Dispatcher::HasLiveWorker() const {
  for (const auto& [addr, w] : state_.workers()) {
    if (!w.removed) return true;
  }
  return false;
}

Status Dispatcher::CreateTasksForJob(const DispatcherState::Job& job) {
  const int64_t job_id = job.id;
  for (const auto& [addr, w] : state_.workers()) {
    if (w.removed) continue;
    Update u;
    auto* t = u.mutable_create_task();
    t->set_task_id(state_.next_task_id());
    t->set_job_id(job_id);
    t->set_worker_address(addr);
    SLUICE_RETURN_IF_ERROR(Commit(u));
  }
  return Status::OK();
}

Status Dispatcher::CreateTasksForWorker(const std::string& address) {
  std::vector<int64_t> jobs;
  for (const auto& [id, j] : state_.jobs()) {
    if (WantsTaskOnNewWorker(j)) jobs.push_back(id);
  }
  for (int64_t id : jobs) {
    Update u;
    auto* t = u.mutable_create_task();
    t->set_task_id(state_.next_task_id());
    t->set_job_id(id);
    t->set_worker_address(address);
    SLUICE_RETURN_IF_ERROR(Commit(u));
  }
  return Status::OK();
}

Status Dispatcher::GetOrCreateJob(const GetOrCreateJobRequest& req,
                                  GetOrCreateJobResponse* resp) {
  MutexLock l(&mu_);
  const auto* d = state_.FindDataset(req.dataset_id());
  if (d == nullptr) {
    return NotFoundError("dispatcher: unknown dataset " +
                         std::to_string(req.dataset_id()));
  }
  if (!ProcessingMode_IsValid(req.sharding_policy())) {
    return InvalidArgumentError("dispatcher: unknown sharding policy " +
                                std::to_string(req.sharding_policy()));
  }
  if (req.num_consumers() < 0 || req.num_consumers() > kMaxConsumers) {
    return InvalidArgumentError("dispatcher: num_consumers " +
                                std::to_string(req.num_consumers()) + " not in [0, " +
                                std::to_string(kMaxConsumers) + "]");
  }
  if (req.sharding_policy() == DYNAMIC && d->num_splits < 0) {
    return FailedPreconditionError(
        "dispatcher: DYNAMIC sharding needs a pipeline with one splittable source and no "
        "repeat, shuffle-and-repeat or cache after it");
  }
  const DispatcherState::Job* job =
      req.job_name().empty() ? nullptr : state_.FindJobByName(req.job_name());
  if (job != nullptr) {
    if (job->dataset_id != req.dataset_id() || job->policy != req.sharding_policy()) {
      return InvalidArgumentError("dispatcher: job '" + req.job_name() +
                                  "' exists with another dataset or sharding policy");
    }
    if (job->num_consumers != req.num_consumers()) {
      return InvalidArgumentError("dispatcher: job '" + req.job_name() + "' has " +
                                  std::to_string(job->num_consumers) +
                                  " coordinated consumers, not " +
                                  std::to_string(req.num_consumers()));
    }
    if (job->cross_trainer_cache != req.cross_trainer_cache()) {
      return InvalidArgumentError("dispatcher: job '" + req.job_name() +
                                  "' exists " +
                                  (job->cross_trainer_cache ? "with" : "without") +
                                  " a cross-trainer cache");
    }
  } else {
    if (StaticSharding(req.sharding_policy()) && !HasLiveWorker()) {
      return UnavailableError("dispatcher: static sharding needs the workers registered");
    }
    // A coordinated job's tasks are fixed at creation: made with no worker it would have
    // none, ever. Unavailable: the client retries until one registers.
    if (req.num_consumers() > 0 && !HasLiveWorker()) {
      return UnavailableError(
          "dispatcher: coordinated reads (num_consumers > 0) need a registered worker");
    }
    Update u;
    auto* c = u.mutable_create_job();
    c->set_job_id(state_.next_job_id());
    c->set_job_name(req.job_name());
    c->set_dataset_id(req.dataset_id());
    c->set_sharding_policy(req.sharding_policy());
    c->set_num_consumers(req.num_consumers());
    c->set_local_consumers(req.local_consumers());
    c->set_cross_trainer_cache(req.cross_trainer_cache());
    SLUICE_RETURN_IF_ERROR(Commit(u));
    job = state_.FindJob(c->job_id());
    SLUICE_RETURN_IF_ERROR(CreateTasksForJob(*job));
  }
  Update u;
  auto* a = u.mutable_add_client();
  a->set_job_id(job->id);
  a->set_client_id(state_.next_client_id());
  SLUICE_RETURN_IF_ERROR(Commit(u));
  client_seen_[a->client_id()] = {job->id, Now()};
  resp->set_job_id(job->id);
  resp->set_client_id(a->client_id());
  return Status::OK();
}

Status Dispatcher::ClientHeartbeat(const ClientHeartbeatRequest& req,
                                   ClientHeartbeatResponse* resp) {
  MutexLock l(&mu_);
  const auto* job = state_.FindJob(req.job_id());
  if (job == nullptr)
    return NotFoundError("dispatcher: unknown job " + std::to_string(req.job_id()));
  if (!job->clients.count(req.client_id())) {
    return NotFoundError("dispatcher: client " + std::to_string(req.client_id()) +
                         " is not in job " + std::to_string(req.job_id()) +
                         " (timed out or released)");
  }
  client_seen_[req.client_id()] = {job->id, Now()};
  advisor_.ReportClient(req.client_id(), Now(), req.wait_ns(), req.elements());
  for (int64_t id : job->tasks) {
    const auto& t = state_.tasks().at(id);
    if (t.lost) {
      resp->add_lost_task(id);
      continue;
    }
    auto* info = resp->add_task();
    info->set_task_id(id);
    info->set_worker_address(t.worker);
    info->set_worker_index(t.worker_index);
  }
  resp->set_job_finished(state_.JobFinished(*job));
  resp->set_lost_splits(job->lost_splits);
  return Status::OK();
}

Status Dispatcher::ReleaseJobClient(const ReleaseJobClientRequest& req,
                                    ReleaseJobClientResponse*) {
  MutexLock l(&mu_);
  const auto* job = state_.FindJob(req.job_id());
  if (job == nullptr || !job->clients.count(req.client_id())) return Status::OK();
  Update u;
  u.mutable_release_client()->set_job_id(req.job_id());
  u.mutable_release_client()->set_client_id(req.client_id());
  client_seen_.erase(req.client_id());
  advisor_.RemoveClient(req.client_id());
  return Commit(u);
}

Status Dispatcher::WorkerHeartbeat(const WorkerHeartbeatRequest& req,
                                   WorkerHeartbeatResponse* resp) {
  if (req.worker_address().empty() || req.worker_address().size() > 1024) {
    return InvalidArgumentError("dispatcher: worker address empty or over 1024 bytes");
  }
  MutexLock l(&mu_);
  const std::string& addr = req.worker_address();
  if (state_.FindWorker(addr) == nullptr) {
    Update u;
    u.mutable_register_worker()->set_worker_address(addr);
    u.mutable_register_worker()->set_worker_index(state_.num_workers_ever());
    SLUICE_RETURN_IF_ERROR(Commit(u));
    SLUICE_RETURN_IF_ERROR(CreateTasksForWorker(addr));
  }
  worker_seen_[addr] = Now();
  advisor_.ReportWorker(addr, Now(), req.cpu_ns(), req.elements(), req.cores());
  for (int64_t id : req.finished_task()) {
    const auto* t = state_.FindTask(id);
    if (t == nullptr || t->worker != addr || t->finished || t->lost) continue;
    Update u;
    u.mutable_finish_task()->set_task_id(id);
    SLUICE_RETURN_IF_ERROR(Commit(u));
  }
  std::set<int64_t> current(req.current_task().begin(), req.current_task().end());
  for (int64_t id : current) {
    const auto* t = state_.FindTask(id);
    if (t == nullptr || t->worker != addr || t->lost ||
        state_.FindJob(t->job_id)->released) {
      resp->add_removed_task(id);
    }
  }
  for (const auto& [id, t] : state_.tasks()) {
    if (t.worker != addr || t.finished || t.lost || current.count(id)) continue;
    const auto* job = state_.FindJob(t.job_id);
    if (job->released) continue;
    const auto* d = state_.FindDataset(job->dataset_id);
    TaskDef* def = resp->add_new_task();
    def->set_task_id(id);
    def->set_job_id(job->id);
    def->set_dataset_id(d->id);
    def->set_graph(d->graph);
    ProcessingMode p = job->policy;
    if (p == FILE_OR_DATA || p == HINT) p = d->file_source ? FILE : DATA;
    def->set_sharding_policy(p);
    def->set_worker_index(t.worker_index);
    def->set_num_workers(static_cast<int64_t>(job->tasks.size()));
    def->set_local_consumers(job->local_consumers);
    def->set_cross_trainer_cache(job->cross_trainer_cache);
    def->set_num_consumers(job->num_consumers);
  }
  resp->set_worker_index(state_.FindWorker(addr)->index);
  return Status::OK();
}

Status Dispatcher::GetSplits(const GetSplitsRequest& req, GetSplitsResponse* resp) {
  MutexLock l(&mu_);
  ++split_rpcs_;
  const auto* t = state_.FindTask(req.task_id());
  if (t == nullptr)
    return NotFoundError("dispatcher: unknown task " + std::to_string(req.task_id()));
  if (t->lost) {
    return FailedPreconditionError("dispatcher: task " + std::to_string(t->id) +
                                   " was lost (its worker timed out)");
  }
  const auto* job = state_.FindJob(t->job_id);
  if (job->policy != DYNAMIC) {
    return FailedPreconditionError("dispatcher: task " + std::to_string(t->id) +
                                   " is not DYNAMIC");
  }
  if (req.lease_index() < 0 || req.lease_index() > t->leases) {
    return InvalidArgumentError("dispatcher: task " + std::to_string(t->id) +
                                " has had " + std::to_string(t->leases) +
                                " leases, not " + std::to_string(req.lease_index()));
  }
  if (req.lease_index() < t->leases) {
    if (req.lease_index() != t->leases - 1) {
      return InvalidArgumentError("dispatcher: task " + std::to_string(t->id) +
                                  ": only the latest lease can be asked for again");
    }
    // The answer to this request was lost (a crash or a timeout): the same lease again.
    resp->set_begin(t->last_begin);
    resp->set_end(t->last_end);
    return Status::OK();
  }
  if (t->finished || job->released || !state_.SplitsLeft(*job)) {
    resp->set_end_of_splits(true);
    return Status::OK();
  }
  int64_t n = req.max_splits() > 0 ? req.max_splits() : config_.default_lease_splits;
  n = std::min(n, kMaxLeaseSplits);
  const int64_t total = state_.FindDataset(job->dataset_id)->num_splits;
  const int64_t begin = job->next_split;
  const int64_t end = begin + std::min(n, total - begin);
  Update u;
  u.mutable_lease_splits()->set_task_id(t->id);
  u.mutable_lease_splits()->set_begin(begin);
  u.mutable_lease_splits()->set_end(end);
  SLUICE_RETURN_IF_ERROR(Commit(u));
  resp->set_begin(begin);
  resp->set_end(end);
  return Status::OK();
}

Status Dispatcher::Tick() {
  MutexLock l(&mu_);
  if (!started_) return Status::OK();
  const int64_t now = Now();
  std::vector<std::string> dead;
  for (const auto& [addr, seen] : worker_seen_) {
    if (now - seen > config_.worker_timeout_ms) dead.push_back(addr);
  }
  for (const std::string& addr : dead) {
    worker_seen_.erase(addr);
    advisor_.RemoveWorker(addr);
    if (state_.FindWorker(addr) == nullptr) continue;
    Update u;
    u.mutable_remove_worker()->set_worker_address(addr);
    SLUICE_RETURN_IF_ERROR(Commit(u));
  }
  std::vector<std::pair<int64_t, int64_t>> gone;  // (job, client)
  for (const auto& [client, seen] : client_seen_) {
    if (now - seen.second > config_.client_timeout_ms)
      gone.push_back({seen.first, client});
  }
  for (const auto& [job, client] : gone) {
    client_seen_.erase(client);
    advisor_.RemoveClient(client);
    const auto* j = state_.FindJob(job);
    if (j == nullptr || !j->clients.count(client)) continue;
    Update u;
    u.mutable_release_client()->set_job_id(job);
    u.mutable_release_client()->set_client_id(client);
    SLUICE_RETURN_IF_ERROR(Commit(u));
  }
  return Status::OK();
}

WorkerAdvice Dispatcher::Advice() const {
  MutexLock l(&mu_);
  return advisor_.Advice(Now());
}

int64_t Dispatcher::split_rpcs() const {
  MutexLock l(&mu_);
  return split_rpcs_;
}

DispatcherState Dispatcher::StateForTest() const {
  MutexLock l(&mu_);
  return state_;
}

void Dispatcher::VisitState(const std::function<void(const DispatcherState&)>& f) const {
  MutexLock l(&mu_);
  f(state_);
}

}  // namespace sluice::service
