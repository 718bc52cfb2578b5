#pragma once
// The uniform random numbers behind every stochastic rounding (qsgd, lead, natural, dither, topk_*).
//
// Definition (a determinism contract, not wire format: receivers never draw). At the start of an encode
// a UniformStream takes 32 draws from the injected Rng as the states of 8 independent xoshiro256+
// generators, lane l getting draws 4l..4l+3 (an all-zero state, probability 2^-256, is replaced by a
// constant). Draw j of the stream is the (j / 8)-th output of lane j % 8, and element i of the vector is
// rounded with the low (i even) or high (i odd) 32-bit half of draw i / 2. So the injected Rng alone
// decides the bytes: same input + same seed -> same payload, independent of the machine.
//
// Why lanes: one step of the project Rng (xoshiro256**) is a serial chain of about a dozen scalar
// operations and took longer than quantizing the element itself. Eight independent lanes, written with
// GCC/Clang vector types, advance several generators per instruction. The "+" scrambler is the one the
// xoshiro authors recommend for floating-point use: its only weakness is in the lowest bits, and the
// codecs use the top 23-31 bits of each half.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/rng.h"

namespace gossip::compress::detail {

class UniformStream {
 public:
  explicit UniformStream(Rng& rng) {
    for (int v = 0; v < kVecs; ++v)
      for (int q = 0; q < kWidth; ++q) {
        s0_[v][q] = rng.next();
        s1_[v][q] = rng.next();
        s2_[v][q] = rng.next();
        s3_[v][q] = rng.next();
        if ((s0_[v][q] | s1_[v][q] | s2_[v][q] | s3_[v][q]) == 0) s0_[v][q] = 0x9E3779B97F4A7C15ull;
      }
  }

  // Writes the next n uniforms to u. n must be a multiple of 16 except in the stream's last call.
  void fill(std::uint32_t* u, std::size_t n) {
    std::size_t i = 0;
    for (; i + kPerRound <= n; i += kPerRound) round(u + i);
    if (i < n) {
      std::uint32_t tail[kPerRound];
      round(tail);
      std::memcpy(u + i, tail, (n - i) * sizeof(std::uint32_t));
    }
  }

 private:
  static constexpr int kWidth = 4;  // lanes per vector
  static constexpr int kVecs = 2;   // vectors: 8 lanes in all
  static constexpr std::size_t kPerRound = 2 * kWidth * kVecs;  // uniforms per round (8 draws)
  using Vec = std::uint64_t __attribute__((vector_size(8 * kWidth)));

  // One xoshiro256+ step on every lane; draws go out in lane order.
  void round(std::uint32_t* u) {
    for (int v = 0; v < kVecs; ++v) {
      const Vec out = s0_[v] + s3_[v];
      std::memcpy(u + 2 * kWidth * v, &out, sizeof out);
      const Vec t = s1_[v] << 17;
      s2_[v] ^= s0_[v];
      s3_[v] ^= s1_[v];
      s1_[v] ^= s2_[v];
      s0_[v] ^= s3_[v];
      s2_[v] ^= t;
      s3_[v] = (s3_[v] << 45) | (s3_[v] >> 19);
    }
  }

  Vec s0_[kVecs], s1_[kVecs], s2_[kVecs], s3_[kVecs];
};

}  // namespace gossip::compress::detail
