#pragma once
// SyncEngine: the simulator's protocol over the shared round (engine/node_engine.h). Every node installs
// the same view at once (setView: one graph and one mixing row for everyone, numbered by its epoch), and
// the caller runs the rounds in lock step: every node begins round t, then every node ends it. Frames
// carry the view's epoch; a frame of another epoch, of a round already mixed or too far ahead is refused.
//
// Edges (replica methods: CHOCO, NIDS/ED, LEAD, Prox-LEAD). An edge exists only when both ends want it:
// on a view change an engine drops at once every edge whose peer left, restarted (new incarnation) or
// stopped being a neighbour, and sends EdgeOpen, carrying its public state, to every new neighbour; it
// opens the edge (Algorithm::addEdge with the peer's public state) when the peer's EdgeOpen arrives and it
// wants that exact (id, incarnation). A round mixes only when every wanted edge is open (else
// ProtocolError: the simulator never loses an EdgeOpen). Stateless methods keep no edge state.
//
// A payload the algorithm refuses is mixed without for a stateless method (the neighbour's weight goes to
// the node's own value) and an error for a replica method: the simulator never corrupts a frame, so it is
// a bug to surface.
//
// Not thread-safe: one thread drives one engine (the simulator's pool runs different engines at once).
#include <map>

#include "engine/node_engine.h"

namespace gossip::engine {

class SyncEngine final : public NodeEngine {
 public:
  SyncEngine(PeerId self, Incarnation incarnation, std::unique_ptr<algo::Node> node, Transport& transport)
      : NodeEngine(self, incarnation, std::move(node), transport) {}

  // Installs a view and its graph (every engine holding the view gets the same graph). Drops stale edges
  // and sends EdgeOpen to new neighbours; `round` is the round about to run (carried on control frames).
  void setView(std::shared_ptr<const ViewGraph> vg, Round round);
  // True when every edge the view wants is open (always true for stateless methods).
  bool edgesReady() const;

 private:
  void protocolControl(const FrameHeader& h, const SharedBytes& payload) override;
  bool acceptModel(const FrameHeader& h, Round current) override;
  void sendRound(Round t, FrameHeader h) override;
  void roundRow(Round t) override;
  std::size_t expectedMessages() const override { return row_.neighbors.size(); }
  bool mixWithout(PeerId, Round) override { return stateless_; }
  std::optional<Round> answerStateAt(const FrameHeader& h, const StateAsk&) override { return h.round; }

  std::map<PeerId, Incarnation> wanted_;  // replica methods: edges this view wants
};

}  // namespace gossip::engine
