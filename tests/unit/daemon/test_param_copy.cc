// The trainer bridge's conversions (daemon/bridge/param_copy.h) against static_cast, bit for bit: every size
// around the vector width and the parallel threshold, unaligned starts, thread counts that do not divide
// the size, and the values where a conversion could differ (halfway cases, overflow, subnormals, NaN).
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <span>
#include <vector>

#include <doctest/doctest.h>

#include "daemon/bridge/param_copy.h"

using gossip::daemon::copyInto;
using gossip::daemon::copyThreads;
using gossip::daemon::narrowInto;
using gossip::daemon::widenInto;
using gossip::daemon::bf16ToFloat;
using gossip::daemon::convertInto;
using gossip::daemon::floatToBf16;

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

TEST_CASE("param_copy: bfloat16 - every pattern widens exactly and narrows back - rounding ties to even") {
  // Every one of the 65,536 bfloat16 patterns: float32 holds it exactly, and narrowing gives it back
  // (a NaN stays a NaN).
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const float f = bf16ToFloat(static_cast<std::uint16_t>(b));
    if (std::isnan(f)) {
      CHECK(std::isnan(bf16ToFloat(floatToBf16(f))));
      continue;
    }
    REQUIRE(floatToBf16(f) == b);
  }
  // Rounding of values between two bfloat16s (8 bits of mantissa: spacing 2^-7 at 1.0).
  CHECK(bf16ToFloat(floatToBf16(1.0f + 0x1p-8f)) == 1.0f);                   // a tie: to the even neighbour 1.0
  CHECK(bf16ToFloat(floatToBf16(1.0f + 3 * 0x1p-8f)) == 1.0f + 0x1p-6f);    // a tie: to the even 1 + 2^-6
  CHECK(bf16ToFloat(floatToBf16(1.0f + 0x1p-8f + 0x1p-20f)) == 1.0f + 0x1p-7f);  // above the tie: up
  CHECK(bf16ToFloat(floatToBf16(-2.5f)) == -2.5f);
  CHECK(std::isinf(bf16ToFloat(floatToBf16(std::numeric_limits<float>::max()))));  // beyond bf16's range
  CHECK(std::signbit(bf16ToFloat(floatToBf16(-0.0f))));

  // The span versions, over threads, give the scalar rule's values.
  const std::size_t n = (std::size_t{1} << 20) + 77;
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = std::sin(static_cast<float>(i)) * 1e3f;
  std::vector<std::uint16_t> b(n);
  convertInto(std::span<const float>(x), std::span<std::uint16_t>(b), 3);
  std::vector<double> back(n);
  convertInto(std::span<const std::uint16_t>(b), std::span<double>(back), 2);
  for (std::size_t i = 0; i < n; i += 997) {
    REQUIRE(b[i] == floatToBf16(x[i]));
    REQUIRE(back[i] == static_cast<double>(bf16ToFloat(b[i])));
    REQUIRE(std::abs(back[i] - x[i]) <= std::abs(x[i]) * 0x1p-8);  // half a bfloat16 ulp
  }
}
