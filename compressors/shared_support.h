#pragma once
// CLT-k (ScaleCom) style shared-support sparsification.
#include <memory>

#include "compressors/compressor.h"

namespace gossip::compress {
std::unique_ptr<Compressor> makeCltk(const CompressorSpec& spec);
}  // namespace gossip::compress
