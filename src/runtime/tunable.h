// Tunables: the registry of a pipeline's AUTOTUNE knobs, which the autotuner reads and
// writes (src/autotune/).
//
// An operator whose argument is AUTOTUNE (a parallelism, a buffer size) registers one Knob
// per such argument when its iterator initializes, if the runtime tunes (Runtime::
// autotune()), and keeps the returned Registration; destroying it (or Reset) unregisters
// the knob. The knob's value lives in the operator (an atomic it reads on every decision);
// the registry only holds a setter, so a new value takes effect at once.
//
//   knob_ = rt->tunables().Register({prefix(), "parallelism", KnobKind::kParallelism,
//                                     /*min=*/1, /*max=*/rt->cpu_budget(), &stats(),
//                                     [this](int64_t v) { set_parallelism(v); },
//                                     [this](int64_t v) { return Slots(v); }},
//                                    &start);
//
// Remembered values. Iterators are re-created (repeat starts its input again every epoch,
// Iterator::Restore rebuilds the tree): the registry remembers the last value the tuner
// chose for each (prefix, name) and Register hands it back as the starting value, so a
// new epoch does not start from scratch. Remembered() and Preload() carry these values
// from one iterator of a dataset to its next one (Iterator's destructor, MakeIterator).
//
// Lifetime. Set calls the knob's setter without the registry's mutex, and Reset waits for
// a call in progress on that knob (only that knob): once Reset returns the setter is never
// called again. (Holding the mutex across setters was a lock-order inversion under TSan:
// tuner = registry -> operator lock, destructor under the consumer's lock -> registry.)
// So an operator resets its registrations first thing in its destructor, and never calls
// into the registry while holding a lock that its setter takes.
//
// Thread-safety: thread-safe.
#ifndef SLUICE_RUNTIME_TUNABLE_H_
#define SLUICE_RUNTIME_TUNABLE_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/mutex.h"

namespace sluice {

struct NodeStats;

enum class KnobKind {
  kParallelism,  // concurrent calls on the CPU; counts against the CPU budget
  kBuffer,       // buffer slots; counts against the RAM budget (through element bytes)
  // An execution mode (0/1), not a resource: the tuner decides it from measured work per
  // element, outside its model and hill climb (async ops' "inline", async_buffer.h).
  kMode,
};

struct KnobSpec {
  std::string prefix;  // the iterator's prefix, e.g. "Root/Prefetch[0]"
  std::string name;    // "parallelism", "buffer_size"
  KnobKind kind = KnobKind::kParallelism;
  int64_t min = 1;
  int64_t max = 1;
  // Applies a value in [min, max] (thread-safe; called without the registry's mutex, see
  // Lifetime above).
  std::function<void(int64_t)> set;
  // Buffer slots (in the operator's output elements) the operator holds at each value of
  // this knob, for the RAM model: slots[v - min] for v in [min, max]. Empty: a kBuffer
  // knob's value is its slots; a kParallelism knob does not change the buffer. A table,
  // not a callback, so the tuner never calls into an operator outside Set.
  std::vector<int64_t> slots;
  std::string op;  // the operator ("ParallelMap"): the root's prefix ("Root") does not say
};

// What the tuner sees of a knob.
struct KnobState {
  uint64_t id = 0;
  std::string prefix;
  std::string name;
  KnobKind kind = KnobKind::kParallelism;
  int64_t value = 0;
  int64_t min = 0;
  int64_t max = 0;
  std::vector<int64_t> slots;  // as KnobSpec::slots
  std::string op;

  // Buffer slots at value v (see KnobSpec::slots); -1 when the knob has no buffer.
  int64_t SlotsAt(int64_t v) const {
    if (slots.empty()) return kind == KnobKind::kBuffer ? v : -1;
    const int64_t i = v - min;
    return slots[i < 0 ? 0 : (i >= static_cast<int64_t>(slots.size()) ? slots.size() - 1 : i)];
  }
};

class TunableRegistry {
 public:
  // Unregisters its knob when destroyed or Reset. Movable; an empty one does nothing.
  class Registration {
   public:
    Registration() = default;
    Registration(Registration&& o) noexcept : registry_(o.registry_), id_(o.id_) {
      o.registry_ = nullptr;
    }
    Registration& operator=(Registration&& o) noexcept;
    ~Registration() { Reset(); }
    // Unregisters now; afterwards the setter is never called.
    void Reset();
    bool registered() const { return registry_ != nullptr; }

