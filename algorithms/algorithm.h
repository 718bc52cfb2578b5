#pragma once
// Algorithm: one node's part of a decentralized method, transport-free (DESIGN.md §3, §4).
//
// A round at node i, driven by algorithms/node.h (simulator) or the daemon, is:
//     g = estimator(x)                       gradient estimate at the current iterate
//     prepare(t, g, lr, out)                 build and encode this round's message ONCE for all neighbours
//     ... the runtime moves `out` to every neighbour and gathers theirs ...
//     apply(t, incoming, row)                mix; row holds this round's weights (self + neighbours)
// An algorithm never sees a socket or a clock. Edge state lives in per-neighbour Edge objects created by
// addEdge() and dropped by dropEdge(); the runtime calls both at both ends of the edge in the same round
// (DESIGN.md §4 "Edge state"). That is what makes LEAD/Prox-LEAD survive churn without a global reset:
// the dual is stored edge-decomposed, d_i = sum_j e_ij with e_ij = -e_ji, so dropping an edge at both ends
// keeps sum_i d_i = 0.
//
// Two families, with different contracts for a neighbour whose message did not arrive:
//  - stateless (D-PSGD, DeepSqueeze): the missing neighbour is replaced by the node's own value for that
//    round (elastic consistency: w_ii += w_ij). Messages are full-model sketches; a loss costs one round.
//  - replica (CHOCO, ED/NIDS, LEAD, Prox-LEAD): every message must be applied exactly once and in order,
//    otherwise replicas and duals diverge silently. apply() throws ProtocolError if a neighbour of the row
//    has no message; the runtime must retransmit or drop the edge first.
//
// Numerics: state is Real (core/real.h: float32, or float64 in that build); values on the wire are what the
// compressor encodes (at most fp32). The sender always adds the DECODED form of its own message to its own
// state (ALGORITHMS.md §3 rule 1).
// Not thread-safe: one thread drives one node.
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "compressors/compressor.h"
#include "core/bytes.h"
#include "core/error.h"
#include "core/rng.h"
#include "core/types.h"
#include "topology/topology.h"
#include "training/dataset.h"

