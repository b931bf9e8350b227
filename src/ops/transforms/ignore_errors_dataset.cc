// IgnoreErrors: drops elements whose computation failed, counting them in
// stats().elements_skipped (tf.data ignore_errors with log_warning=False).
#include "graph/attr.h"
#include "ops/op_util.h"
#include "ops/ops.h"
#include "runtime/iterator_base.h"

namespace sluice {
namespace {

// Iterators make progress after an error, but an op that cannot go on may keep returning
// the same error without reading anything, and ignoring it would loop forever. Every this
// many identical errors in a row, the input's subtree is checked for progress (elements
// produced, consumed or skipped, file bytes read anywhere below): if nothing moved since
// the last check, the error is passed on. Distinct failing elements always move
// something, so a pipeline that asked to ignore errors is never stopped by them.
constexpr int64_t kIdenticalErrorsPerCheck = 10000;

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
    int64_t activity = -1;  // the input's activity at the last check
    while (true) {
      auto r = input_->GetNext();
      if (r.ok()) return r;
      // A cancelled pipeline stops: Cancelled is not an element's error.
      SLUICE_RETURN_IF_ERROR(CheckCancelled());
      identical = r.status() == last ? identical + 1 : 1;
      if (identical == 1) activity = -1;
      if (identical % kIdenticalErrorsPerCheck == 0) {
        const int64_t now = InputActivity();
        if (now == activity) {
          return r.status().WithContext(
              "IgnoreErrors: the input failed " + std::to_string(identical) +
              " times in a row with the same error without reading anything (it makes no "
              "progress)");
        }
        activity = now;
      }
      RecordSkipped();
      last = r.status();
    }
  }

 private:
  // A sum that grows whenever anything in the input's subtree moves.
  int64_t InputActivity() const {
    std::vector<IteratorStats> stats;
    input_->CollectStats(&stats);
    int64_t sum = 0;
    for (const IteratorStats& s : stats) {
      sum += s.elements_produced + s.elements_consumed + s.elements_skipped +
             s.file_bytes_read;
    }
    return sum;
  }
};

Result<IteratorPtr> IgnoreErrorsDataset::MakeIteratorInternal(
    const IteratorContext&, const std::string& prefix) const {
  return IteratorPtr(new IgnoreErrorsIterator(this, prefix));
}

}  // namespace

void RegisterIgnoreErrorsDataset(Registry* r) {
  r->RegisterOp(
      OpDef("IgnoreErrors")
          .Summary("Drops elements whose computation failed, counting them.")
          .Inputs(1)
          .Traits({.seed_mix = SeedMix::kNone}),
      [](OpArgs args) -> Result<DatasetPtr> {
     ElementSpec spec = args.inputs[0]->element_spec();
     return DatasetPtr(
         std::make_shared<IgnoreErrorsDataset>(std::move(args), std::move(spec)));
   });
}

}  // namespace sluice
