// The fluent Dataset API (every method builds a node through Dataset::FromOp,
// src/api/builtins.cc), MakeIterator with its static rewrites and autotuning, and the
// Iterator. The API layer: nothing below src/api/ includes or calls it.
#include "sluice/dataset.h"

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "api/dataset_internal.h"
#include "api/serialize_internal.h"
#include "autotune/autotuner.h"
#include "core/logging.h"
#include "graph/dataset_access.h"
#include "graph/registry.h"
#include "optimizer/optimizer.h"
#include "runtime/exception_status.h"
#include "runtime/iterator_base.h"
#include "runtime/runtime.h"
#include "runtime/split_provider.h"

namespace sluice {

// ---- Dataset ----

namespace {
std::vector<std::string> NamesOf(const Element& e) {
  return e.names() ? *e.names() : std::vector<std::string>{};
}
int64_t SeedAttr(std::optional<int64_t> seed) { return static_cast<int64_t>(ResolveSeed(seed)); }
int64_t SeedFor(const Function& f) { return f.is_random() ? SeedAttr(std::nullopt) : 0; }
}  // namespace

Dataset Dataset::Range(int64_t stop) { return Range(0, stop, 1); }
Dataset Dataset::Range(int64_t start, int64_t stop, int64_t step) {
  return FromOp("Range", {{"start", start}, {"stop", stop}, {"step", step}});
}
Dataset Dataset::FromTensors(Element element) {
  return FromOp("FromTensors", {{"components", element.ToVector()}, {"names", NamesOf(element)}});
}
Dataset Dataset::FromTensorSlices(Element element) {
  return FromOp("FromTensorSlices",
                {{"components", element.ToVector()}, {"names", NamesOf(element)}});
}
Dataset Dataset::ListFiles(std::vector<std::string> patterns, bool shuffle,
                           std::optional<int64_t> seed) {
  return FromOp("ListFiles", {{"patterns", std::move(patterns)},
                              {"shuffle", shuffle},
                              {"seed", shuffle ? SeedAttr(seed) : int64_t{0}}});
}
Dataset Dataset::TextLine(std::vector<std::string> files, Compression compression) {
  return FromOp("TextLine", {{"filenames", std::move(files)},
                             {"compression", std::string(CompressionName(compression))}});
}
Dataset Dataset::TFRecord(std::vector<std::string> files, Compression compression) {
  return FromOp("TFRecord", {{"filenames", std::move(files)},
                             {"compression", std::string(CompressionName(compression))}});
}
Dataset Dataset::FixedLengthRecord(std::vector<std::string> files, int64_t record_bytes,
                                   int64_t header_bytes, int64_t footer_bytes,
                                   Compression compression) {
  return FromOp("FixedLengthRecord",
                {{"filenames", std::move(files)},
                 {"record_bytes", record_bytes},
                 {"header_bytes", header_bytes},
                 {"footer_bytes", footer_bytes},
                 {"compression", std::string(CompressionName(compression))}});
}
Dataset Dataset::Idx(std::string path) { return FromOp("Idx", {{"path", std::move(path)}}); }
Dataset Dataset::ImageFolder(std::string root, std::vector<std::string> extensions) {
  return FromOp("ImageFolder", {{"root", std::move(root)}, {"extensions", std::move(extensions)}});
}

Dataset Dataset::Map(Function fn) const {
  int64_t seed = SeedFor(fn);
  return FromOp("Map", {{"seed", seed}}, {*this}, {std::move(fn)});
}
Dataset Dataset::Filter(Function predicate) const {
  int64_t seed = SeedFor(predicate);
  return FromOp("Filter", {{"seed", seed}}, {*this}, {std::move(predicate)});
}
namespace {
// The tri-state "deterministic" attribute: -1 unset (the runtime's default), 0, 1.
int64_t DeterministicAttr(std::optional<bool> d) { return d ? (*d ? 1 : 0) : -1; }
}  // namespace

Dataset Dataset::Map(Function fn, int64_t num_parallel_calls,
                     std::optional<bool> deterministic) const {
  int64_t seed = SeedFor(fn);
  return FromOp("ParallelMap",
                {{"seed", seed},
                 {"num_parallel_calls", num_parallel_calls},
                 {"deterministic", DeterministicAttr(deterministic)}},
                {*this}, {std::move(fn)});
}
Dataset Dataset::Filter(Function predicate, int64_t num_parallel_calls,
                        std::optional<bool> deterministic) const {
  int64_t seed = SeedFor(predicate);
  return FromOp("ParallelFilter",
                {{"seed", seed},
                 {"num_parallel_calls", num_parallel_calls},
                 {"deterministic", DeterministicAttr(deterministic)}},
                {*this}, {std::move(predicate)});
}
Dataset Dataset::Interleave(Function dataset_fn, int64_t cycle_length, int64_t block_length,
                            int64_t num_parallel_calls,
                            std::optional<bool> deterministic) const {
  int64_t seed = SeedFor(dataset_fn);
  return FromOp("ParallelInterleave",
                {{"seed", seed},
                 {"cycle_length", cycle_length},
                 {"block_length", block_length},
                 {"num_parallel_calls", num_parallel_calls},
                 {"deterministic", DeterministicAttr(deterministic)}},
                {*this}, {std::move(dataset_fn)});
}
Dataset Dataset::Batch(int64_t batch_size, bool drop_remainder, int64_t num_parallel_calls,
                       std::optional<bool> deterministic) const {
  return FromOp("ParallelBatch",
                {{"batch_size", batch_size},
                 {"drop_remainder", drop_remainder},
                 {"num_parallel_calls", num_parallel_calls},
                 {"deterministic", DeterministicAttr(deterministic)}},
                {*this});
}
Dataset Dataset::MapAndBatch(Function fn, int64_t batch_size, int64_t num_parallel_calls,
                             bool drop_remainder, std::optional<bool> deterministic) const {
  int64_t seed = SeedFor(fn);
  return FromOp("MapAndBatch",
                {{"seed", seed},
                 {"batch_size", batch_size},
                 {"drop_remainder", drop_remainder},
                 {"num_parallel_calls", num_parallel_calls},
                 {"deterministic", DeterministicAttr(deterministic)}},
                {*this}, {std::move(fn)});
}
Dataset Dataset::Prefetch(int64_t buffer_size) const {
  return FromOp("Prefetch", {{"buffer_size", buffer_size}}, {*this});
}
Dataset Dataset::FlatMap(Function dataset_fn) const {
  int64_t seed = SeedFor(dataset_fn);
  return FromOp("FlatMap", {{"seed", seed}}, {*this}, {std::move(dataset_fn)});
}
Dataset Dataset::Interleave(Function dataset_fn, int64_t cycle_length,
                            int64_t block_length) const {
  int64_t seed = SeedFor(dataset_fn);
  return FromOp("Interleave",
                {{"seed", seed}, {"cycle_length", cycle_length}, {"block_length", block_length}},
                {*this}, {std::move(dataset_fn)});
}
Dataset Dataset::Batch(int64_t batch_size, bool drop_remainder) const {
  return FromOp("Batch", {{"batch_size", batch_size}, {"drop_remainder", drop_remainder}}, {*this});
}
Dataset Dataset::PaddedBatch(int64_t batch_size, std::vector<PartialShape> padded_shapes,
                             std::vector<Tensor> padding_values, bool drop_remainder) const {
  return FromOp("PaddedBatch",
                {{"batch_size", batch_size},
                 {"padded_shapes", std::move(padded_shapes)},
                 {"padding_values", std::move(padding_values)},
                 {"drop_remainder", drop_remainder}},
                {*this});
}
Dataset Dataset::Unbatch() const { return FromOp("Unbatch", {}, {*this}); }
Dataset Dataset::Shuffle(int64_t buffer_size, std::optional<int64_t> seed,
                         bool reshuffle_each_iteration) const {
  return FromOp("Shuffle",
                {{"buffer_size", buffer_size},
                 {"seed", SeedAttr(seed)},
                 {"reshuffle_each_iteration", reshuffle_each_iteration}},
                {*this});
}
Dataset Dataset::GlobalShuffle(std::optional<int64_t> seed,
                               bool reshuffle_each_iteration) const {
  return FromOp("GlobalShuffle",
                {{"seed", SeedAttr(seed)},
                 {"reshuffle_each_iteration", reshuffle_each_iteration}},
                {*this});
}
Dataset Dataset::Repeat(int64_t count) const { return FromOp("Repeat", {{"count", count}}, {*this}); }
Dataset Dataset::Take(int64_t count) const { return FromOp("Take", {{"count", count}}, {*this}); }
Dataset Dataset::Skip(int64_t count) const { return FromOp("Skip", {{"count", count}}, {*this}); }
Dataset Dataset::Shard(int64_t num_shards, int64_t index) const {
  return FromOp("Shard", {{"num_shards", num_shards}, {"index", index}}, {*this});
}
Dataset Dataset::Zip(std::vector<Dataset> datasets) {
  return FromOp("Zip", {}, std::move(datasets));
}
Dataset Dataset::TakeWhile(Function predicate) const {
  int64_t seed = SeedFor(predicate);
  return FromOp("TakeWhile", {{"seed", seed}}, {*this}, {std::move(predicate)});
}
Dataset Dataset::Unique() const { return FromOp("Unique", {}, {*this}); }
Dataset Dataset::RejectionResample(Function class_func, std::vector<double> target_dist,
                                   std::vector<double> initial_dist,
                                   std::optional<int64_t> seed) const {
  return FromOp("RejectionResample",
                {{"target_dist", std::move(target_dist)},
                 {"initial_dist", std::move(initial_dist)},
                 {"seed", SeedAttr(seed)}},
                {*this}, {std::move(class_func)});
}
Dataset Dataset::Rebatch(std::vector<int64_t> batch_sizes, bool drop_remainder) const {
  return FromOp("Rebatch",
                {{"batch_sizes", std::move(batch_sizes)}, {"drop_remainder", drop_remainder}},
                {*this});
}
Dataset Dataset::Random(std::optional<int64_t> seed, bool rerandomize_each_iteration) {
  return FromOp("Random", {{"seed", SeedAttr(seed)},
                           {"rerandomize_each_iteration", rerandomize_each_iteration}});
}
Dataset Dataset::ChooseFromDatasets(std::vector<Dataset> datasets, const Dataset& choice,
                                    bool stop_on_empty_dataset) {
  datasets.insert(datasets.begin(), choice);
  return FromOp("ChooseFromDatasets", {{"stop_on_empty_dataset", stop_on_empty_dataset}},
                std::move(datasets));
}
Dataset Dataset::SampleFromDatasets(std::vector<Dataset> datasets,
                                    std::vector<double> weights,
                                    std::optional<int64_t> seed,
                                    bool stop_on_empty_dataset,
                                    bool rerandomize_each_iteration) {
  if (weights.empty()) weights.assign(datasets.size(), 1.0);
  return FromOp("SampleFromDatasets",
                {{"weights", std::move(weights)},
                 {"seed", SeedAttr(seed)},
                 {"stop_on_empty_dataset", stop_on_empty_dataset},
                 {"rerandomize_each_iteration", rerandomize_each_iteration}},
                std::move(datasets));
}
Dataset Dataset::Concatenate(const Dataset& other) const {
  return FromOp("Concatenate", {}, {*this, other});
}
Dataset Dataset::Enumerate(int64_t start) const {
  return FromOp("Enumerate", {{"start", start}}, {*this});
}
Dataset Dataset::Cache(std::string filename) const {
  return FromOp("Cache", {{"filename", std::move(filename)}}, {*this});
}
Dataset Dataset::Scan(Element initial_state, Function fn) const {
  int64_t seed = SeedFor(fn);
  return FromOp("Scan", {{"initial_state", initial_state.ToVector()}, {"seed", seed}}, {*this},
                {std::move(fn)});
}
Dataset Dataset::Window(int64_t size, int64_t shift, int64_t stride, bool drop_remainder) const {
  return FromOp("Window",
                {{"size", size},
                 {"shift", shift < 0 ? size : shift},
                 {"stride", stride},
                 {"drop_remainder", drop_remainder}},
                {*this});
}
Dataset Dataset::GroupByWindow(Function key_fn, Function reduce_fn, int64_t window_size) const {
  int64_t seed = (key_fn.is_random() || reduce_fn.is_random()) ? SeedAttr(std::nullopt) : 0;
  return FromOp("GroupByWindow", {{"window_size", window_size}, {"seed", seed}}, {*this},
                {std::move(key_fn), std::move(reduce_fn)});
}
Dataset Dataset::BucketBySequenceLength(Function length_fn,
                                        std::vector<int64_t> bucket_boundaries,
                                        std::vector<int64_t> bucket_batch_sizes,
                                        std::vector<PartialShape> padded_shapes,
                                        std::vector<Tensor> padding_values,
                                        bool pad_to_bucket_boundary,
                                        bool drop_remainder) const {
  return FromOp("BucketBySequenceLength",
                {{"bucket_boundaries", std::move(bucket_boundaries)},
                 {"bucket_batch_sizes", std::move(bucket_batch_sizes)},
                 {"padded_shapes", std::move(padded_shapes)},
                 {"padding_values", std::move(padding_values)},
                 {"pad_to_bucket_boundary", pad_to_bucket_boundary},
                 {"drop_remainder", drop_remainder}},
                {*this}, {std::move(length_fn)});
}
Dataset Dataset::IgnoreErrors() const { return FromOp("IgnoreErrors", {}, {*this}); }

Result<Element> Dataset::Reduce(Element initial_state, Function fn) const {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<Iterator> it, MakeIterator());
  Element state = std::move(initial_state);
  uint64_t seed = fn.is_random() ? ResolveSeed(std::nullopt) : 0;
  for (int64_t pos = 0;; ++pos) {
    SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, it->GetNext());
    if (!e) break;
    Element args(state.tensors());
    for (Tensor& t : e->tensors()) args.push_back(std::move(t));
    FunctionContext ctx(seed, pos);
    SLUICE_ASSIGN_OR_RETURN(Element next, fn(std::move(args), ctx));
    if (next.size() != state.size()) {
      return InvalidArgumentError("reduce: function '" + fn.name() + "' returned " +
                                  std::to_string(next.size()) + " components for a state of " +
                                  std::to_string(state.size()));
    }
    state = std::move(next);
  }
  return state;
}

