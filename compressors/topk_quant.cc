#include "compressors/topk_quant.h"

#include "core/error.h"

namespace gossip::compress {
std::unique_ptr<Compressor> makeTopKNatural(const CompressorSpec&) { throw ConfigError("makeTopKNatural: not implemented yet"); }
std::unique_ptr<Compressor> makeTopKDither(const CompressorSpec&) { throw ConfigError("makeTopKDither: not implemented yet"); }
}  // namespace gossip::compress
