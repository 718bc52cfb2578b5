#pragma once
// Top-k sparsification with deterministic tie-break (lowest index first).
#include <memory>

#include "compressors/compressor.h"

namespace gossip::compress {
std::unique_ptr<Compressor> makeTopK(const CompressorSpec& spec);
}  // namespace gossip::compress
