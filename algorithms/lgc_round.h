#pragma once
// LGC in the round (docs/lgc.md): CHOCO or DeepSqueeze whose messages are coded by a linear autoencoder
// that one node learns from the messages it exchanged during a top-k warm-up, and floods to the others.
//
// LgcRound wraps the method (the inner algorithm) and gives it an lgc codec of its own (the codec holds the
// basis, compressors/lgc.h), so the method's code is unchanged. With W = lgc_warmup and D = lgc_delay
// (>= the graph's diameter):
//  - rounds t < W: the codec sends top-k. The learner, member 0, sums the messages it sends and receives per
//    sender over windows of lgc_window rounds and adds each window's sums to its LgcLearner (CHOCO), or each
//    neighbour's sum minus its own (DeepSqueeze, whose messages are sketches of whole models and whose mix
//    moves only their differences). Summed over a window, error-compensated top-k messages carry what the
//    sender's vector moved, dense, where a single message shows only its k largest entries.
//  - round W: the learner computes the basis and appends it to its message; every node forwards a basis it
//    hears for the first time with its next message (flooding, one hop per round), so every node within D
//    hops has it by round W + D - 1.
//  - rounds t >= W + D: a node that has the basis codes with it; one that has not (the learner crashed
//    before its basis spread) keeps sending top-k, which every receiver decodes. Nothing stalls.
// A new neighbour (a join or a restart without checkpoint) has not heard the basis, so for D + 1 rounds
// after an edge opens (addEdge) a node with a basis appends it again. A receiver installs a basis it hears
// before it decodes the message that carried it. And every message says which basis its sender has: from
// round W + D on, a node that hears from a neighbour without its basis (it missed the flood: a late or lost
// message, which DeepSqueeze tolerates) appends the basis to its next message, so nobody stays unable to
// decode its neighbours for more than a round. 4 bytes a message.
// Wire: method payload, then at most one basis record (lgc.h writeBasis), then the footer: u32 fingerprint
// of the sender's basis (0: none), u32 record count (0 or 1), u32 record byte length.
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "algorithms/codec_round.h"
#include "algorithms/lgc_learner.h"
#include "compressors/lgc.h"

namespace gossip::algo {

class LgcRound final : public CodecRound {
 public:
  static constexpr PeerId kLearner = 0;
  static constexpr std::size_t kFooterBytes = 12;

  LgcRound(const AlgorithmParams& p, std::unique_ptr<compress::Compressor> codec, PeerId self, const Vec& x0,
           const MethodMaker& make);

  void prepare(Round t, const GradRef& g, double lr, compress::Encoded& out) override;
  void apply(Round t, std::span<const Incoming> msgs, const topology::MixingRow& row) override;
  void addEdge(EdgeKey j, std::span<const Real> pub) override;
  void adoptEdge(EdgeKey j, Vec&& pub) override;
  void save(ByteWriter& w) const override;
  void load(ByteReader& r) override;

  // The basis this node has (empty until it learned or heard one), and whether its codec codes with it.
  const compress::LgcBasis& basis() const { return basis_; }
  bool coding() const { return !ctl_->basis().empty(); }

 private:
  Round switchRound() const { return p_.lgc_warmup + p_.lgc_delay; }
  bool learning(Round t) const { return learner_.has_value() && t < p_.lgc_warmup; }
  void accumulate(PeerId from, std::span<const std::byte> payload);

  AlgorithmParams p_;
  PeerId self_;
  compress::LgcControl* ctl_;
  compress::LgcBasis basis_;
  bool forward_ = false;           // send basis_ with the next message (heard or learned last round)
  std::uint32_t announce_ = 0;     // rounds left in which basis_ is sent again for a new neighbour
  bool resend_ = false;            // a neighbour said it lacks basis_: send it with the next message
  std::optional<LgcLearner> learner_;     // member kLearner only, until round W
  std::map<PeerId, std::vector<double>> window_;  // learner: this window's message sums per sender
  std::vector<double> diff_;                      // learner's scratch: a neighbour's sum minus its own
  // apply's scratch, reused every round: the method's part of each message, and the basis each sender has.
  std::vector<Incoming> values_;
  std::vector<std::uint32_t> has_;
};

}  // namespace gossip::algo
