// ParallelMap (tf.data ParallelMapDatasetV2): map with up to num_parallel_calls calls of the
// function at once on the pipeline's pool (an AsyncBufferIterator with one input per unit).
// Each call gets FunctionContext(seed, input position), exactly as the sequential Map, so
// random functions give the same elements at any parallelism.
#include "graph/attr.h"
#include "ops/op_util.h"
#include "ops/ops.h"
#include "runtime/async_buffer.h"
#include "runtime/runtime.h"

namespace sluice {
namespace {

class MapProcessor final : public UnitProcessor {
 public:
  MapProcessor(Function fn, uint64_t seed, int64_t static_bytes, Env* env)
      : fn_(std::move(fn)), seed_(seed), static_bytes_(static_bytes), env_(env) {}

  Status ProcessPart(WorkUnit* u, int, int) const override {
    return MapInPlace(&u->inputs[0], u->first_position);
  }
  bool maps_in_place() const override { return true; }
  Status MapInPlace(Element* e, int64_t position) const override {
    FunctionContext fctx(seed_, position);
    fctx.set_env(env_);
    const ElementSource source(*e);
    Status s = fn_.Apply(e, fctx);
    if (!s.ok()) [[unlikely]] {
      return ElementError(s, position, source);
    }
    return s;
  }
  Result<std::optional<Element>> Finish(WorkUnit* u) const override {
    return std::optional<Element>(std::move(u->inputs[0]));
  }
  int64_t StaticOutputBytes() const override { return static_bytes_; }
  bool groupable() const override { return true; }

 private:
  const Function fn_;
  const uint64_t seed_;
  const int64_t static_bytes_;
  Env* const env_;
};

class ParallelMapDataset : public DatasetNode {
 public:
  ParallelMapDataset(OpArgs args, ElementSpec spec, uint64_t seed, ParallelAttrs p)
      : DatasetNode("ParallelMap", std::move(args), std::move(spec)), seed_(seed), p_(p) {}

  int64_t Cardinality() const override { return input(0)->Cardinality(); }

 protected:
  Result<IteratorPtr> MakeIteratorInternal(const IteratorContext& ctx,
                                           const std::string& prefix) const override {
    AsyncBufferOptions o;
    o.parallelism = p_.num_parallel_calls;
    o.deterministic = p_.deterministic;
    return IteratorPtr(new AsyncBufferIterator(
        shared(), prefix,
        std::make_unique<MapProcessor>(functions()[0], seed_,
                                       StaticElementBytes(element_spec()),
                                       ctx.runtime()->env()),
        o));
  }

 private:
  const uint64_t seed_;
  const ParallelAttrs p_;
};

}  // namespace

void RegisterParallelMapDataset(Registry* r) {
  r->RegisterOp(
      WithParallelAttrs(
          OpDef("ParallelMap")
              .Summary("Map whose calls run in parallel on the pool.")
              .Inputs(1)
              .Functions({Function::Kind::kElement})
              .Attr("seed", AttrType::kInt, int64_t{0}, "Seed of the function's random draws.")
              .Traits({.async = true,
                       .buffering = true,
                       .elementwise = true,
                       .seed_mix = SeedMix::kNone})),
      [](OpArgs args) -> Result<DatasetPtr> {
     const std::string op = "ParallelMap";
     SLUICE_ASSIGN_OR_RETURN(int64_t seed, GetAttrOr<int64_t>(args.attrs, op, "seed", 0));
     SLUICE_ASSIGN_OR_RETURN(ParallelAttrs p, GetParallelAttrs(op, args.attrs));
     ElementSpec spec = ElementSpec::Unknown();
     if (auto s = args.functions[0].OutputSpec(args.inputs[0]->element_spec())) {
       if (!s->ok()) return s->status().WithContext(op);
       spec = **s;
     }
     return DatasetPtr(std::make_shared<ParallelMapDataset>(std::move(args), std::move(spec),
                                                            static_cast<uint64_t>(seed), p));
   });
}

}  // namespace sluice
