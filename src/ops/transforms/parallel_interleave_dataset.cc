// ParallelInterleave (tf.data ParallelInterleaveDatasetV4): the interleave of
// interleave_dataset.cc with the inner datasets read ahead by worker threads.
//
// Contract.
//  * Each input element becomes a dataset through the dataset function, called with
//    FunctionContext(seed, input position); its iterator is made with MakeChild under
//    ctx.Mixed(position), labelled "in<position>" (so inner randomness is the sequential
//    op's). cycle_length inputs are interleaved, block_length elements from each in turn.
//    cycle_length kAutotune is the runtime's CPU budget.
//  * Deterministic mode (deterministic attr, else Options::deterministic) yields
//    exactly the sequential Interleave's sequence for the same cycle_length/block_length,
//    errors included: an input error or a dataset function error consumes that input
//    element, is returned once, and leaves the cycle slot empty for the next input (the
//    block does not advance); an inner iterator's error is returned in its place in the
//    stream and does not count towards the block.
//  * Non-deterministic mode yields the same multiset: the consumer takes from the first
//    cycle element, starting at the current one, that has something buffered, so a slow
//    input does not hold the others back.
//
// Mechanism.
//  * `num_parallel_calls` worker threads of this iterator ("sluice-interleave"), at most
//    cycle_length + the number of future inputs, and kMaxWorkers. They never run on the
//    pipeline's pool: they call GetNext (executor.h). With kAutotune as many threads are
//    started as the CPU budget allows, but only `parallelism` of them run jobs at once
//    (the rest wait); it starts at Runtime::initial_parallelism() and, when the runtime
//    tunes, is the knob "parallelism" (runtime/tunable.h), read on every job pick, so a
//    change takes effect at the next job. The per-input buffer is not tuned (it is part
//    of the checkpoint's validation).
//  * Jobs: pull the next input element (one worker at a time calls input_->GetNext), open
//    a pulled element (dataset function + MakeChild), fetch one element from an open
//    inner iterator into its buffer (one worker per inner iterator at a time).
//  * Up to cycle_length future inputs (at most kMaxFutures, so a huge cycle_length over
//    an endless input stays bounded) are pulled and opened ahead of the cycle and their
//    first elements fetched, so slow opens (files) overlap with the consumer's work.
//  * Each input buffers at most max(block_length, 2) elements (or errors): a whole block
//    is ready when the consumer gets there and the next element is fetched while the
//    consumer takes the previous one. buffer_limit = (cycle_length + futures) * that.
//  * Workers pick jobs in the order the consumer will need them: the current cycle slot
//    (or the future that will fill it), the other slots in cycle order, the remaining
//    futures, then a new input pull (placed where the futures run out).
//
// Memory budget (memory_budget.h). A fetch reserves the element estimate first (exact for
// a statically shaped spec, else the largest element seen; before the first element is
// seen at most num_workers elements are buffered or in flight under a limited budget);
// the worker holds a FetchScope around the inner GetNext and adds TakeTransferred() to
// the charge; the element is charged exactly on arrival and released (or transferred to a
// downstream fetch) when the consumer takes it. Fetches that are not for the consumer's
// next need (the input it reads next, or in non-deterministic mode any cycle input with
// an empty buffer) leave one element of headroom free, so the input the consumer waits
// for can always reserve: with this the only buffering op and a static spec, usage never
// exceeds the limit. Urgent demand (the consumer waits on an empty input and the budget
// is full) fetches unreserved and is charged on arrival; it happens only when other
// operators hold the budget, and then exceeds the limit by at most one element (one
// urgent fetch at a time).
//
// Cancellation. Cancel sets a flag, wakes every wait (a blocked GetNext returns
// Cancelled) and cancels the children (the input and the inner iterators). The destructor
// cancels, joins the workers (a user function already running is waited for), then frees
// the rest.
//
// Checkpoints. Save pauses the workers and waits until none is inside a job, then writes
// the input position and end flag, cycle/block indices, and for each cycle slot and
// future input its input element, position, state (unopened, open, open failed, ended),
// buffered elements and errors, and the inner iterator's state; then the input's. Restore
// (before the first GetNext; workers start lazily) re-opens the inner iterators with the
// same ctx and label and restores them; every count and index read is validated (DataLoss
// on nonsense).
//
// Thread-safety: GetNext/Save/Restore from one thread at a time (IteratorBase contract);
// Cancel and stats from any thread. Shared state is GUARDED_BY(mu_). Inner iterators and
// the input are called only by the one worker that marked them busy, outside mu_;
// finished inner iterators are destroyed outside mu_ (they may be asynchronous
// themselves).
#include <algorithm>
#include <chrono>
#include <deque>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <system_error>
#include <thread>
#include <vector>

#include "core/mutex.h"
#include "graph/attr.h"
#include "graph/dataset_access.h"
#include "ops/op_util.h"
#include "ops/ops.h"
#include "runtime/async_buffer.h"
#include "runtime/iterator_base.h"
#include "runtime/runtime.h"

namespace sluice {
namespace {

constexpr char kOp[] = "ParallelInterleave";
// Workers poll this often while the memory budget is full (other operators' releases do
// not wake them).
constexpr auto kBudgetRetry = std::chrono::milliseconds(2);
// Upper bounds on worker threads (whatever num_parallel_calls says) and on inputs opened
// ahead of the cycle (whatever cycle_length says).
constexpr int64_t kMaxWorkers = 256;
constexpr int64_t kMaxFutures = 256;
// Minimum elements buffered per input (see the contract).
constexpr int64_t kMinBufferPerInput = 2;

int64_t SatAdd(int64_t a, int64_t b) {
  return a > std::numeric_limits<int64_t>::max() - b ? std::numeric_limits<int64_t>::max()
                                                     : a + b;
}
int64_t SatMul(int64_t a, int64_t b) {
  return b != 0 && a > std::numeric_limits<int64_t>::max() / b
             ? std::numeric_limits<int64_t>::max()
             : a * b;
}
bool ValidErrorCode(int64_t code) {
  return code > 0 && code <= static_cast<int64_t>(StatusCode::kUnauthenticated);
}

class ParallelInterleaveDataset : public DatasetNode {
 public:
  ParallelInterleaveDataset(OpArgs args, ElementSpec spec, int64_t cycle_length,
                            int64_t block_length, uint64_t seed, ParallelAttrs p)
      : DatasetNode(kOp, std::move(args), std::move(spec)),
        cycle_length_(cycle_length),
        block_length_(block_length),
        seed_(seed),
        p_(p) {}

