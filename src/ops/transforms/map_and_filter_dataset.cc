// MapAndFilter and ParallelMapAndFilter (the optimizer's map_and_filter_fusion): map(f)
// then filter(p) in one op, so p sees f's output in place, with no handoff between two
// iterators; the parallel form runs f and p in the same pool task (an AsyncBufferIterator
// whose rejected units complete with nothing, as ParallelFilter's).
//
// Functions: [f (element -> element), p (predicate)]. Attrs: map_seed, filter_seed, and for
// ParallelMapAndFilter num_parallel_calls and deterministic.
//
// MapAndFilter equals Map(f, map_seed).Filter(p, filter_seed) exactly, errors included: f
// is called at its map position (every input element), p at its filter position (every
// element f mapped successfully), as the two ops count them; f's or p's error surfaces
// and the iterator goes on. ParallelMapAndFilter equals ParallelMap(f).Filter(p) when no
// element fails; both functions get the element's input position (after an error the
// sequential filter's positions lag by the failed elements, so a random p may then draw
// differently). Spec: f's declared output spec (unknown when it declares none);
// cardinality 0 for an empty input, else unknown (as Filter).
//
// Thread-safety: nodes and the processor are immutable; iterators follow the IteratorBase
// and AsyncBufferIterator contracts.
#include "graph/attr.h"
#include "ops/op_util.h"
#include "ops/ops.h"
#include "runtime/async_buffer.h"
#include "runtime/runtime.h"

namespace sluice {
namespace {

class MapAndFilterDataset : public DatasetNode {
 public:
  MapAndFilterDataset(std::string op, OpArgs args, ElementSpec spec, uint64_t map_seed,
                      uint64_t filter_seed, std::optional<ParallelAttrs> p)
      : DatasetNode(std::move(op), std::move(args), std::move(spec)),
        map_seed_(map_seed),
        filter_seed_(filter_seed),
        p_(p) {}

  int64_t Cardinality() const override {
    return input(0)->Cardinality() == 0 ? 0 : kUnknownCardinality;
  }
  const Function& fn() const { return functions()[0]; }
  const Function& predicate() const { return functions()[1]; }
  uint64_t map_seed() const { return map_seed_; }
  uint64_t filter_seed() const { return filter_seed_; }

 protected:
  Result<IteratorPtr> MakeIteratorInternal(const IteratorContext& ctx,
                                           const std::string& prefix) const override;

 private:
  const uint64_t map_seed_, filter_seed_;
  const std::optional<ParallelAttrs> p_;  // set for ParallelMapAndFilter
};

class MapAndFilterIterator : public UnaryIterator {
 public:
  MapAndFilterIterator(const MapAndFilterDataset* ds, const std::string& prefix)
      : UnaryIterator(ds->shared(), prefix), ds_(ds) {}

 protected:
  Status InitializeState(const IteratorContext& ctx) override {
    env_ = ctx.runtime()->env();  // for functions that read files (read_file)
    return Status::OK();
  }

  Result<std::optional<Element>> GetNextInternal() override {
    while (true) {
      SLUICE_RETURN_IF_ERROR(CheckCancelled());
      Result<std::optional<Element>> r = input_->GetNext();
      if (!r.ok() || !r->has_value()) return r;
      FunctionContext mctx(ds_->map_seed(), map_position_++);
      mctx.set_env(env_);
      SLUICE_RETURN_IF_ERROR(ds_->fn().Apply(&**r, mctx));
      FunctionContext fctx(ds_->filter_seed(), filter_position_++);
      SLUICE_ASSIGN_OR_RETURN(bool keep, ds_->predicate().Test(**r, fctx));
      if (keep) return r;
    }
  }

  Status SaveState(CheckpointWriter* w) const override {
    w->WriteInt(prefix(), "map_position", map_position_);
    w->WriteInt(prefix(), "filter_position", filter_position_);
    return Status::OK();
  }

  Status RestoreState(const CheckpointReader& r) override {
    SLUICE_ASSIGN_OR_RETURN(map_position_, r.ReadInt(prefix(), "map_position"));
    SLUICE_ASSIGN_OR_RETURN(filter_position_, r.ReadInt(prefix(), "filter_position"));
    if (map_position_ < 0 || filter_position_ < 0 || filter_position_ > map_position_) {
      return DataLossError("MapAndFilter: inconsistent positions in checkpoint (map " +
                           std::to_string(map_position_) + ", filter " +
                           std::to_string(filter_position_) + ")");
    }
    return Status::OK();
  }