Result<std::vector<Element>> Dataset::Collect() const {
  if (Cardinality() == kInfiniteCardinality) {
    return InvalidArgumentError("Collect() on an infinite dataset");
  }
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<Iterator> it, MakeIterator());
  std::vector<Element> out;
  while (true) {
    SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, it->GetNext());
    if (!e) break;
    out.push_back(std::move(*e));
  }
  return out;
}

// ---- Iterator ----

// Calls in progress on an Iterator, so that destroying it from another thread waits for a
// GetNext there to return (after Cancel has woken it). The destructor polls: it only waits
// when another thread is inside a call, and a caller must not touch the state after
// leaving, so no notification is sent.
struct IteratorCalls {
  std::atomic<int64_t> active{0};
  // Set by Cancel: GetNext returns Cancelled from then on, also after a Restore.
  std::atomic<bool> cancelled{false};
  // Guards root_ against Restore replacing it while Cancel/Stats/Snapshot (any thread)
  // walk it. GetNext/Save/Restore are called by one thread at a time and need no lock.
  std::mutex root_mu;
  // PipelineFingerprint of the graph, computed by the first Save/Restore (which are
  // called by one thread at a time).
  std::string fingerprint;
};

// What an Iterator holds (sluice/iterator.h).
struct Iterator::Impl {
  // The graph this iterator runs (after static rewrites).
  DatasetPtr dataset;
  std::shared_ptr<Runtime> runtime;
  // This iterator's SplitConsumer of the shared provider; null without one.
  std::shared_ptr<SplitProvider> splits;
  IteratorPtr root;
  // Tunes the runtime's AUTOTUNE knobs on a background thread; null when off. Declared
  // after root so that it stops before the tree goes.
  std::unique_ptr<Autotuner> autotuner;
  // Where tuning starts from and hands its end state to (Carry-over in
  // autotune/autotuner.h); null for graphs not cached by a Dataset.
  std::shared_ptr<const internal::DatasetAccess::OptimizedGraph> tuned;
  bool tuned_stored = false;  // at the end of input (GetNext's thread only)
  int64_t instance = 0;
  int64_t created_ns = 0;
  // Calls in progress, so the destructor can wait for a GetNext on another thread.
  std::unique_ptr<IteratorCalls> calls;
};

