#pragma once
// Dense codecs: fp32 (identity), fp16 and bf16 casts. The identity codec is the uncompressed baseline
// and the reference every other codec's size is compared against.
#include <memory>

#include "compressors/compressor.h"

namespace gossip::compress {
std::unique_ptr<Compressor> makeFp32(const CompressorSpec& spec);
std::unique_ptr<Compressor> makeFp16(const CompressorSpec& spec);
std::unique_ptr<Compressor> makeBf16(const CompressorSpec& spec);
}  // namespace gossip::compress
