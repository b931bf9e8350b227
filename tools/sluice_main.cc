// The `sluice` command line.
//
//   sluice demo [--data-dir DIR] [--imagenet-dir DIR] [--batch-size N] [--epochs N] [--json]
//   sluice datagen imagenet|text ...      (tools/datagen_command.cc)
//   sluice bench <suite> ...              (tools/bench_command.cc)
//   sluice plumber [spec.json] ...        (tools/plumber_command.cc)
//   sluice version
//
// Later parts of the system add plumber, profile, dispatcher and worker.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "commands.h"
#include "demo.h"
#include "sluice/dataset.h"

namespace sluice {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Fashion-MNIST's per-pixel mean and standard deviation (of x/255), as torchvision users use.
constexpr float kMean = 0.2860f, kStd = 0.3530f;

// uint8 [28, 28] image -> float32 [28, 28] normalized; label int64.
Function NormalizeImage() {
  return Function::Map(
      "normalize_fashion_mnist",
      [](Element e, FunctionContext&) -> Result<Element> {
        const Tensor& img = e[0];
        Tensor out(DType::kFloat32, img.shape());
        const uint8_t* src = img.data<uint8_t>();
        float* dst = out.mutable_data<float>();
        for (int64_t i = 0; i < img.num_elements(); ++i) {
          dst[i] = (static_cast<float>(src[i]) * (1.0f / 255.0f) - kMean) * (1.0f / kStd);
        }
        Tensor label = Tensor::Scalar<int64_t>(static_cast<int64_t>(e[1].scalar<uint8_t>()));
        return Element({std::move(out), std::move(label)}, MakeNames({"image", "label"}));
      },
      {}, [](const ElementSpec& in) -> Result<ElementSpec> {
        PartialShape image = in.unknown || in.size() < 1 ? PartialShape::UnknownRank()
                                                         : in[0].shape;
        return ElementSpec{{{DType::kFloat32, image}, {DType::kInt64, PartialShape{}}},
                           MakeNames({"image", "label"})};
      });
}

// The demo pipeline; `parallel` runs the map and batching on the pool and prefetches.
Dataset FashionMnist(const std::string& dir, int64_t batch_size, int64_t epochs, bool parallel) {
  Dataset images = Dataset::Idx(dir + "/train-images-idx3-ubyte.gz");
  Dataset labels = Dataset::Idx(dir + "/train-labels-idx1-ubyte.gz");
  Dataset shuffled = Dataset::Zip({images, labels}).Shuffle(10000, /*seed=*/42);
  if (!parallel) {
    // The baseline runs as built: the default rewrites would parallelize it.
    Options as_built;
    as_built.optimization.apply_default_optimizations = false;
    return shuffled.Map(NormalizeImage()).Batch(batch_size).Repeat(epochs).WithOptions(as_built);
  }
  return shuffled.MapAndBatch(NormalizeImage(), batch_size, kAutotune)
      .Prefetch(2)
      .Repeat(epochs);
}

// Reads a whole pipeline once; returns images/s (0 on error).
double Throughput(const Dataset& ds) {
  auto it = ds.MakeIterator();
  if (!it.ok()) return 0;
  auto start = Clock::now();
  int64_t images = 0;
  while (true) {
    auto next = (*it)->GetNext();
    if (!next.ok()) return 0;
    if (!*next) break;
    images += (**next)[1].num_elements();
  }
  return images / Seconds(start, Clock::now());
}

// The live iterator tree with the stats plane's figures, one line per iterator.
void PrintStatsTable(const PipelineStats& p) {
  std::printf("    %-28s %9s %9s %9s %9s %8s %5s\n", "iterator", "produced", "cpu ms", "wall ms",
              "MB out", "buffered", "par");
  std::vector<int> depth(p.nodes.size(), 0);
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    const IteratorStats& s = p.nodes[i];
    if (s.parent >= 0) depth[i] = depth[s.parent] + 1;
    std::string name = std::string(2 * depth[i], ' ') + s.name + (s.async ? " *" : "");
    std::printf("    %-28s %9ld %9.1f %9.1f %9.1f %8ld %5ld\n", name.c_str(),
                static_cast<long>(s.elements_produced), s.cpu_ns / 1e6, s.wall_ns / 1e6,
                s.bytes_produced / 1e6, static_cast<long>(s.buffered_elements),
                static_cast<long>(s.parallelism));
  }
  std::printf("    (* runs on its own threads; cpu = own work, inputs excluded; wall = time callers\n"
              "     spent in it; budget %ld threads, %.0f MB RAM, peak buffered %.1f MB)\n",
              static_cast<long>(p.cpu_budget), p.ram_budget / 1e6, p.peak_buffered_bytes / 1e6);
}