namespace {
constexpr std::string_view kRootPrefix = "Root";
// What Iterator::Save writes under Root besides the tree: 2 adds "version" and
// "fingerprint" (1 had neither). See docs/checkpointing.md.
constexpr int64_t kCheckpointVersion = 2;

const std::string& CachedFingerprint(IteratorCalls* calls,
                                     const std::shared_ptr<const DatasetNode>& graph) {
  if (calls->fingerprint.empty()) calls->fingerprint = PipelineFingerprint(graph);
  return calls->fingerprint;
}
// Hands an iterator's tuned state to the next iterator of its graph (Carry-over in
// autotune/autotuner.h).
void StoreTuned(const std::shared_ptr<const internal::DatasetAccess::OptimizedGraph>& graph,
                const TunedState& state) {
  if (graph == nullptr) return;
  std::lock_guard<std::mutex> l(graph->tuned_mu);
  graph->tuned.Merge(state);
}
IteratorContext RootContext(int64_t instance, Runtime* rt,
                            std::shared_ptr<SplitProvider> splits) {
  IteratorContext ctx;
  ctx.seed_mix = Mix64(static_cast<uint64_t>(instance));
  ctx.runtime_ptr = rt;
  ctx.split_provider = std::move(splits);
  return ctx;
}

// Ops a split provider cannot pass through: they read their input more than once.
bool RereadsInput(const DatasetNode& node, const OpDef* def) {
  return node.op() == "Repeat" || node.op() == "ShuffleAndRepeat" ||
         (def != nullptr && def->traits().stateful);
}

// Collects the sources the inputs of `node` lead to (a source reached along two paths
// counts twice: it gets two iterators), and the first op that rereads its input.
void CollectSources(const DatasetNode& node, std::vector<const DatasetNode*>* sources,
                    const DatasetNode** rereader) {
  const OpDef* def = FindOpDef(node);
  if (node.inputs().empty() || (def != nullptr && def->traits().source)) {
    sources->push_back(&node);
    return;
  }
  if (*rereader == nullptr && RereadsInput(node, def)) *rereader = &node;
  for (const DatasetPtr& in : node.inputs()) CollectSources(*in, sources, rereader);
}

// The single splittable source a split provider feeds, or InvalidArgument.
Result<const DatasetNode*> SplittableSource(const DatasetNode& root) {
  std::vector<const DatasetNode*> sources;
  const DatasetNode* rereader = nullptr;
  CollectSources(root, &sources, &rereader);
  const std::string what = "split provider: ";
  if (sources.size() != 1) {
    std::string names;
    for (const DatasetNode* n : sources) names += (names.empty() ? "" : ", ") + n->op();
    return InvalidArgumentError(what + "the pipeline reads " +
                                std::to_string(sources.size()) + " sources (" + names +
                                "); a provider feeds exactly one splittable source");
  }
  const OpDef* def = FindOpDef(*sources[0]);
  if (def == nullptr || !def->traits().splittable) {
    return InvalidArgumentError(what + "the pipeline's source " + sources[0]->op() +
                                " is not splittable");
  }
  if (rereader != nullptr) {
    return InvalidArgumentError(what + rereader->op() + " reads its input again, but a " +
                                "provider hands each split out once; apply it after "
                                "making the iterators' union, or Reset the provider");
  }
  return sources[0];
}

// Marks a call in progress. Calls are serialized by the Iterator contract, so the counter
// has one writer: entering needs one full fence (an atomic exchange; it orders the mark
// before the cancelled check, against the destructor's cancel-then-check), leaving is a
// plain release store.
class ActiveCall {
 public:
  explicit ActiveCall(IteratorCalls* c) : c_(c) {
    c_->active.exchange(1, std::memory_order_seq_cst);
  }
  ~ActiveCall() { c_->active.store(0, std::memory_order_release); }

