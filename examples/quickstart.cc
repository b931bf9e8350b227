// The first sluice pipeline: a source, a local map and filter, shuffle, batch, options,
// a checkpoint and its restore. Uses only the public headers (include/sluice/), so it
// builds against an installed sluice (find_package(sluice); tests/install/).
//
//   ./build/example_quickstart
//
// Prints the number of batches and the sum of the elements, then checks that an iterator
// restored from a checkpoint taken after the first batch yields what the original did.
#include <cstdint>
#include <cstdio>
#include <optional>
#include <vector>

#include "sluice/dataset.h"

using namespace sluice;

namespace {

Dataset Pipeline() {
  // x -> x * x, keeping the even squares.
  Function square = Function::Map(
      "square",
      [](Element e, FunctionContext&) -> Result<Element> {
        int64_t v = e[0].scalar<int64_t>();
        return Element{Tensor::Scalar<int64_t>(v * v)};
      },
      {.skippable = true});
  Function even = Function::Predicate(
      "even", [](const Element& e, FunctionContext&) -> Result<bool> {
        return e[0].scalar<int64_t>() % 2 == 0;
      });
  Options options;
  options.autotune.cpu_budget = 2;
  return Dataset::Range(100)
      .Map(square)
      .Filter(even)
      .Shuffle(16, /*seed=*/7)
      .Batch(8)
      .WithOptions(options);
}

// Every batch as a vector of values.
Result<std::vector<std::vector<int64_t>>> Drain(Iterator& it) {
  std::vector<std::vector<int64_t>> out;
  while (true) {
    SLUICE_ASSIGN_OR_RETURN(std::optional<Element> batch, it.GetNext());
    if (!batch) return out;
    const Tensor& t = (*batch)[0];
    std::vector<int64_t> values;
    for (int64_t i = 0; i < t.num_elements(); ++i) values.push_back(t.data<int64_t>()[i]);
    out.push_back(std::move(values));
  }
}

Status Run() {
  Dataset ds = Pipeline();
  SLUICE_RETURN_IF_ERROR(ds.status());
  SLUICE_ASSIGN_OR_RETURN(auto it, ds.MakeIterator());
  SLUICE_ASSIGN_OR_RETURN(std::optional<Element> first, it->GetNext());
  if (!first) return InternalError("no first batch");
  SLUICE_ASSIGN_OR_RETURN(std::string checkpoint, it->Save());
  SLUICE_ASSIGN_OR_RETURN(auto rest, Drain(*it));

  int64_t sum = 0;
  for (int64_t i = 0; i < (*first)[0].num_elements(); ++i) sum += (*first)[0].data<int64_t>()[i];
  for (const auto& b : rest) {
    for (int64_t v : b) sum += v;
  }
  std::printf("quickstart: %zu batches, sum %lld\n", rest.size() + 1,
              static_cast<long long>(sum));

  SLUICE_ASSIGN_OR_RETURN(auto restored, ds.MakeIterator());
  SLUICE_RETURN_IF_ERROR(restored->Restore(checkpoint));
  SLUICE_ASSIGN_OR_RETURN(auto again, Drain(*restored));
  if (again != rest) return InternalError("the restored iterator diverged");
  std::printf("quickstart: restored iterator matches\n");
  return Status::OK();
}

}  // namespace

int main() {
  Status s = Run();
  if (!s.ok()) {
    std::fprintf(stderr, "quickstart: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
