#include "runtime/split_provider.h"

#include "sluice/dataset.h"

namespace sluice {

namespace {
// Upper bound on the returned splits a checkpoint may claim (each is a stored tensor, so
// a genuine count is far below; this only stops a corrupt count from sizing anything).
constexpr int64_t kMaxReturned = int64_t{1} << 40;

Status CheckPosition(const std::string& who, int64_t next, int64_t n) {
  if (next < 0 || next > n) {
    return DataLossError(who + ": checkpoint position " + std::to_string(next) +
                         " is outside [0, " + std::to_string(n) + "]");
  }
  return Status::OK();
}
}  // namespace

SplitProvider::~SplitProvider() = default;

Result<std::optional<Tensor>> SplitProvider::GetNext() { return Take(nullptr); }

Result<std::optional<Tensor>> SplitProvider::Take(const SplitConsumer* consumer) {
  MutexLock l(&mu_);
  std::optional<Tensor> split;
  if (!returned_.empty()) {
    split = std::move(returned_.front());
    returned_.pop_front();
  } else {
    SLUICE_ASSIGN_OR_RETURN(split, GetNextLocked());
  }
  if (split && consumer != nullptr) {
    auto it = taken_.find(consumer);
    if (it != taken_.end() && it->second) it->second->push_back(*split);
  }
  return split;
}

Status SplitProvider::Reset() {
  MutexLock l(&mu_);
  returned_.clear();
  for (auto& [c, log] : taken_) {
    if (log) log->clear();
  }
  return ResetLocked();
}

Status SplitProvider::Save(CheckpointWriter* w, std::string_view prefix) const {
  MutexLock l(&mu_);
  int64_t n = 0;
  auto put = [&](const Tensor& t) {
    w->WriteTensor(prefix, "returned" + std::to_string(n++), t);
  };
  for (const Tensor& t : returned_) put(t);
  for (const auto& [c, log] : taken_) {
    if (log) {
      for (const Tensor& t : *log) put(t);
    }
  }
  w->WriteInt(prefix, "returned", n);
  return SaveLocked(w, prefix);
}

Status SplitProvider::Restore(const CheckpointReader& r, std::string_view prefix) {
  MutexLock l(&mu_);
  SLUICE_ASSIGN_OR_RETURN(int64_t n, r.ReadInt(prefix, "returned"));
  if (n < 0 || n > kMaxReturned) {
    return DataLossError(name() + ": checkpoint holds " + std::to_string(n) +
                         " returned splits");
  }
  std::deque<Tensor> returned;
  for (int64_t i = 0; i < n; ++i) {
    SLUICE_ASSIGN_OR_RETURN(Tensor t,
                            r.ReadTensor(prefix, "returned" + std::to_string(i)));
    returned.push_back(std::move(t));
  }
  SLUICE_RETURN_IF_ERROR(RestoreLocked(r, prefix));
  returned_ = std::move(returned);
  for (auto& [c, log] : taken_) log.reset();
  return Status::OK();
}

void SplitProvider::Register(const SplitConsumer* c) {
  MutexLock l(&mu_);
  taken_[c];
}

void SplitProvider::Unregister(const SplitConsumer* c) {
  MutexLock l(&mu_);
  taken_.erase(c);
}

void SplitProvider::Mark(const SplitConsumer* c) {
  MutexLock l(&mu_);
  auto it = taken_.find(c);
  if (it == taken_.end()) return;
  if (it->second) {
    it->second->clear();
  } else {
    it->second.emplace();
  }
}

// ---- IndexSplitProvider ----

Result<std::optional<Tensor>> IndexSplitProvider::GetNextLocked() {
  if (next_ >= n_) return std::optional<Tensor>();
  return std::optional<Tensor>(Tensor::Scalar<int64_t>(next_++));
}

Status IndexSplitProvider::ResetLocked() {
  next_ = 0;
  return Status::OK();
}

Status IndexSplitProvider::SaveLocked(CheckpointWriter* w,
                                      std::string_view prefix) const {
  w->WriteInt(prefix, "next", next_);
  return Status::OK();
}

Status IndexSplitProvider::RestoreLocked(const CheckpointReader& r,
                                         std::string_view prefix) {
  SLUICE_ASSIGN_OR_RETURN(int64_t next, r.ReadInt(prefix, "next"));
  SLUICE_RETURN_IF_ERROR(CheckPosition(name(), next, n_));
  next_ = next;
  return Status::OK();
}

// ---- ListSplitProvider ----

Result<std::optional<Tensor>> ListSplitProvider::GetNextLocked() {
  if (next_ >= static_cast<int64_t>(items_.size())) return std::optional<Tensor>();
  return std::optional<Tensor>(Tensor::Scalar(items_[next_++]));
}

Status ListSplitProvider::ResetLocked() {
  next_ = 0;
  return Status::OK();
}

Status ListSplitProvider::SaveLocked(CheckpointWriter* w, std::string_view prefix) const {
  w->WriteInt(prefix, "next", next_);
  return Status::OK();
}

Status ListSplitProvider::RestoreLocked(const CheckpointReader& r,
                                        std::string_view prefix) {
  SLUICE_ASSIGN_OR_RETURN(int64_t next, r.ReadInt(prefix, "next"));
  SLUICE_RETURN_IF_ERROR(
      CheckPosition(name(), next, static_cast<int64_t>(items_.size())));
  next_ = next;
  return Status::OK();
}

// ---- ShardingSplitProvider ----

Result<std::shared_ptr<ShardingSplitProvider>> ShardingSplitProvider::Make(
    int64_t num_shards, int64_t index, std::shared_ptr<SplitProvider> inner) {
  if (num_shards < 1 || index < 0 || index >= num_shards) {
    return InvalidArgumentError("ShardingSplitProvider: index " + std::to_string(index) +
                                " is not in [0, num_shards " +
                                std::to_string(num_shards) + ")");
  }
  if (inner == nullptr)
    return InvalidArgumentError("ShardingSplitProvider: no inner provider");
  return std::shared_ptr<ShardingSplitProvider>(
      new ShardingSplitProvider(num_shards, index, std::move(inner)));
}

int64_t ShardingSplitProvider::Cardinality() const {
  const int64_t c = inner_->Cardinality();
  if (c < 0) return c;
  return c > index_ ? (c - index_ + num_shards_ - 1) / num_shards_ : 0;
}

Result<std::optional<Tensor>> ShardingSplitProvider::GetNextLocked() {
  while (true) {
    SLUICE_ASSIGN_OR_RETURN(std::optional<Tensor> split, inner_->GetNext());
    if (!split) return split;
    if (seen_++ % num_shards_ == index_) return split;
  }
}

Status ShardingSplitProvider::ResetLocked() {
  seen_ = 0;
  return inner_->Reset();
}

Status ShardingSplitProvider::SaveLocked(CheckpointWriter* w,
                                         std::string_view prefix) const {
  w->WriteInt(prefix, "seen", seen_);
  return inner_->Save(w, std::string(prefix) + "/inner");
}

Status ShardingSplitProvider::RestoreLocked(const CheckpointReader& r,
                                            std::string_view prefix) {
  SLUICE_ASSIGN_OR_RETURN(int64_t seen, r.ReadInt(prefix, "seen"));
  if (seen < 0) return DataLossError(name() + ": negative position in checkpoint");
  SLUICE_RETURN_IF_ERROR(inner_->Restore(r, std::string(prefix) + "/inner"));
  seen_ = seen;
  return Status::OK();
}

// ---- SplitConsumer ----

SplitConsumer::SplitConsumer(std::shared_ptr<SplitProvider> shared)
    : shared_(std::move(shared)) {
  shared_->Register(this);
}

SplitConsumer::~SplitConsumer() { shared_->Unregister(this); }

// ---- helpers ----

Result<int64_t> SplitRowIndex(const Tensor& split, int64_t num_rows,
                              std::string_view op) {
  if (split.dtype() != DType::kInt64 || split.rank() != 0) {
    return InvalidArgumentError(std::string(op) +
                                ": a split must be an int64 scalar row index, got " +
                                split.DebugString());
  }
  const int64_t i = split.scalar<int64_t>();
  if (i < 0 || i >= num_rows) {
    return InvalidArgumentError(std::string(op) + ": split " + std::to_string(i) +
                                " is not in [0, " + std::to_string(num_rows) +
                                "), the source's splits");
  }
  return i;
}

Result<std::string> SaveSplitProvider(const SplitProvider& provider) {
  CheckpointWriter w;
  SLUICE_RETURN_IF_ERROR(provider.Save(&w, "splits"));
  return w.Serialize();
}

Status RestoreSplitProvider(SplitProvider* provider, std::string_view checkpoint) {
  SLUICE_ASSIGN_OR_RETURN(CheckpointReader r, CheckpointReader::Parse(checkpoint));
  return provider->Restore(r, "splits");
}

}  // namespace sluice