 private:
  IteratorCalls* c_;
};
}  // namespace

Result<std::unique_ptr<Iterator>> internal::IteratorAccess::Make(
    const DatasetPtr& graph, int64_t instance, const Options& options,
    std::shared_ptr<SplitProvider> provider,
    std::shared_ptr<const internal::DatasetAccess::OptimizedGraph> tuned) {
  try {
    std::shared_ptr<SplitProvider> splits;
    if (provider != nullptr) {
      SLUICE_RETURN_IF_ERROR(SplittableSource(*graph).status());
      splits = std::make_shared<SplitConsumer>(std::move(provider));
    }
    auto runtime = std::make_shared<Runtime>(RuntimeOptions::FromOptions(options));
    runtime->SetGraph(graph);
    if (tuned != nullptr && runtime->autotune()) {
      // Before the tree: its knobs start at these values as they register.
      std::lock_guard<std::mutex> l(tuned->tuned_mu);
      if (!tuned->tuned.values.empty()) {
        runtime->tunables().Preload(tuned->tuned.values);
        SLUICE_LOG(kInfo) << "autotune: starting from " << tuned->tuned.values.size()
                         << " values an earlier iterator of this dataset tuned";
      }
    }
    SLUICE_ASSIGN_OR_RETURN(
        IteratorPtr root, graph->MakeIterator(RootContext(instance, runtime.get(), splits),
                                              std::string(kRootPrefix)));
    auto impl = std::make_unique<Iterator::Impl>();
    impl->dataset = graph;
    impl->runtime = std::move(runtime);
    impl->splits = std::move(splits);
    impl->root = std::move(root);
    impl->tuned = std::move(tuned);
    impl->instance = instance;
    impl->created_ns = MonotonicNs();
    return std::unique_ptr<Iterator>(new Iterator(std::move(impl)));
  } SLUICE_RETHROW_FORCED_UNWIND catch (...) {
    return StatusFromException("MakeIterator");
  }
}

