#include "runtime/iterator_base.h"

#include <algorithm>
#include <cstring>

#include "runtime/runtime.h"
#include "runtime/split_provider.h"

namespace sluice {

Runtime* IteratorContext::runtime() const {
  return runtime_ptr != nullptr ? runtime_ptr : Runtime::Default();
}

IteratorBase::IteratorBase(DatasetPtr node, std::string prefix)
    : node_(std::move(node)), prefix_(std::move(prefix)) {}

void IteratorDeleter::operator()(IteratorBase* it) const {
  it->DetachFromParent();
  delete it;
}

void IteratorBase::DetachFromParent() {
  if (parent_ != nullptr) {
    parent_->Unlink(this);
  } else {
    RetireTree();  // the root, or an iterator whose parent went first
  }
  parent_ = nullptr;
}

void IteratorBase::RetireTree() const {
  if (!retired_.exchange(true, std::memory_order_relaxed) && totals_ != nullptr) {
    IteratorStats row;
    FillCounters(&row);
    totals_->Retire(row);
  }
  MutexLock l(&children_mu_);
  for (const IteratorBase* c : children_) c->RetireTree();
}

IteratorBase::~IteratorBase() {
  DetachFromParent();
  MutexLock l(&children_mu_);
  for (IteratorBase* c : children_) c->parent_ = nullptr;
}

void IteratorBase::Link(IteratorBase* child) const {
  MutexLock l(&children_mu_);
  children_.push_back(child);
  child->parent_ = const_cast<IteratorBase*>(this);
}

void IteratorBase::Unlink(IteratorBase* child) const {
  MutexLock l(&children_mu_);
  // The child's own counts go to its node's totals; the parent keeps what its own row
  // needs (consumed counts, the inclusive CPU it subtracts).
  child->RetireTree();
  NodeStats& cs = child->stats_;
  stats_.dead_children_produced.fetch_add(cs.elements_produced.load(std::memory_order_relaxed),
                                          std::memory_order_relaxed);
  stats_.dead_children_bytes.fetch_add(cs.EstimatedBytesProduced(), std::memory_order_relaxed);
  stats_.dead_children_cpu_ns.fetch_add(cs.EstimatedInclusiveCpuNs(), std::memory_order_relaxed);
  children_.erase(std::remove(children_.begin(), children_.end(), child), children_.end());
}

Result<std::optional<Element>> IteratorBase::GetNextTimed() {
  const int64_t cpu0 = ThreadCpuNs();
  const int64_t wall0 = MonotonicNs();
  stats_.timed_call_start_ns.store(wall0, std::memory_order_relaxed);
  Result<std::optional<Element>> r = GetNextInternal();
  const int64_t wall1 = MonotonicNs();
  stats_.timed_call_start_ns.store(0, std::memory_order_relaxed);
  const int64_t cpu1 = ThreadCpuNs();
  stats_.RecordSample(cpu1 - cpu0, wall1 - wall0, r.ok() && r->has_value() ? &**r : nullptr);
  return r;
}

Result<std::optional<Element>> IteratorBase::GetNextSpanned() {
  Span span;
  span.node_id = node_id_;
  span.prefix = prefix_;
  span.op = node_->op();
  span.index = stats_.elements_produced.load(std::memory_order_relaxed);
  span.cache = &span_cache_;
  if (spans_->calls_begin()) spans_->Begin();
  span.start_ns = SpanClockNs();
  Result<std::optional<Element>> r =
      stats_.ShouldSample() ? GetNextTimed() : GetNextInternal();
  span.end_ns = SpanClockNs();
  span.produced = r.ok() && r->has_value();
  span.error = !r.ok();
  spans_->Record(span);
  return r;
}

void IteratorBase::Cancel() {
  // Set before walking the children: MakeChild links a child, then cancels it if this
  // flag is set, so a child made concurrently is reached one way or the other.
  cancelled_.store(true, std::memory_order_seq_cst);
  MutexLock l(&children_mu_);
  for (IteratorBase* c : children_) c->Cancel();
}

Status IteratorBase::CancelledStatus() const {
  return AddContext(CancelledError("iterator cancelled"));
}

Result<int64_t> IteratorBase::Skip(int64_t n) {
  if (n <= 0) return int64_t{0};
  if (cancelled()) return CancelledStatus();
  auto r = SkipInternal(n);
  if (!r.ok()) return AddContext(r.status());
  return r;
}

Result<int64_t> IteratorBase::SkipInternal(int64_t n) {
  int64_t done = 0;
  while (done < n) {
    SLUICE_RETURN_IF_ERROR(CheckCancelled());
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

Result<IteratorPtr> IteratorBase::MakeChild(const DatasetPtr& node,
                                                              const IteratorContext& ctx,
                                                              const std::string& label) const {
  std::string p = prefix_;
  p += '/';
  p += node->op();
  p += '[';
  p += label;
  p += ']';
  SLUICE_ASSIGN_OR_RETURN(IteratorPtr it, node->MakeIterator(ctx, p, node_->op()));
  Link(it.get());
  if (cancelled_.load(std::memory_order_seq_cst)) it->Cancel();
  return it;
}

Result<IteratorPtr> IteratorBase::MakeInput(const IteratorContext& ctx,
                                                              size_t i) const {
  return MakeChild(node_->input(i), ctx, std::to_string(i));
}

void IteratorBase::FillCounters(IteratorStats* s) const {
  const auto get = [](const std::atomic<int64_t>& a) { return a.load(std::memory_order_relaxed); };
  s->elements_produced = get(stats_.elements_produced);
  s->elements_skipped = get(stats_.elements_skipped);
  // The estimate counts a call in progress at the mean; one stalled past it adds the rest.
  s->wall_ns = stats_.EstimatedWallNs() + stats_.InflightExcessWallNs(MonotonicNs());
  s->bytes_produced = stats_.EstimatedBytesProduced();
  s->file_bytes_read = get(stats_.file_bytes_read);
  int64_t consumed = get(stats_.dead_children_produced);
  int64_t bytes_in = get(stats_.dead_children_bytes);
  int64_t children_cpu = get(stats_.dead_children_cpu_ns);
  {
    MutexLock l(&children_mu_);
    for (const IteratorBase* c : children_) {
      consumed += get(c->stats_.elements_produced);
      bytes_in += c->stats_.EstimatedBytesProduced();
      children_cpu += c->stats_.EstimatedInclusiveCpuNs();
    }
  }
  s->elements_consumed = consumed;
  s->bytes_consumed = bytes_in;
  int64_t cpu = stats_.EstimatedInclusiveCpuNs() - (async() ? 0 : children_cpu);
  s->cpu_ns = std::max<int64_t>(cpu, 0) + stats_.EstimatedTaskCpuNs();
}

void IteratorBase::CollectStats(std::vector<IteratorStats>* out, int parent) const {
  std::unordered_set<int64_t> seen;
  CollectStats(out, parent, &seen);
}

void IteratorBase::CollectStats(std::vector<IteratorStats>* out, int parent,
                                std::unordered_set<int64_t>* seen) const {
  const int self = static_cast<int>(out->size());
  {
    IteratorStats s;
    s.name = node_->op();
    s.prefix = prefix_;
    s.node_id = node_id_;
    s.cardinality = node_->Cardinality();
    s.static_bytes_per_element = StaticElementBytes(node_->element_spec());
    s.parent = parent;
    s.async = async();
    const auto get = [](const std::atomic<int64_t>& a) { return a.load(std::memory_order_relaxed); };
    s.buffered_bytes = get(stats_.buffered_bytes);
    s.buffered_elements = get(stats_.buffered_elements);
    s.buffer_limit = get(stats_.buffer_limit);
    s.parallelism = get(stats_.parallelism);
    FillCounters(&s);
    // Read under the parent's child-list lock (the caller's), as iterators retire.
    if (totals_ != nullptr && seen->insert(node_id_).second) totals_->AddTo(&s);
    out->push_back(std::move(s));
  }
  MutexLock l(&children_mu_);
  for (const IteratorBase* c : children_) c->CollectStats(out, self, seen);
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

Status IndexedIterator::Initialize(const IteratorContext& ctx) {
  splits_ = ctx.split_provider;
  return InitializeRows(ctx);
}

Result<std::optional<Element>> IndexedIterator::GetNextInternal() {
  if (next_ >= num_rows()) return std::nullopt;
  int64_t i = next_;
  if (splits_ != nullptr) {
    SLUICE_ASSIGN_OR_RETURN(std::optional<Tensor> split, splits_->GetNext());
    if (!split) {
      End();
      return std::nullopt;
    }
    SLUICE_ASSIGN_OR_RETURN(i, SplitRowIndex(*split, num_rows(), node().op()));
  } else {
    ++next_;
  }
  Result<Element> row = Row(i);
  if (!row.ok()) return row.status();
  return std::move(row).value();
}

Result<Element> IndexedIterator::GetRow(int64_t i) {
  if (i < 0 || i >= num_rows()) {
    return AddContext(OutOfRangeError("row " + std::to_string(i) + " of " +
                                      std::to_string(num_rows()) + Where()));
  }
  Result<Element> row = Row(i);
  if (!row.ok()) return AddContext(row.status());
  stats().CountProduced();  // rows served by index count as produced, as GetNext's do
  return row;
}

namespace {

// Row rows[k] of `all` ([N, ...], numeric, in memory) as row k of a new [n, ...] tensor.
// The rows are random reads (a permutation's): the lines of the row kAhead rows on are
// prefetched while this one is copied.
Result<Tensor> GatherTensorRows(const Tensor& all, std::span<const int64_t> rows) {
  constexpr size_t kAhead = 4;
  constexpr size_t kLine = 64;
  Shape shape = all.shape();
  const int64_t total = shape.dim(0);
  shape.set_dim(0, static_cast<int64_t>(rows.size()));
  SLUICE_ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(all.dtype(), std::move(shape)));
  const size_t row_bytes = total > 0 ? all.nbytes() / static_cast<size_t>(total) : 0;
  const auto* src = static_cast<const unsigned char*>(all.raw_data());
  auto* dst = out.mutable_data<unsigned char>();
  const size_t n = rows.size();
  switch (row_bytes) {  // scalars (labels, ids): a typed load and store, no memcpy call
    case 1:
      for (size_t k = 0; k < n; ++k) dst[k] = src[rows[k]];
      return out;
    case 4:
      for (size_t k = 0; k < n; ++k) std::memcpy(dst + 4 * k, src + 4 * rows[k], 4);
      return out;
    case 8:
      for (size_t k = 0; k < n; ++k) std::memcpy(dst + 8 * k, src + 8 * rows[k], 8);
      return out;
    default:
      break;
  }
  for (size_t k = 0; k < n; ++k) {
    if (k + kAhead < n) {
      const unsigned char* ahead = src + static_cast<size_t>(rows[k + kAhead]) * row_bytes;
      for (size_t b = 0; b < row_bytes; b += kLine) __builtin_prefetch(ahead + b);
    }
    std::memcpy(dst + k * row_bytes, src + static_cast<size_t>(rows[k]) * row_bytes,
                row_bytes);
  }
  return out;
}

}  // namespace

Result<Element> IndexedIterator::GatherRows(std::span<const int64_t> rows) {
  const Element* all = MemoryRows();
  if (all == nullptr) return RandomAccess::GatherRows(rows);
  std::vector<Tensor> out;
  out.reserve(all->size());
  for (const Tensor& t : all->tensors()) {
    Result<Tensor> c = GatherTensorRows(t, rows);
    if (!c.ok()) return AddContext(c.status());
    out.push_back(std::move(c).value());
  }
  stats().CountProduced(static_cast<int64_t>(rows.size()));
  return Element(std::move(out), all->names());
}

int64_t IndexedIterator::TakeRows(int64_t n, int64_t* out) {
  const int64_t k = std::max<int64_t>(0, std::min(n, num_rows() - next_));
  for (int64_t j = 0; j < k; ++j) out[j] = next_ + j;
  next_ += k;
  return k;
}

Result<int64_t> IndexedIterator::SkipInternal(int64_t n) {
  if (splits_ != nullptr) {
    int64_t done = 0;
    while (done < n && next_ < num_rows()) {
      SLUICE_ASSIGN_OR_RETURN(std::optional<Tensor> split, splits_->GetNext());
      if (!split) {
        End();
        break;
      }
      SLUICE_RETURN_IF_ERROR(SplitRowIndex(*split, num_rows(), node().op()).status());
      ++done;
    }
    return done;
  }
  const int64_t k = std::min(n, num_rows() - next_);
  next_ += k;
  return k;
}

Status IndexedIterator::SaveInternal(CheckpointWriter* w) const {
  w->WriteInt(prefix(), "next", next_);
  if (splits_ != nullptr) splits_->MarkCheckpoint();
  return Status::OK();
}

Status IndexedIterator::RestoreInternal(const CheckpointReader& r) {
  SLUICE_ASSIGN_OR_RETURN(int64_t next, r.ReadInt(prefix(), "next"));
  if (next < 0 || next > num_rows()) {
    return DataLossError(node().op() + ": checkpoint position " + std::to_string(next) +
                         " is outside [0, " + std::to_string(num_rows()) + "]" + Where());
  }
  if (splits_ != nullptr && next != 0 && next != num_rows()) {
    return DataLossError(node().op() + ": checkpoint position " + std::to_string(next) +
                         " was not taken with a split provider" + Where());
  }
  next_ = next;
  return Status::OK();
}

}  // namespace sluice
