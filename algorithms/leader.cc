#include "algorithms/leader.h"

#include <cmath>
#include <cstring>
#include <type_traits>

#include "algorithms/mixing.h"
#include "training/state_io.h"

namespace gossip::algo {
namespace {
constexpr std::uint32_t kLsgdTag = serial::fourcc("LSGD");    // before the global leader
constexpr std::uint32_t kLsgdTagV2 = serial::fourcc("LSG2");  // + the global leader's state
constexpr std::uint32_t kLsgdDsTag = serial::fourcc("LSDQ");  // on DeepSqueeze (+ its error memory)

template <class Base>
constexpr bool onDpsgd = std::is_same_v<Base, Dpsgd>;

template <class T>
T readAt(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <class T>
void append(Bytes& b, const T& v) {
  const auto* p = reinterpret_cast<const std::byte*>(&v);
  b.insert(b.end(), p, p + sizeof v);
}
}  // namespace

template <class Base>
LeaderPull<Base>::LeaderPull(const AlgorithmParams& p, const compress::Compressor& c, PeerId self, Vec x0)
    : Base(p, c, self, std::move(x0)), leader_(self), lead_(Vec::Zero(Base::x_.size())) {  // x0 is moved from here
  if (!(p.leader_pull >= 0.0 && std::isfinite(p.leader_pull)))
    throw ConfigError("algorithm.leader_pull must be >= 0 for lsgd");
  if (p.leader_period < 1) throw ConfigError("algorithm.leader_period must be >= 1 for lsgd");
  if (!(p.leader_global_pull >= 0.0 && p.leader_global_pull <= 1.0))
    throw ConfigError("algorithm.leader_global_pull must be in [0, 1] for lsgd");
  if (p.leader_global_period < 1) throw ConfigError("algorithm.leader_global_period must be >= 1 for lsgd");
}

template <class Base>
void LeaderPull<Base>::noteLoss(double loss) {
  if (!std::isfinite(loss)) return;  // Node::checkFinite reports a diverged model; keep the last average
  avgLoss_ = std::isnan(avgLoss_) ? loss : (1.0 - kLossAverage) * avgLoss_ + kLossAverage * loss;
}

template <class Base>
void LeaderPull<Base>::prepare(Round t, const GradRef& g, double lr, compress::Encoded& out) {
  Base::prepare(t, g, lr, out);
  // The trailers follow the codec's payload (appending costs no copy of the payload); the loss comes last.
  if (global()) appendGlobal(t, out);
  append(out.bytes, ownLoss());
  pullRound_ = p_.leader_pull > 0.0 && t % p_.leader_period == 0;
}

// The global part of the trailer, before the loss (leader.h, kGlobalBytes): closes an election at an epoch's
// first round, the winner's copy of its own model or a copy to relay, and this epoch's candidate.
template <class Base>
void LeaderPull<Base>::appendGlobal(Round t, compress::Encoded& out) {
  const std::uint64_t epoch = t / p_.leader_global_period;
  if (candEpoch_ != epoch) {
    // A new epoch (or this node's first round): the election that just ended names the leader, if this
    // node took part in all of it; a new election starts from this node's own loss.
    const bool ranLast = candEpoch_ != std::numeric_limits<std::uint64_t>::max() && candEpoch_ + 1 == epoch &&
                         t % p_.leader_global_period == 0;
    elected_ = ranLast ? std::optional<PeerId>(cand_.id) : std::nullopt;
    cand_ = {self_, ownLoss()};
    candEpoch_ = epoch;
    taken_ = false;
    relay_ = false;
    if (elected_ == self_) {  // the winner sends its model once; it does not pull toward itself
      copy_.assign(x_.data(), x_.data() + x_.size());  // double -> float, entry by entry
      copyEpoch_ = epoch;
      relay_ = true;
      taken_ = true;
    }
  }
  const bool sendCopy = relay_ && copyEpoch_ == epoch;
  if (sendCopy) {
    append(out.bytes, copyEpoch_);
    const auto* p = reinterpret_cast<const std::byte*>(copy_.data());
    out.bytes.insert(out.bytes.end(), p, p + copy_.size() * sizeof(float));
  }
  relay_ = false;  // a copy is relayed once
  out.bytes.push_back(std::byte{sendCopy ? std::uint8_t{1} : std::uint8_t{0}});
  append(out.bytes, cand_.id);
  append(out.bytes, cand_.loss);
}

template <class Base>
typename LeaderPull<Base>::Parsed LeaderPull<Base>::parse(const Incoming& m) const {
  Parsed r;
  std::size_t n = m.payload.size();
  const std::byte* b = m.payload.data();
  if (n < kHeaderBytes) throw RejectedMessage(m.from, "lsgd message shorter than its loss trailer");
  n -= kHeaderBytes;
  r.loss = readAt<double>(b + n);
  if (!std::isfinite(r.loss)) throw RejectedMessage(m.from, "lsgd message with a non-finite loss");
  if (global()) {
    if (n < kGlobalBytes) throw RejectedMessage(m.from, "lsgd message shorter than its global-leader trailer");
    n -= kGlobalBytes;
    const auto flag = static_cast<std::uint8_t>(b[n]);
    r.cand = {readAt<PeerId>(b + n + 1), readAt<double>(b + n + 5)};
    if (flag > 1 || std::isnan(r.cand.loss)) throw RejectedMessage(m.from, "lsgd message with a bad global-leader trailer");
    if (flag == 1) {
      const std::size_t copyBytes = 8 + static_cast<std::size_t>(x_.size()) * sizeof(float);
      if (n < copyBytes) throw RejectedMessage(m.from, "lsgd message shorter than its leader copy");
      n -= copyBytes;
      r.copyEpoch = readAt<std::uint64_t>(b + n);
      r.copy = b + n + 8;
      for (Eigen::Index i = 0; i < x_.size(); ++i)
        if (!std::isfinite(readAt<float>(r.copy + i * sizeof(float))))
          throw RejectedMessage(m.from, "lsgd message with a non-finite leader copy");
    }
  }
  r.values = m.payload.first(n);
  return r;
}

template <class Base>
void LeaderPull<Base>::apply(Round t, std::span<const Incoming> msgs, const topology::MixingRow& row) {
  // Every message is checked and split before anything changes: a bad one throws with x untouched.
  values_.clear();
  PeerId leader = self_;
  double best = ownLoss();
  Candidate cand = cand_;
  parsed_.clear();
  std::optional<std::size_t> copy;  // index into parsed_ of the copy to take
  for (const auto& [j, w] : row.neighbors) {
    const Incoming* m = detail::findIncoming(msgs, j);
    if (!m) continue;
    const Parsed& r = parsed_.emplace_back(parse(*m));
    values_.push_back({m->from, m->incarnation, r.values});
    if (r.loss < best || (r.loss == best && j < leader)) {
      best = r.loss;
      leader = j;
    }
    if (global()) {
      if (r.cand.loss < cand.loss || (r.cand.loss == cand.loss && r.cand.id < cand.id)) cand = r.cand;
      if (r.copy && !copy && !taken_ && r.copyEpoch == t / p_.leader_global_period) copy = parsed_.size() - 1;
    }
  }
  const Incoming* leaderMsg = leader == self_ ? nullptr : detail::findIncoming(values_, leader);
  const bool pull = pullRound_ && leaderMsg != nullptr;
  if (pull) detail::decodeInto(c_, leaderMsg->payload, lead_);  // throws before x changes, as the mix does
  Base::mix(values_, row, pull ? &lead_ : nullptr, lr_ * p_.leader_pull);
  leader_ = leader;
  if (!global()) return;
  cand_ = cand;
  if (copy) {
    const Parsed& r = parsed_[*copy];
    copy_.resize(static_cast<std::size_t>(x_.size()));
    std::memcpy(copy_.data(), r.copy, copy_.size() * sizeof(float));
    copyVec_ = Eigen::Map<const Eigen::VectorXf>(copy_.data(), x_.size()).cast<Real>();
    x_ -= static_cast<Real>(p_.leader_global_pull) * (x_ - copyVec_);
    copyEpoch_ = r.copyEpoch;
    taken_ = true;
    relay_ = true;
    ++copiesTaken_;
    lastCopyRound_ = t;
  }
}

// x, the loss average and the global leader's state (own_, lead_, the gradient, lr_ and the pull flag are rebuilt
// by prepare).
template <class Base>
void LeaderPull<Base>::save(ByteWriter& w) const {
  serial::putTag(w, onDpsgd<Base> ? kLsgdTagV2 : kLsgdDsTag);
  Base::writeState(w);
  w.put<double>(avgLoss_);
  w.put<std::uint64_t>(candEpoch_);
  w.put<std::uint32_t>(cand_.id);
  w.put<double>(cand_.loss);
  w.put<std::uint8_t>(elected_ ? 1 : 0);
  w.put<std::uint32_t>(elected_.value_or(0));
  w.put<std::uint8_t>(taken_ ? 1 : 0);
  w.put<std::uint8_t>(relay_ ? 1 : 0);
  w.put<std::uint64_t>(copyEpoch_);
  w.put<std::uint64_t>(copy_.size());
  for (float v : copy_) w.put<float>(v);
  w.put<std::uint64_t>(copiesTaken_);
  w.put<std::uint64_t>(lastCopyRound_);
}

template <class Base>
void LeaderPull<Base>::load(ByteReader& r) {
  const auto tag = r.get<std::uint32_t>();
  if (onDpsgd<Base> ? tag != kLsgdTag && tag != kLsgdTagV2 : tag != kLsgdDsTag) throw DecodeError("lsgd state: bad tag");
  auto base = Base::readState(r);
  const double avg = r.get<double>();
  if (!std::isnan(avg) && !std::isfinite(avg)) throw DecodeError("lsgd state: loss average is infinite");
  // An older checkpoint starts the global leader afresh (it joins the next election).
  std::uint64_t candEpoch = std::numeric_limits<std::uint64_t>::max(), copyEpoch = 0, taken = 0, lastCopy = 0;
  Candidate cand;
  std::optional<PeerId> elected;
  bool takenFlag = false, relay = false;
  std::vector<float> copy;
  if (tag != kLsgdTag) {
    candEpoch = r.get<std::uint64_t>();
    cand.id = r.get<std::uint32_t>();
    cand.loss = r.get<double>();
    const auto hasElected = r.get<std::uint8_t>();
    const auto electedId = r.get<std::uint32_t>();
    if (hasElected > 1 || std::isnan(cand.loss)) throw DecodeError("lsgd state: bad global leader");
    if (hasElected) elected = electedId;
    const auto t = r.get<std::uint8_t>(), rl = r.get<std::uint8_t>();
    if (t > 1 || rl > 1) throw DecodeError("lsgd state: bad global leader flags");
    takenFlag = t == 1;
    relay = rl == 1;
    copyEpoch = r.get<std::uint64_t>();
    const auto n = r.get<std::uint64_t>();
    if (n != 0 && n != static_cast<std::uint64_t>(x_.size())) throw DecodeError("lsgd state: leader copy of the wrong size");
    if (relay && n == 0) throw DecodeError("lsgd state: a relay without a leader copy");
    copy.resize(n);
    for (auto& v : copy) v = r.get<float>();
    taken = r.get<std::uint64_t>();
    lastCopy = r.get<std::uint64_t>();
  }
  Base::commitState(std::move(base));
  avgLoss_ = avg;
  candEpoch_ = candEpoch;
  cand_ = cand;
  elected_ = elected;
  taken_ = takenFlag;
  relay_ = relay;
  copyEpoch_ = copyEpoch;
  copy_.swap(copy);
  copiesTaken_ = taken;
  lastCopyRound_ = lastCopy;
}

template class LeaderPull<Dpsgd>;
template class LeaderPull<DeepSqueeze>;

}  // namespace gossip::algo
