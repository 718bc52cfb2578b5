#pragma once
// LEAD's unbiased b-bit infinity-norm quantizer.
#include <memory>

#include "compressors/compressor.h"

namespace gossip::compress {
std::unique_ptr<Compressor> makeLeadQuant(const CompressorSpec& spec);
}  // namespace gossip::compress