  // Like the sequential interleave: unknown unless the input is empty.
  // As tf.data: an endless input makes an endless op; else unknown (0 when empty).
  int64_t Cardinality() const override {
    const int64_t n = input(0)->Cardinality();
    return n == 0 || n == kInfiniteCardinality ? n : kUnknownCardinality;
  }
  const Function& fn() const { return functions()[0]; }
  int64_t cycle_length() const { return cycle_length_; }  // may be kAutotune
  int64_t block_length() const { return block_length_; }
  uint64_t seed() const { return seed_; }
  const ParallelAttrs& parallel() const { return p_; }

 protected:
  Result<IteratorPtr> MakeIteratorInternal(const IteratorContext& ctx,
                                           const std::string& prefix) const override;

 private:
  const int64_t cycle_length_, block_length_;
  const uint64_t seed_;
  const ParallelAttrs p_;
};

class ParallelInterleaveIterator : public IteratorBase {
 public:
  ParallelInterleaveIterator(const ParallelInterleaveDataset* ds,
                             const std::string& prefix)
      : IteratorBase(ds->shared(), prefix), ds_(ds) {}

  ~ParallelInterleaveIterator() override {
    parallelism_knob_.Reset();  // first: the tuner never calls the setter again
    Cancel();
    for (std::thread& t : workers_) t.join();
    std::vector<std::unique_ptr<Input>> dead;
    {
      MutexLock l(&mu_);
      DropAllLocked(&dead);
    }
    dead.clear();  // inner iterators (maybe asynchronous) die outside mu_
  }

  Status Initialize(const IteratorContext& ctx) override {
    ctx_ = ctx;
    runtime_ = ctx.runtime();
    deterministic_ = runtime_->Deterministic(ds_->parallel().deterministic);
    cycle_length_ = ds_->cycle_length() == kAutotune
                        ? std::max<int64_t>(1, runtime_->cpu_budget())
                        : ds_->cycle_length();
    block_length_ = ds_->block_length();
    buffer_per_input_ = std::max(block_length_, kMinBufferPerInput);
    max_futures_ = std::min(cycle_length_, kMaxFutures);
    const int64_t max_workers = std::min(SatAdd(cycle_length_, max_futures_), kMaxWorkers);
    const bool autotune = ds_->parallel().num_parallel_calls == kAutotune;
    int64_t limit = std::min(
        ResolveParallelism(ds_->parallel().num_parallel_calls, *runtime_), max_workers);
    num_workers_ =
        autotune ? std::min(std::max<int64_t>(1, runtime_->cpu_budget()), max_workers) : limit;
    if (autotune && runtime_->autotune()) {
      parallelism_knob_ = runtime_->tunables().Register(
          {prefix(), "parallelism", KnobKind::kParallelism, 1, num_workers_,
           [this](int64_t v) { SetParallelism(v); }, {}, node().op()},
          &limit);
    }
    worker_limit_.store(std::min(limit, num_workers_), std::memory_order_relaxed);
    {
      MutexLock l(&mu_);
      estimate_ = StaticElementBytes(node().element_spec());
    }
    RecordParallelism(worker_limit_.load(std::memory_order_relaxed));
    RecordBufferLimit(SatMul(SatAdd(cycle_length_, max_futures_), buffer_per_input_));
    SLUICE_ASSIGN_OR_RETURN(input_, MakeInput(ctx));
    return Status::OK();
  }

  void Cancel() override {
    {
      MutexLock l(&mu_);
      cancelled_ = true;
    }
    worker_cv_.SignalAll();
    consumer_cv_.SignalAll();
    idle_cv_.SignalAll();
    IteratorBase::Cancel();
  }

  bool async() const override { return true; }

  // Workers that may run jobs at once, in [1, num_workers_] (thread-safe).
  void SetParallelism(int64_t v) {
    worker_limit_.store(std::clamp<int64_t>(v, 1, num_workers_), std::memory_order_relaxed);
    RecordParallelism(worker_limit_.load(std::memory_order_relaxed));
    {
      MutexLock l(&mu_);
    }
    worker_cv_.SignalAll();
  }

 protected:
  Result<std::optional<Element>> GetNextInternal() override {
    MutexLock l(&mu_);
    if (cancelled_) return CancelledError(std::string(kOp) + ": iterator cancelled");
    if (!workers_started_) SLUICE_RETURN_IF_ERROR(StartWorkersLocked());
    Result<std::optional<Element>> r =
        deterministic_ ? NextInOrderLocked() : NextAnyLocked();
    PublishGaugesLocked();
    return r;
  }

  Status SaveInternal(CheckpointWriter* w) const override {
    MutexLock l(&mu_);
    paused_ = true;
    idle_cv_.Wait(&mu_,
                  [this]() REQUIRES(mu_) { return cancelled_ || active_jobs_ == 0; });
    Status st = SaveLocked(w);
    paused_ = false;
    worker_cv_.SignalAll();
    return st;
  }

  // SaveInternal's work once the workers are paused and idle.
  Status SaveLocked(CheckpointWriter* w) const REQUIRES(mu_) {
    if (cancelled_) return CancelledError(std::string(kOp) + ": iterator cancelled");
    // No worker is inside a job: the input and the inner iterators are quiescent.
    w->WriteInt(prefix(), "cycle_length", cycle_length_);
    w->WriteInt(prefix(), "block_length", block_length_);
    w->WriteInt(prefix(), "input_position", input_position_);
    w->WriteInt(prefix(), "input_end", input_end_ ? 1 : 0);
    w->WriteInt(prefix(), "cycle_index", cycle_index_);
    w->WriteInt(prefix(), "block_index", block_index_);
    w->WriteInt(prefix(), "num_slots", static_cast<int64_t>(cycle_.size()));
    for (size_t i = 0; i < cycle_.size(); ++i) {
      SLUICE_RETURN_IF_ERROR(
          SaveInputLocked(w, "slot" + std::to_string(i), cycle_[i].get()));
    }
    w->WriteInt(prefix(), "num_futures", static_cast<int64_t>(future_.size()));
    for (size_t i = 0; i < future_.size(); ++i) {
      SLUICE_RETURN_IF_ERROR(
          SaveInputLocked(w, "future" + std::to_string(i), future_[i].get()));
    }
    return input_->Save(w);
  }

