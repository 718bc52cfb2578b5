#include "compressors/topk.h"

#include "core/error.h"

namespace gossip::compress {
std::unique_ptr<Compressor> makeTopK(const CompressorSpec&) { throw ConfigError("makeTopK: not implemented yet"); }
}  // namespace gossip::compress
