#pragma once
// Dense codecs: fp32 (identity), fp16 and bf16 casts. The identity codec is the uncompressed baseline
// and the reference every other codec's size is compared against.
//
// fp16/bf16 payload: header (param 0, dim) | dim little-endian 16-bit values; size 8 + 2*dim. Rounding
// is to nearest even; finite values beyond the format's range saturate to its largest finite value,
// inf/NaN stay non-finite and are rejected by the decoder (compressors/half.h). Quality: contraction
// delta = 1 - u^2 with u the unit roundoff (2^-11 fp16, 2^-8 bf16), for values in the normal range.
#include <cstddef>
#include <memory>
#include <span>

#include <vector>

#include "compressors/compressor.h"
#include "compressors/fp32_runs.h"

namespace gossip::compress {
std::unique_ptr<Compressor> makeFp32(const CompressorSpec& spec);

// The fp32 codec's payloads carry the values themselves, so a stateless mix of several can run in one
// pass over the model (D-PSGD with float32 state, algorithms/mixing.h) instead of a scaled copy, then a
// validation pass and an add pass per neighbour, then a pass for the disagreement.
//
// fp32BodyRuns: the value bytes of an fp32 payload for a vector of `dim`, given in parts (algorithm.h,
// messageParts: one for a payload in one buffer), its header and length checked as decodeAdd checks them
// (DecodeError otherwise); the header must lie in the first part, and no part boundary may split a value
// (the transport's 1 MiB parts and the 8-byte header never do). Appends the body's runs to `runs`, the first
// part's without its header. The values' finiteness is checked by fp32Mix or fp32Finite.
void fp32BodyRuns(std::span<const std::span<const std::byte>> parts, std::size_t dim,
                  std::vector<std::span<const std::byte>>& runs);
// out = self·own + Σ_k weights[k]·bodies[k], with the operations (float products and sums, in this order)
// of out = self·own followed by decodeAdd of each payload, so bit for bit that result; returns Σ_i (out_i -
// own_i)² in double. Runs over blocks that stay in cache, so each vector is read or written once. If a
// body holds a non-finite value, returns the index of the first such body in `bad` (out is then
// unspecified: the caller's scratch); bad = bodies.size() otherwise. out and own have the bodies' length.
struct Fp32MixResult {
  double squared_change = 0;
  std::size_t bad = 0;
};
// Each body is given as its runs (compressors/fp32_runs.h; one run for a contiguous payload).
Fp32MixResult fp32Mix(float self, std::span<const float> own, std::span<const Fp32Runs> bodies,
                      std::span<const double> weights, std::span<float> out);

// The body of an fp32 payload of `dim` values, its header written, for a caller that computes the values
// straight into it (the primal-dual family's y - h, algorithms/primal_dual_fp32.h): once filled, the bytes
// encode() of those values writes, without a vector of them aside.
std::span<std::byte> fp32PayloadBody(Encoded& out, std::size_t dim);

// fp32's encode of float values (the bytes encode() writes) in one pass that also computes the payload's
// crc32c (out.crc, for the frame's checksum) and checks every value for finiteness: false when one is NaN
// or infinite, and the payload must then not be sent. D-PSGD's round with fp32 and float32 state
// (algorithms/stateless.cc), where the copy, the frame's checksum and the divergence check of x were three
// passes over the model.
bool fp32EncodeChecked(std::span<const float> x, Encoded& out);

// Whether every value of an fp32 body is finite: one integer pass over the bits (inf and NaN have all
// eight exponent bits set). What fp32MixInPlace needs checked before it writes x.
bool fp32Finite(Fp32Runs body);
// The mix in place: x = self·x + Σ_k weights[k]·bodies[k], then x -= step·g when g is not empty, with the
// float operations of fp32Mix followed by `out -= step * g`, so bit for bit that result; returns Σ_i (mixed_i
// - x_i)² before the step, in double. No second vector of the model is needed (D-PSGD kept its next model
// aside: 4 bytes per parameter). The bodies must have passed fp32Finite: x is written block by block.
double fp32MixInPlace(float self, std::span<float> x, std::span<const Fp32Runs> bodies,
                      std::span<const double> weights, std::span<const float> g, float step);

std::unique_ptr<Compressor> makeFp16(const CompressorSpec& spec);
std::unique_ptr<Compressor> makeBf16(const CompressorSpec& spec);
}  // namespace gossip::compress