const DatasetPtr& internal::IteratorAccess::Graph(const Iterator& it) {
  return it.impl_->dataset;
}

Runtime* internal::IteratorAccess::RuntimeOf(const Iterator& it) {
  return it.impl_->runtime.get();
}

Result<std::shared_ptr<const Dataset::OptimizedGraph>> Dataset::Optimized() const {
  if (!node_) return *error_;
  OptimizedGraph* o = optimized_.get();
  std::call_once(o->once, [&] {
    OptimizeReport report;
    auto r = OptimizeGraph(node_, options(), &report);
    o->report_lines = report.Lines();
    if (r.ok()) {
      o->graph = std::move(r).value();
    } else {
      o->status = r.status();
    }
  });
  if (!o->status.ok()) return o->status;
  return std::shared_ptr<const OptimizedGraph>(optimized_);
}

namespace {
bool SetsOptimization(const OptimizationOptions& o) {
  return o.apply_default_optimizations.has_value() || !o.passes.empty();
}
}  // namespace

Result<std::unique_ptr<Iterator>> Dataset::MakeIterator(
    const Options& extra, std::shared_ptr<SplitProvider> provider) const {
  if (!node_) return *error_;
  const Options merged = options().Merge(extra);
  DatasetPtr graph;
  std::shared_ptr<const OptimizedGraph> tuned;  // the graph's tuned state goes with it
  if (SetsOptimization(extra.optimization)) {
    // Other rewrites than this dataset's: not cached.
    SLUICE_ASSIGN_OR_RETURN(graph, OptimizeGraph(node_, merged, nullptr));
  } else {
    SLUICE_ASSIGN_OR_RETURN(tuned, Optimized());
    graph = tuned->graph;
  }
  // The instance counts iterations of the dataset the user holds, so that reshuffling per
  // epoch does not depend on rewrites.
  return internal::IteratorAccess::Make(graph, node_->NextInstance(), merged,
                                        std::move(provider), std::move(tuned));
}

