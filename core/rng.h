#pragma once
// Deterministic random numbers. xoshiro256** seeded through splitmix64: the exact algorithm is part of the
// wire contract for shared-seed codecs (rand-k), so never replace it with std:: engines whose streams are
// implementation-defined.
#include <array>
#include <cmath>
#include <cstdint>
#include <initializer_list>

namespace gossip {

inline std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Mixes several integers into one seed, e.g. deriveSeed({global_seed, sender, round}).
inline std::uint64_t deriveSeed(std::initializer_list<std::uint64_t> parts) {
  std::uint64_t state = 0x6A09E667F3BCC908ull;
  std::uint64_t out = 0;
  for (std::uint64_t p : parts) {
    state ^= p;
    out = splitmix64(state);
    state = out;
  }
  return out;
}

class Rng {
 public:
  using result_type = std::uint64_t;
  explicit Rng(std::uint64_t seed = 0) { reseed(seed); }

  void reseed(std::uint64_t seed) {
    std::uint64_t sm = seed;
    for (auto& w : s_) w = splitmix64(sm);
  }

  static constexpr result_type min() { return 0; }
  static constexpr result_type max() { return ~result_type{0}; }
  result_type operator()() { return next(); }

  std::uint64_t next() {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

  // Uniform integer in [0, n), n > 0, unbiased (Lemire's multiply-and-reject).
  std::uint64_t below(std::uint64_t n) {
    __uint128_t m = static_cast<__uint128_t>(next()) * n;
    auto low = static_cast<std::uint64_t>(m);
    if (low < n) {
      const std::uint64_t threshold = (0 - n) % n;
      while (low < threshold) {
        m = static_cast<__uint128_t>(next()) * n;
        low = static_cast<std::uint64_t>(m);
      }
    }
    return static_cast<std::uint64_t>(m >> 64);
  }

  // Standard normal (Box-Muller; one value per call, simple and deterministic).
  double normal() {
    double u1 = uniform();
    while (u1 <= 0.0) u1 = uniform();
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

  // Independent child generator, e.g. one per node or per round.
  Rng split() { return Rng(next()); }

  // The full generator state, for checkpoints: restoring it continues the exact same stream.
  using State = std::array<std::uint64_t, 4>;
  State state() const { return s_; }
  void setState(const State& s) { s_ = s; }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::array<std::uint64_t, 4> s_{};
};

}  // namespace gossip
