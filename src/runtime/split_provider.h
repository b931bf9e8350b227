// Split providers (tf.data's SplitProvider): where a splittable source takes its work
// from when it does not read all of its data itself.
//
// A split is a tensor: an int64 scalar row index for indexed sources (Range: the element
// index; FromTensorSlices, ImageFolder, Idx: the row; ListFiles: the file in sorted
// order) and, for the record-file sources (TFRecord, TextLine, FixedLengthRecord), either
// an int64 scalar index into the source's file list or a string scalar file name from it.
// A source given a provider (IteratorContext::split_provider) produces exactly the
// elements of the splits it takes, in the order it takes them, and ends when the provider
// has no more. Several iterators may share one provider: together they produce each
// split's elements once (dynamic sharding, as the tf.data service hands splits to
// workers).
//
// Checkpoints. A provider's state is small: positions (IndexSplitProvider and
// ListSplitProvider store the next split's position). A source stores its own position
// within the split it is reading, never the provider's; the provider is saved once, by
// whoever owns it (the code that made it and handed it to the iterators), after the
// iterators. Dataset::MakeIterator(provider) wraps the shared provider in a SplitConsumer
// per top-level iterator, which makes that order exact even while prefetching and
// parallel operators keep pulling splits in the background: a split taken after the
// iterator's last checkpoint is in no iterator checkpoint, so the shared provider's Save
// stores it as "returned" and the restored provider hands it out again first. To
// checkpoint N iterators sharing a provider: Save each iterator, then Save the provider
// (all while the iterators are alive); to resume: Restore the provider, make N fresh
// iterators over it and Restore each.
//
// Thread-safety: every public method of a provider is thread-safe; the *Locked hooks run
// under the provider's mutex, so implementations need no locking of their own.
#ifndef SLUICE_RUNTIME_SPLIT_PROVIDER_H_
#define SLUICE_RUNTIME_SPLIT_PROVIDER_H_

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/mutex.h"
#include "runtime/checkpoint.h"
#include "sluice/status.h"
#include "sluice/tensor.h"

namespace sluice {

class SplitConsumer;

class SplitProvider {
 public:
  virtual ~SplitProvider();
  SplitProvider(const SplitProvider&) = delete;
  SplitProvider& operator=(const SplitProvider&) = delete;

  // The next split, or nullopt when every split has been handed out (and on every later
  // call until Reset). Splits returned by a Restore come first.
  virtual Result<std::optional<Tensor>> GetNext();
  // Starts over: every split is available again.
  virtual Status Reset();
  // Writes the provider's state under `prefix` (its own keys; no other writer may use
  // the prefix), including the splits its consumers took after their last checkpoint.
  virtual Status Save(CheckpointWriter* w, std::string_view prefix) const;
  // Restores what Save wrote. Errors (DataLoss for a corrupt state) name the provider.
  virtual Status Restore(const CheckpointReader& r, std::string_view prefix);
  // The number of splits in one pass, or kUnknownCardinality.
  virtual int64_t Cardinality() const = 0;

  // Called by a source each time its iterator tree writes a checkpoint (while nothing in
  // that tree pulls splits). A no-op except for SplitConsumer.
  virtual void MarkCheckpoint() {}

 protected:
  SplitProvider() = default;

  // Hooks of the methods above (which add the returned splits and consumers' logs),
  // called with the provider's mutex held. Overrides repeat the REQUIRES(mu_) and mark
  // their own state GUARDED_BY(mu_).
  virtual Result<std::optional<Tensor>> GetNextLocked() REQUIRES(mu_) = 0;
  virtual Status ResetLocked() REQUIRES(mu_) = 0;
  virtual Status SaveLocked(CheckpointWriter* w, std::string_view prefix) const
      REQUIRES(mu_) = 0;
  virtual Status RestoreLocked(const CheckpointReader& r, std::string_view prefix)
      REQUIRES(mu_) = 0;
  // For messages: "IndexSplitProvider", ...
  virtual std::string name() const = 0;

  // The provider's mutex, held around the *Locked hooks.
  mutable Mutex mu_;

 private:
  friend class SplitConsumer;
  // GetNext on behalf of `consumer` (null: nobody's), logged when it is marked.
  Result<std::optional<Tensor>> Take(const SplitConsumer* consumer);
  void Register(const SplitConsumer* c);
  void Unregister(const SplitConsumer* c);
  void Mark(const SplitConsumer* c);

  // Splits to hand out again before any new one (from a restored checkpoint).
  std::deque<Tensor> returned_ GUARDED_BY(mu_);
  // Per live consumer: the splits it took since its last checkpoint; nullopt until its
  // first (nothing to return before it: no checkpoint of that iterator exists).
  std::map<const SplitConsumer*, std::optional<std::vector<Tensor>>> taken_
      GUARDED_BY(mu_);
};

// Splits 0 .. n - 1 as int64 scalars, in order (tf.data's IndexSplitProvider). A negative
// n is taken as 0. Checkpoint: "next".
class IndexSplitProvider : public SplitProvider {
 public:
  explicit IndexSplitProvider(int64_t n) : n_(n < 0 ? 0 : n) {}
  int64_t Cardinality() const override { return n_; }

