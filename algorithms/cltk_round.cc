#include "algorithms/cltk_round.h"

#include <utility>

#include "algorithms/mixing.h"
#include "core/serial.h"

namespace gossip::algo {
namespace {
constexpr std::uint32_t kCltkTag = serial::fourcc("CLTK");
}  // namespace

CltkRound::CltkRound(const AlgorithmParams& p, std::unique_ptr<compress::Compressor> codec, PeerId self,
                     const Vec& x0, const MethodMaker& make)
    : CodecRound(std::move(codec), x0, make),
      p_(p),
      self_(self),
      ctl_(compress::cltkControl(*codec_)),
      schedule_(p.cltk_nodes, p.cltk_delay, p.cltk_period) {
  GOSSIP_CHECK(ctl_ != nullptr, "CltkRound needs a cltk codec");
}

void CltkRound::prepare(Round t, const GradRef& g, double lr, compress::Encoded& out) {
  ctl_->setSupport(schedule_.takeFor(t));
  const bool leads = schedule_.choosing(t) && schedule_.leader(t) == self_;
  if (leads) ctl_->leadNextEncode(/*useNow=*/p_.cltk_delay == 0);
  inner_->prepare(t, g, lr, out);
  if (leads) {
    auto chosen = ctl_->takeChosen();
    GOSSIP_CHECK(chosen.has_value(), "the method did not encode in its prepare");
    schedule_.offer(t, *chosen);
    forward_.push_back({t, std::move(*chosen)});
  }
  // Trailer: the announcements, then their count and byte length (read from the end by receivers).
  ByteWriter w(out.bytes);
  const std::size_t start = w.size();
  for (const auto& a : forward_) {
    w.put<std::uint64_t>(a.chosenAt);
    compress::writeSupport(a.set, w);
  }
  std::size_t count = forward_.size();
  // A neighbour whose edge is new may not have heard of the set these values use: say which it is.
  if (announceCurrent_ > 0) {
    --announceCurrent_;
    if (!ctl_->support().empty()) {
      w.put<std::uint64_t>(*schedule_.chosenFor(t));
      compress::writeSupport(ctl_->support(), w);
      ++count;
    }
  }
  w.put<std::uint32_t>(static_cast<std::uint32_t>(count));
  w.put<std::uint32_t>(static_cast<std::uint32_t>(w.size() - start - 4));
  forward_.clear();
}

void CltkRound::addEdge(EdgeKey j, std::span<const Real> pub) {
  inner_->addEdge(j, pub);
  announceCurrent_ = p_.cltk_delay + 1;
}

void CltkRound::adoptEdge(EdgeKey j, Vec&& pub) {
  inner_->adoptEdge(j, std::move(pub));
  announceCurrent_ = p_.cltk_delay + 1;
}

void CltkRound::apply(Round t, std::span<const Incoming> msgs, const topology::MixingRow& row) {
  // Check every message's trailer before anything changes: a bad one throws with the state untouched.
  const auto dim = static_cast<std::uint32_t>(x().size());
  values_.clear();
  heard_.clear();
  current_.clear();
  for (const auto& [j, w] : row.neighbors) {
    const Incoming* m = detail::findIncoming(msgs, j);
    if (!m) continue;
    const auto bytes = m->payload;
    if (bytes.size() < kFooterBytes) throw RejectedMessage(j, "cltk message shorter than its trailer's footer");
    ByteReader footer(bytes.last(kFooterBytes), "cltk footer");
    const auto count = footer.get<std::uint32_t>();
    const auto length = footer.get<std::uint32_t>();
    if (length > bytes.size() - kFooterBytes) throw RejectedMessage(j, "cltk trailer longer than the message");
    const std::size_t valueBytes = bytes.size() - kFooterBytes - length;
    try {
      ByteReader r(bytes.subspan(valueBytes, length), "cltk announcements");
      for (std::uint32_t k = 0; k < count; ++k) {
        const auto chosenAt = r.get<std::uint64_t>();
        auto set = compress::readSupport(r, dim);
        if (schedule_.conflicts(chosenAt, set)) throw DecodeError("a different set than the recorded one");
        if (chosenAt == schedule_.chosenFor(t)) current_.push_back(set);  // what its values use
        heard_.push_back({chosenAt, std::move(set)});
      }
      r.expectEnd();
    } catch (const DecodeError& e) {
      throw RejectedMessage(j, std::string("cltk announcement: ") + e.what());
    }
    values_.push_back({m->from, m->incarnation, bytes.first(valueBytes)});
  }
  ctl_->setAlsoDecodable(current_);
  inner_->apply(t, values_, row);
  disagreement_ = inner_->disagreement();
  // Two neighbours may announce different sets for one round only if one of them is corrupt; the first
  // recorded wins and the later copy is dropped here rather than failing a round that has been applied.
  for (auto& a : heard_)
    if (!schedule_.conflicts(a.chosenAt, a.set) && schedule_.offer(a.chosenAt, a.set)) forward_.push_back(std::move(a));
}

// The schedule's recorded sets and the announcements still to forward, then the method's state.
void CltkRound::save(ByteWriter& w) const {
  serial::putTag(w, kCltkTag);
  schedule_.save(w);
  w.put<std::uint64_t>(forward_.size());
  for (const auto& a : forward_) {
    w.put<std::uint64_t>(a.chosenAt);
    compress::writeSupport(a.set, w);
  }
  w.put<std::uint32_t>(announceCurrent_);
  inner_->save(w);
}

void CltkRound::load(ByteReader& r) {
  serial::expectTag(r, kCltkTag, "cltk state");
  const auto dim = static_cast<std::uint32_t>(x().size());
  compress::SupportSchedule schedule(p_.cltk_nodes, p_.cltk_delay, p_.cltk_period);
  schedule.load(r, dim);
  const auto count = r.get<std::uint64_t>();
  if (count > r.remaining() / 20) throw DecodeError("cltk state: announcement count exceeds the checkpoint");
  std::vector<Announcement> forward;
  for (std::uint64_t k = 0; k < count; ++k) {
    const auto chosenAt = r.get<std::uint64_t>();
    forward.push_back({chosenAt, compress::readSupport(r, dim)});
  }
  const auto announce = r.get<std::uint32_t>();
  if (announce > p_.cltk_delay + 1) throw DecodeError("cltk state: announcement count above delay + 1");
  inner_->load(r);  // leaves the method unchanged if it throws
  schedule_ = std::move(schedule);
  forward_ = std::move(forward);
  announceCurrent_ = announce;
}

}  // namespace gossip::algo
