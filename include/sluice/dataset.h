// The dataset API: Dataset (an immutable pipeline definition), Function (what map/filter/...
// apply), and Iterator (a stateful, checkpointable cursor over a Dataset).
//
// The names and semantics follow tf.data (Murray et al., VLDB 2021) so that people who know
// tf.data know sluice; C++ methods are CamelCase (Map for map, FlatMap for flat_map, ...).
//
//   using namespace sluice;
//   Dataset ds = Dataset::Range(1000)
//                    .Shuffle(100, /*seed=*/7)
//                    .Map(Function::Map("square", [](Element e, FunctionContext&) -> Result<Element> {
//                      int64_t v = e[0].scalar<int64_t>();
//                      return Element{Tensor::Scalar<int64_t>(v * v)};
//                    }))
//                    .Batch(32);
//   auto it = ds.MakeIterator();                    // Result<std::unique_ptr<Iterator>>
//   while (true) {
//     auto next = (*it)->GetNext();                 // Result<std::optional<Element>>
//     if (!next.ok()) { /* error: names the operator, file, offset */ break; }
//     if (!*next) break;                            // end of data
//     Use(**next);
//   }
//
// Errors in construction (bad arguments) do not throw: the Dataset carries the error, every
// further transformation passes it on, and MakeIterator() returns it. `ds.status()` shows it
// early.
//
// Thread-safety: Dataset and Function are immutable values, safe to share across threads.
// An Iterator is used by one thread at a time.
#ifndef SLUICE_DATASET_H_
#define SLUICE_DATASET_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "sluice/element.h"
#include "sluice/options.h"
#include "sluice/random.h"
#include "sluice/stats.h"
#include "sluice/status.h"
#include "sluice/tensor.h"

namespace sluice {

class DatasetNode;
class IteratorBase;
namespace internal {
struct DatasetAccess;  // src/graph/dataset_access.h
}  // namespace internal
class Dataset;
class Env;
class SplitProvider;  // src/runtime/split_provider.h

// Owns an internal iterator. Deleting one first unlinks it from its parent in the iterator
// tree, so a concurrent Cancel or stats snapshot never reaches a half-destroyed iterator.
struct IteratorDeleter {
  void operator()(IteratorBase* it) const;
};
using IteratorPtr = std::unique_ptr<IteratorBase, IteratorDeleter>;

// Tunable value meaning "let sluice choose" (tf.data.AUTOTUNE).
inline constexpr int64_t kAutotune = -1;
// Cardinality values (tf.data.INFINITE_CARDINALITY / UNKNOWN_CARDINALITY).
inline constexpr int64_t kInfiniteCardinality = -1;
inline constexpr int64_t kUnknownCardinality = -2;

// A typed attribute of an op or kernel. Attributes are what make a pipeline serializable.
using AttrValue =
    std::variant<bool, int64_t, double, std::string, DType, PartialShape, std::vector<int64_t>,
                 std::vector<double>, std::vector<std::string>, std::vector<DType>,
                 std::vector<PartialShape>, Tensor, std::vector<Tensor>>;
using AttrMap = std::map<std::string, AttrValue, std::less<>>;
std::string AttrValueDebugString(const AttrValue& v);

// Compression of record files (TFRecord, text lines, fixed-length records).
enum class Compression { kNone, kGzip, kZlib };
// "" / "NONE", "GZIP", "ZLIB" (the tf.data spellings).
Result<Compression> CompressionFromName(std::string_view name);
std::string_view CompressionName(Compression c);

// What a function sees besides its argument: the element's position in the op's input
// stream and a random generator keyed by (op seed, position). Draw all randomness from rng()
// so results do not depend on thread scheduling.
class FunctionContext {
 public:
  FunctionContext(uint64_t seed, int64_t position)
      : rng_(seed, static_cast<uint64_t>(position)), position_(position) {}
  int64_t position() const { return position_; }
  Rng& rng() { return rng_; }
  // GroupByWindow's reduce function: the window being reduced (its argument is the key).
  // Null elsewhere.
  const Dataset* window() const { return window_; }
  void set_window(const Dataset* w) { window_ = w; }
  // The pipeline's file system (src/core/env.h) for kernels that read files (read_file);
  // null means the default. Set by the ops that apply map functions.
  Env* env() const { return env_; }
  void set_env(Env* env) { env_ = env; }

