// Counter-based random numbers and seeds.
//
// sluice's randomness is a pure function of (key, counter): Philox4x32-10 (Salmon et al.,
// SC 2011), the generator TensorFlow and JAX use. A random map function receives an Rng keyed
// by (op seed, element position), so its draws do not depend on which thread ran it or when;
// shuffle keeps (key, counter) as its whole RNG state, so checkpoints stay tiny.
//
// Seeds follow tf.data: a process-wide global seed (SetGlobalSeed) plus optional per-op
// seeds. With both, the op uses them together; with only a global seed, ops get seeds derived
// from it and the order in which seeded ops are created; with neither, seeds are drawn from
// std::random_device (non-deterministic).
//
// Thread-safety: an Rng is not synchronized; SetGlobalSeed/ResolveSeeds are thread-safe.
#ifndef SLUICE_RANDOM_H_
#define SLUICE_RANDOM_H_

#include <array>
#include <cstdint>
#include <optional>

namespace sluice {

// One Philox4x32-10 block: 128 random bits for a 128-bit counter and 64-bit key.
std::array<uint32_t, 4> Philox4x32(std::array<uint32_t, 4> counter,
                                   std::array<uint32_t, 2> key);

class Rng {
 public:
  // A stream for `key`; `stream` selects an independent sub-sequence (e.g. the element
  // position), `counter` the starting block within it.
  explicit Rng(uint64_t key, uint64_t stream = 0, uint64_t counter = 0)
      : key_(key), stream_(stream), counter_(counter) {}

  uint32_t Next32();
  uint64_t Next64();
  // Uniform in [0, 1).
  double Uniform();
  float UniformFloat();
  // Uniform integer in [0, n), unbiased (Lemire's method). n > 0.
  uint64_t UniformInt(uint64_t n);
  // Standard normal (Box-Muller).
  double Normal();

  // The complete state, for checkpoints.
  struct State {
    uint64_t key, stream, counter;
    uint32_t used;  // words of the current block already consumed (4 = none buffered)
  };
  State state() const { return {key_, stream_, counter_, used_}; }
  static Rng FromState(const State& s);

 private:
  uint64_t key_, stream_, counter_;
  std::array<uint32_t, 4> block_{};
  uint32_t used_ = 4;
};

// SplitMix64 finalizer: a strong 64-bit mix used to combine seeds.
uint64_t Mix64(uint64_t x);
inline uint64_t HashCombine(uint64_t a, uint64_t b) {
  return Mix64(a ^ (Mix64(b) + 0x9e3779b97f4a7c15ULL + (a << 6) + (a >> 2)));
}

// Sets (or clears, with nullopt) the process-wide seed used by ops created afterwards.
void SetGlobalSeed(std::optional<uint64_t> seed);
std::optional<uint64_t> GlobalSeed();

// Resolves an op's seed as described above. Call once, when the op is created.
uint64_t ResolveSeed(std::optional<int64_t> op_seed);

}  // namespace sluice

#endif  // SLUICE_RANDOM_H_
