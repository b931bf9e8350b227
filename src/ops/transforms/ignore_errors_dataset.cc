// IgnoreErrors: drops elements whose computation failed, counting them in
// stats().elements_skipped (tf.data ignore_errors with log_warning=False).
#include "graph/attr.h"
#include "ops/op_util.h"
#include "ops/ops.h"
#include "runtime/iterator_base.h"

namespace sluice {
namespace {

// Iterators make progress after an error, but an op that cannot go on may keep returning
// the same error. After this many identical errors in a row the error is passed on
// instead of looping forever (each later call retries, so the work per call stays
// bounded).
constexpr int64_t kMaxIdenticalErrors = 10000;

class IgnoreErrorsDataset : public DatasetNode {
 public:
  IgnoreErrorsDataset(OpArgs args, ElementSpec spec)
      : DatasetNode("IgnoreErrors", std::move(args), std::move(spec)) {}

  // How many inputs fail is not known in advance.
  int64_t Cardinality() const override {
    return input(0)->Cardinality() == 0 ? 0 : kUnknownCardinality;
  }

 protected:
  Result<IteratorPtr> MakeIteratorInternal(
      const IteratorContext& ctx, const std::string& prefix) const override;
};

class IgnoreErrorsIterator : public UnaryIterator {
 public:
  IgnoreErrorsIterator(const IgnoreErrorsDataset* ds, const std::string& prefix)
      : UnaryIterator(ds->shared(), prefix) {}

 protected:
  Result<std::optional<Element>> GetNextInternal() override {
    Status last;
    int64_t identical = 0;
    while (true) {
      auto r = input_->GetNext();
      if (r.ok()) return r;
      // A cancelled pipeline stops: Cancelled is not an element's error.
      SLUICE_RETURN_IF_ERROR(CheckCancelled());
      identical = r.status() == last ? identical + 1 : 1;
      if (identical >= kMaxIdenticalErrors) {
        return r.status().WithContext(
            "IgnoreErrors: the input keeps failing with the same error");
      }
      stats().elements_skipped.fetch_add(1, std::memory_order_relaxed);
      last = r.status();
    }
  }
};

Result<IteratorPtr> IgnoreErrorsDataset::MakeIteratorInternal(
    const IteratorContext&, const std::string& prefix) const {
  return IteratorPtr(new IgnoreErrorsIterator(this, prefix));
}

}  // namespace

void RegisterIgnoreErrorsDataset(Registry* r) {
  r->RegisterOp("IgnoreErrors", [](OpArgs args) -> Result<DatasetPtr> {
     SLUICE_RETURN_IF_ERROR(CheckArity("IgnoreErrors", args, 1, 0));
     ElementSpec spec = args.inputs[0]->element_spec();
     return DatasetPtr(
         std::make_shared<IgnoreErrorsDataset>(std::move(args), std::move(spec)));
   }).IgnoreError();
}

}  // namespace sluice
