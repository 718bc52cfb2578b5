#pragma once
// Helpers shared by the algorithm classes: decoding messages into dense vectors and walking a round's
// neighbour list against the messages that actually arrived.
#include <cmath>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "algorithms/algorithm.h"
#include "compressors/cast.h"
#include "core/error.h"

namespace gossip::algo::detail {

// mixArrivedFp32's lists, per thread: the simulator mixes its nodes on a pool of threads, and a round
// should not allocate.
struct Fp32MixScratch {
  std::vector<std::span<const std::byte>> runs;  // every body's runs, one body after the other
  std::vector<std::size_t> firstRun;             // index in runs of each body's first run
  std::vector<compress::Fp32Runs> bodies;        // views into runs, made once runs is complete
  std::vector<double> weights;
  std::vector<PeerId> senders;
  std::vector<char> knownFinite;  // Incoming::wordsFinite of each body's message
};
inline Fp32MixScratch& fp32Scratch() {
  thread_local Fp32MixScratch s;
  return s;
}

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

// Only in the float32 build (core/real.h): the float64 build's state is never what fp32 carries.
#if !(defined(GOSSIP_STATE_FLOAT64) && GOSSIP_STATE_FLOAT64)
// The arrived messages of the row as fp32 bodies, their weights and senders (fp32Scratch), each header and
// length checked (and, with checkFinite, every value finite): RejectedMessage naming the sender otherwise.
// Returns the self weight: w_ii plus the weights of the neighbours whose message is missing.
inline double collectFp32Bodies(std::span<const Incoming> msgs, const topology::MixingRow& row, std::size_t dim,
                                bool checkFinite) {
  Fp32MixScratch& s = fp32Scratch();
  s.runs.clear(), s.firstRun.clear(), s.bodies.clear(), s.weights.clear(), s.senders.clear(), s.knownFinite.clear();
  double selfWeight = row.self;
  for (const auto& [j, w] : row.neighbors) {
    const Incoming* m = findIncoming(msgs, j);
    if (!m) {
      selfWeight += w;
      continue;
    }
    s.firstRun.push_back(s.runs.size());
    try {
      compress::fp32BodyRuns(messageParts(*m), dim, s.runs);  // a message in parts is read in place
    } catch (const DecodeError& e) {
      throw RejectedMessage(m->from, e.what());
    }
    s.weights.push_back(w);
    s.senders.push_back(m->from);
    s.knownFinite.push_back(m->wordsFinite);
  }
  s.firstRun.push_back(s.runs.size());
  for (std::size_t k = 0; k + 1 < s.firstRun.size(); ++k) {
    s.bodies.push_back(compress::Fp32Runs(s.runs).subspan(s.firstRun[k], s.firstRun[k + 1] - s.firstRun[k]));
    if (checkFinite && !s.knownFinite[k] && !compress::fp32Finite(s.bodies.back()))
      throw RejectedMessage(s.senders[k], "non-finite value in fp32 payload");
  }
  return selfWeight;
}

// mixArrived for the fp32 codec with float32 state (exactForState), where own is x itself: the same acc bit
// for bit, in one pass over the model (compressors/cast.h, fp32Mix, which checks finiteness on the way);
// returns || acc - own || (the round's disagreement), which mixArrived's callers compute in a pass of their
// own. A payload that does not decode throws RejectedMessage naming its sender; acc is scratch until the
// caller swaps it in.
inline double mixArrivedFp32(std::span<const Incoming> msgs, const topology::MixingRow& row, const Vec& own, Vec& acc) {
  const auto dim = static_cast<std::size_t>(own.size());
  const double selfWeight = collectFp32Bodies(msgs, row, dim, false);
  const Fp32MixScratch& s = fp32Scratch();
  if (acc.size() != own.size()) acc.resize(own.size());
  const auto r = compress::fp32Mix(static_cast<float>(selfWeight), {own.data(), dim}, s.bodies, s.weights,
                                   {acc.data(), dim});
  if (r.bad < s.senders.size()) throw RejectedMessage(s.senders[r.bad], "non-finite value in fp32 payload");
  return std::sqrt(r.squared_change);
}

// mixArrivedFp32 in place: x = w_self x + sum_j w_ij m_j - step g (g empty: no step), x itself being
// this node's message. Every payload is checked first (header, length, finiteness: RejectedMessage naming
// its sender, x unchanged), then x is mixed block by block with no second vector of the model (compressors/
// cast.h, fp32MixInPlace); returns the round's disagreement || mixed - x ||. The same x bit for bit as
// mixArrivedFp32 followed by x = acc - step g.
inline double mixArrivedFp32InPlace(std::span<const Incoming> msgs, const topology::MixingRow& row, Vec& x,
                                    const GradRef& g, double step) {
  const auto dim = static_cast<std::size_t>(x.size());
  const double selfWeight = collectFp32Bodies(msgs, row, dim, true);
  const Fp32MixScratch& s = fp32Scratch();
  return std::sqrt(compress::fp32MixInPlace(static_cast<float>(selfWeight), {x.data(), dim}, s.bodies, s.weights,
                                            {g.data(), static_cast<std::size_t>(g.size())},
                                            static_cast<float>(step)));
}
#endif

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
