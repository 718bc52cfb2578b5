#pragma once
// Per-element kernels of natural compression C_nat and natural dithering (Horvath et al.; ALGORITHMS.md
// §3), shared by the dense codecs (natural.cc) and their top-k compositions (topk_quant.cc). All of
// them are branch-free so the loops that call them vectorize.
//
// Both round a value between two adjacent powers of two a <= t < 2a, up with probability (t - a)/a.
// For an fp32 t = 2^(e-127) (1 + m/2^23) that probability is exactly m/2^23, so the rounding is the
// integer test U23 < m on the mantissa bits: exact, and free of any floating-point division.
#include <bit>
#include <cstdint>

namespace gossip::compress::detail {

inline constexpr unsigned kNatBits = 9;  // 1 sign bit + 8 exponent bits

// C_nat code of t with 32-bit uniform u: exponent | negative << 8, where exponent is the biased fp32
// exponent of the rounded value and 0 stands for 0.
//  - Subnormal t (e = 0): the same mantissa test rounds to 2^-126 with probability |t| / 2^-126, else to
//    0; still unbiased, though the relative variance bound 1/8 holds only from 2^-126 up.
//  - Top of the range: a value in [2^127, FLT_MAX] would round up to 2^128, which fp32 cannot hold, so
//    it is sent as 2^127 (exponent capped at 254: biased, but only for values near FLT_MAX).
//  - inf and NaN get exponent 255, which every decoder rejects.
inline std::uint32_t natCode(float t, std::uint32_t u) {
  const auto bits = std::bit_cast<std::uint32_t>(t);
  const std::uint32_t e = (bits >> 23) & 0xFFu;
  const std::uint32_t m = bits & 0x7FFFFFu;
  // No step up from e = 254 (caps finite values at 2^127) or from e = 255 (inf/NaN stay 255).
  const std::uint32_t out = e + (static_cast<std::uint32_t>((u >> 9) < m) & static_cast<std::uint32_t>(e < 254u));
  const std::uint32_t neg = (bits >> 31) & static_cast<std::uint32_t>(out != 0);  // one code for +-0
  return out | neg << 8;
}

inline bool natCodeValid(std::uint32_t code) { return (code & 0xFFu) != 255u; }

// Value of a valid C_nat code: the code's bits are exactly the sign and exponent of an fp32.
inline float natValue(std::uint32_t code) {
  return std::bit_cast<float>((code >> 8) << 31 | (code & 0xFFu) << 23);
}

// Natural dithering with s levels {0, 2^(1-s), ..., 1/2, 1}: level index j = 0 for 0 and j >= 1 for
// 2^(j-s). y = |x_i| / ||x||_p should lie in [0, 1]; larger values (rounding) and NaN are clamped to 1;
// y must not be negative.
class DitherLevels {
 public:
  explicit DitherLevels(unsigned s)
      : s_(s), minExp_(128u - s), belowScale_(std::bit_cast<float>((126u + s) << 23)) {}

  unsigned levels() const { return s_; }

  // Written with masks rather than ?: on integers, which GCC does not if-convert in every loop.
  std::uint32_t index(float y, std::uint32_t u) const {
    // Clamp on the bit pattern: for y >= 0 (or NaN, whose pattern is above 1.0f's) the integer order is
    // the float order, and a float ?: here keeps GCC from vectorizing the caller's loop.
    auto yi = std::bit_cast<std::int32_t>(y);
    yi = yi < kOne ? yi : kOne;
    y = std::bit_cast<float>(yi);
    const auto bits = static_cast<std::uint32_t>(yi);
    const std::uint32_t e = bits >> 23;
    // Between 2^(e-127) and twice that: the mantissa test, as for C_nat.
    const std::uint32_t upper = e + s_ - 127u + static_cast<std::uint32_t>((u >> 9) < (bits & 0x7FFFFFu));
    // Below the smallest nonzero level 2^(1-s): 0 or 2^(1-s), up with probability y / 2^(1-s).
    const float t = y * belowScale_;
    const float uf = static_cast<float>(static_cast<std::int32_t>(u >> 8)) * 0x1p-24f;
    const auto lower = static_cast<std::uint32_t>(uf < t);
    const std::uint32_t useUpper = 0u - static_cast<std::uint32_t>(e >= minExp_);
    return (upper & useUpper) | (lower & ~useUpper);
  }

  // sign(x) * 2^(j-s), or 0 for j = 0.
  float signedValue(std::uint32_t j, std::uint32_t negative) const {
    const std::uint32_t nonzero = 0u - static_cast<std::uint32_t>(j != 0);
    return std::bit_cast<float>(((127u + j - s_) << 23 | negative << 31) & nonzero);
  }

 private:
  static constexpr std::int32_t kOne = 0x3F800000;  // 1.0f
  unsigned s_;
  std::uint32_t minExp_;  // biased fp32 exponent of 2^(1-s)
  float belowScale_;      // 2^(s-1)
};

}  // namespace gossip::compress::detail
