#pragma once
// Top-k composed with natural compression or natural dithering on the kept values.
#include <memory>

#include "compressors/compressor.h"

namespace gossip::compress {
std::unique_ptr<Compressor> makeTopKNatural(const CompressorSpec& spec);
std::unique_ptr<Compressor> makeTopKDither(const CompressorSpec& spec);
}  // namespace gossip::compress
