#pragma once
// Helpers shared by the algorithm classes: decoding messages into dense vectors and walking a round's
// neighbour list against the messages that actually arrived.
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "algorithms/algorithm.h"
#include "core/error.h"

namespace gossip::algo::detail {

// The message from `from` in msgs, if any.
inline const Incoming* findIncoming(std::span<const Incoming> msgs, PeerId from) {
  for (const auto& m : msgs)
    if (m.from == from) return &m;
  return nullptr;
}
inline std::optional<std::span<const std::byte>> findMessage(std::span<const Incoming> msgs, PeerId from) {
  if (const Incoming* m = findIncoming(msgs, from)) return m->payload;
  return std::nullopt;
}

// Whether decode(encode(x)) == x bit for bit for the state's values: fp32 with float32 state (core/real.h).
// Then a sender's own decoded message is its x, and no copy of it is made.
inline bool exactForState(const compress::Compressor& c) {
  return !kRealIsDouble && c.codec() == compress::CodecId::Fp32;
}

// out = decode(payload) (out is overwritten, keeps its size).
inline void decodeInto(const compress::Compressor& c, std::span<const std::byte> payload, Vec& out) {
  out.setZero();
  c.decodeAdd(payload, std::span<Real>(out.data(), static_cast<std::size_t>(out.size())), 1.0);
}

inline void decodeAdd(const compress::Compressor& c, std::span<const std::byte> payload, Vec& acc, double scale) {
  c.decodeAdd(payload, std::span<Real>(acc.data(), static_cast<std::size_t>(acc.size())), scale);
}

// acc += scale * decode(m), with a decode failure reported as RejectedMessage naming the sender. The codecs
// validate the whole payload before touching acc, so acc is unchanged when this throws.
inline void decodeAddFrom(const compress::Compressor& c, const Incoming& m, Vec& acc, double scale) {
  try {
    decodeAdd(c, m.payload, acc, scale);
  } catch (const DecodeError& e) {
    throw RejectedMessage(m.from, e.what());
  }
}

// The stateless mix (D-PSGD, the final consensus phase): acc = w_self own + sum_{j arrived} w_ij decode(m_j),
// with own = C(x_i) and w_self = w_ii plus the weights of the neighbours whose message is missing (replace-
// with-own). acc - own is then sum_j w_ij (C(x_j) - C(x_i)), the round's disagreement. Starting from the
// scaled own copy instead of zeros saves a pass over the model (a memset per round, 3% of a 20M-parameter
// daemon's CPU). A payload that does not decode throws RejectedMessage; acc is scratch until the caller
// swaps it in.
inline void mixArrived(const compress::Compressor& c, std::span<const Incoming> msgs, const topology::MixingRow& row,
                       const Vec& own, Vec& acc) {
  double selfWeight = row.self;
  for (const auto& [j, w] : row.neighbors)
    if (!findIncoming(msgs, j)) selfWeight += w;
  acc = static_cast<Real>(selfWeight) * own;
  for (const auto& [j, w] : row.neighbors)
    if (const Incoming* m = findIncoming(msgs, j)) decodeAddFrom(c, *m, acc, w);
}

// Validation pass of the replica methods: the message of every neighbour of the row must be present
// (ProtocolError otherwise), come from the edge's incarnation and pass checkPayload(message), which throws
// RejectedMessage. `edgeInc(j)` returns the incarnation of the edge to j or nullopt if there is none.
template <class EdgeInc, class CheckPayload>
void validateReplicaMessages(std::string_view who, std::span<const Incoming> msgs, const topology::MixingRow& row,
                             std::size_t edgeCount, EdgeInc edgeInc, CheckPayload checkPayload) {
  if (row.neighbors.size() != edgeCount)
    throw ProtocolError(std::string(who) + ": round has " + std::to_string(row.neighbors.size()) +
                        " neighbours but " + std::to_string(edgeCount) + " edges");
  for (const auto& [j, w] : row.neighbors) {
    const std::optional<Incarnation> inc = edgeInc(j);
    if (!inc) throw ProtocolError(std::string(who) + ": no edge state for neighbour " + std::to_string(j));
    const Incoming* m = findIncoming(msgs, j);
    if (!m) throw ProtocolError(std::string(who) + ": missing message from neighbour " + std::to_string(j));
    if (m->incarnation != *inc)
      throw RejectedMessage(j, "incarnation " + std::to_string(m->incarnation) + " but the edge is to incarnation " +
                                   std::to_string(*inc));
    checkPayload(*m);
  }
}

// validateReplicaMessages where every payload must decode (RejectedMessage otherwise). Touches only scratch.
template <class EdgeInc>
void validateReplicaRound(std::string_view who, const compress::Compressor& c, std::span<const Incoming> msgs,
                          const topology::MixingRow& row, std::size_t edgeCount, EdgeInc edgeInc, Vec& scratch) {
  validateReplicaMessages(who, msgs, row, edgeCount, edgeInc, [&](const Incoming& m) {
    scratch.setZero();
    decodeAddFrom(c, m, scratch, 1.0);
  });
}

// For the replica methods' edge maps (PeerId -> Edge with an `incarnation` member): the keys, sorted, and
// the lookup validateReplicaRound needs.
template <class EdgeMap>
std::vector<EdgeKey> edgeKeys(const EdgeMap& edges) {
  std::vector<EdgeKey> keys;
  keys.reserve(edges.size());
  for (const auto& [id, e] : edges) keys.push_back({id, e.incarnation});
  return keys;
}
template <class EdgeMap>
auto incarnationLookup(const EdgeMap& edges) {
  return [&edges](PeerId j) -> std::optional<Incarnation> {
    auto e = edges.find(j);
    if (e == edges.end()) return std::nullopt;
    return e->second.incarnation;
  };
}

inline std::span<const Real> view(const Vec& v) { return {v.data(), static_cast<std::size_t>(v.size())}; }

}  // namespace gossip::algo::detail
