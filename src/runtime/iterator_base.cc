#include "runtime/iterator_base.h"

#include <algorithm>

namespace sluice {

IteratorBase::IteratorBase(DatasetPtr node, std::string prefix)
    : node_(std::move(node)), prefix_(std::move(prefix)) {}

IteratorBase::~IteratorBase() {
  if (parent_ != nullptr) parent_->Unlink(this);
  std::lock_guard<std::mutex> l(children_mu_);
  for (IteratorBase* c : children_) c->parent_ = nullptr;
}

void IteratorBase::Link(IteratorBase* child) const {
  std::lock_guard<std::mutex> l(children_mu_);
  children_.push_back(child);
  child->parent_ = const_cast<IteratorBase*>(this);
}

void IteratorBase::Unlink(IteratorBase* child) const {
  std::lock_guard<std::mutex> l(children_mu_);
  children_.erase(std::remove(children_.begin(), children_.end(), child), children_.end());
}

Result<int64_t> IteratorBase::Skip(int64_t n) {
  if (n <= 0) return int64_t{0};
  auto r = SkipInternal(n);
  if (!r.ok()) return AddContext(r.status());
  return r;
}

Result<int64_t> IteratorBase::SkipInternal(int64_t n) {
  int64_t done = 0;
  while (done < n) {
    SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, GetNextInternal());
    if (!e) break;
    ++done;
  }
  return done;
}

Status IteratorBase::Save(CheckpointWriter* w) const {
  Status s = SaveInternal(w);
  return s.ok() ? s : AddContext(s);
}

Status IteratorBase::Restore(const CheckpointReader& r) {
  Status s = RestoreInternal(r);
  return s.ok() ? s : AddContext(s);
}

Status IteratorBase::AddContext(const Status& s) const {
  // Errors carry the innermost op that saw them; outer ops do not re-prefix.
  if (s.message().rfind("[op ", 0) == 0) return s;
  // Child prefixes name their op ("Root/Batch[0]/Map[0]"); the root's is just "Root".
  if (parent_ == nullptr && prefix_.find('/') == std::string::npos) {
    return s.WithContext("[op " + prefix_ + "(" + node_->op() + ")]");
  }
  return s.WithContext("[op " + prefix_ + "]");
}

Result<std::unique_ptr<IteratorBase>> IteratorBase::MakeChild(const DatasetPtr& node,
                                                              const IteratorContext& ctx,
                                                              const std::string& label) const {
  std::string p = prefix_;
  p += '/';
  p += node->op();
  p += '[';
  p += label;
  p += ']';
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<IteratorBase> it, node->MakeIterator(ctx, p));
  Link(it.get());
  return it;
}

Result<std::unique_ptr<IteratorBase>> IteratorBase::MakeInput(const IteratorContext& ctx,
                                                              size_t i) const {
  return MakeChild(node_->input(i), ctx, std::to_string(i));
}

void IteratorBase::CollectStats(std::vector<IteratorStats>* out) const {
  IteratorStats s;
  s.name = node_->op();
  s.prefix = prefix_;
  s.elements_produced = stats_.elements_produced.load(std::memory_order_relaxed);
  s.elements_skipped = stats_.elements_skipped.load(std::memory_order_relaxed);
  out->push_back(std::move(s));
  std::lock_guard<std::mutex> l(children_mu_);
  for (const IteratorBase* c : children_) c->CollectStats(out);
}

Status UnaryIterator::Initialize(const IteratorContext& ctx) {
  ctx_ = ctx;
  SLUICE_ASSIGN_OR_RETURN(input_, MakeInput(ctx));
  return InitializeState(ctx);
}

Status UnaryIterator::SaveInternal(CheckpointWriter* w) const {
  SLUICE_RETURN_IF_ERROR(SaveState(w));
  return input_->Save(w);
}

Status UnaryIterator::RestoreInternal(const CheckpointReader& r) {
  SLUICE_RETURN_IF_ERROR(RestoreState(r));
  return input_->Restore(r);
}

Result<std::optional<Element>> IndexedIterator::GetNextInternal() {
  if (next_ >= num_rows()) return std::nullopt;
  Result<Element> row = Row(next_++);
  if (!row.ok()) return row.status();
  return std::move(row).value();
}

Result<int64_t> IndexedIterator::SkipInternal(int64_t n) {
  const int64_t k = std::min(n, num_rows() - next_);
  next_ += k;
  return k;
}

Status IndexedIterator::SaveInternal(CheckpointWriter* w) const {
  w->WriteInt(prefix(), "next", next_);
  return Status::OK();
}

Status IndexedIterator::RestoreInternal(const CheckpointReader& r) {
  SLUICE_ASSIGN_OR_RETURN(int64_t next, r.ReadInt(prefix(), "next"));
  if (next < 0 || next > num_rows()) {
    return DataLossError(node().op() + ": checkpoint position " + std::to_string(next) +
                         " is outside [0, " + std::to_string(num_rows()) + "]" + Where());
  }
  next_ = next;
  return Status::OK();
}

}  // namespace sluice
