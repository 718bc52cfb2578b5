#include "algorithms/lgc_round.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "algorithms/mixing.h"
#include "core/serial.h"

namespace gossip::algo {
namespace {
constexpr std::uint32_t kLgcTag = serial::fourcc("LGCR");
}  // namespace

LgcRound::LgcRound(const AlgorithmParams& p, std::unique_ptr<compress::Compressor> codec, PeerId self, const Vec& x0,
                   const MethodMaker& make)
    : CodecRound(std::move(codec), x0, make), p_(p), self_(self), ctl_(compress::lgcControl(*codec_)) {
  GOSSIP_CHECK(ctl_ != nullptr, "LgcRound needs an lgc codec");
  GOSSIP_CHECK(p.lgc_window > 0, "lgc_window must be positive");
  if (self_ == kLearner && p_.lgc_warmup > 0) learner_.emplace(ctl_->block(), ctl_->codes());
}

void LgcRound::accumulate(PeerId from, std::span<const std::byte> payload) {
  auto& sum = window_[from];
  if (sum.empty()) sum.assign(static_cast<std::size_t>(x().size()), 0.0);
  codec_->decodeAdd(payload, std::span<double>(sum), 1.0);
}

void LgcRound::prepare(Round t, const GradRef& g, double lr, compress::Encoded& out) {
  if (learner_ && t >= p_.lgc_warmup) {
    // The warm-up is over: the learner's basis from what it saw (empty if it saw nothing, e.g. a learner
    // restarted without checkpoint late in the warm-up; then everyone keeps top-k).
    if (basis_.empty()) {
      basis_ = learner_->basis();
      forward_ = !basis_.empty();
    }
    learner_.reset();
    window_.clear();
  }
  if (!basis_.empty() && t >= switchRound() && ctl_->basis().empty()) ctl_->setBasis(basis_);
  inner_->prepare(t, g, lr, out);
  if (learning(t)) accumulate(self_, out.bytes);
  // Trailer: the basis if this node forwards it or a new neighbour may lack it, then count and length.
  ByteWriter w(out.bytes);
  const std::size_t start = w.size();
  const bool send = !basis_.empty() && (forward_ || resend_ || announce_ > 0);
  if (send) compress::writeBasis(basis_, w);
  const auto length = static_cast<std::uint32_t>(w.size() - start);
  w.put<std::uint32_t>(basis_.fingerprint());
  w.put<std::uint32_t>(send ? 1 : 0);
  w.put<std::uint32_t>(length);
  forward_ = false;
  resend_ = false;
  if (announce_ > 0) --announce_;
}

void LgcRound::addEdge(EdgeKey j, std::span<const Real> pub) {
  inner_->addEdge(j, pub);
  announce_ = p_.lgc_delay + 1;
}

void LgcRound::adoptEdge(EdgeKey j, Vec&& pub) {
  inner_->adoptEdge(j, std::move(pub));
  announce_ = p_.lgc_delay + 1;
}

void LgcRound::apply(Round t, std::span<const Incoming> msgs, const topology::MixingRow& row) {
  // Check every trailer before anything changes: a bad one throws with the state untouched.
  values_.clear();
  std::optional<compress::LgcBasis> heard;
  has_.clear();
  for (const auto& [j, w] : row.neighbors) {
    const Incoming* m = detail::findIncoming(msgs, j);
    if (!m) continue;
    const auto bytes = m->payload;
    if (bytes.size() < kFooterBytes) throw RejectedMessage(j, "lgc message shorter than its trailer's footer");
    ByteReader footer(bytes.last(kFooterBytes), "lgc footer");
    const auto has = footer.get<std::uint32_t>();
    const auto count = footer.get<std::uint32_t>();
    const auto length = footer.get<std::uint32_t>();
    if (count > 1) throw RejectedMessage(j, "lgc trailer with more than one basis");
    if (length > bytes.size() - kFooterBytes) throw RejectedMessage(j, "lgc trailer longer than the message");
    const std::size_t valueBytes = bytes.size() - kFooterBytes - length;
    try {
      ByteReader r(bytes.subspan(valueBytes, length), "lgc trailer");
      if (count == 1) {
        auto b = compress::readBasis(r, ctl_->block(), ctl_->codes());
        const auto& known = !basis_.empty() ? basis_ : heard ? *heard : b;
        if (!(known == b)) throw DecodeError("a different basis than the one this node has");
        heard = std::move(b);
      }
      r.expectEnd();
    } catch (const DecodeError& e) {
      throw RejectedMessage(j, std::string("lgc basis: ") + e.what());
    }
    values_.push_back({m->from, m->incarnation, bytes.first(valueBytes)});
    has_.push_back(has);
  }
  // A basis heard now decodes the values that came with it (a new neighbour of a coding node).
  const bool install = heard && basis_.empty() && t >= switchRound();
  if (install) ctl_->setBasis(*heard);
  try {
    inner_->apply(t, values_, row);
  } catch (...) {
    if (install) ctl_->setBasis({});
    throw;
  }
  disagreement_ = inner_->disagreement();
  if (learning(t)) {
    for (const auto& v : values_) accumulate(v.from, v.payload);
    if ((t + 1) % p_.lgc_window == 0 || t + 1 == p_.lgc_warmup) {
      if (p_.name == "deepsqueeze") {
        // DeepSqueeze's messages are sketches of whole models, alike on nodes that share the initial model,
        // and its mix moves only their differences c_j - c_i: fit those (each neighbour's window sum minus
        // the learner's own), not the common part. CHOCO's messages are already differences (x - x_hat).
        const auto& own = window_[self_];
        for (const auto& [from, sum] : window_) {
          if (from == self_ || sum.size() != own.size()) continue;
          diff_.resize(sum.size());
          for (std::size_t i = 0; i < sum.size(); ++i) diff_[i] = sum[i] - own[i];
          learner_->add(diff_);
        }
      } else {
        for (const auto& [from, sum] : window_) learner_->add(sum);
      }
      window_.clear();  // the next window's senders only: one that left must not add an empty sum
    }
  }
  if (heard && basis_.empty()) {
    basis_ = std::move(*heard);
    forward_ = true;
  }
  // A neighbour that has not got this node's basis by now missed the flood (or is new): send it again.
  resend_ = !basis_.empty() && t >= switchRound() &&
            std::any_of(has_.begin(), has_.end(), [&](std::uint32_t f) { return f != basis_.fingerprint(); });
}

// The basis and its forwarding state, the learner's second moments and window sums, then the method.
void LgcRound::save(ByteWriter& w) const {
  serial::putTag(w, kLgcTag);
  w.put<std::uint8_t>(basis_.empty() ? 0 : 1);
  if (!basis_.empty()) compress::writeBasis(basis_, w);
  w.put<std::uint8_t>(ctl_->basis().empty() ? 0 : 1);
  w.put<std::uint8_t>(forward_ ? 1 : 0);
  w.put<std::uint8_t>(resend_ ? 1 : 0);
  w.put<std::uint32_t>(announce_);
  w.put<std::uint8_t>(learner_ ? 1 : 0);
  if (learner_) {
    learner_->save(w);
    w.put<std::uint64_t>(window_.size());
    for (const auto& [from, sum] : window_) {
      w.put<std::uint32_t>(from);
      for (double v : sum) w.put<double>(v);
    }
  }
  inner_->save(w);
}

void LgcRound::load(ByteReader& r) {
  serial::expectTag(r, kLgcTag, "lgc state");
  compress::LgcBasis basis;
  if (r.get<std::uint8_t>() != 0) basis = compress::readBasis(r, ctl_->block(), ctl_->codes());
  const bool coding = r.get<std::uint8_t>() != 0;
  if (coding && basis.empty()) throw DecodeError("lgc state: coding without a basis");
  const bool forward = r.get<std::uint8_t>() != 0;
  const bool resend = r.get<std::uint8_t>() != 0;
  const auto announce = r.get<std::uint32_t>();
  if (announce > p_.lgc_delay + 1) throw DecodeError("lgc state: announcement count above delay + 1");
  std::optional<LgcLearner> learner;
  std::map<PeerId, std::vector<double>> window;
  if (r.get<std::uint8_t>() != 0) {
    if (self_ != kLearner) throw DecodeError("lgc state: learner state on a node that does not learn");
    learner.emplace(ctl_->block(), ctl_->codes());
    learner->load(r);
    const auto count = r.get<std::uint64_t>();
    const std::size_t d = static_cast<std::size_t>(x().size());
    if (count > r.remaining() / (4 + 8 * std::max<std::size_t>(d, 1))) throw DecodeError("lgc state: window count exceeds the checkpoint");
    for (std::uint64_t k = 0; k < count; ++k) {
      auto& sum = window[r.get<std::uint32_t>()];
      sum.resize(d);
      for (auto& v : sum) {
        v = r.get<double>();
        if (!std::isfinite(v)) throw DecodeError("lgc state: non-finite window sum");
      }
    }
  }
  inner_->load(r);  // leaves the method unchanged if it throws
  basis_ = std::move(basis);
  ctl_->setBasis(coding ? basis_ : compress::LgcBasis{});
  forward_ = forward;
  resend_ = resend;
  announce_ = announce;
  learner_ = std::move(learner);
  window_ = std::move(window);
}

}  // namespace gossip::algo
