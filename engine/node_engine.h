#pragma once
// NodeEngine: everything around one node's algorithm round, with no sockets (DESIGN.md §3, §4):
//   membership view -> graph and mixing row -> edge lifecycle keyed by (peer id, incarnation)
//   -> Node round -> frames through a Transport.
// The simulator runs one engine per virtual node over the in-process transport; the daemon runs one over
// ZeroMQ. There is one implementation of the round.
//
// Edge lifecycle (replica methods: CHOCO, NIDS/ED, LEAD, Prox-LEAD). An edge exists only when both ends
// want it: on a view change an engine drops at once every edge whose peer left, restarted (new
// incarnation) or stopped being a neighbour, and sends EdgeOpen, carrying its public state, to every new
// neighbour; it opens the edge (Algorithm::addEdge with the peer's public state) when the peer's EdgeOpen
// arrives and it wants that exact (id, incarnation). A round runs only when every wanted edge is open.
// Stateless methods keep no edge state and need no handshake.
//
// Frames in: every frame is decoded and validated (header checksum, kind, sender in the view with the
// right incarnation, mixing epoch, round window, payload checksum) before the algorithm sees it; what is
// rejected is counted by reason and never touches the model. A payload the algorithm itself rejects
// (RejectedMessage) is treated as missing for stateless methods, and is an error for replica methods,
// whose links must deliver every message (the daemon retransmits; the simulator never corrupts).
//
// Not thread-safe: one thread drives one engine.
#include <map>
#include <optional>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/node.h"
#include "engine/frame.h"
#include "engine/transport.h"
#include "engine/view.h"

namespace gossip::engine {

struct EngineStats {
  std::uint64_t model_bytes_sent = 0;    // model frames, headers included
  std::uint64_t control_bytes_sent = 0;  // edge handshakes and state transfers
  std::uint64_t frames_received = 0;
  std::uint64_t messages_missing = 0;    // stateless rounds that mixed a neighbour's own-value substitute
  std::map<std::string, std::uint64_t> rejected;  // by reason label
  std::uint64_t rejectedTotal() const;
};

class NodeEngine {
 public:
  NodeEngine(PeerId self, Incarnation incarnation, std::unique_ptr<algo::Node> node, Transport& transport);

  PeerId id() const { return self_; }
  Incarnation incarnation() const { return incarnation_; }
  algo::Node& node() { return *node_; }
  const algo::Node& node() const { return *node_; }
  const topology::MixingRow& row() const { return row_; }
  const EngineStats& stats() const { return stats_; }
  bool stateless() const { return stateless_; }

  // Installs a view and its graph (every engine holding the view gets the same graph). Drops stale edges
  // and sends EdgeOpen to new neighbours; `round` is the round about to run (carried on control frames).
  void setView(std::shared_ptr<const ViewGraph> vg, Round round);
  // Handles every frame waiting in the transport: control frames now, model frames into the inbox.
  void drain(Round current);
  // Asks neighbour `from` for its model (state transfer for a joining or lagging node).
  void requestState(PeerId from, Round round);
  // True when every edge the view wants is open (always true for stateless methods).
  bool edgesReady() const;

  // Local work of round t, then one model frame to every out-neighbour (payload encoded once).
  void beginRound(Round t);
  // Drains the transport, then mixes the round-t messages that arrived (algorithm.apply).
  void endRound(Round t);

  // Whole node state for a checkpoint: identity, view epoch, algorithm (with edges) and estimator.
  Bytes save(Round nextRound) const;
  // Restores a save() of the same node; returns the round to run next. DecodeError on any mismatch.
  Round load(std::span<const std::byte> state);

 private:
  void reject(const std::string& reason);
  void handleControl(const FrameHeader& h, const Bytes& payload);
  void sendControl(PeerId to, FrameKind kind, Round round, Bytes payload);
  const Member* member(PeerId id) const;

  PeerId self_;
  Incarnation incarnation_;
  std::unique_ptr<algo::Node> node_;
  Transport& transport_;
  bool stateless_;

  std::shared_ptr<const ViewGraph> vg_;
  topology::MixingRow row_;
  std::vector<PeerId> sendTo_;                 // out-neighbours (= neighbours for undirected graphs)
  std::map<PeerId, Incarnation> wanted_;       // replica methods: edges this view wants
  std::map<PeerId, std::uint64_t> linkSeq_;    // per-link sequence numbers of sent frames
  std::optional<PeerId> stateFrom_;            // the peer asked for its model; only its State is taken

  compress::Encoded encoded_;
  std::shared_ptr<Bytes> payload_;             // this round's payload, shared with receivers
  struct Inbound {
    Round round;
    PeerId sender;
    Incarnation incarnation;
    SharedBytes payload;
  };
  // Model frames waiting for their round, unsorted: appended by drain(), sorted by (round, sender) once
  // per round in endRound() (a flat vector: no per-message node allocation on the hot path).
  std::vector<Inbound> inbox_;
  std::vector<Inbound> ready_;  // this round's frames, sorted by sender (buffer reused across rounds)
  std::vector<algo::Incoming> msgs_;
  EngineStats stats_;
};

// How far ahead of the receiver's round a model frame may be and still be kept for later.
inline constexpr Round kMaxRoundsAhead = 2;

}  // namespace gossip::engine
