// Zip: the element-wise tuple of N datasets, ending with the shortest. sluice elements
// are flat, so the output components are the inputs' components concatenated; names are
// kept when every input is named (and the concatenation has no duplicates).
#include <algorithm>
#include <set>

#include "graph/attr.h"
#include "ops/op_util.h"
#include "ops/ops.h"
#include "runtime/iterator_base.h"
#include "runtime/random_access.h"

namespace sluice {
namespace {

// Concatenated names, or null when some part is unnamed or a name repeats.
Names ConcatNames(const std::vector<const Names*>& parts) {
  std::vector<std::string> all;
  for (const Names* n : parts) {
    if (*n == nullptr) return nullptr;
    all.insert(all.end(), (*n)->begin(), (*n)->end());
  }
  if (std::set<std::string>(all.begin(), all.end()).size() != all.size()) return nullptr;
  return MakeNames(std::move(all));
}

// Zip concatenates its inputs' components; a few Zips of a node with itself would
// otherwise ask for an element spec of 2^60 components.
constexpr size_t kMaxZipComponents = 65536;

class ZipDataset : public DatasetNode {
 public:
  // The cardinality is computed once: asking the inputs on every call would take time
  // exponential in the depth of a graph whose nodes are shared (Zip(a, a)).
  ZipDataset(OpArgs args, ElementSpec spec)
      : DatasetNode("Zip", std::move(args), std::move(spec)), cardinality_(Compute()) {}

  int64_t Cardinality() const override { return cardinality_; }

 protected:
  Result<IteratorPtr> MakeIteratorInternal(
      const IteratorContext& ctx, const std::string& prefix) const override;

 private:
  // As tf.data: unknown if any input is unknown, else the smallest finite one.
  int64_t Compute() const {
    int64_t result = kInfiniteCardinality;
    for (const DatasetPtr& in : inputs()) {
      int64_t n = in->Cardinality();
      if (n == kUnknownCardinality) return kUnknownCardinality;
      if (n != kInfiniteCardinality && (result == kInfiniteCardinality || n < result))
        result = n;
    }
    return result;
  }

  const int64_t cardinality_;
};

class ZipIterator : public IteratorBase, public RandomAccess {
 public:
  ZipIterator(const ZipDataset* ds, const std::string& prefix)
      : IteratorBase(ds->shared(), prefix) {}

  // Row i is the tuple of the inputs' rows i, when every input serves rows (of one count).
  RandomAccess* AsRandomAccess() override { return rows_.empty() ? nullptr : this; }
  int64_t RowCount() const override { return rows_[0]->RowCount(); }
  Result<Element> GetRow(int64_t i) override {
    const ElementSpec& spec = node().element_spec();
    if (spec.unknown) [[unlikely]] {
      std::vector<Tensor> out;
      std::vector<Element> parts(rows_.size());
      std::vector<const Names*> names;
      for (size_t k = 0; k < rows_.size(); ++k) {
        SLUICE_ASSIGN_OR_RETURN(parts[k], rows_[k]->GetRow(i));
      }
      for (Element& p : parts) {
        names.push_back(&p.names());
        for (Tensor& t : p.tensors()) out.push_back(std::move(t));
      }
      stats().CountProduced();
      return Element(std::move(out), ConcatNames(names));
    }
    std::vector<Tensor> out;  // the known spec: one allocation, no per-part elements
    out.reserve(spec.size());
    for (RandomAccess* rows : rows_) {
      SLUICE_ASSIGN_OR_RETURN(Element part, rows->GetRow(i));
      for (Tensor& t : part.tensors()) out.push_back(std::move(t));
    }
    stats().CountProduced();
    return Element(std::move(out), spec.names);
  }

  // Each input gathers its components' rows; the batch is their components in order.
  bool GathersFromMemory() const override {
    return !rows_.empty() && std::all_of(rows_.begin(), rows_.end(), [](RandomAccess* r) {
      return r->GathersFromMemory();
    });
  }
  Result<Element> GatherRows(std::span<const int64_t> rows) override {
    std::vector<Tensor> out;
    std::vector<Element> parts(rows_.size());
    std::vector<const Names*> names;
    for (size_t k = 0; k < rows_.size(); ++k) {
      SLUICE_ASSIGN_OR_RETURN(parts[k], rows_[k]->GatherRows(rows));
      names.push_back(&parts[k].names());
      for (Tensor& t : parts[k].tensors()) out.push_back(std::move(t));
    }
    stats().CountProduced(static_cast<int64_t>(rows.size()));
    const ElementSpec& spec = node().element_spec();
    return Element(std::move(out), spec.unknown ? ConcatNames(names) : spec.names);
  }

