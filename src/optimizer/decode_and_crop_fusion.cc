// decode_and_crop_fusion: Map(decode_jpeg | decode_image).Map(random_resized_crop) ->
// Map(decode_and_random_crop) (and the same for two ParallelMaps with equal
// `deterministic`, taking the larger parallelism). The fused kernel reads the JPEG header,
// samples the crop window and decodes only that window (src/ops/image/decode_kernels.cc).
//
// Exactness. The pixels equal the two kernels' for every valid JPEG (and PNG, for
// decode_image) under the same seed:
//  * the window is drawn by the same SampleRandomResizedCrop from the header's height and
//    width (what the decoded image's shape would be) with the crop map's seed and the
//    element's position: the fused map takes the crop map's seed;
//  * dct_scaling is set to false, so the window is decoded at full scale with the decode
//    kernel's channels and dct_method (DecodeJpegWindow gives exactly the full decode's
//    pixels of the window), then resized with the same filter and antialias setting,
//    which reads only pixels inside the window;
//  * attributes are carried over as the crop kernel read them (size, scale, ratio,
//    antialias; one component for both). Where the fused kernel would read them
//    differently or rejects them (scale with a 0 minimum or a maximum above 1), nothing is
//    rewritten.
// Differences on bad input only: data outside the window is not decoded, so corruption
// there goes unnoticed, and decode_jpeg given PNG bytes fails where the fused kernel
// decodes them.
#include "graph/registry.h"
#include "optimizer/pass.h"

namespace sluice {
namespace {

// A list of two numbers as the crop kernel reads it, or nullopt.
std::optional<std::vector<double>> PairOf(const AttrMap& attrs, const char* name,
                                          std::vector<double> fallback) {
  auto it = attrs.find(name);
  if (it == attrs.end()) return fallback;
  std::vector<double> v;
  if (const auto* d = std::get_if<std::vector<double>>(&it->second)) {
    v = *d;
  } else if (const auto* i = std::get_if<std::vector<int64_t>>(&it->second)) {
    v.assign(i->begin(), i->end());
  }
  if (v.size() != 2) return std::nullopt;
  return v;
}

// The crop size as random_resized_crop reads it (an int or a list of one or two).
std::optional<std::vector<int64_t>> SizeOf(const AttrMap& attrs) {
  auto it = attrs.find("size");
  if (it == attrs.end()) return std::nullopt;
  std::vector<int64_t> v;
  if (const auto* i = std::get_if<int64_t>(&it->second)) {
    v = {*i, *i};
  } else if (const auto* l = std::get_if<std::vector<int64_t>>(&it->second)) {
    v = *l;
    if (v.size() == 1) v.push_back(v[0]);
  }
  if (v.size() != 2) return std::nullopt;
  return v;
}

template <typename T>
T AttrOr(const AttrMap& attrs, const char* name, T fallback) {
  auto it = attrs.find(name);
  if (it == attrs.end()) return fallback;
  const T* v = std::get_if<T>(&it->second);
  return v ? *v : fallback;
}

// The fused kernel for decode `d` then crop `c`, or an invalid Function when the pair
// cannot be fused exactly.
Function FusedKernel(const Function& d, const Function& c) {
  if (!d.serializable() || !c.serializable()) return Function();
  if ((d.name() != "decode_jpeg" && d.name() != "decode_image") ||
      c.name() != "random_resized_crop") {
    return Function();
  }
  const AttrMap& da = d.attrs();
  const AttrMap& ca = c.attrs();
  const int64_t component = AttrOr<int64_t>(da, "component", 0);
  if (AttrOr<int64_t>(ca, "component", 0) != component) return Function();
  auto size = SizeOf(ca);
  auto scale = PairOf(ca, "scale", {0.08, 1.0});
  auto ratio = PairOf(ca, "ratio", {3.0 / 4.0, 4.0 / 3.0});
  if (!size || !scale || !ratio) return Function();
  AttrMap attrs{{"size", *size},
                {"scale", *scale},
                {"ratio", *ratio},
                {"antialias", AttrOr<bool>(ca, "antialias", true)},
                {"channels", AttrOr<int64_t>(da, "channels", 3)},
                {"dct_method", AttrOr<std::string>(da, "dct_method", "INTEGER_ACCURATE")},
                {"dct_scaling", false},
                {"component", component}};
  auto fused = Registry::Global().CreateKernel("decode_and_random_crop", std::move(attrs));
  return fused.ok() ? *fused : Function();
}

}  // namespace

std::unique_ptr<OptimizerPass> MakeDecodeAndCropFusionPass() {
  return std::make_unique<RulePass>(
      "decode_and_crop_fusion", /*on_by_default=*/true,
      [](const DatasetPtr& n, const RewriteContext& ctx) -> Result<DatasetPtr> {
        const bool parallel = IsOp(n, "ParallelMap");
        if (!parallel && !IsOp(n, "Map")) return DatasetPtr();
        const DatasetPtr& decode = n->input(0);
        if (decode->op() != n->op() || ctx.Shared(decode)) return DatasetPtr();
        Function fused = FusedKernel(decode->functions()[0], n->functions()[0]);
        if (!fused.valid()) return DatasetPtr();
        AttrMap attrs{{"seed", IntAttr(*n, "seed", 0)}};
        if (parallel) {
          const int64_t d = IntAttr(*n, "deterministic", -1);
          if (IntAttr(*decode, "deterministic", -1) != d) return DatasetPtr();
          attrs["deterministic"] = d;
          attrs["num_parallel_calls"] =
              LargerParallelism(IntAttr(*decode, "num_parallel_calls", kAutotune),
                                IntAttr(*n, "num_parallel_calls", kAutotune));
        }
        return RewriteContext::Make(n->op(), std::move(attrs), {decode->input(0)},
                                    {std::move(fused)});
      });
}

}  // namespace sluice
