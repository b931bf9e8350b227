// parse_example on the two shapes of record the benchmarks read: an ImageNet-style
// Example (one ~100 KB JPEG in a bytes_list and an int64 label) and a tokenized text
// Example (256 int64 tokens), one at a time and in batches of 32. BM_ParseExample is
// sluice's kernel (the wire scanner, src/formats/example_parser.cc); BM_ProtobufParse
// does what sluice did before it, and what a protobuf-based parser must do: parse the
// message with protobuf, then copy the values out. Time per example is the figure.
//
//   ./build/example_parse_bench --benchmark_format=json
#include <benchmark/benchmark.h>

#include "formats/example_parser.h"
#include "formats/proto/example.pb.h"
#include "sluice/dataset.h"

namespace sluice {
namespace {

// kind 0: image/encoded (bytes, ~100 KB) + image/class/label; kind 1: 256 tokens.
std::string MakeRecord(int kind, int i) {
  tensorflow::Example ex;
  auto& map = *ex.mutable_features()->mutable_feature();
  if (kind == 0) {
    std::string jpeg(100'000 + 37 * i, '\0');
    for (size_t j = 0; j < jpeg.size(); ++j) jpeg[j] = static_cast<char>(j * 131 + i);
    map["image/encoded"].mutable_bytes_list()->add_value(jpeg);
    map["image/class/label"].mutable_int64_list()->add_value(i % 1000);
  } else {
    auto* tokens = map["tokens"].mutable_int64_list();
    for (int j = 0; j < 256; ++j) tokens->add_value((j * 7919 + i) % 32000);
  }
  return ex.SerializeAsString();
}

std::vector<FeatureConfig> Configs(int kind) {
  if (kind == 0) {
    return {{"image/encoded", FeatureKind::kFixed, DType::kString, Shape{}, Tensor()},
            {"image/class/label", FeatureKind::kFixed, DType::kInt64, Shape{}, Tensor()}};
  }
  return {{"tokens", FeatureKind::kVar, DType::kInt64, Shape{}, Tensor()}};
}

// range(0): record kind; range(1): examples per call (1: one Example, else a batch).
void BM_ParseExample(benchmark::State& state) {
  const int kind = static_cast<int>(state.range(0));
  const int64_t batch = state.range(1);
  std::vector<std::string> records;
  for (int i = 0; i < batch; ++i) records.push_back(MakeRecord(kind, i));
  const std::vector<FeatureConfig> configs = Configs(kind);
  for (auto _ : state) {
    auto out = ParseExamples(records, batch > 1, configs, "bench");
    if (!out.ok()) state.SkipWithError(out.status().ToString().c_str());
    benchmark::DoNotOptimize(out);
  }
  state.SetItemsProcessed(state.iterations() * batch);
}

// The same output through protobuf messages: parse each Example, look the keys up, copy.
void BM_ProtobufParse(benchmark::State& state) {
  const int kind = static_cast<int>(state.range(0));
  const int64_t batch = state.range(1);
  std::vector<std::string> records;
  for (int i = 0; i < batch; ++i) records.push_back(MakeRecord(kind, i));
  for (auto _ : state) {
    google::protobuf::Arena arena;
    Tensor first(kind == 0 ? DType::kString : DType::kInt64,
                 kind == 0 ? Shape{batch} : Shape{batch, 256});
    Tensor labels(DType::kInt64, Shape{batch});
    for (int64_t b = 0; b < batch; ++b) {
      auto* ex = google::protobuf::Arena::CreateMessage<tensorflow::Example>(&arena);
      if (!ex->ParseFromString(records[b])) state.SkipWithError("parse");
      const auto& map = ex->features().feature();
      if (kind == 0) {
        first.mutable_data<std::string>()[b] = map.at("image/encoded").bytes_list().value(0);
        labels.mutable_data<int64_t>()[b] = map.at("image/class/label").int64_list().value(0);
      } else {
        const auto& v = map.at("tokens").int64_list().value();
        std::copy(v.begin(), v.end(), first.mutable_data<int64_t>() + b * 256);
      }
    }
    benchmark::DoNotOptimize(first);
    benchmark::DoNotOptimize(labels);
  }
  state.SetItemsProcessed(state.iterations() * batch);
}

void Args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"kind", "batch"});
  for (int kind : {0, 1}) {
    for (int batch : {1, 32}) b->Args({kind, batch});
  }
}
BENCHMARK(BM_ParseExample)->Apply(Args);
BENCHMARK(BM_ProtobufParse)->Apply(Args);

}  // namespace
}  // namespace sluice

BENCHMARK_MAIN();