  // Output slots: where the caller stores each output component anyway (MapAndBatch offers
  // the element's rows of the batch it assembles). A kernel that creates output component
  // `i` as a new tensor calls NewOutput(i, dtype, shape) and writes its result there: it
  // gets the slot offered for i when dtype and shape match exactly and the slot was not
  // handed out before in this call, else a newly allocated tensor (ResourceExhausted for
  // absurd sizes, as Tensor::Allocate). Writing into the slot saves copying the result
  // into the batch. Whoever applies several functions in a row (fusion) offers the slots
  // to the last one only: an earlier stage's output is read by a later one, so it must
  // not live where the final result goes. `slots` must outlive the call.
  void OfferOutputSlots(std::span<const Tensor> slots) {
    slots_ = slots;
    taken_ = 0;
  }
  std::span<const Tensor> output_slots() const { return slots_; }
  Result<Tensor> NewOutput(size_t component, DType dtype, const Shape& shape);

 private:
  Rng rng_;
  int64_t position_;
  const Dataset* window_ = nullptr;
  Env* env_ = nullptr;
  std::span<const Tensor> slots_;
  uint64_t taken_ = 0;  // bit i: slot i handed out (slots past 64 are never offered)
};

// A function applied by map, filter, flat_map, interleave, scan, reduce, group_by_window...
//
// Two kinds:
//  * registered kernels: a name plus typed attributes, looked up in the registry
//    (Function::Kernel("parse_example", {...})). Serializable, so they travel to service
//    workers, and visible to the optimizer.
//  * local callables: C++ lambdas (Function::Map/Predicate/DatasetFunction). Not serializable.
//
// A function has one of three signatures: element -> element (map, scan, reduce, key
// functions), element -> bool (filter), element -> Dataset (flat_map, interleave).
// An element -> element function whose output is a single bool scalar can also serve as a
// predicate. Every function declares whether it is random.
// What a function declares about itself.
struct FunctionTraits {
  bool is_random = false;
  // The function can be skipped when its output would be discarded (skip(), shuffle
  // restore): it has no side effects and its output count equals its input count.
  bool skippable = false;
  // The function keeps state between calls, has side effects, or must not run
  // concurrently with itself (Python callables, which hold the GIL). The optimizer never
  // parallelizes, fuses or reorders a stateful function.
  bool stateful = false;
  // Constant time per element, whatever its size: a view or a metadata change (identity,
  // select, expand_dims, reshape). Handing it to another thread would cost more than
  // running it, so map_parallelization leaves such maps sequential.
  bool cheap = false;
};

class Function {
 public:
  using ElementFn = std::function<Result<Element>(Element&&, FunctionContext&)>;
  using PredicateFn = std::function<Result<bool>(const Element&, FunctionContext&)>;
  using DatasetFn = std::function<Result<Dataset>(Element&&, FunctionContext&)>;
  // Optional static typing: the output spec for an input spec.
  using SpecFn = std::function<Result<ElementSpec>(const ElementSpec&)>;

  enum class Kind { kInvalid, kElement, kPredicate, kDataset };

  using Traits = FunctionTraits;

  Function() = default;

  // Local callables.
  static Function Map(std::string name, ElementFn fn, Traits traits = {}, SpecFn spec = nullptr);
  static Function Predicate(std::string name, PredicateFn fn, Traits traits = {});
  // `spec`, when given, is the element spec of the datasets fn returns (for an input
  // spec); interleave/flat_map then know their output spec and check each inner dataset.
  static Function DatasetFunction(std::string name, DatasetFn fn, Traits traits = {},
                                  SpecFn spec = nullptr);
  // A registered kernel; an error names the kernel when it is unknown or attrs are wrong.
  static Result<Function> Kernel(std::string_view name, AttrMap attrs = {});
  // Fusion (the optimizer's map_fusion and filter_fusion, src/optimizer/). Each stage runs
  // with FunctionContext(its own seed, the fused call's position), so its random draws are
  // the ones it made in its own op. The result is a local callable (not serializable:
  // rewrites run when an iterator is made, after serialization), named "a+b"; it is random
  // if either stage is, skippable if both are, stateful if either is.
  //   Compose:     x -> second(first(x)) (element functions; spec composed when declared).
  //   Conjunction: x -> first(x) && second(x), `second` not called when first is false
  //                (predicates, or element functions returning one bool).
  static Function Compose(const Function& first, uint64_t first_seed, const Function& second,
                          uint64_t second_seed);
  static Function Conjunction(const Function& first, uint64_t first_seed,
                              const Function& second, uint64_t second_seed);
  // Registry use only: wraps a kernel implementation.
  static Function MakeKernel(std::string name, AttrMap attrs, ElementFn fn, Traits traits,
                             SpecFn spec = nullptr, PredicateFn pred = nullptr,
                             DatasetFn dfn = nullptr);

