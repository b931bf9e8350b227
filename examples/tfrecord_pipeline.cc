// A complete sluice pipeline over TFRecord shards of tf.train.Example records.
//
// 1. Writes 4 GZIP-compressed shards of 250 Examples each ({"x": int64[3], "label": int64})
//    with the public TFRecord writer and Example builder (sluice/io.h).
// 2. Reads them back: list_files -> interleave(tfrecord) -> map(parse_example) -> shuffle
//    -> batch -> repeat(2), checkpointing half-way and checking that a restored iterator
//    continues exactly like the original.
//
//   ./build/example_tfrecord_pipeline [DIR]
#include <cstdio>
#include <filesystem>
#include <string>

#include "sluice/dataset.h"
#include "sluice/io.h"

using namespace sluice;

namespace {

Status WriteShards(const std::string& dir) {
  for (int shard = 0; shard < 4; ++shard) {
    std::string path = dir + "/train-" + std::to_string(shard) + ".tfrecord.gz";
    SLUICE_ASSIGN_OR_RETURN(io::TFRecordWriter writer,
                            io::TFRecordWriter::Open(path, {.compression = "GZIP"}));
    for (int i = 0; i < 250; ++i) {
      int64_t id = shard * 250 + i;
      io::ExampleBuilder ex;
      ex.AddInt64("x", {id * 3, id * 3 + 1, id * 3 + 2}).AddInt64("label", id % 10);
      SLUICE_RETURN_IF_ERROR(writer.Write(ex.Serialize()));
    }
    SLUICE_RETURN_IF_ERROR(writer.Close());
  }
  return Status::OK();
}

Dataset Pipeline(const std::string& dir) {
  // Each file name becomes a TFRecord dataset; four are read round-robin.
  Function open_shard = Function::DatasetFunction(
      "open_shard",
      [](Element file, FunctionContext&) -> Result<Dataset> {
        return Dataset::TFRecord({file[0].scalar<std::string>()}, Compression::kGzip);
      },
      {}, [](const ElementSpec&) -> Result<ElementSpec> {  // records: string scalars
        return ElementSpec{{{DType::kString, PartialShape{}}}};
      });
  // A registered kernel: serializable, named, typed.
  Result<Function> parse = Function::Kernel(
      "parse_example",
      {{"keys", std::vector<std::string>{"x", "label"}},
       {"kinds", std::vector<std::string>{"fixed", "fixed"}},
       {"dtypes", std::vector<DType>{DType::kInt64, DType::kInt64}},
       {"shapes", std::vector<PartialShape>{PartialShape{3}, PartialShape{}}}});
  if (!parse.ok()) return Dataset(parse.status());
  return Dataset::ListFiles({dir + "/train-*.tfrecord.gz"}, /*shuffle=*/true, /*seed=*/7)
      .Interleave(open_shard, /*cycle_length=*/4, /*block_length=*/2)
      .Map(*parse)
      .Shuffle(/*buffer_size=*/200, /*seed=*/42)
      .Batch(32, /*drop_remainder=*/true)
      .Repeat(2);
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = argc > 1 ? argv[1]
                             : (std::filesystem::temp_directory_path() / "sluice_example").string();
  std::filesystem::create_directories(dir);
  if (Status s = WriteShards(dir); !s.ok()) {
    std::fprintf(stderr, "writing shards: %s\n", s.ToString().c_str());
    return 1;
  }
  Dataset ds = Pipeline(dir);
  if (!ds.ok()) {
    std::fprintf(stderr, "pipeline: %s\n", ds.status().ToString().c_str());
    return 1;
  }
  std::printf("element spec: %s\n", ds.element_spec().ToString().c_str());

  auto it = ds.MakeIterator();
  if (!it.ok()) return std::fprintf(stderr, "%s\n", it.status().ToString().c_str()), 1;
  std::vector<Element> batches;
  std::string checkpoint;
  size_t checkpoint_at = 0;
  while (true) {
    if (batches.size() == 40) {  // in the second epoch
      checkpoint = *(*it)->Save();
      checkpoint_at = batches.size();
    }
    auto next = (*it)->GetNext();
    if (!next.ok()) return std::fprintf(stderr, "%s\n", next.status().ToString().c_str()), 1;
    if (!*next) break;
    batches.push_back(std::move(**next));
  }
  std::printf("read %zu batches of 32 (2 epochs of 1000 examples, remainders dropped)\n",
              batches.size());

  // Every example's x is [3*id, 3*id+1, 3*id+2] and its label id % 10.
  for (const Element& b : batches) {
    const int64_t* x = b[0].data<int64_t>();
    const int64_t* label = b[1].data<int64_t>();
    for (int i = 0; i < 32; ++i) {
      int64_t id = x[3 * i] / 3;
      if (x[3 * i + 1] != 3 * id + 1 || label[i] != id % 10) {
        std::fprintf(stderr, "bad example in batch\n");
        return 1;
      }
    }
  }

  auto restored = ds.MakeIterator();
  if (Status s = (*restored)->Restore(checkpoint); !s.ok()) {
    return std::fprintf(stderr, "restore: %s\n", s.ToString().c_str()), 1;
  }
  for (size_t i = checkpoint_at; i < batches.size(); ++i) {
    auto next = (*restored)->GetNext();
    if (!next.ok() || !*next || !(**next).ContentEquals(batches[i])) {
      std::fprintf(stderr, "restored iterator differs at batch %zu\n", i);
      return 1;
    }
  }
  std::printf("checkpoint (%zu bytes) taken at batch %zu restores exactly\n", checkpoint.size(),
              checkpoint_at);
  return 0;
}