  Status RestoreInternal(const CheckpointReader& r) override {
    {
      MutexLock l(&mu_);
      if (workers_started_) {
        return FailedPreconditionError(std::string(kOp) + ": Restore after GetNext");
      }
    }
    SLUICE_ASSIGN_OR_RETURN(int64_t cycle_length, r.ReadInt(prefix(), "cycle_length"));
    SLUICE_ASSIGN_OR_RETURN(int64_t block_length, r.ReadInt(prefix(), "block_length"));
    if (cycle_length != cycle_length_ || block_length != block_length_) {
      return FailedPreconditionError(
          std::string(kOp) + ": checkpoint was taken with cycle_length " +
          std::to_string(cycle_length) + ", block_length " +
          std::to_string(block_length) + "; this one has " +
          std::to_string(cycle_length_) + ", " + std::to_string(block_length_));
    }
    SLUICE_ASSIGN_OR_RETURN(int64_t input_position,
                            r.ReadInt(prefix(), "input_position"));
    SLUICE_ASSIGN_OR_RETURN(int64_t input_end, r.ReadInt(prefix(), "input_end"));
    SLUICE_ASSIGN_OR_RETURN(int64_t cycle_index, r.ReadInt(prefix(), "cycle_index"));
    SLUICE_ASSIGN_OR_RETURN(int64_t block_index, r.ReadInt(prefix(), "block_index"));
    SLUICE_ASSIGN_OR_RETURN(int64_t num_slots, r.ReadInt(prefix(), "num_slots"));
    SLUICE_ASSIGN_OR_RETURN(int64_t num_futures, r.ReadInt(prefix(), "num_futures"));
    if (input_position < 0 || (input_end != 0 && input_end != 1) || cycle_index < 0 ||
        cycle_index >= cycle_length_ || block_index < 0 || block_index >= block_length_ ||
        num_slots < 0 || num_slots > cycle_length_ || num_futures < 0 ||
        num_futures > max_futures_) {
      return DataLossError(
          std::string(kOp) + ": inconsistent checkpoint (input_position " +
          std::to_string(input_position) + ", input_end " + std::to_string(input_end) +
          ", cycle_index " + std::to_string(cycle_index) + ", block_index " +
          std::to_string(block_index) + ", num_slots " + std::to_string(num_slots) +
          ", num_futures " + std::to_string(num_futures) + ")");
    }
    std::set<int64_t> positions;
    std::vector<std::unique_ptr<Input>> slots(static_cast<size_t>(num_slots));
    for (int64_t i = 0; i < num_slots; ++i) {
      SLUICE_ASSIGN_OR_RETURN(
          slots[i], RestoreInput(r, "slot" + std::to_string(i),
                                 /*in_cycle=*/true, input_position, &positions));
    }
    std::deque<std::unique_ptr<Input>> futures;
    for (int64_t i = 0; i < num_futures; ++i) {
      SLUICE_ASSIGN_OR_RETURN(
          std::unique_ptr<Input> f,
          RestoreInput(r, "future" + std::to_string(i),
                       /*in_cycle=*/false, input_position, &positions));
      futures.push_back(std::move(f));
    }
    SLUICE_RETURN_IF_ERROR(input_->Restore(r));

    std::vector<std::unique_ptr<Input>> dead;
    {
      MutexLock l(&mu_);
      DropAllLocked(&dead);
      cycle_ = std::move(slots);
      future_ = std::move(futures);
      input_position_ = input_position;
      input_end_ = input_end != 0;
      cycle_index_ = cycle_index;
      block_index_ = block_index;
      num_open_ = 0;
      auto charge = [this](Input* x) REQUIRES(mu_) {
        for (Buffered& b : x->buffer) {
          if (b.charge > 0) runtime_->memory().ForceReserve(b.charge);
          buffered_bytes_ += b.charge;
          ++buffered_count_;
          if (b.status.ok()) estimate_ = std::max(estimate_, b.charge);
        }
      };
      for (const auto& x : cycle_) {
        if (x == nullptr) continue;
        ++num_open_;
        charge(x.get());
      }
      for (const auto& x : future_) charge(x.get());
      PublishGaugesLocked();
    }
    return Status::OK();
  }

 private:
  // One buffered inner result: an element (charged `charge` bytes) or an error.
  struct Buffered {
    Status status;
    Element element;
    int64_t charge = 0;
  };

  // An input of the interleave: a pulled input element and its inner iterator, or a
  // failed input pull (kInputError).
  struct Input {
    enum Kind { kElement, kInputError };
    Kind kind = kElement;
    int64_t position = -1;  // input position (kElement); immutable once created
    Element element;        // the input element; immutable once created
    // The rest is GUARDED_BY(mu_) of the iterator; `it` is called by the busy worker
    // only.
    Status error;         // kInputError: the input's error; else the open error
    bool opened = false;  // the dataset function ran (`it` or `error` is set)
    bool ended = false;   // the inner iterator reached its end (and was destroyed)
    bool busy = false;    // a worker is opening it or fetching from it
    IteratorPtr it;
    std::deque<Buffered> buffer;
  };

  // What a worker does next.
  struct Job {
    enum Kind { kNone, kPull, kOpen, kFetch };
    Kind kind = kNone;
    Input* input = nullptr;
    int64_t reserved = 0;  // bytes reserved for a fetch
  };

