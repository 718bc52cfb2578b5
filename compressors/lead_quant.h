#pragma once
// LEAD's unbiased b-bit infinity-norm quantizer (ALGORITHMS.md §3), one norm per block.
//
// With s = 2^(b-1), N = ||x_b||_inf (rounded to f32, the value on the wire) and y = s|x_i|/N:
//   level_i = floor(y) + [U_i < y - floor(y)],   out_i = (N/s) * sign(x_i) * level_i,
// i.e. (N/s) sign(x) floor(s|x|/N + u) as in the paper.
//
// Wire layout: the signed level takes 2s+1 values, so it is sent as the digit d_i = level*sign + s in
// base 2s+1, g digits per group, packed as one field of w bits (field_pack.h):
//   field k = sum_{j<g} d_{kg+j} (2s+1)^j,   digits past the end of the vector are 0.
// (g, w) minimises w/g with (2s+1)^g <= 2^32; bits per element for b = 1..8:
//   b=1 (g17,w27) 1.59 | b=2 (3,7) 2.33 | b=3 (5,16) 3.2 | b=4 (7,29) 4.14 | b=5 (6,31) 5.17
//   b=6 (5,31) 6.2 | b=7 (4,29) 7.25 | b=8 (3,25) 8.33       (log2(2s+1): 1.58, 2.32, 3.17, 4.09, ...)
// Payload: header (param = b) | nb x f32 N | packedBytes(ceil(dim/g), w). Decoders reject any field
// >= (2s+1)^g and nonzero padding digits.
//
// Quality (variance; B = longest block): each element has variance (N/s)^2 p(1-p) with p = frac(y),
// and p(1-p) <= min(1/4, y). Summing gives both d/4^b (ALGORITHMS.md's worst case) and
// N ||x||_1 / s <= sqrt(d)/s ||x||^2; quality() returns omega = min(B/4^b, sqrt(B)/s).
#include <memory>

#include "compressors/compressor.h"

namespace gossip::compress {
std::unique_ptr<Compressor> makeLeadQuant(const CompressorSpec& spec);
}  // namespace gossip::compress
