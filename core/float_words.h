#pragma once
// Finiteness of float32 values read as their bits, for passes that already hold the bytes as integer words
// (a checksum's walk, a copy): a float32 is NaN or infinite exactly when its eight exponent bits are all
// set. Integer tests vectorize at the baseline ISA where std::isfinite on each value may not.
#include <cstdint>
#include <cstring>

namespace gossip {

// 1 when either float32 of a little-endian 8-byte word (two values; a 4-byte word widened to 8 is one) is NaN
// or infinite, else 0: for OR-ing over a pass.
inline std::uint64_t nonFiniteFloatPair(std::uint64_t w) {
  const std::uint64_t m = w & 0x7F8000007F800000ull;
  return static_cast<std::uint64_t>((m & 0xFFFFFFFFull) == 0x7F800000ull) |
         static_cast<std::uint64_t>((m >> 32) == 0x7F800000ull);
}

// 1 when v (float or double) is NaN or infinite, else 0, from its exponent bits: for OR-ing over a pass.
template <class T>
inline std::uint32_t nonFiniteBits(T v) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8);
  if constexpr (sizeof(T) == 4) {
    std::uint32_t u;
    std::memcpy(&u, &v, 4);
    return static_cast<std::uint32_t>((u & 0x7F800000u) == 0x7F800000u);
  } else {
    std::uint64_t u;
    std::memcpy(&u, &v, 8);
    return static_cast<std::uint32_t>((u & 0x7FF0000000000000ull) == 0x7FF0000000000000ull);
  }
}

}  // namespace gossip