  Status StartWorkersLocked() REQUIRES(mu_) {
    try {
      while (static_cast<int64_t>(workers_.size()) < num_workers_) {
        workers_.emplace_back([this] { WorkerLoop(); });
      }
    } catch (const std::system_error& e) {
      if (workers_.empty()) {
        return ResourceExhaustedError(std::string(kOp) +
                                      ": cannot start worker threads: " + e.what());
      }
    }
    workers_started_ = true;
    return Status::OK();
  }

  // ---- Consumer side (mu_ held; WaitLocked drops it while waiting) ----

  // The sequential interleave's state machine, reading buffers instead of iterators.
  Result<std::optional<Element>> NextInOrderLocked() REQUIRES(mu_) {
    while (true) {
      if (cancelled_) return CancelledError(std::string(kOp) + ": iterator cancelled");
      Input* x = SlotLocked(cycle_index_);
      if (x != nullptr) {
        if (!x->buffer.empty()) {
          Buffered b = TakeLocked(x);
          if (!b.status.ok()) return b.status;  // the inner iterator moved on
          if (++block_index_ == block_length_) AdvanceInCycleLocked();
          return std::optional<Element>(std::move(b.element));
        }
        if (x->opened && !x->error.ok()) {
          // The function failed: the element is consumed, the slot takes the next input.
          Status s = x->error;
          ClearSlotLocked(cycle_index_);
          return s;
        }
        if (x->ended) {
          ClearSlotLocked(cycle_index_);
          AdvanceInCycleLocked();
          continue;
        }
        WaitLocked();
        continue;
      }
      if (!future_.empty()) {
        std::unique_ptr<Input> f = PopFutureLocked();
        if (f->kind == Input::kInputError) return f->error;
        PlaceLocked(cycle_index_, std::move(f));
        continue;
      }
      if (!input_end_) {
        WaitLocked();
        continue;
      }
      if (num_open_ == 0) return std::optional<Element>();
      AdvanceToNextLiveSlotLocked();
    }
  }

  // Non-deterministic: the first slot from the current one with something to return.
  Result<std::optional<Element>> NextAnyLocked() REQUIRES(mu_) {
    while (true) {
      if (cancelled_) return CancelledError(std::string(kOp) + ": iterator cancelled");
      SLUICE_RETURN_IF_ERROR(FillSlotsLocked());
      const int64_t n = static_cast<int64_t>(cycle_.size());
      const int64_t start = cycle_index_ < n ? cycle_index_ : 0;
      bool freed = false;
      for (int64_t k = 0; k < n; ++k) {
        const int64_t i = (start + k) % n;
        Input* x = cycle_[i].get();
        if (x == nullptr) continue;
        if (!x->buffer.empty()) {
          Buffered b = TakeLocked(x);
          if (i != cycle_index_) {
            cycle_index_ = i;
            block_index_ = 0;
          }
          if (!b.status.ok()) return b.status;
          if (++block_index_ == block_length_) AdvanceInCycleLocked();
          return std::optional<Element>(std::move(b.element));
        }
        if (x->opened && !x->error.ok()) {
          Status s = x->error;
          ClearSlotLocked(i);
          return s;
        }
        if (x->ended) {
          ClearSlotLocked(i);
          freed = true;
        }
      }
      if (freed) continue;  // refill the freed slots
      if (num_open_ == 0 && future_.empty() && input_end_) {
        return std::optional<Element>();
      }
      WaitLocked();
    }
  }

  // Non-deterministic: moves futures into empty slots, from the current slot on, growing
  // the cycle up to cycle_length. A failed input pull reached on the way is returned.
  Status FillSlotsLocked() REQUIRES(mu_) {
    const int64_t n = static_cast<int64_t>(cycle_.size());
    const int64_t start = cycle_index_ < n ? cycle_index_ : 0;
    for (int64_t k = 0; k < n && !future_.empty(); ++k) {
      const int64_t i = (start + k) % n;
      if (cycle_[i] != nullptr) continue;
      std::unique_ptr<Input> f = PopFutureLocked();
      if (f->kind == Input::kInputError) return f->error;
      PlaceLocked(i, std::move(f));
    }
    while (static_cast<int64_t>(cycle_.size()) < cycle_length_ && !future_.empty()) {
      std::unique_ptr<Input> f = PopFutureLocked();
      if (f->kind == Input::kInputError) return f->error;
      PlaceLocked(static_cast<int64_t>(cycle_.size()), std::move(f));
    }
    return Status::OK();
  }

  Input* SlotLocked(int64_t i) const REQUIRES(mu_) {
    return i < static_cast<int64_t>(cycle_.size()) ? cycle_[i].get() : nullptr;
  }

  std::unique_ptr<Input> PopFutureLocked() REQUIRES(mu_) {
    std::unique_ptr<Input> f = std::move(future_.front());
    future_.pop_front();
    worker_cv_.Signal();  // room for another future
    return f;
  }

  void PlaceLocked(int64_t i, std::unique_ptr<Input> x) REQUIRES(mu_) {
    if (static_cast<int64_t>(cycle_.size()) <= i) cycle_.resize(i + 1);
    cycle_[i] = std::move(x);
    ++num_open_;
  }

  // Only finished inputs are cleared (open failed, or ended with an empty buffer): their
  // inner iterator is already gone, so this never destroys an iterator under mu_.
  void ClearSlotLocked(int64_t i) REQUIRES(mu_) {
    cycle_[i].reset();
    --num_open_;
    worker_cv_.Signal();  // the consumer's needs moved
  }

  void AdvanceInCycleLocked() REQUIRES(mu_) {
    block_index_ = 0;
    cycle_index_ = (cycle_index_ + 1) % cycle_length_;
  }

  // With the input exhausted, empty slots are passed over (as the sequential op does).
  void AdvanceToNextLiveSlotLocked() REQUIRES(mu_) {
    const int64_t n = static_cast<int64_t>(cycle_.size());
    int64_t next = -1;
    for (int64_t i = cycle_index_ + 1; i < n && next < 0; ++i) {
      if (cycle_[i] != nullptr) next = i;
    }
    for (int64_t i = 0; i < n && next < 0; ++i) {
      if (cycle_[i] != nullptr) next = i;
    }
    block_index_ = 0;
    cycle_index_ = next < 0 ? 0 : next;
  }