  Status Initialize(const IteratorContext& ctx) override {
    for (size_t i = 0; i < node().inputs().size(); ++i) {
      SLUICE_ASSIGN_OR_RETURN(IteratorPtr it, MakeInput(ctx, i));
      inputs_.push_back(std::move(it));
    }
    for (auto& in : inputs_) {
      RandomAccess* ra = in->AsRandomAccess();
      if (ra == nullptr || ra->RowCount() != inputs_[0]->AsRandomAccess()->RowCount()) {
        rows_.clear();
        break;
      }
      rows_.push_back(ra);
    }
    return Status::OK();
  }

 protected:
  Result<std::optional<Element>> GetNextInternal() override {
    if (ended_) return std::nullopt;
    // Every input is advanced even when one fails, so they stay aligned (tf.data stops at
    // the first failing input); the first error is returned.
    Status error;
    std::vector<Tensor> out;
    std::vector<const Names*> names;
    std::vector<Element> parts(inputs_.size());
    for (size_t i = 0; i < inputs_.size(); ++i) {
      auto e = inputs_[i]->GetNext();
      if (!e.ok()) {
        if (error.ok()) error = e.status();
        continue;
      }
      if (!*e) {
        ended_ = true;
        continue;
      }
      parts[i] = std::move(**e);
    }
    if (!error.ok()) return error;
    if (ended_) return std::nullopt;
    for (Element& p : parts) {
      names.push_back(&p.names());
      for (Tensor& t : p.tensors()) out.push_back(std::move(t));
    }
    const ElementSpec& spec = node().element_spec();
    return Element(std::move(out), spec.unknown ? ConcatNames(names) : spec.names);
  }

  Result<int64_t> SkipInternal(int64_t n) override {
    if (ended_) return int64_t{0};
    int64_t done = n;
    for (auto& in : inputs_) {
      SLUICE_ASSIGN_OR_RETURN(int64_t k, in->Skip(n));
      done = std::min(done, k);
    }
    if (done < n) ended_ = true;
    return done;
  }

  Status SaveInternal(CheckpointWriter* w) const override {
    w->WriteInt(prefix(), "ended", ended_ ? 1 : 0);
    for (const auto& in : inputs_) SLUICE_RETURN_IF_ERROR(in->Save(w));
    return Status::OK();
  }

  Status RestoreInternal(const CheckpointReader& r) override {
    SLUICE_ASSIGN_OR_RETURN(int64_t ended, r.ReadInt(prefix(), "ended"));
    ended_ = ended != 0;
    for (auto& in : inputs_) SLUICE_RETURN_IF_ERROR(in->Restore(r));
    return Status::OK();
  }

 private:
  std::vector<IteratorPtr> inputs_;
  std::vector<RandomAccess*> rows_;  // the inputs as rows by index; empty when any cannot
  bool ended_ = false;
};

Result<IteratorPtr> ZipDataset::MakeIteratorInternal(
    const IteratorContext&, const std::string& prefix) const {
  return IteratorPtr(new ZipIterator(this, prefix));
}

}  // namespace

void RegisterZipDataset(Registry* r) {
  r->RegisterOp(
      OpDef("Zip")
          .Summary("Elements of its inputs side by side (their components concatenated).")
          .VariadicInputs(1)
          .Traits({.seed_mix = SeedMix::kNone, .row_access = RowAccess::kInputs}),
      [](OpArgs args) -> Result<DatasetPtr> {
     ElementSpec spec;
     std::vector<const Names*> names;
     for (const DatasetPtr& in : args.inputs) {
       const ElementSpec& s = in->element_spec();
       if (s.unknown) {
         spec = ElementSpec::Unknown();
         break;
       }
       if (spec.components.size() + s.components.size() > kMaxZipComponents) {
         return InvalidArgumentError("Zip: the zipped element would have more than " +
                                     std::to_string(kMaxZipComponents) + " components");
       }
       spec.components.insert(spec.components.end(), s.components.begin(),
                              s.components.end());
       names.push_back(&s.names);
     }
     if (!spec.unknown) spec.names = ConcatNames(names);
     return DatasetPtr(std::make_shared<ZipDataset>(std::move(args), std::move(spec)));
   });
}

}  // namespace sluice
