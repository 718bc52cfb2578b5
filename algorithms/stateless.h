#pragma once
// The stateless methods: D-PSGD (Lian et al. 2017) and DeepSqueeze (Tang et al. 2019). Their messages are
// full-model sketches, so a neighbour whose message is missing this round is replaced by the node's own
// value (elastic consistency, ALGORITHMS.md §5.1) and nothing carries over to later rounds.
#include <vector>

#include "algorithms/algorithm.h"
#include "compressors/error_feedback.h"

namespace gossip::algo {

// D-PSGD: x_i <- sum_j w_ij x_j - lr * g_i, gradient at the pre-mixing iterate (ALGORITHMS.md §4.1).
// The model goes on the wire through the configured compressor (fp32 for the uncompressed baseline); the
// self term uses the node's own decoded message so that the round is exactly W applied to what was sent.
// Not final: Lsgd (algorithms/leader.h) is D-PSGD with a pull added to the step.
class Dpsgd : public Algorithm {
 public:
  Dpsgd(const AlgorithmParams& p, const compress::Compressor& c, PeerId self, Vec x0);
  std::string_view name() const override { return "dpsgd"; }
  bool stateless() const override { return true; }
  bool acceptsZeroGradient() const override { return true; }
  // Its fp32 mixes read a message in parts (no copy of each received model into one buffer).
  bool readsPayloadParts() const override { return ownIsX_; }
  bool prepareChecksFinite() const override { return ownIsX_; }
  bool messagesAreFp32() const override { return ownIsX_; }
  void prepare(Round t, const GradRef& g, double lr, compress::Encoded& out) override;
  void apply(Round t, std::span<const Incoming> msgs, const topology::MixingRow& row) override;
  void save(ByteWriter& w) const override;
  void load(ByteReader& r) override;

 protected:
  // The round's mix; with pullTo, also x -= pull * (C(x_i) - *pullTo) before the prox (Lsgd). Throws
  // RejectedMessage before x changes, so the engine may call it again without the bad message.
  void mix(std::span<const Incoming> msgs, const topology::MixingRow& row, const Vec* pullTo, double pull);
  // The state between rounds without a tag, parsed aside and committed separately (for Lsgd's checkpoint).
  struct State {
    Vec x;
  };
  void writeState(ByteWriter& w) const;
  State readState(ByteReader& r) const;
  void commitState(State&& s) { x_.swap(s.x); }

  AlgorithmParams p_;
  const compress::Compressor& c_;
  PeerId self_;
  bool ownIsX_;             // the codec carries the state exactly: C(x_i) is x_i, own_ stays empty
  Vec own_;                 // decode of this node's own message (lossy codecs only)
  HeldGradient g_;  // this round's gradient, owned by Node (or the trainer's shared memory) and unchanged until apply
  double lr_ = 0;

 private:
  Vec acc_;      // the mixed model, built aside so a rejected message leaves x untouched (empty: fp32 in place)
};

// DeepSqueeze: x_half = x - lr g; v = x_half + delta; c = C(v); delta = v - c;
// x = x_half + eta * sum_j w_ij (c_j - c_i)  (ALGORITHMS.md §4.3). The self term uses the compressed c_i,
// which keeps the network average exact. The error memory delta is the shared compress::ErrorFeedback, so
// ScaleCom's low-pass filter (beta < 1: delta <- (1-beta) delta + beta (v - c)) is available here too.
// Not final: Lsgd can run on DeepSqueeze (algorithm.leader_base), its pull added to this mix.
class DeepSqueeze : public Algorithm {
 public:
  DeepSqueeze(const AlgorithmParams& p, const compress::Compressor& c, PeerId self, Vec x0);
  std::string_view name() const override { return "deepsqueeze"; }
  bool stateless() const override { return true; }
  bool acceptsZeroGradient() const override { return true; }
  // The error feedback's add reads x once and checks it on the way (compress::ErrorFeedback::compress). With
  // double state Node keeps its own check, which also refuses a norm above ~1e154 (node.cc).
  bool prepareChecksFinite() const override { return !kRealIsDouble; }
  void prepare(Round t, const GradRef& g, double lr, compress::Encoded& out) override;
  void apply(Round t, std::span<const Incoming> msgs, const topology::MixingRow& row) override;
  void save(ByteWriter& w) const override;
  void load(ByteReader& r) override;

 protected:
  // The round's mix; with pullTo, also x -= pull * (c_i - *pullTo) before the prox (Lsgd on DeepSqueeze:
  // the pull toward the leader's sketch, the same kind of difference the mix itself uses). Throws
  // RejectedMessage before x changes.
  void mix(std::span<const Incoming> msgs, const topology::MixingRow& row, const Vec* pullTo, double pull);
  struct State {
    Vec x;
    std::vector<Real> memory;
  };
  void writeState(ByteWriter& w) const;
  State readState(ByteReader& r) const;
  void commitState(State&& s);

  // c_i decoded into a dense vector, made only when asked (Lsgd's pull); the mix itself adds own_'s bytes.
  const Vec& ownDense();

  AlgorithmParams p_;
  const compress::Compressor& c_;
  PeerId self_;
  double lr_ = 0;

 private:
  // The mix of a sparse codec, in place; false (nothing done) for a dense codec. Throws RejectedMessage
  // before x changes.
  bool mixInPlace(std::span<const Incoming> msgs, const topology::MixingRow& row);
  // The same for a codec with Compressor::sparseEntries (top-k): each message read once, and the
  // messages' supports merged into one pass over x. False (nothing done) for other codecs.
  bool mixMerged(std::span<const Incoming> msgs, const topology::MixingRow& row);

  compress::ErrorFeedback ef_;  // owns the error memory delta
  Vec acc_;                     // dense codecs: next x, built aside so a rejected message leaves x untouched
  std::vector<std::uint32_t> touched_;  // sparse codecs: the round's supports, own and neighbours'
  std::vector<Real> before_;            // x at touched_[n] before the adds (first occurrences)
  std::vector<std::uint64_t> seen_;     // d bits, all zero between rounds: an index's first occurrence
  struct SparseEntries {               // one message's decoded entries, for mixMerged
    std::vector<std::uint32_t> idx;    // strictly ascending
    std::vector<float> values;
    Real scale = 0;                    // the weight its decodeAdd would have had
  };
  std::vector<SparseEntries> entries_;  // the neighbours' messages in the row's order, then this node's own;
                                        // kept between rounds for their capacity
  std::vector<std::size_t> at_;         // mixMerged: each list's next entry
  Bytes own_;                   // this round's own message c_i as sent (k values for top-k, not d)
  Vec ownValues_;               // ownDense()'s vector, empty unless a pull needed it
  bool ownDense_ = false;
};

}  // namespace gossip::algo
