#include "runtime/tunable.h"

#include <algorithm>

namespace sluice {

TunableRegistry::Registration& TunableRegistry::Registration::operator=(
    Registration&& o) noexcept {
  if (this != &o) {
    Reset();
    registry_ = o.registry_;
    id_ = o.id_;
    o.registry_ = nullptr;
  }
  return *this;
}

void TunableRegistry::Registration::Reset() {
  if (registry_ != nullptr) registry_->Unregister(id_);
  registry_ = nullptr;
}

TunableRegistry::Values TunableRegistry::Remembered() const {
  MutexLock l(&mu_);
  return remembered_;
}

void TunableRegistry::Preload(const Values& values) {
  MutexLock l(&mu_);
  for (const auto& [key, value] : values) remembered_[key] = value;
}

TunableRegistry::Registration TunableRegistry::Register(KnobSpec spec, int64_t* value) {
  MutexLock l(&mu_);
  spec.max = std::max(spec.min, spec.max);
  auto it = remembered_.find({spec.prefix, spec.name});
  if (it != remembered_.end()) *value = it->second;
  *value = std::clamp(*value, spec.min, spec.max);
  const uint64_t id = next_id_++;
  knobs_[id] = Entry{std::move(spec), *value};
  ++generation_;
  if (listener_) listener_();
  return Registration(this, id);
}

void TunableRegistry::Unregister(uint64_t id) {
  MutexLock l(&mu_);
  // Waits for this knob's setter only: an operator may be destroyed while its consumer
  // holds a lock that the consumer's own setter (running on the tuner) waits for.
  setter_done_.Wait(&mu_, [&]() REQUIRES(mu_) {
    auto it = knobs_.find(id);
    return it == knobs_.end() || it->second.setting == 0;
  });
  knobs_.erase(id);
  ++generation_;
}

std::vector<KnobState> TunableRegistry::List() const {
  MutexLock l(&mu_);
  std::vector<KnobState> out;
  out.reserve(knobs_.size());
  for (const auto& [id, e] : knobs_) {
    out.push_back(KnobState{id, e.spec.prefix, e.spec.name, e.spec.kind, e.value, e.spec.min,
                            e.spec.max, e.spec.slots, e.spec.op});
  }
  return out;
}

bool TunableRegistry::Set(const std::string& prefix, const std::string& name,
                          int64_t value) {
  std::vector<uint64_t> ids;
  {
    MutexLock l(&mu_);
    remembered_[{prefix, name}] = value;  // Register clamps it to the knob's range
    for (const auto& [id, e] : knobs_) {
      if (e.spec.prefix == prefix && e.spec.name == name) ids.push_back(id);
    }
  }
  bool live = false;
  for (uint64_t id : ids) live |= Set(id, value);
  return live;
}

bool TunableRegistry::Set(uint64_t id, int64_t value) {
  MutexLock l(&mu_);
  auto it = knobs_.find(id);
  if (it == knobs_.end()) return false;
  Entry& e = it->second;
  value = std::clamp(value, e.spec.min, e.spec.max);
  remembered_[{e.spec.prefix, e.spec.name}] = value;
  if (value != e.value) {
    e.value = value;
    if (e.spec.set) {
      // The setter runs without the registry's mutex (it takes the operator's locks; an
      // operator's destructor may run under its consumer's lock and then unregister), and
      // Unregister waits for it, so it never runs after Reset returns.
      std::function<void(int64_t)> set = e.spec.set;
      ++e.setting;
      l.Unlock();
      set(value);
      l.Lock();
      auto again = knobs_.find(id);
      if (again != knobs_.end()) --again->second.setting;
      setter_done_.SignalAll();
    }
  }
  return true;
}

void TunableRegistry::SetListener(std::function<void()> listener) {
  MutexLock l(&mu_);
  listener_ = std::move(listener);
}

uint64_t TunableRegistry::generation() const {
  MutexLock l(&mu_);
  return generation_;
}

size_t TunableRegistry::size() const {
  MutexLock l(&mu_);
  return knobs_.size();
}

}  // namespace sluice
