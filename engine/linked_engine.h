#pragma once
// LinkedEngine: the daemon's protocol over the shared round (engine/node_engine.h). Each node has its own
// membership view, so there is no view everyone installs at once; instead every edge is agreed by its two
// ends alone (docs/engine.md, "Linked mode"):
//  - The lower id proposes (EdgeHello carrying its next round n and a proposal id) and does not begin a
//    round until answered; the higher id, if it wants the edge too, answers with the start round
//    s = max(n, its own next round), else with EdgeClose(0). Both use the edge from round s on.
//  - Each end needs the other's public state as of the start of round s (a model's worth: CHOCO's x_hat,
//    LEAD's h). From the agreement on, each end pulls it from the other in chunks (EdgeAsk, EdgePart:
//    engine/edge_fetch.cc); the sender captures it when it begins round s and serves it until the peer
//    acknowledges round s. The edge is created in the algorithm (adoptEdge, which takes the assembled
//    vector) just before round s is mixed, when every chunk has arrived.
//  - A live edge that a new view no longer wants is closed with EdgeClose(end): the sender has sent its
//    frames up to round end-1 and mixes them; the receiver mixes up to end-1 too and then drops it.
//  - One pair of (id, incarnation) ends can have several edges one after the other (closed, proposed
//    again). Each is named by the proposal it was agreed under, and every EdgeClose (close, decline,
//    cancel) carries that name in its payload: a close of an earlier edge said again, or the cancel of a
//    later proposal, must not end the current one. A proposal that arrives while the previous edge still
//    runs its last rounds is declined and asked again.
//  - A peer that left the view (dead, left, restarted) loses its edge at once, even mid-round (the dead
//    edge's weight folds into the self weight).
//  - Weights are Metropolis from degrees the two ends announce on their round-t frames (header field
//    `degree`): w_ij(t) = 1 / (1 + max(d_i(t), d_j(t))), computed identically at both ends, so W(t) is
//    symmetric and doubly stochastic without any epoch. An announced degree may exceed the edges really
//    mixed (an edge that died during the round); its weight then folds into the self weight, which keeps
//    both properties.
//  - Replica methods need every message exactly once: model frames are kept until the
//    peer acknowledges the round (Ack, cumulative), and resent after `retransmit_ms`; duplicates are
//    dropped by round. A payload that passed its checksum but does not decode ends the edge at once.
//    Stateless methods need no handshake: a frame from a neighbour of the view is mixed if it arrives
//    before the round's deadline, and a missing one is replaced by the node's own value.
// When rounds begin and end is the round driver's decision (engine/round_driver.h), the one caller of
// beginRound/endRound in the daemon, the seeded protocol tests and the fuzz rig.
//
// Not thread-safe: one thread drives one engine.
#include <map>
#include <optional>
#include <unordered_map>
#include <vector>

#include "engine/node_engine.h"
#include "engine/state_fetch.h"

namespace gossip::engine {

struct LinkOptions {
  topology::TopologyParams topology;   // the graph of each view; generators are pure (same view, same graph)
  std::uint64_t retransmit_ms = 200;   // replica methods: resend unacknowledged frames after this long...
  // ...plus the time they take to send at this rate (bytes per ms; 1250 = 10 Mbit/s): a large frame is not
  // resent while it may still be on its way.
  std::uint64_t retransmit_min_bytes_per_ms = 1250;
  std::uint64_t hello_timeout_ms = 1000;  // a proposal unanswered this long is cancelled and retried
  std::uint64_t hello_retry_ms = 100;  // a declined (or cancelled) proposal is retried after this long
  // The pull of a new edge's public state (engine/edge_fetch.cc): a state transfer's chunks and window
  // (512 KiB, 16 MiB in flight). At 25M parameters over 100 Mbit/s the set-up took 1.25-1.9x as long as the
  // push it replaced (docs/results.md §26), and 15-22% longer after the sender stopped sending parts twice
  // (§27). A 64 MiB window, 10 s silences, and a 64 MiB window with a 2 s first silence were tried and did
  // not help: the asks arrive in tens of ms, the parts wait in the sender's queue behind the rest of the
  // window.
  StateFetchOptions edge_fetch;
};

// One agreed edge as the linked mode sees it (for status displays and tests).
struct LinkInfo {
  PeerId peer = 0;
  Incarnation incarnation = 0;
  bool scheduled = false;  // start round agreed
  bool open = false;       // edge state exists in the algorithm
  Round start = 0;
  Round end = 0;           // first round not mixed (kNoRound: open-ended)
};

class LinkedEngine final : public NodeEngine {
 public:
  LinkedEngine(PeerId self, Incarnation incarnation, std::unique_ptr<algo::Node> node, Transport& transport,
               LinkOptions options);

