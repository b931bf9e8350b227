#include "runtime/runtime.h"

#include <algorithm>

#include "core/mutex.h"
#include "runtime/node_stats.h"
#include "runtime/resources.h"

namespace sluice {
namespace {

// Reading /proc and cgroup files costs tens of microseconds; pipelines are made often (every
// epoch of a for loop), so the figures are refreshed at most once a second.
void Resources(int* cores, int64_t* memory) {
  static Mutex mu;
  static int64_t read_at GUARDED_BY(mu) = -1;
  static int cached_cores GUARDED_BY(mu) = 1;
  static int64_t cached_memory GUARDED_BY(mu) = 0;
  MutexLock l(&mu);
  const int64_t now = MonotonicNs();
  if (read_at < 0 || now - read_at > 1000000000) {
    cached_cores = AvailableCores();
    cached_memory = AvailableMemory();
    read_at = now;
  }
  *cores = cached_cores;
  *memory = cached_memory;
}

RuntimeOptions Resolve(RuntimeOptions o) {
  int cores = 1;
  int64_t memory = 0;
  Resources(&cores, &memory);
  if (o.cpu_budget <= 0) o.cpu_budget = cores;
  if (o.ram_budget == 0) o.ram_budget = memory / 2;
  if (o.ram_budget < 0) o.ram_budget = 0;  // MemoryBudget: <= 0 is unlimited
  // Like tf.data, AUTOTUNE starts at the budget; the tuner then lowers what does not pay.
  if (o.initial_parallelism <= 0) o.initial_parallelism = o.cpu_budget;
  o.initial_parallelism = std::clamp<int64_t>(o.initial_parallelism, 1, o.cpu_budget);
  return o;
}

// The bound of buffers that must keep their elements (memory_budget.h): the budget when
// the user set one; with the default budget (half of available memory), all of it.
int64_t HoldLimit(const RuntimeOptions& given, const RuntimeOptions& resolved) {
  if (given.ram_budget != 0 || resolved.ram_budget <= 0) return resolved.ram_budget;
  return resolved.ram_budget > INT64_MAX / 2 ? INT64_MAX : 2 * resolved.ram_budget;
}

}  // namespace

Runtime::Runtime(const RuntimeOptions& options)
    : options_(Resolve(options)),
      memory_(options_.ram_budget, HoldLimit(options, options_)) {
  env_ = options_.env != nullptr ? options_.env : Env::Default();
  confined_env_ = NewConfinedEnvFor(env_, options_.files);
  if (confined_env_) env_ = confined_env_.get();
}

Executor& Runtime::executor() {
  std::call_once(executor_once_, [this] {
    if (options_.inline_execution) {
      executor_ = std::make_unique<InlineExecutor>();
    } else {
      executor_ =
          std::make_unique<ThreadPool>(static_cast<int>(options_.cpu_budget), "sluice-pool");
    }
  });
  return *executor_;
}

Runtime::~Runtime() = default;

Runtime* Runtime::Default() {
  static Runtime* rt = new Runtime([] {
    RuntimeOptions o;
    o.autotune = false;  // nothing would tune its knobs
    return o;
  }());  // never destroyed: outlives iterators
  return rt;
}

}  // namespace sluice
