#include "algorithms/stateless.h"

#include <cmath>
#include <limits>

#include "algorithms/mixing.h"
#include "algorithms/prox.h"
#include "training/state_io.h"

namespace gossip::algo {
namespace {
constexpr std::uint32_t kDpsgdTag = serial::fourcc("DPSG");
constexpr std::uint32_t kDeepSqueezeTag = serial::fourcc("DSQZ");
}  // namespace

Dpsgd::Dpsgd(const AlgorithmParams& p, const compress::Compressor& c, PeerId self, Vec x0)
    : p_(p), c_(c), self_(self), ownIsX_(detail::exactForState(c)) {
  x_ = std::move(x0);  // moved, not copied: a 100M model's start holds one model, not two (results §23)
  if (!ownIsX_) own_ = Vec::Zero(x_.size());
}

void Dpsgd::prepare(Round t, const GradRef& g, double lr, compress::Encoded& out) {
  g_.hold(g);
  lr_ = lr;
#if !(defined(GOSSIP_STATE_FLOAT64) && GOSSIP_STATE_FLOAT64)
  if (ownIsX_) {
    // The message is x's bytes: copied into the frame in one pass that also computes the frame's checksum
    // and checks x for finiteness (prepareChecksFinite), where they were three passes over the model.
    if (!compress::fp32EncodeChecked({x_.data(), static_cast<std::size_t>(x_.size())}, out))
      throw NonFiniteModel("non-finite value in the model");
    return;
  }
#endif
  Rng rng(roundSeed(p_.seed, self_, p_.incarnation, t));
  c_.encode(detail::view(x_), rng, out);
  // A codec that carries the state's values exactly (fp32 with float32 state) decodes to x itself: no copy.
  if (!ownIsX_) detail::decodeInto(c_, out.view(), own_);
}

void Dpsgd::apply(Round, std::span<const Incoming> msgs, const topology::MixingRow& row) { mix(msgs, row, nullptr, 0.0); }

void Dpsgd::mix(std::span<const Incoming> msgs, const topology::MixingRow& row, const Vec* pullTo, double pull) {
  GOSSIP_CHECK(g_.held(), "dpsgd: apply without prepare");
  // Missing neighbours fold their weight into the self weight (replace-with-own). The mixed model is built
  // in acc_ and only swapped in once every message decoded.
  const Vec& own = ownIsX_ ? x_ : own_;  // C(x_i) as the neighbours decode it
#if !(defined(GOSSIP_STATE_FLOAT64) && GOSSIP_STATE_FLOAT64)
  // fp32 and float32 state, no pull: x = sum_j w_ij x_j - lr g in place, in one pass after a check of the
  // messages (no next model aside: acc_ stays empty).
  if (ownIsX_ && !pullTo) {
    disagreement_ = detail::mixArrivedFp32InPlace(msgs, row, x_, g_.view(), lr_);
    proxL1(x_, lr_ * p_.l1);
    return;
  }
#endif
  // acc_ = sum_j w_ij C(x_j), missing ones C(x_i); with fp32 and float32 state in one pass with the
  // disagreement (the same acc_ bit for bit).
#if !(defined(GOSSIP_STATE_FLOAT64) && GOSSIP_STATE_FLOAT64)
  if (ownIsX_) {
    disagreement_ = detail::mixArrivedFp32(msgs, row, own, acc_);
  } else
#endif
  {
    detail::mixArrived(c_, msgs, row, own, acc_);
    disagreement_ = training::norm64(acc_ - own);
  }
  // x = acc - lr g (Node keeps g unchanged between prepare and apply; empty: a zero gradient, no pass).
  if (g_.size != 0) acc_ -= lr_ * g_.view();
  if (pullTo) acc_ -= pull * (own - *pullTo);
  x_.swap(acc_);
  proxL1(x_, lr_ * p_.l1);
}

// Between rounds D-PSGD's only state is x (own_, the gradient and lr_ are given again by prepare).
void Dpsgd::save(ByteWriter& w) const {
  serial::putTag(w, kDpsgdTag);
  writeState(w);
}

void Dpsgd::load(ByteReader& r) {
  serial::expectTag(r, kDpsgdTag, "dpsgd state");
  commitState(readState(r));
}

void Dpsgd::writeState(ByteWriter& w) const { training::putVec(w, x_); }

Dpsgd::State Dpsgd::readState(ByteReader& r) const {
  State s{Vec(x_.size())};
  training::getVecInto(r, s.x, name().data());  // a string literal: "dpsgd" or "lsgd"
  return s;
}

DeepSqueeze::DeepSqueeze(const AlgorithmParams& p, const compress::Compressor& c, PeerId self, Vec x0)
    : p_(p),
      c_(c),
      self_(self),
      ef_(c, static_cast<std::uint32_t>(x0.size()), p.beta) {
  if (!(p.eta > 0.0 && p.eta <= 1.0)) throw ConfigError("algorithm.eta must be in (0, 1] for deepsqueeze");
  x_ = std::move(x0);
}

void DeepSqueeze::prepare(Round t, const GradRef& g, double lr, compress::Encoded& out) {
  if (g.size() != 0) x_ -= lr * g;  // x_half (empty g: zero)
  Rng rng(roundSeed(p_.seed, self_, p_.incarnation, t));
  // v = x_half + delta; c = C(v) into out; delta updated in place (no dense c_i is kept: the mix adds the
  // message's own bytes, which for top-k are k values, not d).
  // The compress checks x (prepareChecksFinite): NonFiniteModel, which Node reports as "the model became non-finite".
  if (!ef_.compress(detail::view(x_), rng, out)) throw NonFiniteModel("deepsqueeze: x holds a NaN or an infinity");
  own_ = out.bytes;
  ownDense_ = false;
  lr_ = lr;
}

void DeepSqueeze::apply(Round, std::span<const Incoming> msgs, const topology::MixingRow& row) {
  mix(msgs, row, nullptr, 0.0);
}

const Vec& DeepSqueeze::ownDense() {
  if (!ownDense_) {
    if (ownValues_.size() != x_.size()) ownValues_ = Vec::Zero(x_.size());
    detail::decodeInto(c_, own_, ownValues_);
    ownDense_ = true;
  }
  return ownValues_;
}

void DeepSqueeze::mix(std::span<const Incoming> msgs, const topology::MixingRow& row, const Vec* pullTo, double pull) {
  if (!mixMerged(msgs, row) && !mixInPlace(msgs, row)) {
    // A dense codec: accumulate into a copy of x_half and commit only when every message decoded.
    acc_ = x_;
    double present = 0.0;
    for (const auto& [j, w] : row.neighbors) {
      if (const Incoming* m = detail::findIncoming(msgs, j)) {
        detail::decodeAddFrom(c_, *m, acc_, p_.eta * w);
        present += w;
      }
    }
    // The self term -eta sum_j w_ij c_i, from this node's own bytes (they decoded when they were made).
    detail::decodeAdd(c_, own_, acc_, -(p_.eta * present));
    // acc_ - x_half = eta sum_{j arrived} w_ij (c_j - c_i): the mixed sketches' disagreement times eta.
    disagreement_ = training::norm64(acc_ - x_) / p_.eta;
    x_.swap(acc_);
  }
  if (pullTo) x_ -= pull * (ownDense() - *pullTo);
  proxL1(x_, lr_ * p_.l1);
}

// A sparse codec's messages change x only on their supports. So every message is validated first (the
// codec's sparseSupport() reads it as decodeAdd would), then added to x in place, in the same order and with
// the same operations as the dense path (the models are bit for bit the same), and the disagreement is
// measured on the union of the supports: x's values there are kept before the adds (the first occurrence
// of an index, found with a bitmap of d bits). No next model is built aside: 4 bytes per parameter less
// and two passes over the model fewer (the copy and the difference's norm).
bool DeepSqueeze::mixInPlace(std::span<const Incoming> msgs, const topology::MixingRow& row) {
  const auto dim = static_cast<std::uint32_t>(x_.size());
  touched_.clear();
  if (!c_.sparseSupport(own_, dim, touched_)) return false;
  double present = 0.0;
  for (const auto& [j, w] : row.neighbors) {
    if (const Incoming* m = detail::findIncoming(msgs, j)) {
      try {
        c_.sparseSupport(m->payload, dim, touched_);
      } catch (const DecodeError& e) {
        throw RejectedMessage(m->from, e.what());
      }
      present += w;
    }
  }
  constexpr std::uint32_t kRepeat = std::numeric_limits<std::uint32_t>::max();  // never an index (< dim)
  if (seen_.size() != (std::size_t{dim} + 63) / 64) seen_.assign((std::size_t{dim} + 63) / 64, 0);
  before_.resize(touched_.size());
  for (std::size_t n = 0; n < touched_.size(); ++n) {
    const std::uint32_t i = touched_[n];
    const std::uint64_t bit = std::uint64_t{1} << (i & 63);
    if (seen_[i >> 6] & bit) {
      touched_[n] = kRepeat;
      continue;
    }
    seen_[i >> 6] |= bit;
    before_[n] = x_[i];
  }
  // Validated above: these adds cannot throw.
  for (const auto& [j, w] : row.neighbors)
    if (const Incoming* m = detail::findIncoming(msgs, j)) detail::decodeAdd(c_, m->payload, x_, p_.eta * w);
  detail::decodeAdd(c_, own_, x_, -(p_.eta * present));
  double sum = 0.0;
  for (std::size_t n = 0; n < touched_.size(); ++n) {
    const std::uint32_t i = touched_[n];
    if (i == kRepeat) continue;
    const double d = static_cast<double>(x_[i] - before_[n]);  // as the dense path: the difference in Real
    sum += d * d;
    seen_[i >> 6] &= ~(std::uint64_t{1} << (i & 63));  // the bitmap is all zeros between rounds
  }
  disagreement_ = std::sqrt(sum) / p_.eta;
  return true;
}

namespace {
constexpr std::size_t kPrefetchAhead = 16;  // indices ahead whose cache lines mixMerged asks for
}  // namespace

// mixInPlace's operations in one pass: per index of the supports' union, ascending, x_i plus each
// neighbour's term in the row's order, then this node's own, as the dense path adds them (bit for bit),
// and the change's square summed on the way. Where mixInPlace parsed every message twice and walked the
// supports four times (x aside, the neighbours' adds, the own add, the change), this parses each once and
// walks the union once: at 100M parameters with top-1% every walk is ~2M cache misses.
bool DeepSqueeze::mixMerged(std::span<const Incoming> msgs, const topology::MixingRow& row) {
  const auto dim = static_cast<std::uint32_t>(x_.size());
  std::size_t lists = 0;
  auto next = [&]() -> SparseEntries& {
    if (entries_.size() <= lists) entries_.emplace_back();
    return entries_[lists++];
  };
  SparseEntries* own = &next();
  if (!c_.sparseEntries(own_, dim, own->idx, own->values)) return false;
  double present = 0.0;
  for (const auto& [j, w] : row.neighbors) {
    if (const Incoming* m = detail::findIncoming(msgs, j)) {
      SparseEntries& e = next();
      try {
        c_.sparseEntries(m->payload, dim, e.idx, e.values);
      } catch (const DecodeError& ex) {
        throw RejectedMessage(m->from, ex.what());
      }
      e.scale = static_cast<Real>(p_.eta * w);
      present += w;
    }
  }
  own = &entries_[0];  // next() may have moved the vector's elements
  own->scale = static_cast<Real>(-(p_.eta * present));
  // Own first in entries_, added last: the dense path adds the self term after every neighbour's.
  const std::size_t ownList = 0;
  at_.assign(lists, 0);
  Real* x = x_.data();
  double sum = 0.0;
  for (;;) {
    std::uint32_t i = std::numeric_limits<std::uint32_t>::max();  // never an index (< dim <= 2^32 - 1)
    for (std::size_t l = 0; l < lists; ++l)
      if (at_[l] < entries_[l].idx.size()) i = std::min(i, entries_[l].idx[at_[l]]);
    if (i == std::numeric_limits<std::uint32_t>::max()) break;
    // The supports are ~1% of x, so nearly every index is a cache miss: ask for the lines a few indices
    // ahead in each list while this one is added (measured: see docs/results.md §23).
    for (std::size_t l = 0; l < lists; ++l)
      if (at_[l] + kPrefetchAhead < entries_[l].idx.size()) __builtin_prefetch(x + entries_[l].idx[at_[l] + kPrefetchAhead], 1);
    const Real before = x[i];
    Real v = before;
    for (std::size_t l = 1; l <= lists; ++l) {
      const std::size_t k = l == lists ? ownList : l;  // neighbours 1..n in order, own last
      SparseEntries& e = entries_[k];
      if (at_[k] < e.idx.size() && e.idx[at_[k]] == i) v += e.scale * static_cast<Real>(e.values[at_[k]++]);
    }
    x[i] = v;
    const double d = static_cast<double>(v - before);  // as the dense path: the difference in Real
    sum += d * d;
  }
  disagreement_ = std::sqrt(sum) / p_.eta;
  return true;
}

void DeepSqueeze::save(ByteWriter& w) const {
  serial::putTag(w, kDeepSqueezeTag);
  writeState(w);
}

void DeepSqueeze::load(ByteReader& r) {
  serial::expectTag(r, kDeepSqueezeTag, "deepsqueeze state");
  commitState(readState(r));
}

void DeepSqueeze::writeState(ByteWriter& w) const {
  training::putVec(w, x_);
  serial::putArray(w, ef_.memory());
}

DeepSqueeze::State DeepSqueeze::readState(ByteReader& r) const {
  State s{Vec(x_.size()), std::vector<Real>(ef_.memory().size())};
  training::getVecInto(r, s.x, "deepsqueeze x");
  serial::getArrayInto(r, std::span<Real>(s.memory), "deepsqueeze error memory");
  return s;
}

void DeepSqueeze::commitState(State&& s) {
  ef_.setMemory(s.memory);
  x_.swap(s.x);
}

}  // namespace gossip::algo
