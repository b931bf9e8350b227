#include "sluice/random.h"

#include <atomic>
#include <cmath>
#include <random>

#include "core/mutex.h"

namespace sluice {

std::array<uint32_t, 4> Philox4x32(std::array<uint32_t, 4> c, std::array<uint32_t, 2> k) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = static_cast<uint64_t>(kM0) * c[0];
    uint64_t p1 = static_cast<uint64_t>(kM1) * c[2];
    uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    c = {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
    k[0] += kW0;
    k[1] += kW1;
  }
  return c;
}

uint32_t Rng::Next32() {
  if (used_ >= 4) {
    block_ = Philox4x32({static_cast<uint32_t>(counter_), static_cast<uint32_t>(counter_ >> 32),
                         static_cast<uint32_t>(stream_), static_cast<uint32_t>(stream_ >> 32)},
                        {static_cast<uint32_t>(key_), static_cast<uint32_t>(key_ >> 32)});
    ++counter_;
    used_ = 0;
  }
  return block_[used_++];
}

uint64_t Rng::Next64() {
  uint64_t hi = Next32();
  return (hi << 32) | Next32();
}

double Rng::Uniform() { return static_cast<double>(Next64() >> 11) * 0x1.0p-53; }
float Rng::UniformFloat() { return static_cast<float>(Next32() >> 8) * 0x1.0p-24f; }

uint64_t Rng::UniformInt(uint64_t n) {
  // Lemire's nearly-divisionless method on 64 bits.
  uint64_t x = Next64();
  __uint128_t m = static_cast<__uint128_t>(x) * n;
  uint64_t l = static_cast<uint64_t>(m);
  if (l < n) {
    uint64_t t = -n % n;
    while (l < t) {
      x = Next64();
      m = static_cast<__uint128_t>(x) * n;
      l = static_cast<uint64_t>(m);
    }
  }
  return static_cast<uint64_t>(m >> 64);
}

double Rng::Normal() {
  double u1 = Uniform();
  double u2 = Uniform();
  if (u1 < 1e-300) u1 = 1e-300;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

Rng Rng::FromState(const State& s) {
  // Re-derive the buffered block: it is block (counter - 1) when words remain.
  Rng r(s.key, s.stream, s.counter);
  if (s.used < 4 && s.counter > 0) {
    r.counter_ = s.counter - 1;
    r.used_ = 4;
    r.Next32();  // regenerates the block, counter_ back to s.counter
    r.used_ = s.used;
  }
  return r;
}

uint64_t Mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

namespace {
std::atomic<bool> g_has_seed{false};
std::atomic<uint64_t> g_seed{0};
std::atomic<uint64_t> g_op_counter{0};
constexpr uint64_t kDefaultGraphSeed = 87654321;  // tf.data's DEFAULT_GRAPH_SEED
}  // namespace

void SetGlobalSeed(std::optional<uint64_t> seed) {
  g_seed.store(seed.value_or(0));
  g_has_seed.store(seed.has_value());
  g_op_counter.store(0);  // like tf.random.set_seed: op seeds restart from the new seed
}

std::optional<uint64_t> GlobalSeed() {
  if (!g_has_seed.load()) return std::nullopt;
  return g_seed.load();
}

uint64_t ResolveSeed(std::optional<int64_t> op_seed) {
  std::optional<uint64_t> global = GlobalSeed();
  if (op_seed) {
    return HashCombine(global.value_or(kDefaultGraphSeed), static_cast<uint64_t>(*op_seed));
  }
  if (global) return HashCombine(*global, 0x5eed0000u + g_op_counter.fetch_add(1));
  static Mutex mu;
  static std::random_device rd GUARDED_BY(mu);
  MutexLock l(&mu);
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

}  // namespace sluice
