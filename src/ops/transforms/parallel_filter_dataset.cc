// ParallelFilter (tf.data filter with num_parallel_calls): keeps the input elements for
// which the predicate returns true, evaluating up to num_parallel_calls predicates at once
// on the pipeline's pool (an AsyncBufferIterator with one input per unit; a dropped
// element's slot completes with nothing and GetNext moves past it).
//
// Matches the sequential Filter exactly: each call gets FunctionContext(seed, input
// position), so random predicates keep the same elements at any parallelism; a failing
// predicate surfaces its error (the element is consumed) and the iterator goes on with the
// next element. deterministic keeps the input order; otherwise kept elements come out as
// they are ready. Output spec = input spec; cardinality as the sequential Filter (0 for an
// empty input, else unknown).
//
// Thread-safety: the dataset node and the processor are immutable; iterators follow the
// AsyncBufferIterator contract (GetNext/Save/Restore from one thread, Cancel from any).
#include "graph/attr.h"
#include "ops/op_util.h"
#include "ops/ops.h"
#include "runtime/async_buffer.h"

namespace sluice {
namespace {

class FilterProcessor final : public UnitProcessor {
 public:
  FilterProcessor(Function predicate, uint64_t seed, int64_t static_bytes)
      : predicate_(std::move(predicate)), seed_(seed), static_bytes_(static_bytes) {}

  // Runs the predicate; a rejected element is removed from the unit (the part owns it).
  Status ProcessPart(WorkUnit* u, int, int) const override {
    FunctionContext fctx(seed_, u->first_position);
    SLUICE_ASSIGN_OR_RETURN(bool keep, predicate_.Test(u->inputs[0], fctx));
    if (!keep) u->inputs.clear();
    return Status::OK();
  }
  Result<std::optional<Element>> Finish(WorkUnit* u) const override {
    if (u->inputs.empty()) return std::optional<Element>();  // dropped
    return std::optional<Element>(std::move(u->inputs[0]));
  }
  int64_t StaticOutputBytes() const override { return static_bytes_; }
  bool groupable() const override { return true; }

 private:
  const Function predicate_;
  const uint64_t seed_;
  const int64_t static_bytes_;
};

class ParallelFilterDataset : public DatasetNode {
 public:
  ParallelFilterDataset(OpArgs args, ElementSpec spec, uint64_t seed, ParallelAttrs p)
      : DatasetNode("ParallelFilter", std::move(args), std::move(spec)), seed_(seed), p_(p) {}

  // As the sequential Filter: an empty input stays empty, otherwise unknown.
  int64_t Cardinality() const override {
    return input(0)->Cardinality() == 0 ? 0 : kUnknownCardinality;
  }

 protected:
  Result<IteratorPtr> MakeIteratorInternal(const IteratorContext&,
                                           const std::string& prefix) const override {
    AsyncBufferOptions o;
    o.parallelism = p_.num_parallel_calls;
    o.deterministic = p_.deterministic;
    return IteratorPtr(new AsyncBufferIterator(
        shared(), prefix,
        std::make_unique<FilterProcessor>(functions()[0], seed_,
                                          StaticElementBytes(element_spec())),
        o));
  }

 private:
  const uint64_t seed_;
  const ParallelAttrs p_;
};

}  // namespace

void RegisterParallelFilterDataset(Registry* r) {
  r->RegisterOp(
      WithParallelAttrs(
          OpDef("ParallelFilter")
              .Summary("Filter whose predicates run in parallel on the pool.")
              .Inputs(1)
              .Functions({Function::Kind::kPredicate})
              .Attr("seed", AttrType::kInt, int64_t{0}, "Seed of the function's random draws.")
              .Traits({.async = true, .buffering = true, .seed_mix = SeedMix::kNone})),
      [](OpArgs args) -> Result<DatasetPtr> {
     const std::string op = "ParallelFilter";
     SLUICE_ASSIGN_OR_RETURN(int64_t seed, GetAttrOr<int64_t>(args.attrs, op, "seed", 0));
     SLUICE_ASSIGN_OR_RETURN(ParallelAttrs p, GetParallelAttrs(op, args.attrs));
     ElementSpec spec = args.inputs[0]->element_spec();
     return DatasetPtr(std::make_shared<ParallelFilterDataset>(
         std::move(args), std::move(spec), static_cast<uint64_t>(seed), p));
   });
}

}  // namespace sluice
