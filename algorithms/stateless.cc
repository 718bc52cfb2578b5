#include "algorithms/stateless.h"

#include "algorithms/mixing.h"
#include "algorithms/prox.h"
#include "training/state_io.h"

namespace gossip::algo {
namespace {
constexpr std::uint32_t kDpsgdTag = serial::fourcc("DPSG");
constexpr std::uint32_t kDeepSqueezeTag = serial::fourcc("DSQZ");
}  // namespace

Dpsgd::Dpsgd(const AlgorithmParams& p, const compress::Compressor& c, PeerId self, const Vec& x0)
    : p_(p), c_(c), self_(self), own_(Vec::Zero(x0.size())), step_(Vec::Zero(x0.size())), acc_(Vec::Zero(x0.size())) {
  x_ = x0;
}

void Dpsgd::prepare(Round t, const Vec& g, double lr, compress::Encoded& out) {
  Rng rng(roundSeed(p_.seed, self_, p_.incarnation, t));
  c_.encode(detail::view(x_), rng, out);
  detail::decodeInto(c_, out.view(), own_);
  step_ = lr * g;
  lr_ = lr;
}

void Dpsgd::apply(Round, std::span<const Incoming> msgs, const topology::MixingRow& row) { mix(msgs, row, nullptr, 0.0); }

void Dpsgd::mix(std::span<const Incoming> msgs, const topology::MixingRow& row, const Vec* pullTo, double pull) {
  // Missing neighbours fold their weight into the self weight (replace-with-own). The neighbour sum is
  // built in acc_ (same operations as before, in the same order) and only swapped in once all decoded.
  const double selfWeight = detail::mixArrived(c_, msgs, row, acc_);
  // acc_ = sum_{j arrived} w_ij x_j, so x_i - sum_j w_ij x_j = (1 - selfWeight) x_i - acc_ (missing: x_j = x_i).
  disagreement_ = training::norm64((1.0 - selfWeight) * own_ - acc_);
  x_.swap(acc_);
  x_ += selfWeight * own_ - step_;
  if (pullTo) x_ -= pull * (own_ - *pullTo);
  proxL1(x_, lr_ * p_.l1);
}

// Between rounds D-PSGD's only state is x (own_, step_ and lr_ are rebuilt by prepare).
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

DeepSqueeze::DeepSqueeze(const AlgorithmParams& p, const compress::Compressor& c, PeerId self, const Vec& x0)
    : p_(p),
      c_(c),
      self_(self),
      ef_(c, static_cast<std::uint32_t>(x0.size()), p.beta),
      acc_(Vec::Zero(x0.size())),
      own_(Vec::Zero(x0.size())) {
  if (!(p.eta > 0.0 && p.eta <= 1.0)) throw ConfigError("algorithm.eta must be in (0, 1] for deepsqueeze");
  x_ = x0;
}

void DeepSqueeze::prepare(Round t, const Vec& g, double lr, compress::Encoded& out) {
  x_ -= lr * g;  // x_half
  Rng rng(roundSeed(p_.seed, self_, p_.incarnation, t));
  // v = x_half + delta; c = C(v) into out and own_; delta updated.
  ef_.compress(detail::view(x_), rng, out, std::span<Real>(own_.data(), static_cast<std::size_t>(own_.size())));
  lr_ = lr;
}

void DeepSqueeze::apply(Round, std::span<const Incoming> msgs, const topology::MixingRow& row) {
  mix(msgs, row, nullptr, 0.0);
}

void DeepSqueeze::mix(std::span<const Incoming> msgs, const topology::MixingRow& row, const Vec* pullTo, double pull) {
  // Accumulate into a copy of x_half and commit only when every message decoded.
  acc_ = x_;
  double present = 0.0;
  for (const auto& [j, w] : row.neighbors) {
    if (const Incoming* m = detail::findIncoming(msgs, j)) {
      detail::decodeAddFrom(c_, *m, acc_, p_.eta * w);
      present += w;
    }
  }
  // acc_ - x_half = eta sum_{j arrived} w_ij c_j, and the mix moves x by eta sum_j w_ij (c_j - c_i).
  disagreement_ = training::norm64(present * own_ - (acc_ - x_) / p_.eta);
  x_.swap(acc_);
  x_ -= (p_.eta * present) * own_;
  if (pullTo) x_ -= pull * (own_ - *pullTo);
  proxL1(x_, lr_ * p_.l1);
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
