#include "compressors/randk.h"

#include "core/error.h"

namespace gossip::compress {
std::unique_ptr<Compressor> makeRandK(const CompressorSpec&) { throw ConfigError("makeRandK: not implemented yet"); }
}  // namespace gossip::compress