Result<std::unique_ptr<Iterator>> Dataset::MakeIterator(const Options& extra) const {
  return MakeIterator(extra, nullptr);
}

Result<std::unique_ptr<Iterator>> Dataset::MakeIterator(
    std::shared_ptr<SplitProvider> provider) const {
  return MakeIterator(Options(), std::move(provider));
}

Result<std::vector<std::string>> Dataset::OptimizationReport() const {
  SLUICE_ASSIGN_OR_RETURN(auto optimized, Optimized());
  return optimized->report_lines;
}

Result<std::unique_ptr<Iterator>> MakeIteratorAsBuilt(
    const Dataset& dataset, const Options& options,
    std::shared_ptr<SplitProvider> provider) {
  SLUICE_RETURN_IF_ERROR(dataset.status());
  const DatasetPtr& node = NodeOf(dataset);
  Options o = options;
  // File confinement is never dropped silently.
  if (!o.files.confined()) o.files = dataset.options().files;
  return internal::IteratorAccess::Make(node, node->NextInstance(), o,
                                        std::move(provider));
}

Result<std::shared_ptr<SplitProvider>> Dataset::MakeSplitProvider() const {
  if (!node_) return *error_;
  SLUICE_ASSIGN_OR_RETURN(const DatasetNode* source, SplittableSource(*node_));
  auto files = source->attrs().find("filenames");
  if (files != source->attrs().end() &&
      std::holds_alternative<std::vector<std::string>>(files->second)) {
    return std::shared_ptr<SplitProvider>(std::make_shared<ListSplitProvider>(
        std::get<std::vector<std::string>>(files->second)));
  }
  const int64_t n = source->Cardinality();
  if (n < 0) {
    return InvalidArgumentError("split provider: the number of " + source->op() +
                                "'s splits is not known");
  }
  return std::shared_ptr<SplitProvider>(std::make_shared<IndexSplitProvider>(n));
}

