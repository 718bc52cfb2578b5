#pragma once
// Natural compression C_nat and natural dithering (Horvath et al.).
#include <memory>

#include "compressors/compressor.h"

namespace gossip::compress {
std::unique_ptr<Compressor> makeNatural(const CompressorSpec& spec);
std::unique_ptr<Compressor> makeDither(const CompressorSpec& spec);
}  // namespace gossip::compress
