#pragma once
// Top-k composed with natural compression or natural dithering of the kept values (Beznosikov, Horvath,
// Richtarik, Safaryan; ALGORITHMS.md §3 "top-k o natural compression/dithering").
//
// T = top_k(x) (select.h: largest |x_i|, ties to the lowest index), then D(T) on the k kept values only.
// Kept values are rounded to fp32 first (also for double input), as every value on the wire is fp32.
//
// Payload: header (param) | u32 k | index set (select.h coding) | codec part:
//   topk_natural: param 0; k C_nat fields of 9 bits (natural_kernels.h).
//   topk_dither:  param = s | 0x100 if p = inf; one f32 norm ||T||_p (times 1/(1+omega_k), see below),
//                 then k fields of 1 + bitsFor(s) bits, code = j << 1 | negative (as the dither codec).
// k = spec.k (capped at dim) or max(1, round(ratio*dim)); the decoder requires exactly that k.
// Size: 8 + 4 + indexBytes(dim, k) + [4 for dither] + packedBytes(k, width).
//
// Quality (contraction): with omega_k the variance bound of D on k values and ||T||^2 >= (k/d)||x||^2,
//   E||D(T) - x||^2 <= ||x||^2 - (1 - omega_k) ||T||^2.
// C_nat: omega = 1/8, delta = (7/8) k/d. Dithering: if omega_k < 1, delta = (1 - omega_k) k/d; otherwise
// the codec sends D(T)/(1 + omega_k) (folded into the norm) and delta = k / (d (1 + omega_k)).
#include <memory>

#include "compressors/compressor.h"

namespace gossip::compress {
std::unique_ptr<Compressor> makeTopKNatural(const CompressorSpec& spec);
std::unique_ptr<Compressor> makeTopKDither(const CompressorSpec& spec);
}  // namespace gossip::compress
