#pragma once
// Scaled sign, one l1 scale per block.
#include <memory>

#include "compressors/compressor.h"

namespace gossip::compress {
std::unique_ptr<Compressor> makeSign(const CompressorSpec& spec);
}  // namespace gossip::compress