   private:
    friend class TunableRegistry;
    Registration(TunableRegistry* r, uint64_t id) : registry_(r), id_(id) {}
    TunableRegistry* registry_ = nullptr;
    uint64_t id_ = 0;
  };

  TunableRegistry() = default;
  TunableRegistry(const TunableRegistry&) = delete;
  TunableRegistry& operator=(const TunableRegistry&) = delete;

  // Registers a knob. *value is in: the operator's starting value; out: the value to start
  // at (a remembered one for the same prefix and name if any), clamped to [min, max]. The
  // setter is not called for it: the operator applies *value itself.
  Registration Register(KnobSpec spec, int64_t* value);

  // The live knobs, in registration order (pre-order of the tree for static ops).
  std::vector<KnobState> List() const;
  // Sets a live knob (clamped to its range) and remembers the value; false when it is gone.
  bool Set(uint64_t id, int64_t value);
  // Remembers `value` for knobs named `prefix` and `name` (the iterators a Repeat or a
  // Restore makes next start at it) and sets the live ones; false when none is live.
  // A knob's id changes every time its iterator is re-made (every epoch under a Repeat):
  // a setting meant to last longer than one iterator goes through here.
  bool Set(const std::string& prefix, const std::string& name, int64_t value);
  // (prefix, name) -> value: what the knobs remember (see Remembered values above).
  using Values = std::map<std::pair<std::string, std::string>, int64_t>;
  Values Remembered() const;
  // Adds `values` to the remembered ones (before the knobs register: they start there).
  void Preload(const Values& values);
  // Called (with the registry's mutex held) after every registration; null clears it.
  // Once SetListener returns, the previous listener is never called again. The
  // autotuner uses it to start its thread when the first knob appears.
  void SetListener(std::function<void()> listener);
  // Bumped on every registration and unregistration.
  uint64_t generation() const;
  size_t size() const;

 private:
  struct Entry {
    KnobSpec spec;
    int64_t value = 0;
    int setting = 0;  // setter calls in progress (run without mu_)
  };
  void Unregister(uint64_t id);

  mutable Mutex mu_;
  CondVar setter_done_;  // a setter call returned
  std::map<uint64_t, Entry> knobs_ GUARDED_BY(mu_);
  Values remembered_ GUARDED_BY(mu_);
  uint64_t next_id_ GUARDED_BY(mu_) = 1;
  uint64_t generation_ GUARDED_BY(mu_) = 0;
  std::function<void()> listener_ GUARDED_BY(mu_);
};

// When the autotuner may next try a step of one knob, and how long it waited last.
struct TrialBackoff {
  std::chrono::steady_clock::time_point next;
  std::chrono::seconds backoff{0};
};

// What an iterator's tuning ended with, handed to the next iterator of its dataset
// (autotune/autotuner.h, "Carry-over"): knob values, the autotuner's trial floors and its
// trial back-offs.
struct TunedState {
  TunableRegistry::Values values;         // (prefix, name) -> value
  std::map<std::string, int64_t> floors;  // "prefix/name" -> trial floor
  std::map<std::string, TrialBackoff> trials;  // "prefix/name" -> its next trial
  // Adds `o`'s entries, replacing those of the same key (an iterator that tuned nothing
  // does not wipe what an earlier one tuned).
  void Merge(const TunedState& o) {
    for (const auto& [key, value] : o.values) values[key] = value;
    for (const auto& [key, value] : o.floors) floors[key] = value;
    for (const auto& [key, value] : o.trials) trials[key] = value;
  }
};

}  // namespace sluice

#endif  // SLUICE_RUNTIME_TUNABLE_H_
