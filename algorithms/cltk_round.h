#pragma once
// CLT-k in the round (docs/cltk.md): CHOCO or DeepSqueeze whose messages carry values on a support that
// every node already knows, chosen by a cyclic leader and flooded one hop per round.
//
// CltkRound wraps the method (the inner algorithm) and gives it a codec of its own (a cltk codec has
// state: the support of the round, CltkControl::fresh), so the method's code is unchanged. Per round t:
//   prepare: install the set chosen at t - delay (SupportSchedule::takeFor; empty if it never arrived);
//            if this node leads round t (with period 1: its id == t mod nodes), the codec also chooses
//            the top-k of the vector the method compresses (its error-compensated vector); the method
//            encodes; then the trailer carries the announcements this node forwards: its own new set and
//            every set it heard of for the first time in round t - 1.
//   apply:   split every arrived message into the method's payload and the announcements, check them all
//            (a malformed trailer or a set that conflicts with a recorded one is a RejectedMessage, with
//            nothing changed), let the method mix, then record the new sets for forwarding next round.
// A node at h hops from the leader learns the set in round t + h - 1, so delay >= the graph's diameter
// gives every node the same set in the same round. A node that has no set sends values on the empty set
// (nothing; its error memory keeps them), which every receiver accepts, so a leader that crashes before
// its announcement spreads costs one round of values, not a stall or a rejection.
// A new neighbour (a join or a restart) has not heard the sets in flight, and CHOCO must apply every
// message. So for delay + 1 rounds after an edge opens (addEdge), a node also announces the set its own
// values use; receivers decode a message on that set when it is not theirs. Receiving is thus per
// sender: the ScaleCom property "one set everywhere" holds in steady state, correctness always.
//
// With cltk_period R > 1 a set is chosen only in rounds t % R == 0 and used for R rounds (not in ScaleCom):
// the announcements cost 1/R as much, and the sets are up to R - 1 rounds staler (docs/cltk.md).
// Wire: method payload, then records {u64 round, support announcement}, then u32 record count and
// u32 records' byte length. The leader of a choosing round t is member id (t / R) mod nodes: the initial
// members 0..n-1 lead in turn; a member that joined later with a larger id never leads.
#include <functional>
#include <memory>
#include <vector>

#include "algorithms/codec_round.h"
#include "compressors/shared_support.h"

namespace gossip::algo {

class CltkRound final : public CodecRound {
 public:
  // codec: a fresh cltk codec (owned here; the method references it). make builds the method on it.
  CltkRound(const AlgorithmParams& p, std::unique_ptr<compress::Compressor> codec, PeerId self, const Vec& x0,
            const MethodMaker& make);

  void prepare(Round t, const GradRef& g, double lr, compress::Encoded& out) override;
  void apply(Round t, std::span<const Incoming> msgs, const topology::MixingRow& row) override;
  void addEdge(EdgeKey j, std::span<const Real> pub) override;
  void adoptEdge(EdgeKey j, Vec&& pub) override;
  void save(ByteWriter& w) const override;
  void load(ByteReader& r) override;

  // The support this round's values use (installed by the last prepare).
  const compress::SharedSupport& support() const { return ctl_->support(); }

  static constexpr std::size_t kFooterBytes = 8;

 private:
  struct Announcement {
    Round chosenAt;
    compress::SharedSupport set;
  };
  AlgorithmParams p_;
  PeerId self_;
  compress::CltkControl* ctl_;
  compress::SupportSchedule schedule_;
  std::vector<Announcement> forward_;  // heard for the first time last round: sent with this round's message
  // apply's scratch, reused every round: the method's part of each message and the announcements heard.
  std::vector<Incoming> values_;
  std::vector<Announcement> heard_;
  std::vector<compress::SharedSupport> current_;  // sets neighbours say their values of this round use
  // Rounds left in which this node also announces the set its values use (after a new edge opened).
  std::uint32_t announceCurrent_ = 0;
};

}  // namespace gossip::algo