// A progress line that rewrites itself on a terminal and prints every few seconds otherwise.
class Progress {
 public:
  explicit Progress(bool enabled) : enabled_(enabled), tty_(isatty(STDERR_FILENO)) {}
  void Update(int64_t batches, int64_t elements, double secs, bool final = false) {
    if (!enabled_) return;
    double interval = tty_ ? 0.2 : 5.0;
    if (!final && secs - last_ < interval) return;
    last_ = secs;
    std::fprintf(stderr, "%s  %6ld batches  %8ld images  %7.1fs  %9.0f images/s%s",
                 tty_ ? "\r" : "", static_cast<long>(batches), static_cast<long>(elements), secs,
                 secs > 0 ? elements / secs : 0.0, tty_ && !final ? "" : "\n");
    std::fflush(stderr);
  }

 private:
  bool enabled_, tty_;
  double last_ = -1e9;
};

int RunDemo(const std::string& dir, const std::string& imagenet_dir, int64_t batch_size,
            int64_t epochs, bool json) {
  Dataset ds = FashionMnist(dir, batch_size, epochs, /*parallel=*/true);
  if (!ds.ok()) {
    std::fprintf(stderr, "sluice demo: cannot build the pipeline: %s\n", ds.status().ToString().c_str());
    std::fprintf(stderr, "(Fashion-MNIST comes from Debian's dataset-fashion-mnist; `make demo` installs it.)\n");
    return 1;
  }
  if (!json) {
    std::printf("sluice demo: Fashion-MNIST from %s\n", dir.c_str());
    std::printf("  pipeline : zip(idx(images), idx(labels)) -> shuffle(10000, seed=42)\n"
                "             -> map_and_batch(normalize, %ld, AUTOTUNE) -> prefetch(2)"
                " -> repeat(%ld)\n",
                static_cast<long>(batch_size), static_cast<long>(epochs));
    std::printf("  elements : %s\n", ds.element_spec().ToString().c_str());
    std::printf("  batches  : %ld expected\n", static_cast<long>(ds.Cardinality()));
  }
  auto it_or = ds.MakeIterator();
  if (!it_or.ok()) {
    std::fprintf(stderr, "sluice demo: %s\n", it_or.status().ToString().c_str());
    return 1;
  }
  std::unique_ptr<Iterator> it = std::move(it_or).value();

  Progress progress(!json);
  auto start = Clock::now();
  int64_t batches = 0, images = 0;
  int64_t label_counts[10] = {0};
  std::string checkpoint;
  std::optional<Element> batch_after_checkpoint;
  const int64_t checkpoint_at = 100;
  double save_ms = 0;
  PipelineStats stats;  // the live iterator tree, sampled mid-run
  while (true) {
    if (batches == checkpoint_at) {
      auto t0 = Clock::now();
      auto ck = it->Save();
      save_ms = Seconds(t0, Clock::now()) * 1e3;
      if (!ck.ok()) {
        std::fprintf(stderr, "\nsluice demo: checkpoint failed: %s\n", ck.status().ToString().c_str());
        return 1;
      }
      checkpoint = std::move(ck).value();
      stats = it->Snapshot();
    }
    auto next = it->GetNext();
    if (!next.ok()) {
      std::fprintf(stderr, "\nsluice demo: %s\n", next.status().ToString().c_str());
      return 1;
    }
    if (!*next) break;
    const Element& b = **next;
    if (batches == checkpoint_at) batch_after_checkpoint = b;
    const Tensor& labels = b[1];
    for (int64_t l : labels.flat<int64_t>()) {
      if (l >= 0 && l < 10) label_counts[l]++;
    }
    images += labels.num_elements();
    ++batches;
    progress.Update(batches, images, Seconds(start, Clock::now()));
  }
  double secs = Seconds(start, Clock::now());
  progress.Update(batches, images, secs, /*final=*/true);
  const PipelineStats final_stats = it->Snapshot();
  // The same job with every operator sequential, for the speed-up.
  const double sequential = Throughput(FashionMnist(dir, batch_size, epochs, /*parallel=*/false));

  // Restore the checkpoint in a fresh iterator and check it continues identically.
  bool restore_ok = false;
  if (!checkpoint.empty() && batch_after_checkpoint) {
    auto fresh = ds.MakeIterator();
    if (fresh.ok() && (*fresh)->Restore(checkpoint).ok()) {
      auto again = (*fresh)->GetNext();
      restore_ok = again.ok() && *again && (**again).ContentEquals(*batch_after_checkpoint);
    }
  }

  // Part two: the ImageNet-style pipeline on a generated set.
  auto run_imagenet = [&]() -> Result<ImagenetDemoResult> {
    if (!json) {
      std::printf("\nsluice demo: ImageNet-style JPEGs (generated once into %s)\n", imagenet_dir.c_str());
      std::printf("  pipeline : list_files -> interleave(tfrecord, 4) -> shuffle(1024) -> parse_example\n"
                  "             -> decode_and_random_crop(224) -> random_flip_left_right\n"
                  "             -> map_and_batch(normalize CHW, 128) -> prefetch(2)\n");
      std::fflush(stdout);
    }
    Result<ImagenetDemoResult> r = RunImagenetDemo(imagenet_dir, !json);
    if (!r.ok()) {
      std::fprintf(stderr, "sluice demo: ImageNet-style pipeline: %s\n", r.status().ToString().c_str());
    }
    return r;
  };

  if (json) {
    Result<ImagenetDemoResult> imagenet = run_imagenet();
    if (!imagenet.ok()) return 1;
    nlohmann::json j;
    j["imagenet"] = {{"generate_seconds", imagenet->generate_seconds},
                     {"batch_size", imagenet->batch_size},
                     {"batches", imagenet->batches},
                     {"images_per_second", imagenet->parallel_images_per_second},
                     {"sequential_images_per_second", imagenet->sequential_images_per_second}};
    j["dataset"] = "fashion-mnist";
    j["batches"] = batches;
    j["images"] = images;
    j["seconds"] = secs;
    j["images_per_second"] = secs > 0 ? images / secs : 0;
    j["label_counts"] = label_counts;
    j["checkpoint_bytes"] = checkpoint.size();
    j["checkpoint_save_ms"] = save_ms;
    j["checkpoint_restore_matches"] = restore_ok;
    j["sequential_images_per_second"] = sequential;
    // The stats plane in its one schema (include/sluice/stats.h).
    j["stats"] = nlohmann::json::parse(StatsToJson(final_stats));
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("  done     : %ld batches, %ld images in %.2f s = %.0f images/s (%ld threads)\n",
                static_cast<long>(batches), static_cast<long>(images), secs, images / secs,
                static_cast<long>(final_stats.cpu_budget));
    std::printf("  speed-up : %.2fx over the same pipeline run sequentially (%.0f images/s)\n",
                sequential > 0 ? images / secs / sequential : 0.0, sequential);
    std::printf("  labels   :");
    for (int64_t c : label_counts) std::printf(" %ld", static_cast<long>(c));
    std::printf("  (balanced: 6000 per class per epoch)\n");
    std::printf("  checkpoint at batch %ld: %zu bytes, saved in %.2f ms; restored iterator %s\n",
                static_cast<long>(checkpoint_at), checkpoint.size(), save_ms,
                restore_ok ? "continues identically" : "DIFFERS (bug!)");
    std::printf("  iterator tree at batch %ld:\n", static_cast<long>(checkpoint_at));
    PrintStatsTable(stats);
    std::fflush(stdout);
    Result<ImagenetDemoResult> imagenet = run_imagenet();
    if (!imagenet.ok()) return 1;
    const ImagenetDemoResult& r = *imagenet;
    if (r.generate_seconds > 0) std::printf("  generated: 1024 images in %.1f s\n", r.generate_seconds);
    std::printf("  done     : %ld batches of %ld after the first: %.0f images/s in parallel, "
                "%.0f images/s sequentially\n",
                static_cast<long>(r.batches), static_cast<long>(r.batch_size),
                r.parallel_images_per_second, r.sequential_images_per_second);
    std::printf("  speed-up : %.2fx (compare with PyTorch DataLoader: make bench-peers)\n",
                r.parallel_images_per_second / r.sequential_images_per_second);
  }
  return restore_ok ? 0 : 1;
}

}  // namespace
}  // namespace sluice

