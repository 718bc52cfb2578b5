#pragma once
// Scalar fp32 <-> fp16 / bf16 conversions used by the cast codecs (cast.cc). Round to nearest, ties to
// even. Branch-free (selects only), so the codec loops that call them vectorize.
//
// Out-of-range policy (the codecs' contract): a finite value too large for the format saturates to the
// largest finite value of the same sign (fp16: 65504, bf16: 0x7F7F = 3.39e38) instead of becoming inf,
// so a finite model never turns into a rejected message. inf and NaN stay inf and NaN, which every
// decoder rejects, as the fp32 codec does.
//
// double input goes through toFloatRoundOdd(): rounding to fp32 first with round-to-odd and then to the
// 16-bit format with round-to-nearest-even gives the correctly rounded result (fp32 has at least two more
// significant bits than either target), where a plain double->float->half chain can round twice.
#include <bit>
#include <cmath>
#include <cstdint>

namespace gossip::compress::detail {

inline constexpr std::uint16_t kHalfMaxFinite = 0x7BFF;
inline constexpr std::uint16_t kBf16MaxFinite = 0x7F7F;

inline std::uint16_t floatToHalf(float f) {
  const auto bits = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t sign = (bits >> 16) & 0x8000u;
  const std::uint32_t mag = bits & 0x7FFFFFFFu;
  // |f| >= 2^-14 (normal fp16): rebias the exponent 127 -> 15 and round away the 13 low mantissa bits,
  // adding 0xFFF plus the lowest kept bit (ties to even). A carry correctly bumps the exponent; results
  // at or past 0x7C00 (inf) are saturated below. Meaningless for smaller |f|, which the select skips.
  std::uint32_t normal = (mag - (112u << 23) + 0xFFFu + ((mag >> 13) & 1u)) >> 13;
  normal = normal < kHalfMaxFinite ? normal : kHalfMaxFinite;
  // |f| < 2^-14 (subnormal fp16, multiples of 2^-24): adding 0.5 puts |f| in [0.5, 1), where the fp32
  // spacing is exactly 2^-24, so the FPU's own round-to-nearest-even does the rounding; the mantissa
  // difference to 0.5 is then the fp16 pattern (0x400 when it rounds up to the smallest normal).
  const float shifted = std::bit_cast<float>(mag) + 0.5f;
  const std::uint32_t subnormal = std::bit_cast<std::uint32_t>(shifted) - 0x3F000000u;
  const std::uint32_t isSub = 0u - static_cast<std::uint32_t>(mag < (113u << 23));  // all-ones masks:
  const std::uint32_t isInf = 0u - static_cast<std::uint32_t>(mag == 0x7F800000u);   // GCC vectorizes these
  const std::uint32_t isNan = 0u - static_cast<std::uint32_t>(mag > 0x7F800000u);    // where nested ?: fail
  std::uint32_t out = (subnormal & isSub) | (normal & ~isSub);
  out = (out & ~(isInf | isNan)) | (0x7C00u & isInf) | (0x7E00u & isNan);
  return static_cast<std::uint16_t>(out | sign);
}

inline float halfToFloat(std::uint16_t h) {
  const std::uint32_t sign = std::uint32_t{h & 0x8000u} << 16;
  const std::uint32_t exp = (h >> 10) & 0x1Fu;
  const std::uint32_t mant = h & 0x3FFu;
  const std::uint32_t normal = (exp + 112u) << 23 | mant << 13;  // exp 31 (inf/NaN) is not handled
  const auto subnormal = std::bit_cast<std::uint32_t>(static_cast<float>(static_cast<std::int32_t>(mant)) * 0x1p-24f);
  const std::uint32_t isSub = 0u - static_cast<std::uint32_t>(exp == 0);
  return std::bit_cast<float>((subnormal & isSub) | (normal & ~isSub) | sign);
}

inline bool halfIsFinite(std::uint16_t h) { return (h & 0x7C00u) != 0x7C00u; }

inline std::uint16_t floatToBf16(float f) {
  const auto bits = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t sign = (bits >> 16) & 0x8000u;
  const std::uint32_t mag = bits & 0x7FFFFFFFu;
  std::uint32_t out = (mag + 0x7FFFu + ((mag >> 16) & 1u)) >> 16;  // round the low 16 bits, ties to even
  out = out < kBf16MaxFinite ? out : kBf16MaxFinite;
  const std::uint32_t isInf = 0u - static_cast<std::uint32_t>(mag == 0x7F800000u);
  const std::uint32_t isNan = 0u - static_cast<std::uint32_t>(mag > 0x7F800000u);
  out = (out & ~(isInf | isNan)) | (0x7F80u & isInf) | (0x7FC0u & isNan);
  return static_cast<std::uint16_t>(out | sign);
}

inline float bf16ToFloat(std::uint16_t h) { return std::bit_cast<float>(std::uint32_t{h} << 16); }

inline bool bf16IsFinite(std::uint16_t h) { return (h & 0x7F80u) != 0x7F80u; }

// Rounds to fp32 with round-to-odd: an inexact result gets an odd last mantissa bit (of the two fp32
// neighbours of d, the odd one). Overflow gives +-FLT_MAX (odd) rather than inf; inf and NaN pass through.
inline float toFloatRoundOdd(double d) {
  const auto f = static_cast<float>(d);  // round to nearest even
  const auto bits = std::bit_cast<std::uint32_t>(f);
  const auto inexact = static_cast<std::uint32_t>(static_cast<double>(f) != d && d == d);
  // If f is even, step to the other neighbour: towards zero if f overshot |d| (bits - 1), else away (+1).
  const std::uint32_t step = inexact & ~bits & 1u;
  const auto overshot = static_cast<std::uint32_t>(std::fabs(static_cast<double>(f)) > std::fabs(d));
  return std::bit_cast<float>(bits + step - 2 * (step & overshot));
}

}  // namespace gossip::compress::detail
