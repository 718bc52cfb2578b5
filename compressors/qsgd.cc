#include "compressors/qsgd.h"

#include "core/error.h"

namespace gossip::compress {
std::unique_ptr<Compressor> makeQsgd(const CompressorSpec&) { throw ConfigError("makeQsgd: not implemented yet"); }
}  // namespace gossip::compress