int main(int argc, char** argv) {
  CLI::App app{"sluice: a fast, self-tuning input pipeline engine for ML training"};
  app.require_subcommand(1);

  auto* demo = app.add_subcommand(
      "demo", "Run the main jobs: Fashion-MNIST and an ImageNet-style pipeline on generated JPEGs");
  std::string dir = "/usr/share/datasets/fashion-mnist";
  int64_t batch_size = 256, epochs = 1;
  bool json = false;
  demo->add_option("--data-dir", dir, "Directory with the Fashion-MNIST IDX files")->capture_default_str();
  demo->add_option("--batch-size", batch_size, "Batch size")->capture_default_str()->check(CLI::PositiveNumber);
  demo->add_option("--epochs", epochs, "Epochs")->capture_default_str()->check(CLI::PositiveNumber);
  std::string imagenet_dir = "data/demo-imagenet";
  demo->add_option("--imagenet-dir", imagenet_dir,
                   "Where the generated ImageNet-style set lives (made when missing)")->capture_default_str();
  demo->add_flag("--json", json, "Machine-readable output");

  app.add_subcommand("version", "Print the version")->callback([] { std::printf("sluice 0.1.0\n"); });

  int exit_code = 0;
  sluice::AddDatagenCommand(app, &exit_code);
  sluice::AddBenchCommand(app, &exit_code);
  sluice::AddSpecCommand(app, &exit_code);
  sluice::AddOpsCommand(app, &exit_code);
  sluice::AddPlumberCommand(app, &exit_code);
  sluice::AddServiceCommands(app, &exit_code);
  sluice::AddClusterCommand(app, &exit_code);
  sluice::AddProfileCommand(app, &exit_code);
  sluice::AddIndexCommand(app, &exit_code);

  CLI11_PARSE(app, argc, argv);
  if (demo->parsed()) return sluice::RunDemo(dir, imagenet_dir, batch_size, epochs, json);
  return exit_code;
}