 protected:
  Result<std::optional<Tensor>> GetNextLocked() REQUIRES(mu_) override;
  Status ResetLocked() REQUIRES(mu_) override;
  Status SaveLocked(CheckpointWriter* w, std::string_view prefix) const
      REQUIRES(mu_) override;
  Status RestoreLocked(const CheckpointReader& r, std::string_view prefix)
      REQUIRES(mu_) override;
  std::string name() const override { return "IndexSplitProvider"; }

 private:
  const int64_t n_;
  int64_t next_ GUARDED_BY(mu_) = 0;
};

// The given strings (file names) as string scalars, in order. Checkpoint: "next".
class ListSplitProvider : public SplitProvider {
 public:
  explicit ListSplitProvider(std::vector<std::string> items) : items_(std::move(items)) {}
  int64_t Cardinality() const override { return static_cast<int64_t>(items_.size()); }

 protected:
  Result<std::optional<Tensor>> GetNextLocked() REQUIRES(mu_) override;
  Status ResetLocked() REQUIRES(mu_) override;
  Status SaveLocked(CheckpointWriter* w, std::string_view prefix) const
      REQUIRES(mu_) override;
  Status RestoreLocked(const CheckpointReader& r, std::string_view prefix)
      REQUIRES(mu_) override;
  std::string name() const override { return "ListSplitProvider"; }

 private:
  const std::vector<std::string> items_;
  int64_t next_ GUARDED_BY(mu_) = 0;
};

// Static sharding of another provider: of the splits `inner` hands out, those at
// positions index, index + num_shards, ... (the provider-level Shard). `inner` must be
// this wrapper's alone: the skipped splits are taken from it. Checkpoint: "seen" and the
// inner provider's state under prefix + "/inner".
class ShardingSplitProvider : public SplitProvider {
 public:
  // InvalidArgument unless num_shards >= 1, 0 <= index < num_shards and inner is set.
  static Result<std::shared_ptr<ShardingSplitProvider>> Make(
      int64_t num_shards, int64_t index, std::shared_ptr<SplitProvider> inner);
  int64_t Cardinality() const override;

 protected:
  Result<std::optional<Tensor>> GetNextLocked() REQUIRES(mu_) override;
  Status ResetLocked() REQUIRES(mu_) override;
  Status SaveLocked(CheckpointWriter* w, std::string_view prefix) const
      REQUIRES(mu_) override;
  Status RestoreLocked(const CheckpointReader& r, std::string_view prefix)
      REQUIRES(mu_) override;
  std::string name() const override { return "ShardingSplitProvider"; }

 private:
  ShardingSplitProvider(int64_t num_shards, int64_t index,
                        std::shared_ptr<SplitProvider> inner)
      : num_shards_(num_shards), index_(index), inner_(std::move(inner)) {}
  const int64_t num_shards_, index_;
  const std::shared_ptr<SplitProvider> inner_;
  int64_t seen_ GUARDED_BY(mu_) = 0;  // inner splits taken
};

// One top-level iterator's handle on a shared provider (made by Dataset::MakeIterator
// with a provider; sources see it as their IteratorContext::split_provider). GetNext,
// Reset, Save, Restore and Cardinality act on the shared provider. From the first
// MarkCheckpoint on, the shared provider remembers the splits this consumer took since
// its latest MarkCheckpoint, and its Save stores them as returned (see the top of this
// file); they are forgotten when the consumer is destroyed.
class SplitConsumer final : public SplitProvider {
 public:
  explicit SplitConsumer(std::shared_ptr<SplitProvider> shared);
  ~SplitConsumer() override;
  Result<std::optional<Tensor>> GetNext() override { return shared_->Take(this); }
  Status Reset() override { return shared_->Reset(); }
  Status Save(CheckpointWriter* w, std::string_view prefix) const override {
    return shared_->Save(w, prefix);
  }
  Status Restore(const CheckpointReader& r, std::string_view prefix) override {
    return shared_->Restore(r, prefix);
  }
  int64_t Cardinality() const override { return shared_->Cardinality(); }
  void MarkCheckpoint() override { shared_->Mark(this); }
  const std::shared_ptr<SplitProvider>& shared() const { return shared_; }

 protected:
  // Unused: the public methods above forward to the shared provider.
  Result<std::optional<Tensor>> GetNextLocked() REQUIRES(mu_) override {
    return shared_->Take(this);
  }
  Status ResetLocked() REQUIRES(mu_) override { return Status::OK(); }
  Status SaveLocked(CheckpointWriter*, std::string_view) const REQUIRES(mu_) override {
    return Status::OK();
  }
  Status RestoreLocked(const CheckpointReader&, std::string_view) REQUIRES(mu_) override {
    return Status::OK();
  }
  std::string name() const override { return "SplitConsumer"; }

 private:
  const std::shared_ptr<SplitProvider> shared_;
};

// For sources. The row an index split names: an int64 scalar in [0, num_rows).
// InvalidArgument naming `op` otherwise.
Result<int64_t> SplitRowIndex(const Tensor& split, int64_t num_rows, std::string_view op);

// A provider's checkpoint on its own (Save under the prefix "splits"), and its Restore.
Result<std::string> SaveSplitProvider(const SplitProvider& provider);
Status RestoreSplitProvider(SplitProvider* provider, std::string_view checkpoint);

}  // namespace sluice

#endif  // SLUICE_RUNTIME_SPLIT_PROVIDER_H_
