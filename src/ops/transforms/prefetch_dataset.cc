// Prefetch (tf.data PrefetchDataset): a runner thread keeps up to buffer_size elements
// ready ahead of the consumer. An AsyncBufferIterator whose units need no pool work.
#include "graph/attr.h"
#include "ops/op_util.h"
#include "ops/ops.h"
#include "runtime/async_buffer.h"

namespace sluice {
namespace {

class PrefetchProcessor final : public UnitProcessor {
 public:
  explicit PrefetchProcessor(int64_t static_bytes) : static_bytes_(static_bytes) {}
  int NumParts(const WorkUnit&, int64_t) const override { return 0; }
  Status ProcessPart(WorkUnit*, int, int) const override { return Status::OK(); }
  Result<std::optional<Element>> Finish(WorkUnit* u) const override {
    return std::optional<Element>(std::move(u->inputs[0]));
  }
  int64_t StaticOutputBytes() const override { return static_bytes_; }
  bool passthrough() const override { return true; }

 private:
  int64_t static_bytes_;
};

class PrefetchDataset : public DatasetNode {
 public:
  PrefetchDataset(OpArgs args, ElementSpec spec, int64_t buffer_size)
      : DatasetNode("Prefetch", std::move(args), std::move(spec)),
        buffer_size_(buffer_size) {}

  int64_t Cardinality() const override { return input(0)->Cardinality(); }

 protected:
  Result<IteratorPtr> MakeIteratorInternal(const IteratorContext&,
                                           const std::string& prefix) const override {
    AsyncBufferOptions o;
    o.parallelism = 1;
    // AUTOTUNE starts at 2 (processor Capacity(1)); when the runtime tunes it is the knob
    // "buffer_size" (async_buffer.h). The memory budget bounds it anyway.
    o.capacity = buffer_size_;
    o.deterministic = 1;
    return IteratorPtr(new AsyncBufferIterator(
        shared(), prefix,
        std::make_unique<PrefetchProcessor>(StaticElementBytes(element_spec())), o));
  }

 private:
  int64_t buffer_size_;
};

}  // namespace

void RegisterPrefetchDataset(Registry* r) {
  r->RegisterOp(
      OpDef("Prefetch")
          .Summary("Produces up to buffer_size elements ahead of its consumer on its own "
                   "thread.")
          .Inputs(1)
          .Attr("buffer_size", AttrType::kInt, "Elements held, > 0, or AUTOTUNE (-1).")
          .Traits({.async = true,
                   .buffering = true,
                   .elementwise = true,
                   .seed_mix = SeedMix::kNone}),
      [](OpArgs args) -> Result<DatasetPtr> {
     SLUICE_ASSIGN_OR_RETURN(int64_t n, GetAttr<int64_t>(args.attrs, "Prefetch", "buffer_size"));
     if (n <= 0 && n != kAutotune) {
       return InvalidArgumentError("Prefetch: buffer_size must be > 0 or AUTOTUNE (-1), got " +
                                   std::to_string(n));
     }
     ElementSpec spec = args.inputs[0]->element_spec();
     return DatasetPtr(std::make_shared<PrefetchDataset>(std::move(args), std::move(spec), n));
   });
}

}  // namespace sluice
