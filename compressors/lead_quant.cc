#include "compressors/lead_quant.h"

#include "core/error.h"

namespace gossip::compress {
std::unique_ptr<Compressor> makeLeadQuant(const CompressorSpec&) { throw ConfigError("makeLeadQuant: not implemented yet"); }
}  // namespace gossip::compress