  // Installs this node's own view of the alive members (self included, sorted by id). `next` is the next
  // round this node will begin. Drops edges of members that left the view at once; proposes or closes
  // edges where the view's graph changed.
  void setMembers(View alive, Round next, std::uint64_t nowMs);
  // Whether round t may begin now: false while a proposal of this node waits for its answer, and, with
  // `startBarrier`, while any neighbour of the view has no agreed edge running at t. The daemon sets the
  // barrier for every round of the replica methods: without it a node whose edges were being agreed (a
  // rejoin, a merge after a partition) ran its rounds alone at compute speed.
  bool readyToBegin(Round t, std::uint64_t nowMs, bool startBarrier) const;
  // Whether every message round t needs has arrived.
  bool roundReady(Round t) const;
  // Whether a neighbour has begun round t or a later one (its model frame of such a round is here or was
  // seen): a node without a driver of its own (the daemon's trainer bridge with no trainer attached)
  // begins t only then, following its neighbours instead of leading them.
  bool neighbourAt(Round t) const;
  // Retransmits, proposal retries and state-fetch requests that are due.
  void tick(std::uint64_t nowMs);
  std::vector<LinkInfo> links() const;
  // The round whose mixing is still to come: the one in progress, else the next to begin.
  Round mixingRound() const { return inRound_ ? *begun_ : nextRound(); }
  Round nextRound() const { return begun_ ? *begun_ + 1 : firstRound_; }
  bool inRound() const { return inRound_; }
  // Whether the current view's graph is the fallback of buildAliveGraph (a generator refused the count).
  bool graphFallback() const { return graphFallback_; }
  // While held, the view is installed (frames of members are accepted, our own state request is answered)
  // but no edge is proposed and proposals are declined: a node fetching the current model must not agree
  // to mix rounds it has not reached yet. Nor does it hand out its own model to others' state requests
  // (they are declined and counted). Releasing it proposes the view's edges.
  void holdEdges(bool hold, std::uint64_t nowMs);
  // Drops every edge (a node that restarts as a new incarnation keeps its model, not its edges).
  void dropAllEdges();
  // Frames sent but not yet acknowledged by their receivers (a finishing node waits for 0 before leaving).
  std::size_t unackedFrames() const;

 private:
  // Sending end of an edge set-up: each part of the public state handed to the transport, by its first
  // value index, held weakly, and when it was sent. While the transport still holds the part's payload
  // (queued behind other frames, or in libzmq's pipe; a payload under 4 KiB is copied into libzmq's message
  // and so let go at once), the part is on its way: a repeated ask for it is not served again
  // (engine/edge_fetch.cc).
  struct QueuedPart {
    std::weak_ptr<const Bytes> payload;
    std::uint64_t sentMs = 0;
  };
  using PartsQueued = std::unordered_map<std::uint64_t, QueuedPart>;
  struct Sent {  // a frame kept until the peer acknowledges its round (replica methods)
    Round round;
    Bytes header;
    SharedBytes payload;
  };
  struct Link {
    Incarnation incarnation = 0;
    bool proposer = false;          // we are the lower id
    bool scheduled = false;         // start agreed
    std::uint64_t proposal = 0;     // proposer: id of the outstanding proposal (0: none)
    // The proposal this edge was agreed under, at both ends (0 until scheduled). One (id, incarnation) pair can
    // have several edge lives one after the other; EdgeClose names the life it ends, so that a close of an
    // earlier life (said again) or a cancel of a later proposal does not end this one.
    std::uint64_t life = 0;
    std::uint64_t proposedAt = 0;   // proposer: when it was sent (ms)
    std::uint64_t retryAt = 0;      // proposer: when to propose again after a decline (ms)
    Round start = 0;
    Round end = kNoRound;           // first round not mixed
    // Receiving end: the peer's public state as of round `start`, pulled in chunks from the agreement until
    // the edge opens (adoptEdge takes the vector). A lost chunk is asked again; what arrived is kept.
    std::optional<StateFetch> edgeFetch;
    // Sending end: our public state as of round `start`, captured when that round
    // begins and served to the peer's asks until the peer acknowledges round `start` (it opened the edge).
    std::shared_ptr<const std::vector<Real>> myPublic;
    PartsQueued partsQueued;            // parts of it the transport still holds (engine/edge_fetch.cc)
    std::vector<StateAsk> asksWaiting;  // the peer's asks that came before round `start` began
    bool open = false;              // adoptEdge done
    Round acked = kNoRound;         // highest round the peer acknowledged (kNoRound: none)
    std::vector<Sent> unacked;
    std::uint64_t lastSendMs = 0;
  };
  // Closed links: their end, and the frames the peer has not acknowledged yet (a frame of the last mixed
  // round may still be lost; the peer needs it to finish that round, so it is resent until acked).
  struct Closed {
    Incarnation incarnation = 0;
    std::uint64_t life = 0;  // Link::life of the closed edge (its EdgeClose, said again, names it)
    Round start = 0;
    Round end = 0;
    // Our public state as of `start`, while the peer may still need it to open the edge: an edge can close
    // at our end before the peer has mixed its rounds (an edge of one round), and the peer cannot mix them
    // without it. Let go when the peer acknowledges round `start`.
    std::shared_ptr<const std::vector<Real>> myPublic;
    PartsQueued partsQueued;
    std::vector<Sent> unacked;
    std::uint64_t lastSendMs = 0;
  };

