// Enumerate: (index, input components...) with index = start, start + 1, ... As in
// tf.data (zip of a range and the input), an input error consumes an index.
#include "graph/attr.h"
#include "ops/op_util.h"
#include "ops/ops.h"
#include "runtime/iterator_base.h"

namespace sluice {
namespace {

// "index" followed by `names`, or null when `names` is null.
Names WithIndexName(const Names& names) {
  if (names == nullptr) return nullptr;
  std::vector<std::string> all{"index"};
  all.insert(all.end(), names->begin(), names->end());
  return MakeNames(std::move(all));
}

class EnumerateDataset : public DatasetNode {
 public:
  EnumerateDataset(OpArgs args, ElementSpec spec, int64_t start)
      : DatasetNode("Enumerate", std::move(args), std::move(spec)), start_(start) {}

  int64_t Cardinality() const override { return input(0)->Cardinality(); }
  int64_t start() const { return start_; }

 protected:
  Result<IteratorPtr> MakeIteratorInternal(
      const IteratorContext& ctx, const std::string& prefix) const override;

 private:
  const int64_t start_;
};

class EnumerateIterator : public UnaryIterator {
 public:
  EnumerateIterator(const EnumerateDataset* ds, const std::string& prefix)
      : UnaryIterator(ds->shared(), prefix), next_(ds->start()) {}

 protected:
  Result<std::optional<Element>> GetNextInternal() override {
    auto in = input_->GetNext();
    if (!in.ok()) {
      ++next_;
      return in.status();
    }
    if (!*in) return std::nullopt;
    std::vector<Tensor> out;
    out.reserve((*in)->size() + 1);
    out.push_back(Tensor::Scalar<int64_t>(next_++));
    for (Tensor& t : (*in)->tensors()) out.push_back(std::move(t));
    const ElementSpec& spec = node().element_spec();
    return Element(std::move(out),
                   spec.unknown ? WithIndexName((*in)->names()) : spec.names);
  }

  Result<int64_t> SkipInternal(int64_t n) override {
    SLUICE_ASSIGN_OR_RETURN(int64_t k, input_->Skip(n));
    next_ += k;
    return k;
  }

  Status SaveState(CheckpointWriter* w) const override {
    w->WriteInt(prefix(), "next", next_);
    return Status::OK();
  }

  Status RestoreState(const CheckpointReader& r) override {
    SLUICE_ASSIGN_OR_RETURN(next_, r.ReadInt(prefix(), "next"));
    return Status::OK();
  }

 private:
  int64_t next_;  // the next index
};

Result<IteratorPtr> EnumerateDataset::MakeIteratorInternal(
    const IteratorContext&, const std::string& prefix) const {
  return IteratorPtr(new EnumerateIterator(this, prefix));
}

}  // namespace

void RegisterEnumerateDataset(Registry* r) {
  r->RegisterOp(
      OpDef("Enumerate")
          .Summary("(index, element...) with index counting from start.")
          .Inputs(1)
          .Attr("start", AttrType::kInt, int64_t{0}, "The first index.")
          .Traits({.elementwise = true, .seed_mix = SeedMix::kNone}),
      [](OpArgs args) -> Result<DatasetPtr> {
     SLUICE_ASSIGN_OR_RETURN(int64_t start,
                             GetAttrOr<int64_t>(args.attrs, "Enumerate", "start", 0));
     const ElementSpec& in = args.inputs[0]->element_spec();
     ElementSpec spec = ElementSpec::Unknown();
     if (!in.unknown) {
       spec = ElementSpec();
       spec.components.push_back({DType::kInt64, PartialShape{}});
       spec.components.insert(spec.components.end(), in.components.begin(),
                              in.components.end());
       spec.names = WithIndexName(in.names);
     }
     return DatasetPtr(
         std::make_shared<EnumerateDataset>(std::move(args), std::move(spec), start));
   });
}

}  // namespace sluice
