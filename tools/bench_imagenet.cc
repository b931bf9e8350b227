// sluice bench imagenet and sluice bench decode-loop.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "bench_suites.h"
#include "formats/image_codec.h"
#include "imagenet_pipeline.h"

namespace sluice {

Result<BenchResult> BenchImagenet(const BenchArgs& args) {
  ImagenetPipelineOptions opts;
  if (args.batch_size > 0) opts.batch_size = args.batch_size;
  opts.parallel = !args.sequential;
  if (args.parallelism != 0) opts.num_parallel_calls = args.parallelism;
  if (args.prefetch != 0) opts.prefetch_buffer = args.prefetch;
  Dataset ds = ImagenetPipeline(args.data, opts);
  SLUICE_ASSIGN_OR_RETURN(BenchResult r, TimePipeline(ds, args, "imagenet", [](const Element& b) {
                            return b[0].dim(0);
                          }));
  r.extra["batch_size"] = opts.batch_size;
  return r;
}

namespace {

// Every JPEG under data/train (the ImageFolder layout), read into memory, at most `limit`.
Result<std::vector<std::string>> LoadJpegs(const std::string& dir, size_t limit) {
  std::vector<std::string> paths;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    std::string ext = it->path().extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), ::tolower);
    if (it->is_regular_file() && (ext == ".jpeg" || ext == ".jpg")) paths.push_back(it->path());
  }
  if (ec) return NotFoundError("decode-loop: cannot list '" + dir + "': " + ec.message());
  if (paths.empty()) return NotFoundError("decode-loop: no JPEG files under '" + dir + "'");
  std::sort(paths.begin(), paths.end());
  if (paths.size() > limit) paths.resize(limit);
  std::vector<std::string> files;
  for (const auto& p : paths) {
    std::ifstream f(p, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    if (!f) return DataLossError("decode-loop: cannot read '" + p + "'");
    files.push_back(ss.str());
  }
  return files;
}

}  // namespace

// One thread per core, each decoding its share of the files in turn, as fast as it can:
// the rate no pipeline that fully decodes every image can beat on these cores.
Result<BenchResult> BenchDecodeLoop(const BenchArgs& args) {
  using Clock = std::chrono::steady_clock;
  SLUICE_ASSIGN_OR_RETURN(std::vector<std::string> files, LoadJpegs(args.data + "/train", 4096));
  const int64_t threads = std::max<int64_t>(1, args.threads);
  std::atomic<int> phase{0};  // 0 warm-up, 1 measuring, 2 stop
  std::vector<int64_t> counts(threads, 0);
  std::vector<Status> errors(threads);
  std::vector<std::thread> workers;
  for (int64_t t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      int64_t n = 0;
      for (size_t i = t; phase.load(std::memory_order_relaxed) < 2; i += threads) {
        auto img = DecodeJpeg(files[i % files.size()]);
        if (!img.ok()) {
          errors[t] = img.status();
          return;
        }
        if (phase.load(std::memory_order_relaxed) == 1) ++n;
      }
      counts[t] = n;
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(args.warmup_seconds));
  phase = 1;
  const auto start = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(args.seconds));
  phase = 2;
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  for (auto& w : workers) w.join();
  for (const Status& s : errors) SLUICE_RETURN_IF_ERROR(s);
  BenchResult r;
  r.suite = "decode-loop";
  for (int64_t c : counts) r.items += c;
  r.seconds = seconds;
  r.items_per_second = r.items / seconds;
  r.extra["files"] = files.size();
  return r;
}

}  // namespace sluice
