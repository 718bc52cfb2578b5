#pragma once
// Helpers shared by the algorithm classes: decoding messages into dense vectors and walking a round's
// neighbour list against the messages that actually arrived.
#include <optional>
#include <span>

#include "algorithms/algorithm.h"
#include "core/error.h"

namespace gossip::algo::detail {

// The message from `from` in msgs, if any.
inline std::optional<std::span<const std::byte>> findMessage(std::span<const Incoming> msgs, PeerId from) {
  for (const auto& m : msgs)
    if (m.from == from) return m.payload;
  return std::nullopt;
}

// out = decode(payload) (out is overwritten, keeps its size).
inline void decodeInto(const compress::Compressor& c, std::span<const std::byte> payload, Vec& out) {
  out.setZero();
  c.decodeAdd(payload, std::span<double>(out.data(), static_cast<std::size_t>(out.size())), 1.0);
}

inline void decodeAdd(const compress::Compressor& c, std::span<const std::byte> payload, Vec& acc, double scale) {
  c.decodeAdd(payload, std::span<double>(acc.data(), static_cast<std::size_t>(acc.size())), scale);
}

inline std::span<const double> view(const Vec& v) { return {v.data(), static_cast<std::size_t>(v.size())}; }

}  // namespace gossip::algo::detail
