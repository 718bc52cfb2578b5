#pragma once
// Random-k with a seed carried in the payload (biased and unbiased scaling).
#include <memory>

#include "compressors/compressor.h"

namespace gossip::compress {
std::unique_ptr<Compressor> makeRandK(const CompressorSpec& spec);
}  // namespace gossip::compress
