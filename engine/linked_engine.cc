// LinkedEngine: edges agreed pairwise, weights from announced degrees, acknowledged delivery for replica
// methods. The protocol is described in linked_engine.h; this file is its implementation.
#include "engine/linked_engine.h"

#include <algorithm>
#include <cmath>

#include "core/serial.h"

namespace gossip::engine {
namespace {

Bytes u64Payload(std::uint64_t v) {
  Bytes b;
  ByteWriter w(b);
  w.put<std::uint64_t>(v);
  return b;
}

std::uint64_t readU64(const Bytes& payload) {
  ByteReader r(payload, "linked control payload");
  const auto v = r.get<std::uint64_t>();
  r.expectEnd();
  return v;
}

bool activeAt(Round start, Round end, Round t) { return t >= start && t < end; }

// Requests of one requester kept for the end of a round (a fetch has window_chunks / request_chunks = 4).
constexpr std::uint64_t kMaxWaitingRequests = 16;

}  // namespace

LinkedEngine::LinkedEngine(PeerId self, Incarnation incarnation, std::unique_ptr<algo::Node> node,
                           Transport& transport, LinkOptions options)
    : NodeEngine(self, incarnation, std::move(node), transport), linkOpts_(std::move(options)) {
  // Proposal ids must differ between the lives of one node, not only within one: a peer's answer to a
  // proposal of our previous incarnation (sent before it learned of the restart, to our id and so to us) names
  // that proposal, and the answer's header names the peer, not whom it answered. With every life counting
  // from 1, such an answer matched our own first proposal: we took the edge as agreed while the peer, once
  // its view had our new incarnation, held a fresh unagreed link, and both waited for ever (fault-schedule
  // harness, seed 1203). The incarnation in the high half keeps the lives apart (up to 2^32 proposals each).
  proposalSeq_ = incarnation_ << 32;
}

void LinkedEngine::sendKept(PeerId to, const FrameHeader& h, SharedBytes payload, Link& keep) {
  if (stateless_) return void(sendFrame(to, h, std::move(payload)));
  keep.unacked.push_back({h.round, {}, payload});
  keep.lastSendMs = nowMs_;
  keep.unacked.back().header = sendFrame(to, h, std::move(payload), true);
}

void LinkedEngine::propose(PeerId id, Link& l, std::uint64_t nowMs) {
  l.proposal = ++proposalSeq_;
  l.proposedAt = nowMs;
  // The proposal's round travels in the header; the payload names the proposal so that a late answer to
  // a cancelled one is recognised.
  sendControl(id, FrameKind::EdgeHello, nextRound(), u64Payload(l.proposal));
}

void LinkedEngine::sendClose(PeerId id, Round end, std::uint64_t life) {
  sendControl(id, FrameKind::EdgeClose, end, u64Payload(life));
}

void LinkedEngine::closeLink(PeerId id, Round end) {
  auto it = links_.find(id);
  if (it == links_.end()) return;
  Link& l = it->second;
  sendClose(id, end, l.scheduled ? l.life : l.proposal);
  l.end = std::min(l.end, end);
  l.proposal = 0;
  if (!l.scheduled || l.end <= l.start || l.end <= mixingRound()) {
    // Not used in any round still to be mixed: gone now.
    if (l.open) node_->algorithm().dropEdge({id, l.incarnation});
    retire(id, l);
    links_.erase(it);
  }
}

void LinkedEngine::breakLink(PeerId id, Round t) {
  auto it = links_.find(id);
  if (it == links_.end()) return;
  Link& l = it->second;
  // Rounds before t were mixed over the edge at this end; the peer closes its end at the same round. It
  // may have mixed round t already (it had our frame): exactness across that edge is then lost by one
  // round, which a peer sending undecodable payloads has forfeited anyway.
  sendClose(id, t, l.life);
  l.end = std::min(l.end, t);
  if (l.open) node_->algorithm().dropEdge({id, l.incarnation});
  retire(id, l);
  links_.erase(it);
}

void LinkedEngine::setMembers(View alive, Round next, std::uint64_t nowMs) {
  nowMs_ = nowMs;
  if (!begun_) firstRound_ = next;
  {
    // Churn may leave a member count the configured generator cannot serve: use the documented fallback
    // (engine/view.h) rather than stop the node.
    auto vg = std::make_shared<ViewGraph>();
    std::vector<PeerId> ids;
    for (const auto& m : alive) ids.push_back(m.id);
    GOSSIP_CHECK(std::is_sorted(ids.begin(), ids.end()), "view must be sorted by id");
    vg->graph = buildAliveGraph(ids, linkOpts_.topology, &graphFallback_);
    if (vg->graph.directed) vg->graph = topology::symmetrize(vg->graph);
    vg->view = std::move(alive);
    vg_ = std::move(vg);
  }
  const auto& g = vg_->graph;
  const auto idx = g.indexOf(self_);
  GOSSIP_CHECK(idx >= 0, "node ", self_, " is not in its own view");
  std::map<PeerId, Incarnation> want;
  for (auto j : g.in[static_cast<std::size_t>(idx)]) want[g.nodes[j]] = member(g.nodes[j])->incarnation;
  sendTo_.clear();
  for (const auto& [j, inc] : want) sendTo_.push_back(j);
  lastSent_.clear();  // a restarted neighbour starts its rounds again
  // Model frames kept for a later round from a member that left the view, or that came back as a new
  // incarnation, are never to be mixed: drain() checks the sender's incarnation only on arrival. Left in the
  // inbox, such a frame answered roundReady's "is j's frame for t here" for the new incarnation's edge, and
  // endRound kept it (the first of two frames of one sender) over the new incarnation's own frame: the
  // algorithm refused it (wrong incarnation), and the new edge was broken at once (fault-schedule harness,
  // seeds 1381 and 2107).
  std::erase_if(inbox_, [&](const Inbound& in) {
    const Member* m = member(in.sender);
    return !m || m->incarnation != in.incarnation;
  });
  if (stateless_) return;  // no edge state, no handshake: frames of view neighbours are mixed

  auto& algo = node_->algorithm();
  std::erase_if(closed_, [&](const auto& kv) {
    const Member* m = member(kv.first);
    return !m || m->incarnation != kv.second.incarnation;
  });
  for (auto it = links_.begin(); it != links_.end();) {
    const PeerId j = it->first;
    Link& l = it->second;
    const Member* m = member(j);
    if (!m || m->incarnation != l.incarnation) {
      // Dead, left or restarted: the edge goes at once, at this end; the peer's end goes with the peer
      // (or with its old incarnation), so sum_i d_i over the living stays 0.
      if (l.open) algo.dropEdge({j, l.incarnation});
      closed_.erase(j);  // nothing to resend to a peer that is gone
      it = links_.erase(it);
      continue;
    }
    ++it;
    if (!want.count(j)) closeLink(j, mixingRound() + (inRound_ ? 1 : 0));
  }
  for (const auto& [j, inc] : want) {
    if (links_.count(j) || holdEdges_) continue;
    Link l;
    l.incarnation = inc;
    l.proposer = self_ < j;
    auto& nl = links_.emplace(j, std::move(l)).first->second;
    if (nl.proposer) propose(j, nl, nowMs);
  }
}

void LinkedEngine::holdEdges(bool hold, std::uint64_t nowMs) {
  holdEdges_ = hold;
  if (!hold && vg_) setMembers(vg_->view, nextRound(), nowMs);
}

bool LinkedEngine::readyToBegin(Round t, std::uint64_t nowMs, bool startBarrier) const {
  if (stateless_) return true;
  for (const auto& [j, l] : links_)
    if (!l.scheduled && l.proposer && l.proposal != 0 && nowMs < l.proposedAt + linkOpts_.hello_timeout_ms) return false;
  if (!startBarrier) return true;
  // Every neighbour of the view needs an agreed edge that still runs at round t. Looking at the view's
  // neighbours, not at links_, matters: a link the peer closed is gone from links_ until the next tick
  // re-creates it, and a node that counted only the links it had ran its rounds alone meanwhile.
  for (const PeerId j : sendTo_) {
    const auto it = links_.find(j);
    if (it == links_.end() || !it->second.scheduled || it->second.end <= t) return false;
  }
  return true;
}

bool LinkedEngine::neighbourAt(Round t) const {
  if (std::any_of(inbox_.begin(), inbox_.end(), [&](const Inbound& in) { return in.round >= t; })) return true;
  return std::any_of(lastSent_.begin(), lastSent_.end(), [&](const auto& s) { return s.second >= t; });
}

bool LinkedEngine::isFetching(PeerId j) const {
  const auto f = fetching_.find(j);
  if (f == fetching_.end()) return false;
  const Member* m = member(j);
  return m && m->incarnation == f->second;
}

bool LinkedEngine::roundReady(Round t) const {
  if (stateless_) {
    // Ready when every neighbour's frame for t is here or the neighbour's latest frame is for round t or
    // a later one: its frame for t was then lost or refused as too far ahead, and waiting until the round
    // deadline gains nothing. A node that fell far behind (restarted from an older checkpoint, or cut off)
    // so runs its rounds at compute speed, mixing alone, until it is back within kMaxRoundsAhead of its
    // neighbours; before, it waited a whole deadline per round and never caught up, and its neighbours,
    // whose frames it refused, waited a deadline per round for its late ones: the whole cluster slowed to
    // one round per deadline (seen in the docker chaos test after a restart).
    // Counting distinct senders also keeps a replayed frame from standing in for another neighbour's.
    return std::all_of(sendTo_.begin(), sendTo_.end(), [&](PeerId j) {
      if (isFetching(j)) return true;  // it fetches a model: no frame of it will come
      const auto s = lastSent_.find(j);
      if (s != lastSent_.end() && s->second >= t) return true;  // its frame for t is here or will not come
      return std::any_of(inbox_.begin(), inbox_.end(), [&](const Inbound& in) { return in.round == t && in.sender == j; });
    });
  }
  for (const auto& [j, l] : links_) {
    if (!l.scheduled || !activeAt(l.start, l.end, t)) continue;
    if (l.start == t && !l.open && !(l.edgeFetch && l.edgeFetch->complete())) return false;
    const PeerId peer = j;  // a named copy: clang before 16 cannot capture a structured binding
    const bool have = std::any_of(inbox_.begin(), inbox_.end(),
                                  [&](const Inbound& in) { return in.round == t && in.sender == peer; });
    if (!have) return false;
  }
  return true;
}

void LinkedEngine::tick(std::uint64_t nowMs) {
  nowMs_ = nowMs;
  stepStateFetch(nowMs);
  if (stateless_) return;
  // A neighbour the view still wants whose link is gone (the peer closed it while views disagreed, as in
  // the merge after a partition heals) gets a fresh link; the proposer side proposes after hello_retry_ms.
  // setMembers creates links only when the view changes, so without this the edge never came back.
  if (vg_ && !holdEdges_)
    for (const PeerId j : sendTo_) {
      if (links_.count(j)) continue;
      const Member* m = member(j);
      if (!m) continue;
      Link l;
      l.incarnation = m->incarnation;
      l.proposer = self_ < j;
      l.retryAt = nowMs + linkOpts_.hello_retry_ms;
      links_.emplace(j, std::move(l));
    }
  for (auto& [j, l] : links_) {
    if (!l.scheduled && l.proposer) {
      if (l.proposal != 0 && nowMs >= l.proposedAt + linkOpts_.hello_timeout_ms) {
        // Unanswered: cancel (so a late acceptance cannot start the edge at a round we have passed)
        // and propose again later.
        sendClose(j, 0, l.proposal);
        l.proposal = 0;
        l.retryAt = nowMs + linkOpts_.hello_retry_ms;
      } else if (l.proposal == 0 && nowMs >= l.retryAt) {
        propose(j, l, nowMs);
      }
    }
    if (l.edgeFetch && !l.edgeFetch->complete()) pumpEdgeFetch(j, l);  // chunks a silence handed back
    if (!l.unacked.empty() && nowMs >= l.lastSendMs + retransmitAfterMs(l.unacked)) {
      for (const auto& s : l.unacked) {
        transport_.send(j, s.header, s.payload);
        ++stats_.retransmitted;
      }
      l.lastSendMs = nowMs;
    }
  }
  for (auto& [j, c] : closed_) {
    if (c.unacked.empty() || nowMs < c.lastSendMs + retransmitAfterMs(c.unacked)) continue;
    for (const auto& s : c.unacked) {
      transport_.send(j, s.header, s.payload);
      ++stats_.retransmitted;
    }
    c.lastSendMs = nowMs;
  }
}

// How long unacknowledged frames wait before they are sent again: retransmit_ms, plus the time they take to
// leave at retransmit_min_bytes_per_ms. A 100 MB frame (a 25M-parameter CHOCO edge's EdgeOpen, before edges
// were set up in chunks; a LEAD fp32 model frame) takes 8 s on a 100 Mbit/s link; resent every 200 ms it was
// queued 40 times over, and the copies filled the link so that the round's own 2 MB frames waited behind
// them: 242 retransmits, 62 s for one round.
std::uint64_t LinkedEngine::retransmitAfterMs(const std::vector<Sent>& unacked) const {
  std::uint64_t bytes = 0;
  for (const auto& s : unacked) bytes += s.header.size() + (s.payload ? s.payload->size() : 0);
  return linkOpts_.retransmit_ms + bytes / std::max<std::uint64_t>(1, linkOpts_.retransmit_min_bytes_per_ms);
}

void LinkedEngine::retire(PeerId id, Link& l) {
  // A link never scheduled sent no frames. It must not replace the record of an earlier edge to the same
  // peer life, whose last frames may still wait for their ack: after the peer closed that edge, `tick`
  // re-creates a link while our view still wants the peer, and when our view then drops the peer too,
  // closing that fresh link overwrote the record. A lost model frame of the old edge's last round was then
  // never resent and the peer waited for it forever (tests/unit/engine/test_protocol_schedules.cc, seed 199).
  if (const auto old = closed_.find(id); !l.scheduled && old != closed_.end() && old->second.incarnation == l.incarnation)
    return;
  auto& c = closed_[id];
  c.incarnation = l.incarnation;
  c.life = l.life;
  c.start = l.start;
  c.end = l.end;
  c.myPublic = l.end > l.start ? std::move(l.myPublic) : nullptr;  // rounds of it were mixed: the peer may need it
  c.partsQueued = c.myPublic ? std::move(l.partsQueued) : PartsQueued{};
  c.unacked = std::move(l.unacked);
  std::erase_if(c.unacked, [&](const Sent& s) { return s.round >= c.end; });  // never mixed: not needed
  c.lastSendMs = l.lastSendMs;
}

void LinkedEngine::protocolControl(const FrameHeader& h, const SharedBytes& shared) {
  const Bytes& payload = *shared;
  if (stateless_) return reject("unexpected_kind");
  const PeerId j = h.sender;
  auto it = links_.find(j);
  Link* l = it != links_.end() && it->second.incarnation == h.incarnation ? &it->second : nullptr;
  switch (h.kind) {
    case FrameKind::EdgeHello: {
      const std::uint64_t proposal = readU64(payload);
      if (self_ > j) {  // a proposal to us
        if (!l || holdEdges_) return sendClose(j, 0, proposal);  // not (yet) wanted
        if (!l->scheduled) {
          l->scheduled = true;
          l->start = std::max<Round>(h.round, nextRound());
          l->proposal = proposal;
          l->life = proposal;
          // The answer first: our asks for its public state then reach a proposer that has agreed the edge.
          sendControl(j, FrameKind::EdgeHello, l->start, u64Payload(proposal));
          return startEdgeFetch(j, *l);
        } else if (l->life != proposal) {
          // A new proposal while we hold an agreed edge: the proposer proposes only when it holds none with
          // us. Either the edge is closing (one end sent EdgeClose: ours went out, or the proposer's came
          // first on the same channel), the proposer has mixed its last rounds and retired it, and we still
          // mix them; or no end closed it and the proposer never agreed it (our answer went to its previous
          // incarnation). In the first case the edge must run to its end, in the second no round of it was
          // mixed (the proposer sent no frame for it) and it goes now. Either way the proposal is declined,
          // and the proposer asks again once our link is free. Ignoring it, as before, left the proposer to
          // cancel it by timeout, and that cancel (EdgeClose(0)) ended the closing edge before its last
          // rounds (fault-schedule harness, seed 373).
          reject("conflicting_proposal");
          if (l->end == kNoRound) {
            if (l->open) node_->algorithm().dropEdge({j, l->incarnation});
            l->end = 0;
            retire(j, *l);
            links_.erase(it);
          }
          return sendClose(j, 0, proposal);
        }
        sendControl(j, FrameKind::EdgeHello, l->start, u64Payload(proposal));
        return;
      }
      // An answer to our proposal: valid only for the outstanding one.
      if (!l || l->scheduled || l->proposal != proposal) return reject("stale_answer");
      if (h.round < nextRound()) return reject("bad_round");  // cannot happen while we wait for it
      l->scheduled = true;
      l->start = h.round;
      l->life = proposal;
      l->proposal = 0;
      return startEdgeFetch(j, *l);
    }
    case FrameKind::EdgeClose: {
      if (!l) return;  // already gone
      // The payload names the edge life (or proposal) the close is about; a sender from before named none
      // (empty payload) and is taken to mean the current one. Without the name, a close said again for an
      // earlier life (acceptLinkedModel) or the cancel of a later proposal ended whichever life was current,
      // also one still mixing its last rounds (fault-schedule harness, seed 373).
      std::optional<std::uint64_t> named;
      if (!payload.empty()) named = readU64(payload);
      if (!l->scheduled) {  // a decline of our proposal, or a cancel of theirs
        if (named && *named != l->proposal) return;  // about a proposal no longer outstanding
        l->proposal = 0;
        l->retryAt = nowMs_ + linkOpts_.hello_retry_ms;
        return;
      }
      if (named && *named != l->life) return;  // about another life of this edge
      l->end = std::min(l->end, h.round);
      if (l->end <= l->start || l->end <= mixingRound()) {
        // No round still to be mixed uses it (a round already begun past `end` mixes without it).
        if (l->open) node_->algorithm().dropEdge({j, l->incarnation});
        retire(j, *l);
        links_.erase(it);
      }
      return;
    }
    case FrameKind::EdgeAsk:
      return receiveEdgeAsk(h, payload, l);
    case FrameKind::EdgePart:
      return receiveEdgePart(h, payload, l);
    case FrameKind::Ack: {
      // Cumulative: covers a closed life of the link (frames of its last rounds) and the current one.
      auto c = closed_.find(j);
      if (c != closed_.end() && c->second.incarnation == h.incarnation) {
        std::erase_if(c->second.unacked, [&](const Sent& s) { return s.round <= h.round; });
        if (h.round >= c->second.start) {
          c->second.myPublic.reset();
          c->second.partsQueued.clear();
        }
      }
      if (!l) return;
      if (l->acked == kNoRound || h.round > l->acked) l->acked = h.round;
      std::erase_if(l->unacked, [&](const Sent& s) { return s.round <= l->acked; });
      if (l->scheduled && l->acked >= l->start) {  // the peer has opened the edge
        l->myPublic.reset();
        l->partsQueued.clear();
      }
      return;
    }
    default:
      return reject("unexpected_kind");
  }
}

bool LinkedEngine::acceptModel(const FrameHeader& h, Round current) {
  const PeerId j = h.sender;
  if (stateless_) {
    // It sends model frames: it has its model and mixes. Our frame of the round in progress, skipped while
    // it fetched, goes now: it may be waiting for exactly that round.
    if (fetching_.erase(j) && inRound_ && roundHeader_ && std::binary_search(sendTo_.begin(), sendTo_.end(), j))
      sendFrame(j, *roundHeader_, payload_);
    if (!std::binary_search(sendTo_.begin(), sendTo_.end(), j)) return reject("not_neighbor"), false;
    // The round of j's most recent frame, not the highest ever seen: a forged far-future frame then stops
    // the waiting for j for at most the rounds until j's next real frame.
    lastSent_[j] = h.round;
    if (h.round < current) return reject("late"), false;
    if (h.round > current + kMaxRoundsAhead) return reject("bad_round"), false;
    return true;
  }
  auto it = links_.find(j);
  if (it == links_.end() || it->second.incarnation != h.incarnation || !it->second.scheduled) {
    auto c = closed_.find(j);
    if (c != closed_.end() && c->second.incarnation == h.incarnation) {
      if (h.round >= c->second.end) {
        // The peer has not seen our close yet: say it again. The frame may also be of a newer edge the
        // peer agreed while its answer is still on the control channel; the close names the old edge, so
        // the peer's new one ignores it (unnamed, it ended the new edge before its first round was mixed
        // at this end: fault-schedule harness, seed 1440).
        sendClose(j, c->second.end, c->second.life);
      } else {
        ++stats_.duplicates;  // a retransmit of a round we mixed before the close: re-acknowledge it
        sendControl(j, FrameKind::Ack, c->second.end - 1, {});
      }
      return false;
    }
    return reject("no_edge"), false;
  }
  Link& l = it->second;
  if (!activeAt(l.start, l.end, h.round)) return reject("bad_round"), false;
  if (h.round < current) {
    // A retransmit of a round we mixed: our ack was lost or late. Say it again.
    ++stats_.duplicates;
    sendControl(j, FrameKind::Ack, current - 1, {});
    return false;
  }
  if (h.round > current + kMaxRoundsAhead) return reject("bad_round"), false;
  for (const auto& in : inbox_)
    if (in.round == h.round && in.sender == j) return ++stats_.duplicates, false;
  return true;
}

void LinkedEngine::beforeLocalWork(Round t) {
  if (stateless_) return;
  const bool starts = std::any_of(links_.begin(), links_.end(),
                                  [&](const auto& kv) { return kv.second.scheduled && kv.second.start == t; });
  if (!starts) return;
  const std::span<const Real> pub = node_->algorithm().publicState();
  // One copy for every edge starting at t, held by those links (engine/edge_fetch.cc).
  const auto captured = std::make_shared<const std::vector<Real>>(pub.begin(), pub.end());
  for (auto& [j, l] : links_) {
    if (!l.scheduled || l.start != t) continue;
    l.myPublic = captured;  // served to j's asks (engine/edge_fetch.cc) until j acknowledges round t
    for (const StateAsk& a : l.asksWaiting) serveEdgeAsk(j, l.life, l.start, *l.myPublic, l.partsQueued, a);
    l.asksWaiting.clear();
  }
}

void LinkedEngine::sendRound(Round t, FrameHeader h) {
  begun_ = t;
  inRound_ = true;
  if (stateless_) {
    myDegree_ = static_cast<std::uint16_t>(sendTo_.size());
    h.degree = myDegree_;
    roundHeader_ = h;
    for (PeerId j : sendTo_)
      if (!isFetching(j)) sendFrame(j, h, payload_);
    return;
  }
  std::uint16_t degree = 0;
  for (const auto& [j, l] : links_)
    if (l.scheduled && activeAt(l.start, l.end, t)) ++degree;
  myDegree_ = degree;
  h.degree = degree;
  for (auto& [j, l] : links_) {
    if (!l.scheduled || !activeAt(l.start, l.end, t)) continue;
    sendKept(j, h, payload_, l);
  }
}

topology::MixingRow LinkedEngine::linkedRow(Round t) {
  topology::MixingRow row;
  const auto degreeOf = [&](PeerId j) -> std::uint16_t {
    for (const auto& in : ready_)
      if (in.sender == j) return in.degree;
    return 0;
  };
  const auto weight = [&](std::uint16_t dj) { return 1.0 / (1.0 + double(std::max(myDegree_, dj))); };
  if (stateless_) {
    for (const auto& in : ready_)
      if (std::binary_search(sendTo_.begin(), sendTo_.end(), in.sender))
        row.neighbors.emplace_back(in.sender, weight(in.degree));
  } else {
    auto& algo = node_->algorithm();
    for (auto& [j, l] : links_) {
      if (!l.scheduled || !activeAt(l.start, l.end, t)) continue;
      if (!l.open) {
        GOSSIP_CHECK(l.start == t && l.edgeFetch && l.edgeFetch->complete(), "edge to ", j, " is not open in round ", t);
        algo.adoptEdge({j, l.incarnation}, std::move(l.edgeFetch->values()));  // the assembled vector, not a copy
        l.edgeFetch.reset();
        l.open = true;
      }
      row.neighbors.emplace_back(j, weight(degreeOf(j)));
    }
  }
  // Same arithmetic, in the same (ascending id) order, as topology::mixingRow: a static graph gives the
  // simulator's weights bit for bit.
  row.self = 1.0;
  for (const auto& [j, w] : row.neighbors) row.self -= w;
  return row;
}

void LinkedEngine::afterMix(Round t) {
  inRound_ = false;
  for (const StateAsk& a : stateWanted_) sendState(a, nextRound());
  stateWanted_.clear();
  if (stateless_) return;
  auto& algo = node_->algorithm();
  for (auto it = links_.begin(); it != links_.end();) {
    auto& [j, l] = *it;
    if (l.scheduled && activeAt(l.start, l.end, t)) sendControl(j, FrameKind::Ack, t, {});
    if (l.scheduled && l.end <= t + 1) {
      if (l.open) algo.dropEdge({j, l.incarnation});
      retire(j, l);
      it = links_.erase(it);
      continue;
    }
    ++it;
  }
}

std::vector<LinkInfo> LinkedEngine::links() const {
  std::vector<LinkInfo> out;
  if (stateless_) {
    for (PeerId j : sendTo_) {
      const Member* m = member(j);
      out.push_back({j, m ? m->incarnation : 0, true, true, 0, kNoRound});
    }
    return out;
  }
  for (const auto& [j, l] : links_) out.push_back({j, l.incarnation, l.scheduled, l.open, l.start, l.end});
  return out;
}

std::size_t LinkedEngine::unackedFrames() const {
  std::size_t n = 0;
  for (const auto& [j, l] : links_) n += l.unacked.size();
  for (const auto& [j, c] : closed_) n += c.unacked.size();
  return n;
}

void LinkedEngine::dropAllEdges() {
  auto& algo = node_->algorithm();
  for (const auto& key : algo.edges()) algo.dropEdge(key);
  links_.clear();
}

bool LinkedEngine::mixWithout(PeerId from, Round t) {
  // The substitute's weight goes to the self weight (the row lists present frames).
  std::erase_if(ready_, [&](const Inbound& m) { return m.sender == from; });
  // A replica method cannot mix a round without the neighbour's message, and the payload passed its
  // checksum, so waiting gives nothing: the sender is broken or an impostor. The edge ends here (a daemon
  // must not die of one frame, found by fuzz/target_engine.cc); the view proposes it again at its next change.
  if (!stateless_) breakLink(from, t);
  row_ = linkedRow(t);
  return true;
}

std::optional<Round> LinkedEngine::answerStateAt(const FrameHeader& h, const StateAsk& a) {
  if (stateless_) fetching_[h.sender] = h.incarnation;  // until its first model frame (acceptModel)
  if (holdEdges_) {
    // We are fetching the current model ourselves (a restart, a late joiner, a rejoin): ours is not it.
    // Answered, it replaced a restarted node's checkpointed model with a joiner's untrained one, and that
    // node trained alone from round 0 for ~28,000 rounds (issue 28). The requester asks another one.
    ++stats_.state_requests_declined;
    return std::nullopt;
  }
  if (inRound_ && !stateless_) {
    // Mid-round a replica method's model is half-way (local steps taken, not yet mixed): answer after the
    // mix. A request asked again meanwhile is kept once, and a requester has at most a window's worth
    // waiting. (A stateless model mid-round is an SGD iterate like any other, and its round may wait a
    // whole deadline for this very requester's frame: answered at once.)
    const auto mine = std::count_if(stateWanted_.begin(), stateWanted_.end(), [&](const StateAsk& w) { return w.to == a.to; });
    const bool again = std::any_of(stateWanted_.begin(), stateWanted_.end(), [&](const StateAsk& w) {
      return w.to == a.to && w.at == a.at && w.count == a.count && w.chunk == a.chunk;
    });
    if (again) return std::nullopt;
    if (static_cast<std::uint64_t>(mine) >= kMaxWaitingRequests) return reject("state_requests_flood"), std::nullopt;
    stateWanted_.push_back(a);
    return std::nullopt;
  }
  return nextRound();  // the requester continues from our next round
}

}  // namespace gossip::engine
