#pragma once
// Natural compression C_nat and natural dithering D_nat^{p,s} (Horvath et al.; ALGORITHMS.md §3).
//
// C_nat ("natural"): every element rounded unbiasedly to a neighbouring power of two and sent as sign +
// 8-bit fp32 exponent (natural_kernels.h has the rounding and the edge cases: 0, subnormals, top of the
// range). Payload: header (param 0, dim) | dim 9-bit fields, code = exponent | negative << 8.
// Size 8 + packedBytes(dim, 9). Double input is first rounded to fp32 (the wire holds at most fp32), so
// the codec is unbiased for that fp32 value. Quality: variance omega = 1/8 (for |x_i| >= 2^-126).
//
// Natural dithering ("dither"): per block, y_i = |x_i| / ||x_b||_p with p = inf (spec.inf_norm) or 2,
// rounded unbiasedly to a neighbour in {0, 2^(1-s), ..., 1/2, 1}; out_i = sign * ||x_b||_p * level.
// Payload: header (param = s | 0x100 if p = inf) | nb x f32 norm | dim fields of 1 + bitsFor(s) bits,
// code = j << 1 | negative with level 2^(j-s) (j = 0 means 0). Size 8 + 4*nb + packedBytes(dim, 1+bitsFor(s)).
// Quality: variance omega = 1/8 + sqrt(B) 2^(1-s) min(1, sqrt(B) 2^(1-s)), B the longest block
// (d^(1/r) with r = min(p, 2) = 2 for both norms offered).
#include <cstdint>
#include <memory>

#include "compressors/compressor.h"

namespace gossip::compress {
std::unique_ptr<Compressor> makeNatural(const CompressorSpec& spec);
std::unique_ptr<Compressor> makeDither(const CompressorSpec& spec);

// Largest dithering level count s: 2^(1-s) stays a normal fp32 with room to spare.
inline constexpr unsigned kMaxDitherLevels = 64;

// The dithering variance bound above for a block of d elements, shared with topk_dither.
double ditherOmega(std::uint32_t d, unsigned levels);
}  // namespace gossip::compress
