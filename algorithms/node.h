#pragma once
// Node: the transport-free round driver shared by the simulator and the daemon. It owns one node's
// algorithm and gradient estimator and runs the local part of a round; the caller moves the bytes.
//   beginRound(t, out): [start step] -> (local_steps(t) - 1) local SGD steps -> gradient -> prepare(out)
//   endRound(t, msgs, row): algorithm.apply
// Local steps before communication are plain (prox-)SGD steps on the node's own data (local SGD); with
// exact methods keep local_steps = 1, extra local steps change the fixed point.
#include <functional>
#include <limits>
#include <memory>

#include "algorithms/algorithm.h"
#include "training/estimator.h"

namespace gossip::algo {

struct NodeSchedule {
  std::function<double(Round)> lr = [](Round) { return 0.1; };
  std::function<unsigned(Round)> localSteps = [](Round) { return 1u; };
  double l1 = 0.0;  // proximal threshold lr * l1 in local steps
  // Rounds t >= consensus_from are the final consensus phase (algorithm.final_consensus_rounds): no
  // gradient step and no algorithm update; the node sends x coded by consensus_codec (fp32 by default) and
  // sets x <- sum_j w_ij C(x_j) (its own x rounded too, missing neighbours' weight folded into its own, as
  // D-PSGD does). Why here and
  // not in each method: the phase is the same averaging for every method it applies to, and after it the
  // method's own state (CHOCO's replicas, DeepSqueeze's error memory) is never used again. Only for
  // methods whose fixed point does not need the dual (dpsgd, deepsqueeze, choco; checked in config).
  Round consensus_from = std::numeric_limits<Round>::max();
  // The phase's message codec: "fp32", or "fp16"/"bf16" for half the bytes. Every node must use the same
  // (receivers decode with their own). The node's own x is rounded by it too, so the nodes still meet at
  // one model: the average of the rounded models, within the codec's precision of the exact average.
  std::string consensus_codec = "fp32";
};

class Node {
 public:
  Node(PeerId id, std::unique_ptr<Algorithm> algorithm, std::unique_ptr<training::GradientEstimator> estimator,
       NodeSchedule schedule);
  Node(const Node&) = delete;  // g_ may point into the node itself
  Node& operator=(const Node&) = delete;

  PeerId id() const { return id_; }
  Algorithm& algorithm() { return *algo_; }
  const Algorithm& algorithm() const { return *algo_; }
  training::GradientEstimator& estimator() { return *est_; }

  // Runs the local work of round t and encodes the round's message into out.
  void beginRound(Round t, compress::Encoded& out);
  void endRound(Round t, std::span<const Incoming> msgs, const topology::MixingRow& row);

  bool consensusRound(Round t) const { return t >= sched_.consensus_from; }
  // Whether round t's messages are read in parts (Algorithm::readsPayloadParts): never in the final
  // consensus phase, whose mix (mixArrived) reads one buffer per message.
  bool readsPayloadParts(Round t) const { return !consensusRound(t) && algo_->readsPayloadParts(); }
  // Whether beginRound(t) would begin with the method's start step (LEAD family, first round).
  bool needsStartStep(Round t) const { return !consensusRound(t) && algo_->needsStartStep(); }
  // Only the start step of round t: one gradient at x, then Algorithm::startStep; beginRound(t) then goes
  // on from the moved x. For a runtime whose gradients come from outside (the daemon's trainer bridge,
  // training/external_gradient.h), which must fetch the gradient at the moved x before beginRound.
  void startStep(Round t);
  // ||x_i - sum_j w_ij x_j|| of the last mixed round (Algorithm::disagreement(), or the consensus phase's).
  double disagreement() const { return consensusMixed_ ? consensusDisagreement_ : algo_->disagreement(); }
  // Mean of the minibatch losses seen during the last beginRound.
  double lastLoss() const { return lastLoss_; }
  std::uint64_t gradientCalls() const { return gradCalls_; }

  // Checkpoint between rounds: algorithm state, estimator state, gradient-call counter and last loss.
  // load throws DecodeError (or the estimator's error) and leaves the node unchanged on failure.
  void save(ByteWriter& w) const;
  void load(ByteReader& r);

 private:
  double gradient();
  // Throws DivergedError if the model or the last gradient has a non-finite entry.
  void checkFinite(Round t) const;
  // The last gradient, wherever it lies: empty when it was exactly zero (gZero_), the estimator's shared
  // gradient (sharedG_), or *g_.
  Eigen::Map<const Vec> grad() const;
  [[noreturn]] void diverged(Round t, const char* what) const;
  void beginConsensusRound(compress::Encoded& out);
  void endConsensusRound(std::span<const Incoming> msgs, const topology::MixingRow& row);

  PeerId id_;
  std::unique_ptr<Algorithm> algo_;
  std::unique_ptr<training::GradientEstimator> est_;
  NodeSchedule sched_;
  // The gradient: ownG_, or the estimator's own vector when it has one (GradientEstimator::gradientStorage: the
  // trainer bridge writes the trainer's gradient there), so that a trainer node keeps one gradient, not two.
  Vec ownG_;
  Vec* g_ = &ownG_;
  bool gZero_ = false;  // the last gradient was exactly zero and g_ was left as it was (takeZeroGradient)
  // The round's gradient is read in place there (GradientEstimator::takeSharedGradient; x's size), g_ left as
  // it was; null otherwise, and from the end of the round's apply on: the estimator keeps that memory valid
  // only until the round is over.
  const Real* sharedG_ = nullptr;
  // Consensus phase: the phase's codec, the node's own rounded x and the neighbour sum (allocated at its
  // first round); whether a consensus round was mixed, and that round's disagreement.
  std::unique_ptr<compress::Compressor> exact_;
  Vec own_, acc_;
  bool consensusMixed_ = false;
  double consensusDisagreement_ = 0.0;
  double lastLoss_ = 0.0;
  std::uint64_t gradCalls_ = 0;
  // startStep(t) ran and its loss is counted in round t's lastLoss.
  bool startDone_ = false;
  double startLoss_ = 0.0;
};

}  // namespace gossip::algo
