#pragma once
// Leader SGD on a graph: D-PSGD with a pull toward the best-performing node of the neighbourhood.
// Source: Teng et al., "Leader Stochastic Gradient Descent for Distributed Training of Deep Learning Models"
// (NeurIPS 2019). There every worker is pulled toward the leader, the worker with the lowest loss:
// x_i <- x_i - lr (g_i + lambda (x_i - x_leader)). On a graph without a server (docs/algorithms.md, "lsgd"):
//   each node reports L_i, an exponential average of its minibatch losses, after its D-PSGD message;
//   the local leader l of node i is the node with the lowest L among i and the neighbours whose message
//   arrived this round (ties: the lowest id);
//   x_i <- sum_j w_ij C(x_j) - lr g_i - lr lambda (C(x_i) - C(x_l))     in rounds t % period == 0 (and l != i),
//   x_i <- sum_j w_ij C(x_j) - lr g_i                                   otherwise (plain D-PSGD).
// Built on Dpsgd: its mix with the pull added before the prox (Dpsgd::mix), so with lambda = 0 the method
// is D-PSGD, bit for bit (test_leader.cc). The leader's model C(x_l) is its D-PSGD
// message, already on the wire: the pull costs 8 bytes per message (the loss).
// The global leader (the paper's multi-leader variant; on when leader_global_pull > 0, docs/algorithms.md):
// time is cut in epochs of P = leader_global_period rounds. In epoch e every node floods a candidate, the
// (id, loss) with the lowest loss it has heard of, starting from its own loss average at the epoch's first
// round; after P >= diameter rounds every node holds the same winner. In the first round of epoch e + 1 the
// winner appends its model in fp32 to its message; every node takes the first copy that reaches it in that
// epoch, moves x <- x - g (x - copy) after its mix (g = leader_global_pull in [0, 1]), and relays the copy
// once in its next message. So only the leader's parameters travel for the pull, once per node per epoch.
// With g = 0 (the default) nothing is appended: the messages are lsgd's, byte for byte.
#include <optional>
#include <vector>

#include "algorithms/stateless.h"

namespace gossip::algo {

// Base is Dpsgd (lsgd proper) or DeepSqueeze (algorithm.leader_base = "deepsqueeze": the pull toward the
// leader's sketch, -lr lambda (c_i - c_l), is added to DeepSqueeze's error-compensated mix). Both bases give
// the same trailers, election and global leader.
template <class Base>
class LeaderPull final : public Base {
 public:
  LeaderPull(const AlgorithmParams& p, const compress::Compressor& c, PeerId self, Vec x0);
  std::string_view name() const override { return "lsgd"; }
  // A message is its method's payload followed by a trailer, which parse() reads from the end of one buffer:
  // the engine gathers a message that arrived in parts (the base's fp32 D-PSGD would take them in place,
  // and every message of a model above 1 MiB would be refused as too short), and no scan's flag is passed on.
  bool readsPayloadParts() const override { return false; }
  bool messagesAreFp32() const override { return false; }
  void noteLoss(double loss) override;
  void prepare(Round t, const GradRef& g, double lr, compress::Encoded& out) override;
  void apply(Round t, std::span<const Incoming> msgs, const topology::MixingRow& row) override;
  void save(ByteWriter& w) const override;
  void load(ByteReader& r) override;

  // The reported loss average and the local leader of the last applied round (this node when it led, or
  // before any round).
  double reportedLoss() const { return avgLoss_; }
  PeerId lastLeader() const { return leader_; }
  // Global leader: this epoch's candidate, the winner of the last election (nullopt before the first), the
  // copies of a winner's model this node has taken, and the round of the last one.
  PeerId candidate() const { return cand_.id; }
  std::optional<PeerId> globalLeader() const { return elected_; }
  std::uint64_t copiesTaken() const { return copiesTaken_; }
  Round lastCopyRound() const { return lastCopyRound_; }

  static constexpr double kLossAverage = 0.1;  // L <- (1 - a) L + a loss
  static constexpr std::size_t kHeaderBytes = 8;
  // Global part, before the loss: [copy: epoch u64, d x f32] [u8 has copy] [u32 candidate id] [f64 its loss].
  static constexpr std::size_t kGlobalBytes = 1 + 4 + 8;

 private:
  struct Candidate {
    PeerId id = 0;
    double loss = std::numeric_limits<double>::max();
  };
  // One message split into its D-PSGD payload and its trailer fields (global ones when the leader is on).
  struct Parsed {
    std::span<const std::byte> values;
    double loss = 0;
    Candidate cand;
    const std::byte* copy = nullptr;  // d floats, unaligned
    std::uint64_t copyEpoch = 0;
  };
  Parsed parse(const Incoming& m) const;
  bool global() const { return p_.leader_global_pull > 0.0; }
  double ownLoss() const { return std::isnan(avgLoss_) ? std::numeric_limits<double>::max() : avgLoss_; }
  void appendGlobal(Round t, compress::Encoded& out);

  double avgLoss_ = std::numeric_limits<double>::quiet_NaN();  // NaN until the first loss
  bool pullRound_ = false;
  PeerId leader_;
  Vec lead_;                      // C(x_l), decoded in pull rounds
  std::vector<Incoming> values_;  // the arrived messages without their loss trailer (reused every round)
  std::vector<Parsed> parsed_;    // their trailers (reused every round)

  // Global leader state (unused while leader_global_pull = 0).
  std::uint64_t candEpoch_ = std::numeric_limits<std::uint64_t>::max();  // the epoch cand_ belongs to
  Candidate cand_;
  std::optional<PeerId> elected_;
  bool taken_ = false;               // this epoch's copy has been taken (or this node is the leader)
  bool relay_ = false;               // send copy_ in the next message
  std::uint64_t copyEpoch_ = 0;
  std::vector<float> copy_;          // the leader's model as it travels
  Vec copyVec_;                      // the same as doubles, for the pull
  std::uint64_t copiesTaken_ = 0;
  Round lastCopyRound_ = 0;

  using Base::c_;
  using Base::lr_;
  using Base::p_;
  using Base::self_;
  using Base::x_;
};

using Lsgd = LeaderPull<Dpsgd>;
using LsgdDeepSqueeze = LeaderPull<DeepSqueeze>;
extern template class LeaderPull<Dpsgd>;
extern template class LeaderPull<DeepSqueeze>;

}  // namespace gossip::algo
