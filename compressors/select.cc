#include "compressors/select.h"

#include "core/error.h"

namespace gossip::compress {
// Placeholder until the sparsifier work lands.
void selectTopK(std::span<const float>, std::uint32_t, std::vector<std::uint32_t>&) { throw Error("selectTopK: not implemented yet"); }
void selectTopK(std::span<const double>, std::uint32_t, std::vector<std::uint32_t>&) { throw Error("selectTopK: not implemented yet"); }
std::size_t indexBytes(std::uint32_t, std::uint32_t) { throw Error("indexBytes: not implemented yet"); }
void writeIndices(std::span<const std::uint32_t>, std::uint32_t, ByteWriter&) { throw Error("writeIndices: not implemented yet"); }
void readIndices(ByteReader&, std::uint32_t, std::uint32_t, std::vector<std::uint32_t>&) { throw Error("readIndices: not implemented yet"); }
}  // namespace gossip::compress