  // Takes the oldest buffered result of `x`; its charge leaves the budget, or moves to
  // the fetch of a downstream buffer that is calling us.
  Buffered TakeLocked(Input* x) REQUIRES(mu_) {
    Buffered b = std::move(x->buffer.front());
    x->buffer.pop_front();
    if (b.charge > 0) {
      if (FetchScope* scope = FetchScope::Current()) {
        scope->AddTransferred(b.charge);
      } else {
        runtime_->memory().Release(b.charge);
      }
    }
    buffered_bytes_ -= b.charge;
    --buffered_count_;
    b.charge = 0;
    worker_cv_.Signal();  // room in x's buffer
    return b;
  }

  // Blocks until a worker delivers, telling the workers who waits (urgent demand, see
  // async_buffer.h). Callers re-check their state.
  void WaitLocked() REQUIRES(mu_) {
    FetchScope* scope = FetchScope::Current();
    const std::atomic<bool>* waiter =
        scope != nullptr && scope->reserved() ? scope->starving() : nullptr;
    if (waiter != nullptr) {
      reserved_waiters_.push_back(waiter);
    } else {
      ++waiting_unreserved_;
    }
    starving_.store(true, std::memory_order_relaxed);
    worker_cv_.Signal();
    consumer_cv_.Wait(&mu_);
    starving_.store(false, std::memory_order_relaxed);
    if (waiter != nullptr) {
      reserved_waiters_.erase(
          std::find(reserved_waiters_.begin(), reserved_waiters_.end(), waiter));
    } else {
      --waiting_unreserved_;
    }
  }

  bool ConsumerUrgentLocked() const REQUIRES(mu_) {
    if (waiting_unreserved_ > 0) return true;
    return std::any_of(
        reserved_waiters_.begin(), reserved_waiters_.end(),
        [](const std::atomic<bool>* f) { return f->load(std::memory_order_relaxed); });
  }

  // Deterministic: the input the consumer reads next (the current slot's, or the future
  // that will fill it), or null.
  Input* NeededLocked() const REQUIRES(mu_) {
    if (Input* x = SlotLocked(cycle_index_)) return x;
    return future_.empty() ? nullptr : future_.front().get();
  }

  void PublishGaugesLocked() REQUIRES(mu_) {
    RecordBuffered(buffered_bytes_, buffered_count_);
  }

  // ---- Workers ----

  void WorkerLoop() {
    SetCurrentThreadName("sluice-interleave");
    MutexLock l(&mu_);
    while (!cancelled_) {
      bool budget_blocked = false, more = false;
      const Job job = PickJobLocked(&budget_blocked, &more);
      if (job.kind == Job::kNone) {
        if (budget_blocked) {
          worker_cv_.WaitFor(&mu_, kBudgetRetry);
        } else if (FinishedLocked()) {
          break;
        } else {
          worker_cv_.Wait(&mu_);
        }
        continue;
      }
      if (more) worker_cv_.Signal();  // another job is waiting for a worker
      ++active_jobs_;
      switch (job.kind) {
        case Job::kPull:
          RunPullLocked();
          break;
        case Job::kOpen:
          RunOpenLocked(job.input);
          break;
        case Job::kFetch:
          RunFetchLocked(job.input, job.reserved);
          break;
        case Job::kNone:
          break;
      }
      --active_jobs_;
      idle_cv_.SignalAll();
    }
  }

  // Inputs in the order the consumer will need them; nullptr stands for pulling a new
  // input element. Returns how many leading entries are (or will fill) cycle slots.
  size_t NeedOrderLocked(std::vector<Input*>* order) const REQUIRES(mu_) {
    order->clear();
    size_t next_future = 0;
    bool pull_placed = false;
    auto add_future = [&]() REQUIRES(mu_) {
      if (next_future < future_.size()) {
        order->push_back(future_[next_future++].get());
      } else if (!pull_placed && !input_end_) {
        order->push_back(nullptr);
        pull_placed = true;
      }
    };
    const int64_t n = static_cast<int64_t>(cycle_.size());
    if (Input* x = SlotLocked(cycle_index_)) {
      order->push_back(x);
    } else {
      add_future();
    }
    const int64_t from = cycle_index_ < n ? cycle_index_ + 1 : 0;
    for (int64_t k = 0; k < n; ++k) {
      const int64_t i = (from + k) % n;
      if (i == cycle_index_) continue;
      if (cycle_[i] != nullptr) {
        order->push_back(cycle_[i].get());
      } else {
        add_future();
      }
    }
    const size_t in_cycle = order->size();
    while (next_future < future_.size()) order->push_back(future_[next_future++].get());
    if (!pull_placed && !input_end_) order->push_back(nullptr);
    return in_cycle;
  }

  // The first job in need order that can run now (a fetch must pass the memory budget;
  // its bytes are reserved here). *budget_blocked: a fetch waits for budget; *more: a
  // further job could run at once.
  Job PickJobLocked(bool* budget_blocked, bool* more) REQUIRES(mu_) {
    if (paused_ || cancelled_) return Job();
    if (active_jobs_ >= worker_limit_.load(std::memory_order_relaxed)) return Job();
    const size_t in_cycle = NeedOrderLocked(&order_);
    bool cycle_buffered = false, cycle_busy = false;
    if (!deterministic_) {
      for (size_t i = 0; i < in_cycle; ++i) {
        if (order_[i] == nullptr) continue;
        cycle_buffered |= !order_[i]->buffer.empty();
        cycle_busy |= order_[i]->busy;
      }
    }
    const bool consumer_waits = ConsumerUrgentLocked();
    Job job;
    for (size_t idx = 0; idx < order_.size(); ++idx) {
      Input* x = order_[idx];
      Job::Kind kind;
      if (x == nullptr) {
        if (input_busy_ || input_end_ ||
            static_cast<int64_t>(future_.size()) >= max_futures_) {
          continue;
        }
        kind = Job::kPull;
      } else if (x->busy || x->kind == Input::kInputError || x->ended ||
                 (x->opened && x->it == nullptr)) {
        continue;
      } else if (!x->opened) {
        kind = Job::kOpen;
      } else if (static_cast<int64_t>(x->buffer.size()) < buffer_per_input_) {
        kind = Job::kFetch;
      } else {
        continue;
      }
      if (job.kind != Job::kNone) {
        *more = true;
        break;
      }
      if (kind == Job::kFetch) {
        const bool priority =
            x->buffer.empty() && (deterministic_ ? idx == 0 : idx < in_cycle);
        const bool urgent = priority && consumer_waits &&
                            (deterministic_ || (!cycle_buffered && !cycle_busy));
        std::optional<int64_t> reserved = AdmitLocked(priority, urgent);
        if (!reserved) {
          *budget_blocked = true;
          continue;
        }
        job.reserved = *reserved;
      }
      job.kind = kind;
      job.input = x;
    }
    return job;
  }