Iterator::Iterator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {
  impl_->calls = std::make_unique<IteratorCalls>();
  if (impl_->runtime->options().autotune) {
    TunedState carried;
    if (impl_->tuned != nullptr) {
      std::lock_guard<std::mutex> l(impl_->tuned->tuned_mu);
      carried.floors = impl_->tuned->tuned.floors;
      carried.trials = impl_->tuned->tuned.trials;
    }
    impl_->autotuner =
        Autotuner::Start(impl_->runtime.get(), [this] { return Snapshot(); }, carried);
  }
}

Iterator::~Iterator() {
  if (impl_->autotuner != nullptr) {
    // Stops tuning before the tree goes, and hands its end state to the next iterator of
    // this graph (Carry-over in autotune/autotuner.h).
    StoreTuned(impl_->tuned, impl_->autotuner->Stop());
  }
  impl_->autotuner.reset();
  Cancel();
  {
    while (impl_->calls->active.load(std::memory_order_seq_cst) != 0) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
  impl_->root.reset();  // joins the tree's threads before the runtime's pool goes
}

void Iterator::Cancel() {
  impl_->calls->cancelled.store(true, std::memory_order_seq_cst);
  std::lock_guard<std::mutex> l(impl_->calls->root_mu);
  impl_->root->Cancel();
}

Result<std::optional<Element>> Iterator::GetNext() {
  ActiveCall call(impl_->calls.get());
  if (impl_->calls->cancelled.load(std::memory_order_seq_cst)) [[unlikely]] {
    return CancelledError("iterator cancelled");
  }
  try {
    Result<std::optional<Element>> r = impl_->root->GetNext();
    if (!r.ok() || r->has_value()) [[likely]] return r;
    // The end of input: an epoch's tuning is done (Carry-over in autotune/autotuner.h).
    if (impl_->autotuner != nullptr && impl_->tuned != nullptr && !impl_->tuned_stored) {
      impl_->tuned_stored = true;
      StoreTuned(impl_->tuned, impl_->autotuner->State());
    }
    return r;
  } SLUICE_RETHROW_FORCED_UNWIND catch (...) {
    return StatusFromException("GetNext");
  }
}

Result<std::string> Iterator::Save() try {
  ActiveCall call(impl_->calls.get());
  CheckpointWriter w;
  w.WriteInt(kRootPrefix, "version", kCheckpointVersion);
  w.WriteString(kRootPrefix, "fingerprint",
                CachedFingerprint(impl_->calls.get(), impl_->dataset));
  w.WriteInt(kRootPrefix, "instance", impl_->instance);
  w.WriteString(kRootPrefix, "op", impl_->dataset->op());
  SLUICE_RETURN_IF_ERROR(impl_->root->Save(&w));
  return w.Serialize();
} SLUICE_RETHROW_FORCED_UNWIND catch (...) {
  return StatusFromException("Save");
}

Status Iterator::Restore(std::string_view checkpoint) try {
  ActiveCall call(impl_->calls.get());
  SLUICE_ASSIGN_OR_RETURN(CheckpointReader r, CheckpointReader::Parse(checkpoint));
  SLUICE_ASSIGN_OR_RETURN(std::string op, r.ReadString(kRootPrefix, "op"));
  if (op != impl_->dataset->op()) {
    return InvalidArgumentError("checkpoint is of a pipeline ending in '" + op +
                                "', this one ends in '" + impl_->dataset->op() + "'");
  }
  // Version 1 checkpoints carry no fingerprint; they restore as before.
  if (r.Contains(kRootPrefix, "version")) {
    SLUICE_ASSIGN_OR_RETURN(int64_t version, r.ReadInt(kRootPrefix, "version"));
    if (version < 2 || version > kCheckpointVersion) {
      return InvalidArgumentError("checkpoint format version " + std::to_string(version) +
                                  " is not supported (this build reads 1.." +
                                  std::to_string(kCheckpointVersion) + ")");
    }
    SLUICE_ASSIGN_OR_RETURN(std::string saved, r.ReadString(kRootPrefix, "fingerprint"));
    if (saved != CachedFingerprint(impl_->calls.get(), impl_->dataset)) {
      return FailedPreconditionError(
          "the checkpoint was taken from a different pipeline (its fingerprint is " +
          saved.substr(0, 64) + ", this pipeline's is " +
          CachedFingerprint(impl_->calls.get(), impl_->dataset) +
          "): restore it into an iterator of the pipeline that saved it");
    }
  }
  SLUICE_ASSIGN_OR_RETURN(int64_t instance, r.ReadInt(kRootPrefix, "instance"));
  // Rebuild the tree with the saved instance so per-iteration seeds match. The new tree
  // counts from zero: its iterators get fresh node totals (the old tree keeps its own).
  std::shared_ptr<NodeTotalsTable> old_totals = impl_->runtime->SwapNodeTotals(nullptr);
  Result<IteratorPtr> made = impl_->dataset->MakeIterator(
      RootContext(instance, impl_->runtime.get(), impl_->splits), std::string(kRootPrefix));
  Status restored = made.ok() ? (*made)->Restore(r) : made.status();
  if (!restored.ok()) {
    made = IteratorPtr();  // the failed tree goes first, with its table
    impl_->runtime->SwapNodeTotals(std::move(old_totals));  // the old tree's iterators
    return restored;
  }
  IteratorPtr root = std::move(made).value();
  {
    std::lock_guard<std::mutex> l(impl_->calls->root_mu);
    impl_->root->Cancel();
    std::swap(impl_->root, root);
    if (impl_->calls->cancelled.load(std::memory_order_relaxed)) impl_->root->Cancel();
  }
  root.reset();  // the old tree, outside the lock: joining its threads may take a while
  impl_->instance = instance;
  return Status::OK();
} SLUICE_RETHROW_FORCED_UNWIND catch (...) {
  return StatusFromException("Restore");
}

const ElementSpec& Iterator::element_spec() const {
  return impl_->dataset->element_spec();
}

std::vector<IteratorStats> Iterator::Stats() const {
  std::vector<IteratorStats> out;
  std::lock_guard<std::mutex> l(impl_->calls->root_mu);
  impl_->root->CollectStats(&out);
  return out;
}

std::vector<TunedParameter> Iterator::TunedParameters() const {
  return impl_->autotuner ? impl_->autotuner->Parameters()
                          : std::vector<TunedParameter>{};
}

PipelineStats Iterator::Snapshot() const {
  PipelineStats p;
  p.uptime_ns = MonotonicNs() - impl_->created_ns;
  p.cpu_budget = impl_->runtime->cpu_budget();
  p.ram_budget = impl_->runtime->memory().limit();
  p.buffered_bytes = impl_->runtime->memory().used();
  p.peak_buffered_bytes = impl_->runtime->memory().peak();
  p.budget_overshoot_bytes = impl_->runtime->memory().overshoot();
  std::lock_guard<std::mutex> l(impl_->calls->root_mu);
  impl_->root->CollectStats(&p.nodes);
  return p;
}

}  // namespace sluice
