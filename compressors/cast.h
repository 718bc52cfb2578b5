#pragma once
// Dense codecs: fp32 (identity), fp16 and bf16 casts. The identity codec is the uncompressed baseline
// and the reference every other codec's size is compared against.
//
// fp16/bf16 payload: header (param 0, dim) | dim little-endian 16-bit values; size 8 + 2*dim. Rounding
// is to nearest even; finite values beyond the format's range saturate to its largest finite value,
// inf/NaN stay non-finite and are rejected by the decoder (compressors/half.h). Quality: contraction
// delta = 1 - u^2 with u the unit roundoff (2^-11 fp16, 2^-8 bf16), for values in the normal range.
#include <memory>

#include "compressors/compressor.h"

namespace gossip::compress {
std::unique_ptr<Compressor> makeFp32(const CompressorSpec& spec);
std::unique_ptr<Compressor> makeFp16(const CompressorSpec& spec);
std::unique_ptr<Compressor> makeBf16(const CompressorSpec& spec);
}  // namespace gossip::compress
