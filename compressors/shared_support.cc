#include "compressors/shared_support.h"

#include "core/error.h"

namespace gossip::compress {
std::unique_ptr<Compressor> makeCltk(const CompressorSpec&) { throw ConfigError("makeCltk: not implemented yet"); }
}  // namespace gossip::compress
