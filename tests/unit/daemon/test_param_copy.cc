// The trainer bridge's conversions (daemon/bridge/param_copy.h) against static_cast, bit for bit: every size
// around the vector width and the parallel threshold, unaligned starts, thread counts that do not divide
// the size, and the values where a conversion could differ (halfway cases, overflow, subnormals, NaN).
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <doctest/doctest.h>

#include "daemon/bridge/param_copy.h"

using gossip::daemon::copyInto;
using gossip::daemon::copyThreads;
using gossip::daemon::narrowInto;
using gossip::daemon::widenInto;

namespace {

// Random doubles over many magnitudes, with the special values planted at the start.
std::vector<double> doubles(std::size_t n, std::uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> mant(-1.0, 1.0);
  std::uniform_int_distribution<int> expo(-160, 140);  // beyond float's range both ways
  std::vector<double> v(n);
  for (auto& x : v) x = std::ldexp(mant(rng), expo(rng));
  const double specials[] = {0.0, -0.0, 1.0 + std::ldexp(1.0, -24),  // halfway between two floats: to even
                             std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN(),
                             1e39, -1e39, 1e-40, std::numeric_limits<double>::denorm_min()};
  for (std::size_t i = 0; i < std::size(specials) && i < n; ++i) v[i] = specials[i];
  return v;
}

bool sameBits(float a, float b) { return std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b); }
bool sameBits(double a, double b) { return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b); }

// Converts v[offset..] both ways with `threads` and compares with static_cast; returns the first bad index
// or -1.
long long checkRoundTrip(std::size_t n, std::size_t offset, unsigned threads) {
  const std::vector<double> v = doubles(n + offset, static_cast<std::uint32_t>(n * 7 + offset));
  std::vector<float> narrowed(n + offset, -1.0f);
  narrowInto(std::span(v).subspan(offset), std::span(narrowed).subspan(offset), threads);
  for (std::size_t i = 0; i < offset; ++i)
    if (narrowed[i] != -1.0f) return static_cast<long long>(i);  // wrote outside its span
  for (std::size_t i = offset; i < n + offset; ++i)
    if (!sameBits(narrowed[i], static_cast<float>(v[i]))) return static_cast<long long>(i);
  std::vector<double> widened(n + offset, -1.0);
  widenInto(std::span<const float>(narrowed).subspan(offset), std::span(widened).subspan(offset), threads);
  for (std::size_t i = offset; i < n + offset; ++i)
    if (!sameBits(widened[i], static_cast<double>(narrowed[i]))) return static_cast<long long>(i);
  std::vector<double> copied(n + offset, -1.0);
  copyInto(std::span<const double>(v).subspan(offset), std::span(copied).subspan(offset), threads);
  for (std::size_t i = offset; i < n + offset; ++i)
    if (!sameBits(copied[i], v[i])) return static_cast<long long>(i);
  return -1;
}

}  // namespace

TEST_CASE("param_copy: small vectors at every alignment convert exactly as static_cast") {
  for (std::size_t n : {0u, 1u, 2u, 3u, 4u, 5u, 7u, 8u, 9u, 15u, 16u, 17u, 63u, 1000u})
    for (std::size_t offset : {0u, 1u, 2u, 3u}) {
      CAPTURE(n);
      CAPTURE(offset);
      CHECK(checkRoundTrip(n, offset, 1) == -1);
      CHECK(checkRoundTrip(n, offset, 3) == -1);  // below the parallel threshold: one thread anyway
    }
}

TEST_CASE("param_copy: large vectors split over threads convert every value exactly once") {
  // Sizes at and just above the parallel threshold (2^20) and ones whose chunks do not divide evenly,
  // including 3 * 64 * k + 1, where a chunk size rounded down would miss the last value.
  for (std::size_t n : {std::size_t{1} << 20, (std::size_t{1} << 20) + 1, std::size_t{3} * 64 * 5462 + 1, std::size_t{2'500'003}})
    for (unsigned threads : {2u, 3u, 4u, 7u}) {
      CAPTURE(n);
      CAPTURE(threads);
      CHECK(checkRoundTrip(n, threads % 2, threads) == -1);
    }
}

TEST_CASE("param_copy: copyThreads takes the configured count - 0 means the machine's cores up to 4") {
  CHECK(copyThreads(3) == 3);
  CHECK(copyThreads(1) == 1);
  CHECK(copyThreads(0) >= 1);
  CHECK(copyThreads(0) <= 4);
}