namespace gossip::algo {

using training::Vec;

// One neighbour's message for this round, as it came off the wire (codec payload bytes). incarnation is the
// sender's incarnation as stated by the transport; replica methods reject a mismatch with the edge's.
// A large message may come in parts (the transport's receive buffers, read in place): then `parts` holds
// them, in order, and `payload` is empty. Only a method whose readsPayloadParts() is true is given parts;
// the others always get one contiguous payload.
struct Incoming {
  PeerId from;
  Incarnation incarnation = 0;
  std::span<const std::byte> payload;
  std::span<const std::span<const std::byte>> parts = {};
  // Set by the engine when the pass that verified the frame's checksum found no 4-byte word with a float32's
  // exponent bits all set (engine/frame.h, checkPayloadPartsScan), for a method whose messagesAreFp32():
  // its values are then known finite and its own pass over them can be left out. False proves nothing.
  bool wordsFinite = false;
};

// The message's bytes as parts: `parts`, or the payload as the only one. The view points into m: valid while
// m is.
inline std::span<const std::span<const std::byte>> messageParts(const Incoming& m) {
  return m.parts.empty() ? std::span<const std::span<const std::byte>>(&m.payload, 1) : m.parts;
}

// Identifies one edge: a neighbour in one of its lives. A restarted neighbour is a different edge, so
// stale state can never be mixed with the new life's messages.
struct EdgeKey {
  PeerId id = 0;
  Incarnation incarnation = 0;
  auto operator<=>(const EdgeKey&) const = default;
};

// A neighbour's message that cannot be applied (decode error, wrong dimension or codec, non-finite
// values, wrong incarnation). apply() throws it with the node's state unchanged, so the runtime can
// drop or re-request that message and retry the round.
// Thrown by a prepare that checks x as it encodes it (Algorithm::prepareChecksFinite) when x holds a NaN or
// an infinity: Node reports it as "the model became non-finite". Any other DecodeError from prepare is a
// finite value the codec cannot carry ("left the range the compressor can encode").
struct NonFiniteModel : DecodeError {
  using DecodeError::DecodeError;
};

struct RejectedMessage : ProtocolError {
  RejectedMessage(PeerId f, std::string why)
      : ProtocolError("message from " + std::to_string(f) + " rejected: " + why), from(f), reason(std::move(why)) {}
  PeerId from;
  std::string reason;
};

struct AlgorithmParams {
  std::string name = "dpsgd";  // dpsgd | deepsqueeze | choco | nids | ed | lead | prox_lead | lsgd | codistill
  double eta = 1.0;            // DeepSqueeze averaging rate eta in (0,1]
  double gamma = 1.0;          // CHOCO consensus step; LEAD/Prox-LEAD dual step gamma; 0 = the method's default
  bool gamma_adapt = false;    // CHOCO: halve gamma when this node's relative disagreement keeps growing
  double alpha = 0.5;          // LEAD/Prox-LEAD reference update rate, identical on all nodes
  double l1 = 0.0;             // R(x) = l1 ||x||_1, applied as a proximal step with threshold lr * l1
  double beta = 1.0;           // DeepSqueeze error memory low-pass factor (ScaleCom); 1 = plain error feedback
  double leader_pull = 0.1;    // lsgd: lambda, the pull toward the local leader (step lr * lambda)
  std::uint64_t leader_period = 1;  // lsgd: the pull acts in rounds t % leader_period == 0
  std::string leader_base = "dpsgd";  // lsgd: the method the pull is added to, dpsgd or deepsqueeze
  double leader_global_pull = 0.0;  // lsgd: fraction of the way to the global leader's model, once per epoch
  std::uint64_t leader_global_period = 100;  // lsgd: rounds per global-leader epoch (>= the diameter)
  double distill_weight = 1.0;      // codistill: alpha, the weight of the distillation term in the loss
  std::uint64_t distill_period = 1; // codistill: neighbours' model copies are refreshed in rounds t % period == 0
  std::uint64_t distill_reference_values = 0;  // codistill: reference rows x classes (0 = send model copies)
  std::uint32_t cltk_nodes = 0;     // cltk: leaders are member ids 0..cltk_nodes-1, in turn (docs/cltk.md)
  std::uint32_t cltk_delay = 0;     // cltk: round t uses the set chosen at t - cltk_delay (>= the diameter)
  std::uint32_t cltk_period = 1;    // cltk: a set is chosen every cltk_period rounds and used that long
  std::uint64_t lgc_warmup = 200;   // lgc: rounds of top-k while member 0 learns the basis (docs/lgc.md)
  std::uint64_t lgc_window = 10;    // lgc: the learner sums each sender's messages over this many rounds
  std::uint32_t lgc_delay = 0;      // lgc: rounds the basis takes to spread (>= the diameter); coding starts then
  std::uint64_t seed = 1;      // per-node compressor randomness is derived from (seed, node, round)
  Incarnation incarnation = 0; // this node's life; a restart must not replay its previous life's streams
};

// Seed of node `self`'s randomness in round t. Incarnation 0 keeps the historical stream exactly (results of
// existing runs do not change); later incarnations get a disjoint stream so a restarted node does not reuse
// the compressor randomness of its previous life.
inline std::uint64_t roundSeed(std::uint64_t seed, PeerId self, Incarnation inc, Round t) {
  return inc == 0 ? deriveSeed({seed, self, t}) : deriveSeed({seed, self, t, 0x1AC0ull, inc});
}

// A gradient as the methods read it: a Node's own vector, or the trainer's gradient read where the trainer
// wrote it (its shared memory, GradientEstimator::takeSharedGradient): either binds without a copy. Empty
// means "exactly zero" (acceptsZeroGradient). Pass a vector or a map, never an expression: Eigen would
// evaluate it into a temporary that dies with the call, and a method keeps its view until apply.
using GradRef = Eigen::Ref<const Vec>;

// This round's gradient as prepare saw it, kept by a method that applies the step in its mix instead of
// copying d values: Node keeps the gradient valid and unchanged until the round's last apply.
struct HeldGradient {
  const Real* data = nullptr;
  Eigen::Index size = -1;  // -1: no prepare yet
  void hold(const GradRef& g) {
    data = g.data();
    size = g.size();
  }
  bool held() const { return size >= 0; }
  Eigen::Map<const Vec> view() const { return {data, size < 0 ? 0 : size}; }
};

class Algorithm {
 public:
  virtual ~Algorithm() = default;
  Algorithm() = default;
  Algorithm(const Algorithm&) = delete;
  Algorithm& operator=(const Algorithm&) = delete;

