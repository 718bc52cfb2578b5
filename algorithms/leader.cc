#include "algorithms/leader.h"

#include <cmath>
#include <cstring>

#include "algorithms/mixing.h"
#include "training/state_io.h"

namespace gossip::algo {
namespace {
constexpr std::uint32_t kLsgdTag = serial::fourcc("LSGD");

// The loss travels as a trailer after the codec's payload (appending it costs no copy of the payload).
double trailerLoss(const Incoming& m) {
  if (m.payload.size() < Lsgd::kHeaderBytes) throw RejectedMessage(m.from, "lsgd message shorter than its loss trailer");
  double loss = 0;
  std::memcpy(&loss, m.payload.data() + m.payload.size() - Lsgd::kHeaderBytes, sizeof loss);
  if (!std::isfinite(loss)) throw RejectedMessage(m.from, "lsgd message with a non-finite loss");
  return loss;
}
}  // namespace

Lsgd::Lsgd(const AlgorithmParams& p, const compress::Compressor& c, PeerId self, const Vec& x0)
    : Dpsgd(p, c, self, x0), leader_(self), lead_(Vec::Zero(x0.size())) {
  if (!(p.leader_pull >= 0.0 && std::isfinite(p.leader_pull)))
    throw ConfigError("algorithm.leader_pull must be >= 0 for lsgd");
  if (p.leader_period < 1) throw ConfigError("algorithm.leader_period must be >= 1 for lsgd");
}

void Lsgd::noteLoss(double loss) {
  if (!std::isfinite(loss)) return;  // Node::checkFinite reports a diverged model; keep the last average
  avgLoss_ = std::isnan(avgLoss_) ? loss : (1.0 - kLossAverage) * avgLoss_ + kLossAverage * loss;
}

void Lsgd::prepare(Round t, const Vec& g, double lr, compress::Encoded& out) {
  Dpsgd::prepare(t, g, lr, out);
  const double loss = std::isnan(avgLoss_) ? std::numeric_limits<double>::max() : avgLoss_;
  const auto* b = reinterpret_cast<const std::byte*>(&loss);
  out.bytes.insert(out.bytes.end(), b, b + sizeof loss);
  pullRound_ = p_.leader_pull > 0.0 && t % p_.leader_period == 0;
}

void Lsgd::apply(Round, std::span<const Incoming> msgs, const topology::MixingRow& row) {
  // Every message is checked and split before anything changes: a bad one throws with x untouched.
  values_.clear();
  PeerId leader = self_;
  double best = std::isnan(avgLoss_) ? std::numeric_limits<double>::max() : avgLoss_;
  for (const auto& [j, w] : row.neighbors) {
    const Incoming* m = detail::findIncoming(msgs, j);
    if (!m) continue;
    const double loss = trailerLoss(*m);
    values_.push_back({m->from, m->incarnation, m->payload.first(m->payload.size() - kHeaderBytes)});
    if (loss < best || (loss == best && j < leader)) {
      best = loss;
      leader = j;
    }
  }
  const Incoming* leaderMsg = leader == self_ ? nullptr : detail::findIncoming(values_, leader);
  const bool pull = pullRound_ && leaderMsg != nullptr;
  if (pull) detail::decodeInto(c_, leaderMsg->payload, lead_);  // throws before x changes, as the mix does
  mix(values_, row, pull ? &lead_ : nullptr, lr_ * p_.leader_pull);
  leader_ = leader;
}

// x and the loss average (own_, lead_, step_, lr_ and the pull flag are rebuilt by prepare).
void Lsgd::save(ByteWriter& w) const {
  serial::putTag(w, kLsgdTag);
  training::putVec(w, x_);
  w.put<double>(avgLoss_);
}

void Lsgd::load(ByteReader& r) {
  serial::expectTag(r, kLsgdTag, "lsgd state");
  Vec x(x_.size());
  training::getVecInto(r, x, "lsgd x");
  const double avg = r.get<double>();
  if (!std::isnan(avg) && !std::isfinite(avg)) throw DecodeError("lsgd state: loss average is infinite");
  x_.swap(x);
  avgLoss_ = avg;
}

}  // namespace gossip::algo
