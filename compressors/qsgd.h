#pragma once
// QSGD with s levels (Alistarh et al. 2017; ALGORITHMS.md §3), l2 norm per block, stochastic rounding.
//
// For x_i in block b with N = ||x_b||_2 (rounded to f32, the value on the wire) and y = s|x_i|/N:
//   level_i = floor(y) + [U_i < y - floor(y)],   out_i = sign(x_i) * N * level_i / s.
// The scaled (biased) form, unbiased = false, is QSGD / (1 + omega_b) with omega_b = omega(|b|); the
// factor is folded into the block's scale, so one decoder serves both forms.
//
// Payload: header (param = s) | nb x f32 scale (N or N/(1+omega_b)) | dim fields of 1 + bitsFor(s) bits,
// code = level << 1 | (x_i < 0). Size: 8 + 4*nb + packedBytes(dim, 1 + bitsFor(s)).
// Quality with B the longest block: omega(B) = min(B/s^2, sqrt(B)/s) (variance, unbiased form) or
// delta = 1/(1 + omega(B)) (contraction, scaled form).
#include <memory>

#include "compressors/compressor.h"

namespace gossip::compress {
std::unique_ptr<Compressor> makeQsgd(const CompressorSpec& spec);
}  // namespace gossip::compress