  // Budget admission of one fetch: the bytes reserved (0: charged on arrival), or nullopt
  // when it must wait. See the contract for the headroom rule.
  std::optional<int64_t> AdmitLocked(bool priority, bool urgent) REQUIRES(mu_) {
    MemoryBudget& budget = runtime_->memory();
    if (estimate_ < 0) {
      // Size unknown until the first element: bound what is buffered or in flight.
      if (budget.limit() <= 0 ||
          buffered_count_ + fetches_in_flight_ < worker_limit_.load(std::memory_order_relaxed) ||
          urgent) {
        return int64_t{0};
      }
      return std::nullopt;
    }
    const bool headroom = priority || budget.limit() <= 0 ||
                          budget.used() + 2 * estimate_ <= budget.limit();
    if (headroom && budget.TryReserve(estimate_)) return estimate_;
    if (urgent) return int64_t{0};
    return std::nullopt;
  }

  // No work can ever appear again: the input is exhausted and every input is finished.
  bool FinishedLocked() const REQUIRES(mu_) {
    if (!input_end_ || input_busy_) return false;
    auto done = [](const std::unique_ptr<Input>& x) {
      return x == nullptr || x->kind == Input::kInputError ||
             (!x->busy && x->opened && x->it == nullptr);
    };
    return std::all_of(cycle_.begin(), cycle_.end(), done) &&
           std::all_of(future_.begin(), future_.end(), done);
  }

  // The Run*Locked jobs drop mu_ around the call into the input or an inner iterator.
  void RunPullLocked() REQUIRES(mu_) {
    input_busy_ = true;
    mu_.Unlock();
    Result<std::optional<Element>> r = input_->GetNext();
    mu_.Lock();
    input_busy_ = false;
    auto x = std::make_unique<Input>();
    if (!r.ok()) {
      x->kind = Input::kInputError;
      x->error = r.status();
    } else if (!r->has_value()) {
      input_end_ = true;
      x.reset();
    } else {
      x->position = input_position_++;
      x->element = std::move(**r);
    }
    if (x != nullptr) future_.push_back(std::move(x));
    consumer_cv_.SignalAll();
  }

  void RunOpenLocked(Input* x) REQUIRES(mu_) {
    x->busy = true;
    mu_.Unlock();
    Result<IteratorPtr> it = [&]() -> Result<IteratorPtr> {
      TaskTimer timer(&stats());
      return MakeInner(x->element, x->position);
    }();
    mu_.Lock();
    x->busy = false;
    x->opened = true;
    if (it.ok()) {
      x->it = std::move(it).value();
    } else {
      x->error = it.status();
    }
    consumer_cv_.SignalAll();
  }

  void RunFetchLocked(Input* x, int64_t reserved) REQUIRES(mu_) {
    x->busy = true;
    ++fetches_in_flight_;
    IteratorBase* inner = x->it.get();
    mu_.Unlock();
    Result<std::optional<Element>> r{std::nullopt};
    int64_t held = reserved;
    {
      FetchScope scope(reserved > 0, &starving_);
      r = inner->GetNext();
      held += scope.TakeTransferred();
    }
    MemoryBudget& budget = runtime_->memory();
    mu_.Lock();
    if (r.ok() && !r->has_value()) {
      // The finished iterator goes before anyone sees the input ended (so no stats
      // snapshot shows it after the end), outside mu_: it may join threads of its own.
      budget.Release(held);
      IteratorPtr dead = std::move(x->it);
      mu_.Unlock();
      dead.reset();
      mu_.Lock();
      x->ended = true;
    } else {
      Buffered b;
      if (!r.ok()) {
        b.status = r.status();
        budget.Release(held);
      } else {
        b.element = std::move(**r);
        b.charge = ElementBytes(b.element);
        if (b.charge > held) {
          budget.ForceReserve(b.charge - held);
        } else {
          budget.Release(held - b.charge);
        }
        estimate_ = std::max(estimate_, b.charge);
      }
      buffered_bytes_ += b.charge;
      ++buffered_count_;
      x->buffer.push_back(std::move(b));
      if (!deterministic_ || NeededLocked() == x) {
        starving_.store(false, std::memory_order_relaxed);  // the consumer can go on
      }
    }
    x->busy = false;
    --fetches_in_flight_;
    PublishGaugesLocked();
    consumer_cv_.SignalAll();
  }

  // The inner iterator of input element `e` at input position `pos` (as the sequential
  // op, with a label that does not depend on the slot, since futures have none yet).
  Result<IteratorPtr> MakeInner(const Element& e, int64_t pos) const {
    FunctionContext fctx(ds_->seed(), pos);
    SLUICE_ASSIGN_OR_RETURN(Dataset inner, ds_->fn().MakeDataset(e, fctx));
    const ElementSpec& want = node().element_spec();
    const ElementSpec& got = inner.element_spec();
    if (!want.unknown && !got.unknown) {
      bool ok = want.size() == got.size();
      for (size_t i = 0; ok && i < want.size(); ++i) ok = want[i].dtype == got[i].dtype;
      if (!ok) {
        return InvalidArgumentError("function '" + ds_->fn().name() +
                                    "' returned a dataset of " + got.ToString() +
                                    ", expected " + want.ToString());
      }
    }
    return MakeChild(NodeOf(inner),
                     ctx_.Mixed(static_cast<uint64_t>(pos)).WithoutSplits(),
                     "in" + std::to_string(pos));
  }

