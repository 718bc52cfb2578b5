#pragma once
// QSGD with s levels, unbiased and scaled (biased) forms.
#include <memory>

#include "compressors/compressor.h"

namespace gossip::compress {
std::unique_ptr<Compressor> makeQsgd(const CompressorSpec& spec);
}  // namespace gossip::compress