  bool valid() const { return impl_ != nullptr; }
  Kind kind() const;
  const std::string& name() const;
  const AttrMap& attrs() const;
  bool serializable() const;  // true for registered kernels
  const Traits& traits() const;
  bool is_random() const { return traits().is_random; }

  // Applies an element function.
  Result<Element> operator()(Element in, FunctionContext& ctx) const;
  // Applies an element function in place (the runtime's path: no extra moves).
  Status Apply(Element* inout, FunctionContext& ctx) const;
  // Applies a predicate (or an element function returning one bool scalar).
  Result<bool> Test(const Element& in, FunctionContext& ctx) const;
  // Applies a dataset function.
  Result<Dataset> MakeDataset(Element in, FunctionContext& ctx) const;
  // Output spec for `in`, or nullopt when the function does not declare one.
  std::optional<Result<ElementSpec>> OutputSpec(const ElementSpec& in) const;

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

class Iterator;
class SpanRecorder;

// How an iterator runs: the CPU and RAM budgets of its pipeline (tf.data's
// Options.threading and autotune.ram_budget). One pipeline = one top-level iterator: it owns
// a thread pool of cpu_budget threads that every parallel operator in it shares, and a
// memory budget that every buffering operator respects.
struct RuntimeOptions {
  // Threads in the pipeline's pool. 0: the cores available to the process (CPU affinity
  // and cgroup quota respected).
  int64_t cpu_budget = 0;
  // Bytes that operator buffers may hold in total, a hard limit (see docs/runtime.md for
  // the exact guarantee). 0: half the memory available to the process; -1: unlimited.
  int64_t ram_budget = 0;
  // Order guarantee of parallel operators whose `deterministic` argument is unset.
  bool deterministic = true;
  // Run function calls on the operators' own threads instead of a pool (tests, debugging).
  bool inline_execution = false;
  // Tune AUTOTUNE parallelism and buffer sizes online (src/autotune/). When false they
  // stay where they start.
  bool autotune = true;
  // Where AUTOTUNE parallelism starts. 0: the CPU budget (as tf.data); the tuner then
  // moves it.
  int64_t initial_parallelism = 0;
  // Receives a span for every GetNext of every iterator of the pipeline (the profiler's
  // hook, src/runtime/span.h); not owned, must outlive the iterator. Null: nothing is
  // recorded and the hook costs one branch per call.
  SpanRecorder* span_recorder = nullptr;
  // The file system the pipeline reads and writes through (src/core/env.h; tests inject
  // faults with it); not owned, must outlive the iterator. Null: the POSIX default.
  Env* env = nullptr;
  // Options::files: when set, `env` is wrapped in a confined Env.
  FileOptions files;
  // The runtime view of user-facing Options (defaults resolved later by the Runtime).
  static RuntimeOptions FromOptions(const Options& options);
};

// An immutable pipeline definition: a node of the dataset graph plus its inputs.
class Dataset {
 public:
  Dataset();  // an invalid dataset (status: FailedPrecondition)
  explicit Dataset(std::shared_ptr<const DatasetNode> node);
  Dataset(Status error);  // NOLINT: a dataset carrying a construction error

  // Builds any registered op by name; all the methods below go through this.
  static Dataset FromOp(std::string_view op, AttrMap attrs, std::vector<Dataset> inputs = {},
                        std::vector<Function> functions = {});