 private:
  const MapAndFilterDataset* ds_;
  Env* env_ = nullptr;
  int64_t map_position_ = 0;     // input elements seen by f
  int64_t filter_position_ = 0;  // elements f mapped, seen by p
};

class MapAndFilterProcessor final : public UnitProcessor {
 public:
  MapAndFilterProcessor(Function fn, Function predicate, uint64_t map_seed,
                        uint64_t filter_seed, int64_t static_bytes, Env* env)
      : fn_(std::move(fn)),
        predicate_(std::move(predicate)),
        map_seed_(map_seed),
        filter_seed_(filter_seed),
        static_bytes_(static_bytes),
        env_(env) {}

  Status ProcessPart(WorkUnit* u, int, int) const override {
    FunctionContext mctx(map_seed_, u->first_position);
    mctx.set_env(env_);
    SLUICE_RETURN_IF_ERROR(fn_.Apply(&u->inputs[0], mctx));
    FunctionContext fctx(filter_seed_, u->first_position);
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
  const Function fn_, predicate_;
  const uint64_t map_seed_, filter_seed_;
  const int64_t static_bytes_;
  Env* const env_;
};

Result<IteratorPtr> MapAndFilterDataset::MakeIteratorInternal(
    const IteratorContext& ctx, const std::string& prefix) const {
  if (!p_) return IteratorPtr(new MapAndFilterIterator(this, prefix));
  AsyncBufferOptions o;
  o.parallelism = p_->num_parallel_calls;
  o.deterministic = p_->deterministic;
  return IteratorPtr(new AsyncBufferIterator(
      shared(), prefix,
      std::make_unique<MapAndFilterProcessor>(fn(), predicate(), map_seed_, filter_seed_,
                                              StaticElementBytes(element_spec()),
                                              ctx.runtime()->env()),
      o));
}

Result<DatasetPtr> Make(const std::string& op, OpArgs args, bool parallel) {
  SLUICE_ASSIGN_OR_RETURN(int64_t map_seed, GetAttrOr<int64_t>(args.attrs, op, "map_seed", 0));
  SLUICE_ASSIGN_OR_RETURN(int64_t filter_seed,
                          GetAttrOr<int64_t>(args.attrs, op, "filter_seed", 0));
  std::optional<ParallelAttrs> p;
  if (parallel) {
    SLUICE_ASSIGN_OR_RETURN(p, GetParallelAttrs(op, args.attrs));
  }
  ElementSpec spec = ElementSpec::Unknown();
  if (auto s = args.functions[0].OutputSpec(args.inputs[0]->element_spec())) {
    if (!s->ok()) return s->status().WithContext(op);
    spec = **s;
  }
  return DatasetPtr(std::make_shared<MapAndFilterDataset>(
      op, std::move(args), std::move(spec), static_cast<uint64_t>(map_seed),
      static_cast<uint64_t>(filter_seed), p));
}

}  // namespace

void RegisterMapAndFilterDataset(Registry* r) {
  auto def = [](std::string op, bool parallel) {
    OpDef d = OpDef(std::move(op))
                  .Summary("Map then Filter fused: elements whose mapped value passes the "
                           "predicate.")
                  .Inputs(1)
                  .Functions({Function::Kind::kElement, Function::Kind::kPredicate})
                  .Attr("map_seed", AttrType::kInt, int64_t{0}, "Seed of the map function.")
                  .Attr("filter_seed", AttrType::kInt, int64_t{0}, "Seed of the predicate.")
                  .Traits({.async = parallel, .buffering = parallel,
                           .seed_mix = SeedMix::kNone});
    return parallel ? WithParallelAttrs(std::move(d)) : d;
  };
  r->RegisterOp(def("MapAndFilter", false),
                [](OpArgs a) { return Make("MapAndFilter", std::move(a), false); });
  r->RegisterOp(def("ParallelMapAndFilter", true),
                [](OpArgs a) { return Make("ParallelMapAndFilter", std::move(a), true); });
}

}  // namespace sluice