  // NodeEngine's hooks
  void protocolControl(const FrameHeader& h, const SharedBytes& payload) override;
  bool acceptModel(const FrameHeader& h, Round current) override;
  void beforeLocalWork(Round t) override;
  void sendRound(Round t, FrameHeader h) override;
  void roundRow(Round t) override { row_ = linkedRow(t); }  // weights from the degrees both ends announced
  std::size_t expectedMessages() const override { return sendTo_.size(); }
  bool mixWithout(PeerId from, Round t) override;
  void afterMix(Round t) override;
  std::optional<Round> answerStateAt(const FrameHeader& h, const StateAsk& ask) override;

  // A frame kept in `keep` until the peer acknowledges its round (replica methods), then sent.
  void sendKept(PeerId to, const FrameHeader& h, SharedBytes payload, Link& keep);
  // Ends the edge to `id` at round t (not mixed) at once: a replica edge whose peer sent a payload that
  // passed its checksum but does not decode.
  void breakLink(PeerId id, Round t);
  topology::MixingRow linkedRow(Round t);
  void closeLink(PeerId id, Round end);
  // EdgeClose(end) naming the edge life (or proposal) `life` it ends, declines or cancels.
  void sendClose(PeerId id, Round end, std::uint64_t life);
  void propose(PeerId id, Link& l, std::uint64_t nowMs);
  void retire(PeerId id, Link& l);  // moves a link into closed_
  std::uint64_t retransmitAfterMs(const std::vector<Sent>& unacked) const;
  // Edge set-up in chunks (engine/edge_fetch.cc).
  void startEdgeFetch(PeerId j, Link& l);     // once the start is agreed: begins pulling j's public state
  void pumpEdgeFetch(PeerId j, Link& l);      // sends the asks that are due
  void receiveEdgeAsk(const FrameHeader& h, const Bytes& payload, Link* l);
  void receiveEdgePart(const FrameHeader& h, const Bytes& payload, Link* l);
  // The asked chunks of `pub`, our public state for the edge life `life` that starts at round `start`.
  void serveEdgeAsk(PeerId j, std::uint64_t life, Round start, const std::vector<Real>& pub, PartsQueued& queued,
                    const StateAsk& a);
  bool isFetching(PeerId j) const;

  LinkOptions linkOpts_;
  std::map<PeerId, Link> links_;                 // agreed or proposed edges, by peer
  std::map<PeerId, Closed> closed_;
  // Stateless methods: the round of each neighbour's most recent model frame (kept, late or refused as
  // too far ahead). Model frames of one link arrive in order, so a neighbour past round t will not send t
  // again: the round stops waiting for it (see roundReady).
  std::map<PeerId, Round> lastSent_;
  std::uint16_t myDegree_ = 0;                   // degree announced for the round begun last
  std::optional<Round> begun_;                   // last round begun
  Round firstRound_ = 0;                         // next round before any has begun
  std::uint64_t proposalSeq_ = 0;
  std::vector<StateAsk> stateWanted_;            // state requests that came mid-round (answered after the mix)
  // Stateless methods: neighbours (by incarnation) that asked us for our model and have sent no model
  // frame since. They are fetching, not mixing: we send them no model frames (at 100M parameters,
  // DeepSqueeze top-1% frames from two neighbours took 8 of a joiner's 12.5 MB/s while it fetched 400 MB)
  // and our rounds do not wait for theirs (each round waited a whole deadline for the joiner).
  std::map<PeerId, Incarnation> fetching_;
  std::optional<FrameHeader> roundHeader_;  // stateless: the model frame's header of the round begun last
  bool inRound_ = false;                    // between beginRound and the end of endRound
  bool holdEdges_ = false;
  bool graphFallback_ = false;              // the current view's graph is the fallback (view.h)
};

}  // namespace gossip::engine