  // Moves every input into *dead (their iterators die there, outside mu_) and releases
  // the budget their buffers hold.
  void DropAllLocked(std::vector<std::unique_ptr<Input>>* dead) REQUIRES(mu_) {
    auto drop = [&](std::unique_ptr<Input>& x) {
      if (x == nullptr) return;
      for (const Buffered& b : x->buffer) runtime_->memory().Release(b.charge);
      dead->push_back(std::move(x));
    };
    for (auto& x : cycle_) drop(x);
    for (auto& x : future_) drop(x);
    cycle_.clear();
    future_.clear();
    num_open_ = 0;
    buffered_bytes_ = 0;
    buffered_count_ = 0;
    PublishGaugesLocked();
  }

  // ---- Checkpoints ----

  Status SaveInputLocked(CheckpointWriter* w, const std::string& key,
                         const Input* x) const REQUIRES(mu_) {
    if (x == nullptr) {
      w->WriteInt(prefix(), key + ".kind", -1);
      return Status::OK();
    }
    if (x->kind == Input::kInputError) {
      w->WriteInt(prefix(), key + ".kind", 1);
      w->WriteInt(prefix(), key + ".code", static_cast<int64_t>(x->error.code()));
      w->WriteString(prefix(), key + ".message", x->error.message());
      return Status::OK();
    }
    w->WriteInt(prefix(), key + ".kind", 0);
    w->WriteInt(prefix(), key + ".position", x->position);
    w->WriteElement(prefix(), key + ".element", x->element);
    // 0: not opened, 1: open (its iterator's state follows), 2: open failed, 3: ended.
    int64_t state = 1;
    if (!x->opened) {
      state = 0;
    } else if (!x->error.ok()) {
      state = 2;
      w->WriteInt(prefix(), key + ".code", static_cast<int64_t>(x->error.code()));
      w->WriteString(prefix(), key + ".message", x->error.message());
    } else if (x->ended) {
      state = 3;
    }
    w->WriteInt(prefix(), key + ".state", state);
    w->WriteInt(prefix(), key + ".num_buffered", static_cast<int64_t>(x->buffer.size()));
    for (size_t i = 0; i < x->buffer.size(); ++i) {
      const std::string bk = key + ".buf" + std::to_string(i);
      const Buffered& b = x->buffer[i];
      w->WriteInt(prefix(), bk + ".code", static_cast<int64_t>(b.status.code()));
      if (b.status.ok()) {
        w->WriteElement(prefix(), bk + ".element", b.element);
      } else {
        w->WriteString(prefix(), bk + ".message", b.status.message());
      }
    }
    if (state == 1) return x->it->Save(w);
    return Status::OK();
  }

  // Reads one saved input (null for an empty slot); re-opens and restores its iterator.
  Result<std::unique_ptr<Input>> RestoreInput(const CheckpointReader& r,
                                              const std::string& key, bool in_cycle,
                                              int64_t input_position,
                                              std::set<int64_t>* positions) const {
    auto bad = [&](const std::string& what) {
      return DataLossError(std::string(kOp) + ": inconsistent checkpoint at " + key +
                           ": " + what);
    };
    SLUICE_ASSIGN_OR_RETURN(int64_t kind, r.ReadInt(prefix(), key + ".kind"));
    if (kind == -1 && in_cycle) return std::unique_ptr<Input>();
    auto x = std::make_unique<Input>();
    if (kind == 1 && !in_cycle) {
      SLUICE_ASSIGN_OR_RETURN(int64_t code, r.ReadInt(prefix(), key + ".code"));
      if (!ValidErrorCode(code)) return bad("status code " + std::to_string(code));
      SLUICE_ASSIGN_OR_RETURN(std::string msg, r.ReadString(prefix(), key + ".message"));
      x->kind = Input::kInputError;
      x->error = Status(static_cast<StatusCode>(code), std::move(msg));
      return x;
    }
    if (kind != 0) return bad("kind " + std::to_string(kind));
    SLUICE_ASSIGN_OR_RETURN(int64_t pos, r.ReadInt(prefix(), key + ".position"));
    if (pos < 0 || pos >= input_position || !positions->insert(pos).second) {
      return bad("position " + std::to_string(pos) + " (input position " +
                 std::to_string(input_position) + ")");
    }
    SLUICE_ASSIGN_OR_RETURN(x->element, r.ReadElement(prefix(), key + ".element"));
    x->position = pos;
    SLUICE_ASSIGN_OR_RETURN(int64_t state, r.ReadInt(prefix(), key + ".state"));
    SLUICE_ASSIGN_OR_RETURN(int64_t num_buffered,
                            r.ReadInt(prefix(), key + ".num_buffered"));
    if (state < 0 || state > 3 || num_buffered < 0 || num_buffered > buffer_per_input_ ||
        (state != 1 && state != 3 && num_buffered > 0)) {
      return bad("state " + std::to_string(state) + ", " + std::to_string(num_buffered) +
                 " buffered");
    }
    for (int64_t i = 0; i < num_buffered; ++i) {
      const std::string bk = key + ".buf" + std::to_string(i);
      SLUICE_ASSIGN_OR_RETURN(int64_t code, r.ReadInt(prefix(), bk + ".code"));
      Buffered b;
      if (code == 0) {
        SLUICE_ASSIGN_OR_RETURN(b.element, r.ReadElement(prefix(), bk + ".element"));
        b.charge = ElementBytes(b.element);
      } else if (ValidErrorCode(code)) {
        SLUICE_ASSIGN_OR_RETURN(std::string msg, r.ReadString(prefix(), bk + ".message"));
        b.status = Status(static_cast<StatusCode>(code), std::move(msg));
      } else {
        return bad("buffered status code " + std::to_string(code));
      }
      x->buffer.push_back(std::move(b));
    }
    if (state == 0) return x;
    x->opened = true;
    if (state == 2) {
      SLUICE_ASSIGN_OR_RETURN(int64_t code, r.ReadInt(prefix(), key + ".code"));
      if (!ValidErrorCode(code)) return bad("open status code " + std::to_string(code));
      SLUICE_ASSIGN_OR_RETURN(std::string msg, r.ReadString(prefix(), key + ".message"));
      x->error = Status(static_cast<StatusCode>(code), std::move(msg));
    } else if (state == 3) {
      x->ended = true;
    } else {
      SLUICE_ASSIGN_OR_RETURN(x->it, MakeInner(x->element, pos));
      SLUICE_RETURN_IF_ERROR(x->it->Restore(r));
    }
    return x;
  }

