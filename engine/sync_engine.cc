// SyncEngine: the simulator's protocol (engine/sync_engine.h).
#include "engine/sync_engine.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/serial.h"

namespace gossip::engine {

void SyncEngine::setView(std::shared_ptr<const ViewGraph> vg, Round round) {
  vg_ = std::move(vg);
  const auto& g = vg_->graph;
  const auto idx = g.indexOf(self_);
  GOSSIP_CHECK(idx >= 0, "node ", self_, " is not in its own view");
  row_ = topology::mixingRow(g, self_, vg_->weights);
  sendTo_.clear();
  for (auto j : g.out[static_cast<std::size_t>(idx)]) sendTo_.push_back(g.nodes[j]);
  if (stateless_) return;

  std::map<PeerId, Incarnation> want;
  for (const auto& [j, w] : row_.neighbors) want[j] = member(j)->incarnation;
  auto& algo = node_->algorithm();
  // Drop every edge the new view does not want with exactly this key: the peer left, restarted or is no
  // longer a neighbour. The peer drops its end when it installs a view without us (or with our new
  // incarnation), so e_ij leaves both ends and sum_i d_i stays 0.
  for (const auto& key : algo.edges()) {
    auto it = want.find(key.id);
    if (it == want.end() || it->second != key.incarnation) algo.dropEdge(key);
  }
  const auto open = algo.edges();
  const auto pub = algo.publicState();
  for (const auto& [j, inc] : want) {
    const bool isOpen = std::binary_search(open.begin(), open.end(), algo::EdgeKey{j, inc});
    if (!isOpen) sendControl(j, FrameKind::EdgeOpen, round, realsPayload(pub));
  }
  wanted_ = std::move(want);
}

bool SyncEngine::edgesReady() const {
  if (stateless_) return true;
  return node_->algorithm().edgeCount() == wanted_.size();
}

void SyncEngine::protocolControl(const FrameHeader& h, const SharedBytes& shared) {
  if (h.kind != FrameKind::EdgeOpen || stateless_) return reject("unexpected_kind");
  auto it = wanted_.find(h.sender);
  if (it == wanted_.end() || it->second != h.incarnation) return reject("unwanted_edge");
  auto& algo = node_->algorithm();
  const auto open = algo.edges();
  if (std::binary_search(open.begin(), open.end(), algo::EdgeKey{h.sender, h.incarnation}))
    return reject("duplicate_edge");
  ByteReader r(*shared, "edge-open payload");
  const auto pub = serial::getArray<Real>(r);
  r.expectEnd();
  for (Real v : pub)
    if (!std::isfinite(v)) return reject("non_finite");
  try {
    algo.addEdge({h.sender, h.incarnation}, pub);
  } catch (const ProtocolError&) {
    return reject("bad_public_state");
  }
}

bool SyncEngine::acceptModel(const FrameHeader& h, Round current) {
  if (h.epoch != static_cast<std::uint32_t>(vg_->epoch)) return reject("epoch_mismatch"), false;
  if (h.round < current) return reject("late"), false;
  if (h.round > current + kMaxRoundsAhead) return reject("bad_round"), false;
  return true;
}

void SyncEngine::sendRound(Round, FrameHeader h) {
  for (PeerId j : sendTo_) sendFrame(j, h, payload_);
}

void SyncEngine::roundRow(Round t) {
  // The row is the view's (setView); only check that every edge it mixes over is open.
  if (!edgesReady())
    throw ProtocolError("node " + std::to_string(self_) + ": round " + std::to_string(t) +
                        " would mix over an edge that is not open at both ends");
}

}  // namespace gossip::engine
