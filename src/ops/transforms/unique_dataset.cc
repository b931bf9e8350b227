// Unique: the input's elements without repeats, in first-seen order (tf.data unique).
// Elements have one component of dtype int32, int64 or string (any shape; two elements
// are equal when their shapes and values are). The elements seen so far are kept as keys
// (shape and bytes) and checkpointed, so memory and checkpoints grow with the number of
// distinct elements, as in tf.data. Input errors pass through.
#include <string>
#include <unordered_set>
#include <vector>

#include "graph/attr.h"
#include "ops/ops.h"
#include "runtime/iterator_base.h"

namespace sluice {
namespace {

bool UniqueDType(DType d) {
  return d == DType::kInt32 || d == DType::kInt64 || d == DType::kString;
}

class UniqueDataset : public DatasetNode {
 public:
  UniqueDataset(OpArgs args, ElementSpec spec)
      : DatasetNode("Unique", std::move(args), std::move(spec)) {}

  int64_t Cardinality() const override {
    const int64_t n = input(0)->Cardinality();
    return n == 0 ? 0 : kUnknownCardinality;
  }

 protected:
  Result<IteratorPtr> MakeIteratorInternal(const IteratorContext& ctx,
                                           const std::string& prefix) const override;
};

class UniqueIterator : public UnaryIterator {
 public:
  UniqueIterator(const UniqueDataset* ds, const std::string& prefix)
      : UnaryIterator(ds->shared(), prefix) {}

 protected:
  // The element's identity: its shape, then its values (strings length-prefixed).
  static Result<std::string> Key(const Element& e) {
    if (e.size() != 1 || !UniqueDType(e[0].dtype())) {
      return InvalidArgumentError(
          "Unique: elements must have one int32, int64 or string "
          "component, got " +
          e.DebugString());
    }
    const Tensor& t = e[0];
    std::string key;
    for (int64_t d : t.shape().dims()) key.append(reinterpret_cast<const char*>(&d), 8);
    key.push_back('|');
    if (t.dtype() == DType::kString) {
      const std::string* s = t.data<std::string>();
      for (int64_t i = 0; i < t.num_elements(); ++i) {
        const uint64_t n = s[i].size();
        key.append(reinterpret_cast<const char*>(&n), 8);
        key.append(s[i]);
      }
    } else if (t.nbytes() > 0) {
      key.append(static_cast<const char*>(t.raw_data()), t.nbytes());
    }
    return key;
  }

  Result<std::optional<Element>> GetNextInternal() override {
    while (true) {
      SLUICE_RETURN_IF_ERROR(CheckCancelled());
      SLUICE_ASSIGN_OR_RETURN(std::optional<Element> in, input_->GetNext());
      if (!in) return std::nullopt;
      SLUICE_ASSIGN_OR_RETURN(std::string key, Key(*in));
      if (seen_.insert(key).second) {
        order_.push_back(std::move(key));
        return in;
      }
    }
  }

  Status SaveState(CheckpointWriter* w) const override {
    w->WriteInt(prefix(), "seen", static_cast<int64_t>(order_.size()));
    for (size_t i = 0; i < order_.size(); ++i) {
      w->WriteString(prefix(), "key_" + std::to_string(i), order_[i]);
    }
    return Status::OK();
  }

  Status RestoreState(const CheckpointReader& r) override {
    SLUICE_ASSIGN_OR_RETURN(int64_t n, r.ReadInt(prefix(), "seen"));
    if (n < 0) return DataLossError("Unique: negative count in checkpoint");
    seen_.clear();
    order_.clear();
    for (int64_t i = 0; i < n; ++i) {
      SLUICE_ASSIGN_OR_RETURN(std::string key,
                              r.ReadString(prefix(), "key_" + std::to_string(i)));
      seen_.insert(key);
      order_.push_back(std::move(key));
    }
    return Status::OK();
  }

 private:
  std::unordered_set<std::string> seen_;
  std::vector<std::string> order_;  // seen_ in first-seen order (for checkpoints)
};

Result<IteratorPtr> UniqueDataset::MakeIteratorInternal(const IteratorContext&,
                                                        const std::string& prefix) const {
  return IteratorPtr(new UniqueIterator(this, prefix));
}

}  // namespace

void RegisterUniqueDataset(Registry* r) {
  r->RegisterOp(
      OpDef("Unique")
          .Summary("Its input's elements without repeats, in first-seen order.")
          .Inputs(1)
          .Traits({.seed_mix = SeedMix::kNone}),
      [](OpArgs args) -> Result<DatasetPtr> {
        ElementSpec spec = args.inputs[0]->element_spec();
        if (!spec.unknown && (spec.size() != 1 || !UniqueDType(spec[0].dtype))) {
          return InvalidArgumentError(
              "Unique: elements must have one int32, int64 or string "
              "component, the input's are " +
              spec.ToString());
        }
        return DatasetPtr(
            std::make_shared<UniqueDataset>(std::move(args), std::move(spec)));
      });
}

}  // namespace sluice
