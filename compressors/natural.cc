#include "compressors/natural.h"

#include "core/error.h"

namespace gossip::compress {
std::unique_ptr<Compressor> makeNatural(const CompressorSpec&) { throw ConfigError("makeNatural: not implemented yet"); }
std::unique_ptr<Compressor> makeDither(const CompressorSpec&) { throw ConfigError("makeDither: not implemented yet"); }
}  // namespace gossip::compress