  const ParallelInterleaveDataset* ds_;
  // Set by Initialize, then read-only.
  IteratorContext ctx_;
  Runtime* runtime_ = nullptr;
  bool deterministic_ = true;
  int64_t cycle_length_ = 1;
  int64_t block_length_ = 1;
  int64_t buffer_per_input_ = kMinBufferPerInput;
  int64_t max_futures_ = 1;
  int64_t num_workers_ = 1;  // threads started
  // Of them, how many may run jobs at once (the tunable).
  std::atomic<int64_t> worker_limit_{1};
  TunableRegistry::Registration parallelism_knob_;
  IteratorPtr input_;  // called by the worker holding input_busy_, or by Save/Restore
  // Started by the first GetNext (under mu_, on the consumer thread), joined by the
  // destructor once no call is in progress.
  std::vector<std::thread> workers_;

  mutable Mutex mu_;
  mutable CondVar worker_cv_;  // a job may be possible, unpaused, cancelled
  CondVar consumer_cv_;        // a worker delivered, cancelled
  mutable CondVar idle_cv_;    // a job finished, cancelled
  // Cycle slots (null: empty), grown lazily up to cycle_length_.
  std::vector<std::unique_ptr<Input>> cycle_ GUARDED_BY(mu_);
  std::deque<std::unique_ptr<Input>> future_ GUARDED_BY(mu_);  // in input order
  int64_t num_open_ GUARDED_BY(mu_) = 0;                       // non-null slots
  int64_t cycle_index_ GUARDED_BY(mu_) = 0;
  int64_t block_index_ GUARDED_BY(mu_) = 0;
  int64_t input_position_ GUARDED_BY(mu_) = 0;  // input elements pulled
  bool input_end_ GUARDED_BY(mu_) = false;
  bool input_busy_ GUARDED_BY(mu_) = false;  // a worker is in input_
  int64_t active_jobs_ GUARDED_BY(mu_) = 0;
  int64_t fetches_in_flight_ GUARDED_BY(mu_) = 0;
  int64_t buffered_bytes_ GUARDED_BY(mu_) = 0;  // sum of charges
  int64_t buffered_count_ GUARDED_BY(mu_) = 0;  // buffered results
  int64_t estimate_ GUARDED_BY(mu_) = -1;       // bytes per element
  bool workers_started_ GUARDED_BY(mu_) = false;
  mutable bool paused_ GUARDED_BY(mu_) = false;  // Save in progress
  bool cancelled_ GUARDED_BY(mu_) = false;
  // Consumers blocked in GetNext (see AsyncBufferIterator::UrgentLocked).
  int waiting_unreserved_ GUARDED_BY(mu_) = 0;
  std::vector<const std::atomic<bool>*> reserved_waiters_ GUARDED_BY(mu_);
  std::vector<Input*> order_ GUARDED_BY(mu_);  // scratch
  // True while the consumer waits with nothing to take (read by inner buffers through the
  // workers' FetchScopes).
  std::atomic<bool> starving_{false};
};

Result<IteratorPtr> ParallelInterleaveDataset::MakeIteratorInternal(
    const IteratorContext&, const std::string& prefix) const {
  return IteratorPtr(new ParallelInterleaveIterator(this, prefix));
}

Result<DatasetPtr> Make(OpArgs args) {
  const std::string op = kOp;
  SLUICE_ASSIGN_OR_RETURN(int64_t seed, GetAttrOr<int64_t>(args.attrs, op, "seed", 0));
  SLUICE_ASSIGN_OR_RETURN(int64_t cycle_length,
                          GetAttr<int64_t>(args.attrs, op, "cycle_length"));
  SLUICE_ASSIGN_OR_RETURN(int64_t block_length,
                          GetAttrOr<int64_t>(args.attrs, op, "block_length", 1));
  SLUICE_ASSIGN_OR_RETURN(ParallelAttrs p, GetParallelAttrs(op, args.attrs));
  if (cycle_length <= 0 && cycle_length != kAutotune) {
    return InvalidArgumentError(op + ": cycle_length must be > 0 or AUTOTUNE (-1), got " +
                                std::to_string(cycle_length));
  }
  if (block_length <= 0) {
    return InvalidArgumentError(op + ": block_length must be > 0, got " +
                                std::to_string(block_length));
  }
  ElementSpec spec = ElementSpec::Unknown();
  if (auto s = args.functions[0].OutputSpec(args.inputs[0]->element_spec())) {
    if (!s->ok()) return s->status().WithContext(op);
    spec = **s;
  }
  return DatasetPtr(std::make_shared<ParallelInterleaveDataset>(
      std::move(args), std::move(spec), cycle_length, block_length,
      static_cast<uint64_t>(seed), p));
}

}  // namespace

void RegisterParallelInterleaveDataset(Registry* r) {
  r->RegisterOp(
      WithParallelAttrs(
          OpDef(kOp)
              .Summary("Interleave whose inputs are read ahead on the pool into bounded "
                       "per-input buffers.")
              .Inputs(1)
              .Functions({Function::Kind::kDataset})
              .Attr("seed", AttrType::kInt, int64_t{0}, "Seed of the function's random draws.")
              .Attr("cycle_length", AttrType::kInt,
                    "Datasets open at once, > 0, or AUTOTUNE (-1).")
              .Attr("block_length", AttrType::kInt, int64_t{1},
                    "Elements taken from a dataset before moving on, > 0.")
              .Traits({.async = true,
                       .buffering = true,
                       .interleave = true,
                       .seed_mix = SeedMix::kAlways})),
      [](OpArgs a) { return Make(std::move(a)); });
}

}  // namespace sluice