  // ---- Sources ----
  // start, start+step, ... < stop (int64 scalars).
  static Dataset Range(int64_t stop);
  static Dataset Range(int64_t start, int64_t stop, int64_t step = 1);
  // One element.
  static Dataset FromTensors(Element element);
  // Slices each component along dimension 0 (all must share dim 0).
  static Dataset FromTensorSlices(Element element);
  // File names matching glob patterns (string scalars); sorted, then shuffled when `shuffle`
  // (seeded like Shuffle). Matching nothing is an error.
  static Dataset ListFiles(std::vector<std::string> patterns, bool shuffle = true,
                           std::optional<int64_t> seed = {});
  // Lines of text files without their line endings (string scalars).
  static Dataset TextLine(std::vector<std::string> files,
                          Compression compression = Compression::kNone);
  // Records of TFRecord files (string scalars); CRCs are verified.
  static Dataset TFRecord(std::vector<std::string> files,
                          Compression compression = Compression::kNone);
  // Fixed-size records after `header_bytes` and before `footer_bytes` (string scalars).
  static Dataset FixedLengthRecord(std::vector<std::string> files, int64_t record_bytes,
                                   int64_t header_bytes = 0, int64_t footer_bytes = 0,
                                   Compression compression = Compression::kNone);
  // Rows of an IDX file (the MNIST format), gzipped or not: a tensor of the file's dtype
  // with the file's shape minus dimension 0.
  static Dataset Idx(std::string path);
  // Files under root/<class>/..., classes sorted by name and numbered from 0: elements
  // (path: string, label: int64). `extensions` filters files (case-insensitive), empty = all.
  static Dataset ImageFolder(std::string root, std::vector<std::string> extensions = {});

  // ---- Transformations ----
  Dataset Map(Function fn) const;
  // Parallel map: up to num_parallel_calls (or kAutotune) calls of fn at once on the
  // pipeline's pool. deterministic (default: RuntimeOptions::deterministic) keeps the input
  // order; otherwise elements come out as they are ready, within a bounded buffer.
  Dataset Map(Function fn, int64_t num_parallel_calls,
              std::optional<bool> deterministic = {}) const;
  Dataset Filter(Function predicate) const;
  // Parallel filter: predicates evaluated as in the parallel Map.
  Dataset Filter(Function predicate, int64_t num_parallel_calls,
                 std::optional<bool> deterministic = {}) const;
  Dataset FlatMap(Function dataset_fn) const;
  // Pulls `block_length` elements from each of `cycle_length` datasets in turn.
  Dataset Interleave(Function dataset_fn, int64_t cycle_length, int64_t block_length = 1) const;
  // Parallel interleave: num_parallel_calls (or kAutotune) threads fetch from the cycle's
  // datasets into bounded per-input buffers, and the next inputs are opened ahead of time.
  // deterministic keeps the sequential interleave's order.
  Dataset Interleave(Function dataset_fn, int64_t cycle_length, int64_t block_length,
                     int64_t num_parallel_calls, std::optional<bool> deterministic = {}) const;
  Dataset Batch(int64_t batch_size, bool drop_remainder = false) const;
  // Parallel batch: batches are assembled (rows copied) on the pool, several at once.
  Dataset Batch(int64_t batch_size, bool drop_remainder, int64_t num_parallel_calls,
                std::optional<bool> deterministic = {}) const;
  // map(fn) then batch(batch_size) fused (tf.data map_and_batch): fn runs in parallel and
  // each result is copied straight into its row of the output batch.
  Dataset MapAndBatch(Function fn, int64_t batch_size, int64_t num_parallel_calls = kAutotune,
                      bool drop_remainder = false,
                      std::optional<bool> deterministic = {}) const;
  // Produces up to buffer_size (or kAutotune) elements ahead of the consumer on its own
  // thread.
  Dataset Prefetch(int64_t buffer_size) const;
  // Pads each component to `padded_shapes` (-1 or an empty list: the batch's longest) with
  // `padding_values` (default zero / "").
  Dataset PaddedBatch(int64_t batch_size, std::vector<PartialShape> padded_shapes = {},
                      std::vector<Tensor> padding_values = {},
                      bool drop_remainder = false) const;
  Dataset Unbatch() const;
  Dataset Shuffle(int64_t buffer_size, std::optional<int64_t> seed = {},
                  bool reshuffle_each_iteration = true) const;
  Dataset Repeat(int64_t count = -1) const;  // -1: forever
  Dataset Take(int64_t count) const;         // -1: all
  Dataset Skip(int64_t count) const;         // -1: all
  Dataset Shard(int64_t num_shards, int64_t index) const;
  static Dataset Zip(std::vector<Dataset> datasets);
  Dataset Concatenate(const Dataset& other) const;
  // (index: int64, element components...)
  Dataset Enumerate(int64_t start = 0) const;
  // In memory when `filename` is empty; otherwise in a file that outlives the process and
  // is reused once complete.
  Dataset Cache(std::string filename = "") const;
  // state' = fn(state..., element...), emits fn's outputs after the first
  // initial_state.size() components.
  Dataset Scan(Element initial_state, Function fn) const;
  // Windows of `size` elements taken every `shift` (default size) elements with `stride`
  // between members; each component is stacked (shape [window, ...]).
  Dataset Window(int64_t size, int64_t shift = -1, int64_t stride = 1,
                 bool drop_remainder = false) const;
  // Groups elements by key_fn (an int64 scalar), passes each full window (or what remains
  // at the end, in key order) to the dataset function reduce_fn and flattens the results.
  // reduce_fn is called with Element{key} and finds the window in ctx.window().
  Dataset GroupByWindow(Function key_fn, Function reduce_fn, int64_t window_size) const;
  // Buckets elements by length_fn and padded-batches each bucket.
  Dataset BucketBySequenceLength(Function length_fn, std::vector<int64_t> bucket_boundaries,
                                 std::vector<int64_t> bucket_batch_sizes,
                                 std::vector<PartialShape> padded_shapes = {},
                                 std::vector<Tensor> padding_values = {},
                                 bool pad_to_bucket_boundary = false,
                                 bool drop_remainder = false) const;
  // Drops elements whose computation failed, counting them (Iterator stats: "skipped").
  Dataset IgnoreErrors() const;