  virtual std::string_view name() const = 0;
  virtual bool stateless() const = 0;

  // The model. Virtual so that a wrapper (CltkRound) can expose its method's model; called a few times per
  // round, never per element.
  virtual Vec& x() { return x_; }
  virtual const Vec& x() const { return x_; }

  // LEAD-type methods begin with a local (prox-)gradient step that sends nothing (k = 0 in ALGORITHMS.md
  // §4.5). The runtime calls startStep(g at x, lr) instead of prepare/apply while this is true.
  virtual bool needsStartStep() const { return false; }
  virtual void startStep(const GradRef& /*g*/, double /*lr*/) {}

  // The mean minibatch loss of this round's local steps, given before prepare (the leader methods report
  // it to their neighbours; the others ignore it).
  virtual void noteLoss(double /*loss*/) {}
  // Builds this round's message from x and the gradient g at x, and encodes it into out. g must stay valid and
  // unchanged until the round's last apply() (Node's gradient does): a method may apply it there instead of
  // keeping a copy of d values (D-PSGD adds -lr g in the mix's one pass). g is empty for a gradient that is
  // exactly zero, only in a method whose acceptsZeroGradient() is true. out's bytes must likewise stay
  // allocated and unchanged until then (moving the vector is fine: its buffer stays); they are this node's
  // frame of the round, which the engine holds until its next round anyway, and the primal-dual family with
  // fp32 reads its own message there instead of keeping a vector of it.
  virtual void prepare(Round t, const GradRef& g, double lr, compress::Encoded& out) = 0;
  // Whether prepare reads every value of x as it encodes it and throws DecodeError when one is NaN or
  // infinite: Node then leaves out its own divergence check of x before prepare (a pass over the model) and
  // reports that error as a non-finite model. D-PSGD with fp32 and float32 state (fp32EncodeChecked).
  virtual bool prepareChecksFinite() const { return false; }
  // Whether prepare takes an empty g as a zero gradient. The trainer bridge's model mode has nothing else
  // (the trainer took its own step): a vector of d zeros would be 4 bytes per parameter kept, and a pass
  // of reads, for nothing. The methods of model mode (D-PSGD, DeepSqueeze, CHOCO) say yes.
  virtual bool acceptsZeroGradient() const { return false; }
  // Whether apply() reads a message in parts (Incoming::parts) without a copy into one buffer: the fp32
  // mixes of D-PSGD and the primal-dual family, whose kernels walk the values part by part. False: the
  // engine gathers a message that arrived in parts into one buffer first.
  virtual bool readsPayloadParts() const { return false; }
  // Whether every message is an fp32 payload whose values apply() checks for NaN and infinity: the engine
  // then looks for such values in the pass that verifies each frame's checksum (Incoming::wordsFinite), and
  // a message found clean is not read a second time for the check.
  virtual bool messagesAreFp32() const { return false; }
  // Mixes the neighbours' messages of round t. row.neighbors lists the neighbours of this round with their
  // weights; msgs holds at most one message per neighbour of the row (others are ignored and counted).
  virtual void apply(Round t, std::span<const Incoming> msgs, const topology::MixingRow& row) = 0;

