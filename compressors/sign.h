#pragma once
// Scaled sign with one l1 scale per block: C(x)_i = (||x_b||_1 / |b|) * sign(x_i) for i in block b
// (ALGORITHMS.md §3; block 0 = the whole vector).
//
// Payload: header (param 0, dim) | nb x f32 scale | dim 1-bit fields, 1 = negative (field_pack.h).
// Size: 8 + 4*nb + packedBytes(dim, 1). sign(0) is sent as + (§3 rule 4: the error is the same).
// Quality: biased contraction, delta(x) = sum_b ||x_b||_1^2 / |b| / ||x||^2 >= 1/B, B = longest block;
// quality() returns 1/B (e_1 attains it).
#include <memory>

#include "compressors/compressor.h"

namespace gossip::compress {
std::unique_ptr<Compressor> makeSign(const CompressorSpec& spec);
}  // namespace gossip::compress