  // ---- Terminal ----
  // Folds the dataset: state = fn(state..., element...).
  Result<Element> Reduce(Element initial_state, Function fn) const;
  // All elements (for small datasets and tests).
  Result<std::vector<Element>> Collect() const;

  // ---- Options ----
  // This dataset with `options` merged over the options it carries (fields set in
  // `options` win). Transformations carry their inputs' options.
  Dataset WithOptions(const Options& options) const;
  const Options& options() const;

  // ---- Introspection ----
  bool ok() const { return node_ != nullptr; }
  Status status() const;
  // kInfiniteCardinality, kUnknownCardinality, or the number of elements.
  int64_t Cardinality() const;
  const ElementSpec& element_spec() const;
  const std::shared_ptr<const DatasetNode>& node() const { return node_; }

  // An iterator under this dataset's options(): the static rewrites they enable run first
  // (src/optimizer/), then AUTOTUNE knobs are tuned online within the budgets. The rewrite
  // runs once per Dataset value (copies share it): every iterator of this dataset runs the
  // same optimized graph, so state its nodes hold (a memory cache) carries across epochs.
  Result<std::unique_ptr<Iterator>> MakeIterator() const;
  // One line per rewrite pass the first MakeIterator() ran (or runs now): the pass, its
  // changes and time, or "disabled" (OptimizeReport::Lines).
  Result<std::vector<std::string>> OptimizationReport() const;
  // An iterator over the graph exactly as built (no static rewrites) with explicit
  // runtime settings; the dataset's options are ignored, except Options::files when
  // `options.files` sets nothing (confinement is never dropped). Tests and benchmarks of
  // single ops.
  Result<std::unique_ptr<Iterator>> MakeIterator(const RuntimeOptions& options) const;