  // Public state a new neighbour must copy once, in full precision, to create its replica of this node
  // (CHOCO: x_hat_i; LEAD: h_i). Empty for stateless methods. A view of the node's own vector, valid until
  // its state next changes (prepare, apply, load): the engine copies it at once, and serves the copy to the
  // new neighbours' asks (engine/edge_fetch.cc).
  virtual std::span<const Real> publicState() const { return {}; }
  // Creates the edge state for neighbour j, given j's publicState() (empty for stateless methods).
  // ProtocolError if any edge to j.id exists: a restarted neighbour is dropEdge(old) + addEdge(new), never
  // an overwrite (an overwrite would leave the old edge's dual share inside d_i).
  virtual void addEdge(EdgeKey /*j*/, std::span<const Real> /*neighbourPublic*/) {}
  // addEdge, given a vector assembled for this edge alone (the daemon's edge set-up makes one per edge): a
  // method that keeps the state as it came takes the vector itself, not a copy of it (a model's worth of
  // memory at a 100M-parameter edge set-up). The default copies it through addEdge.
  virtual void adoptEdge(EdgeKey j, Vec&& neighbourPublic) {
    addEdge(j, std::span<const Real>(neighbourPublic.data(), static_cast<std::size_t>(neighbourPublic.size())));
  }
  // Drops the edge only if its key matches exactly (a late drop of an old life must not kill the new
  // edge). An unknown key is a no-op.
  virtual void dropEdge(EdgeKey /*j*/) {}
  // Current edges, sorted. Stateless methods keep none.
  virtual std::vector<EdgeKey> edges() const { return {}; }
  virtual std::size_t edgeCount() const { return 0; }

  // Checkpoint of everything that matters between rounds (after apply, before the next prepare). Each
  // algorithm writes its own tag so another algorithm's state is refused. load validates every dimension,
  // throws DecodeError on a mismatch and leaves the object unchanged on failure.
  virtual void save(ByteWriter& w) const = 0;
  virtual void load(ByteReader& r) = 0;

  // Sum of the edge-decomposed dual d_i (LEAD family), for invariant checks; empty otherwise.
  virtual const Vec* dual() const { return nullptr; }
  // This node's share e_ij of the dual on its edge to neighbour j (LEAD family), for invariant checks
  // (e_ij = -e_ji once both ends mixed the same rounds; tests/unit/engine/protocol_harness.h); null when
  // there is no such edge or the method keeps no dual. Read-only.
  virtual const Vec* edgeDual(PeerId /*j*/) const { return nullptr; }

  // Disagreement with the neighbours in the last apply(): || y_i - sum_j w_ij y_j ||_2 = || sum_j w_ij (y_i - y_j) ||
  // over the row's neighbours whose values were mixed, where y is what this method mixes: the decoded model for
  // D-PSGD (exactly the model disagreement with fp32/identity codecs), the compressed sketches C(x + e) for
  // DeepSqueeze, the public replicas x_hat for CHOCO and y_hat = h + q for ED/LEAD/Prox-LEAD. Computed from
  // values apply() has at hand (no extra message, no allocation); NaN before the first apply().
  double disagreement() const { return disagreement_; }

  // Codistillation: the neighbours' model copies whose mean prediction is this node's distillation target,
  // and the term's weight. Node adds the term to every gradient through GradientEstimator::estimateDistilled.
  // Empty (no term) for the other methods.
  virtual std::span<const Vec* const> teachers() const { return {}; }
  virtual double distillWeight() const { return 0.0; }
  // Codistillation's reference variant (codistill_reference.h): the neighbours' mean class probabilities on
  // the reference rows (row-major), the target of this node's term, which Node adds through
  // GradientEstimator::estimateWithReference; empty: no term. The predictions it sends come from a function
  // Node gives it (the node's model on the reference rows), so the algorithm stays model-free.
  virtual std::span<const double> referenceTarget() const { return {}; }
  using Predictor = std::function<void(const Vec& x, std::vector<double>& probs)>;
  virtual bool needsPredictor() const { return false; }
  virtual void setPredictor(Predictor /*predict*/) {}

  // CHOCO's consensus step in use (it may have been adapted, choco.h); NaN for the other methods.
  virtual double consensusStep() const { return std::numeric_limits<double>::quiet_NaN(); }

 protected:
  Vec x_;
  double disagreement_ = std::numeric_limits<double>::quiet_NaN();
};

// Builds the algorithm for one node. x0 is the initial model; the compressor is owned by the caller and must
// outlive the algorithm (one compressor instance is shared by all virtual nodes). ConfigError on bad params.
std::unique_ptr<Algorithm> makeAlgorithm(const AlgorithmParams& p, const compress::Compressor& compressor,
                                         PeerId self, Vec x0);

// Names accepted by makeAlgorithm.
std::span<const std::string_view> algorithmNames();

}  // namespace gossip::algo