  // ---- Split providers (docs/runtime.md, src/runtime/split_provider.h) ----
  // As the MakeIterator overloads above, but the pipeline's splittable source takes its
  // work from `provider` (null: reads everything), which several iterators may share:
  // together they produce each split's elements once. InvalidArgument unless the graph's
  // inputs lead to exactly one source and it is splittable, with no Repeat,
  // ShuffleAndRepeat or Cache between it and the output (the provider hands each split
  // out once). Datasets made by functions (interleave, flat_map) read all their data.
  // The iterator's checkpoints hold its position within its current split, not the
  // provider's state: save the provider yourself, after the iterators.
  Result<std::unique_ptr<Iterator>> MakeIterator(
      std::shared_ptr<SplitProvider> provider) const;
  Result<std::unique_ptr<Iterator>> MakeIterator(
      const RuntimeOptions& options, std::shared_ptr<SplitProvider> provider) const;
  // A new local provider over the single splittable source's splits: its files
  // (ListSplitProvider) for record-file sources, else IndexSplitProvider(its row count).
  // InvalidArgument (as above) when the graph has no or several sources.
  Result<std::shared_ptr<SplitProvider>> MakeSplitProvider() const;

 private:
  friend struct internal::DatasetAccess;
  static Result<std::unique_ptr<Iterator>> MakeIteratorOver(
      const std::shared_ptr<const DatasetNode>& graph, int64_t instance,
      const RuntimeOptions& options, std::shared_ptr<SplitProvider> provider = nullptr);

  std::shared_ptr<const DatasetNode> node_;
  std::shared_ptr<const Status> error_;
  std::shared_ptr<const Options> options_;  // null: default options
  // The optimized graph, computed by the first MakeIterator() and shared by copies; a new
  // one for every new node or options.
  struct OptimizedGraph;
  Result<std::shared_ptr<const OptimizedGraph>> Optimized() const;
  std::shared_ptr<OptimizedGraph> optimized_;
};

class Runtime;
class Autotuner;

// A stateful cursor over a Dataset. One thread calls GetNext/Save/Restore at a time;
// Cancel, Stats and Snapshot may be called from any thread.
//
// Destroying an iterator cancels it: its background threads stop within milliseconds (a
// user function already running is waited for) and are joined. If another thread is
// blocked in GetNext, it returns Cancelled and the destructor waits for it to leave.
class Iterator {
 public:
  ~Iterator();
  // The next element, std::nullopt at the end (and on every call after), or an error.
  // After an error the iterator can go on (the failed element is lost); ops that cannot
  // continue keep returning the error.
  Result<std::optional<Element>> GetNext();
  // A compact binary checkpoint of the position (see docs/checkpointing.md).
  Result<std::string> Save();
  // Restores a checkpoint taken from an iterator of the same dataset. Call on a fresh
  // iterator; continuing yields what the saved iterator would have yielded.
  Status Restore(std::string_view checkpoint);
  const ElementSpec& element_spec() const;
  // Stops all work: pending and later GetNext calls return Cancelled. Thread-safe.
  void Cancel();
  // Stats of every live iterator in the tree, root first.
  std::vector<IteratorStats> Stats() const;
  // The stats tree plus pipeline-wide figures. Thread-safe.
  PipelineStats Snapshot() const;
  // The current values of the knobs the autotuner owns (AUTOTUNE parallelism and buffer
  // sizes), in tree order. Empty when nothing is tuned. Thread-safe.
  std::vector<TunedParameter> TunedParameters() const;
  // The graph this iterator runs (after static rewrites).
  const std::shared_ptr<const DatasetNode>& dataset() const { return dataset_; }

 private:
  friend class Dataset;
  Iterator(std::shared_ptr<const DatasetNode> dataset, std::shared_ptr<Runtime> runtime,
           IteratorPtr root, int64_t instance, std::shared_ptr<SplitProvider> splits);
  std::shared_ptr<const DatasetNode> dataset_;
  std::shared_ptr<Runtime> runtime_;
  // This iterator's SplitConsumer of the shared provider; null without one.
  std::shared_ptr<SplitProvider> splits_;
  IteratorPtr root_;
  // Tunes the runtime's AUTOTUNE knobs on a background thread; null when off. Declared
  // after root_ so that it stops before the tree goes.
  std::unique_ptr<Autotuner> autotuner_;
  int64_t instance_;
  int64_t created_ns_;
  // Calls in progress, so the destructor can wait for a GetNext on another thread.
  std::unique_ptr<struct IteratorCalls> calls_;
};

}  // namespace sluice

#endif  // SLUICE_DATASET_H_
