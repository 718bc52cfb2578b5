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
// Linked mode (the daemon, engine/links.cc): each node has its own membership view, so there is no view
// everyone installs at once. Instead every edge is agreed by the two ends alone:
//  - The lower id proposes (EdgeHello carrying its next round n and a proposal id) and does not begin a
//    round until answered; the higher id, if it wants the edge too, answers with the start round
//    s = max(n, its own next round), else with EdgeClose(0). Both use the edge from round s on.
//  - At round s each end sends EdgeOpen with its public state as of the start of round s; the edge is
//    created in the algorithm (addEdge) just before round s is mixed, when that state has arrived.
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
//  - Replica methods need every message exactly once: model frames (and EdgeOpen) are kept until the
//    peer acknowledges the round (Ack, cumulative), and resent after `retransmit_ms`; duplicates are
//    dropped by round. Stateless methods need no handshake: a frame from a neighbour of the view is mixed
//    if it arrives before the round's deadline, and a missing one is replaced by the node's own value.
// Time is passed in (milliseconds of a monotonic clock), so the engine stays clock-free and testable.
//
// Not thread-safe: one thread drives one engine.
#include <map>
#include <span>
#include <optional>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/node.h"
#include "engine/frame.h"
#include "engine/payload_pool.h"
#include "engine/state_fetch.h"
#include "engine/transport.h"
#include "engine/view.h"

namespace gossip::engine {

struct LinkOptions {
  topology::TopologyParams topology;   // the graph of each view; generators are pure (same view, same graph)
  std::uint64_t retransmit_ms = 200;   // replica methods: resend unacknowledged frames after this long...
  // ...plus the time they take to send at this rate (bytes per ms; 1250 = 10 Mbit/s): a large frame is not
  // resent while it may still be on its way.
  std::uint64_t retransmit_min_bytes_per_ms = 1250;
  std::uint64_t hello_timeout_ms = 1000;  // a proposal unanswered this long is cancelled and retried
  std::uint64_t hello_retry_ms = 100;  // a declined (or cancelled) proposal is retried after this long
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
inline constexpr Round kNoRound = ~Round{0};

// How far a state transfer has come (a node that fetches a model reports it; a large one takes a while).
struct StateProgress {
  std::size_t values_have = 0;
  std::size_t dim = 0;
  std::size_t sources_serving = 0;   // neighbours that sent at least one chunk
  std::uint64_t last_progress_ms = 0;  // when the fetch began, or its last new chunk arrived
};

struct EngineStats {
  std::uint64_t model_bytes_sent = 0;    // model frames, headers included
  std::uint64_t control_bytes_sent = 0;  // edge handshakes and state transfers
  std::uint64_t frames_received = 0;
  std::uint64_t messages_missing = 0;    // stateless rounds that mixed a neighbour's own-value substitute
  std::uint64_t retransmitted = 0;      // linked mode: frames sent again for lack of an ack
  std::uint64_t duplicates = 0;         // linked mode: frames of an already mixed round (retransmits)
  std::uint64_t states_sent = 0;        // state transfers served (counted by the request of their first chunk)
  std::uint64_t states_received = 0;    // state transfers completed and installed
  std::uint64_t state_requests_declined = 0;  // asked for our model while we were fetching one ourselves
  std::uint64_t compute_ns = 0;         // wall time inside the algorithm (local steps, encode, decode, mix)
  std::map<std::string, std::uint64_t> rejected;  // by reason label
  // By the sender id a frame's (checksummed) header names, then by reason; at most 1024 senders.
  std::map<PeerId, std::map<std::string, std::uint64_t>> rejected_by_peer;
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
  // The view and graph installed last (null before the first); monitoring draws and analyses it.
  std::shared_ptr<const ViewGraph> viewGraph() const { return vg_; }

  // Installs a view and its graph (every engine holding the view gets the same graph). Drops stale edges
  // and sends EdgeOpen to new neighbours; `round` is the round about to run (carried on control frames).
  void setView(std::shared_ptr<const ViewGraph> vg, Round round);
  // Handles every frame waiting in the transport: control frames now, model frames into the inbox.
  void drain(Round current);
  // Fetches a neighbour's model (state transfer for a joining or lagging node): pulls it in chunks from the
  // neighbours `from`, several at once (engine/state_fetch.h, engine/state_transfer.cc). Called again, it
  // adds sources and keeps the chunks already in. When the last chunk is in, the model replaces the node's
  // and takeStateRound() gives the round to continue from.
  void requestState(std::span<const PeerId> from, Round round);
  void requestState(PeerId from, Round round) { requestState(std::span<const PeerId>(&from, 1), round); }
  // Sends the requests that are due (sources with room, silent sources' chunks handed on); the daemon
  // calls it while it waits for the model. tick() calls it too.
  void stepStateFetch(std::uint64_t nowMs);
  // Stops fetching: chunks that arrive later are refused (a node that gave up and trains on its own model).
  void cancelStateFetch();
  std::optional<StateProgress> stateProgress() const;
  // Chunk size, window and silence of the next fetch (tests use small chunks).
  void setStateFetch(StateFetchOptions options);
  // True when every edge the view wants is open (always true for stateless methods).
  bool edgesReady() const;

  // Local work of round t, then one model frame to every out-neighbour (payload encoded once).
  void beginRound(Round t);
  // Drains the transport, then mixes the round-t messages that arrived (algorithm.apply).
  void endRound(Round t);

  // ---- linked mode (daemon) ----
  // Switches this engine to linked mode; call before the first setMembers.
  void enableLinks(LinkOptions options);
  bool linked() const { return linked_; }
  // Installs this node's own view of the alive members (self included, sorted by id). `next` is the next
  // round this node will begin. Drops edges of members that left the view at once; proposes or closes
  // edges where the view's graph changed.
  void setMembers(View alive, Round next, std::uint64_t nowMs);
  // Whether round t may begin now: false while a proposal of this node waits for its answer, and, with
  // `startBarrier`, while any neighbour of the view has no agreed edge running at t. The daemon sets the
  // barrier for every round of the replica methods: without it a node whose edges were being agreed (a
  // rejoin, a merge after a partition) ran its rounds alone at compute speed.
  bool readyToBegin(Round t, std::uint64_t nowMs, bool startBarrier) const;
  // Whether every message round t needs has arrived (linked mode; the sim mode mixes what it has).
  bool roundReady(Round t) const;
  // Whether a neighbour has begun round t or a later one (its model frame of such a round is here or was
  // seen): a node without a driver of its own (the daemon's trainer bridge with no trainer attached)
  // begins t only then, following its neighbours instead of leading them.
  bool neighbourAt(Round t) const;
  // Retransmits and proposal retries that are due.
  void tick(std::uint64_t nowMs);
  std::vector<LinkInfo> links() const;
  // The round whose mixing is still to come: the one in progress, else the next to begin (linked mode).
  Round mixingRound() const { return inRound_ ? *begun_ : nextRound(); }
  Round nextRound() const { return begun_ ? *begun_ + 1 : firstRound_; }
  bool inRound() const { return inRound_; }
  // Whether the current view's graph is the fallback of buildAliveGraph (a generator refused the count).
  bool graphFallback() const { return graphFallback_; }
  // The round of the last model taken by state transfer (the joiner continues from it), once.
  std::optional<Round> takeStateRound();
  // While held, the view is installed (frames of members are accepted, our own state request is answered)
  // but no edge is proposed and proposals are declined: a node fetching the current model must not agree
  // to mix rounds it has not reached yet. Nor does it hand out its own model to others' state requests
  // (they are declined and counted). Releasing it proposes the view's edges.
  void holdEdges(bool hold, std::uint64_t nowMs);
  // Out-neighbours of the current view's graph (edges agreed or not).
  const std::vector<PeerId>& viewNeighbors() const { return sendTo_; }
  // Drops every edge (a node that restarts as a new incarnation keeps its model, not its edges).
  void dropAllEdges();
  // Frames sent but not yet acknowledged by their receivers (a finishing node waits for 0 before leaving).
  std::size_t unackedFrames() const;

  // Whole node state for a checkpoint: identity, view epoch, algorithm (with edges) and estimator.
  Bytes save(Round nextRound) const;
  // Restores a save() of the same node; returns the round to run next. DecodeError on any mismatch.
  Round load(std::span<const std::byte> state);

 private:
  void reject(const std::string& reason);
  void handleControl(const FrameHeader& h, const SharedBytes& payload);
  void sendControl(PeerId to, FrameKind kind, Round round, Bytes payload);
  void receiveStateRequest(const FrameHeader& h, const Bytes& payload);
  void sendState(const StateAsk& ask, Round round);  // the asked part of our model, continuing at `round`
  void receiveStateChunk(const FrameHeader& h, const Bytes& payload);
  void pumpStateFetch();
  static Bytes realsPayload(std::span<const Real> v);
  const Member* member(PeerId id) const;
  // linked mode (engine/links.cc)
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
    // The EdgeOpen(start) payload, checked (dimension, finite values), until the edge opens: the received
    // buffer itself, read in place by addEdge (a copy of it was a model's worth more per edge being set up).
    SharedBytes peerPublic;
    bool open = false;              // addEdge done
    Round acked = kNoRound;         // highest round the peer acknowledged (kNoRound: none)
    std::vector<Sent> unacked;
    std::uint64_t lastSendMs = 0;
  };
  void linkedControl(const FrameHeader& h, const SharedBytes& payload);
  // Ends the edge to `id` at round t (not mixed) at once: a replica edge whose peer sent a payload that
  // passed its checksum but does not decode.
  void breakLink(PeerId id, Round t);
  bool acceptLinkedModel(const FrameHeader& h, Round current);
  void capturePublic(Round t);
  void linkedBegin(Round t, FrameHeader h);
  topology::MixingRow linkedRow(Round t);
  void linkedEnd(Round t);
  void closeLink(PeerId id, Round end);
  // EdgeClose(end) naming the edge life (or proposal) `life` it ends, declines or cancels.
  void sendClose(PeerId id, Round end, std::uint64_t life);
  void propose(PeerId id, Link& l, std::uint64_t nowMs);

  void sendFrame(PeerId to, FrameHeader h, SharedBytes payload, Link* keep);
  std::uint64_t retransmitAfterMs(const std::vector<Sent>& unacked) const;

  PeerId self_;
  Incarnation incarnation_;
  std::unique_ptr<algo::Node> node_;
  Transport& transport_;
  bool stateless_;

  std::shared_ptr<const ViewGraph> vg_;
  topology::MixingRow row_;
  std::vector<PeerId> sendTo_;                 // out-neighbours (= neighbours for undirected graphs)
  // Stateless linked mode: the round of each neighbour's most recent model frame (kept, late or refused as
  // too far ahead). Model frames of one link arrive in order, so a neighbour past round t will not send t
  // again: the round stops waiting for it (see roundReady).
  std::map<PeerId, Round> lastSent_;
  std::map<PeerId, Incarnation> wanted_;       // replica methods: edges this view wants
  std::map<PeerId, std::uint64_t> linkSeq_;    // per-link sequence numbers of sent frames
  std::optional<StateFetch> fetch_;            // the model being fetched (state transfer), while it is
  StateFetchOptions fetchOpts_;
  Round fetchRound_ = 0;                       // carried on our requests (the sim mode's sender answers with it)
  std::vector<StateAsk> asks_;                 // scratch of pumpStateFetch

  compress::Encoded encoded_;
  std::shared_ptr<PayloadPool> payloadPool_ = PayloadPool::create();  // buffers come back when released
  std::shared_ptr<Bytes> payload_;             // this round's payload, shared with receivers
  struct Inbound {
    Round round;
    PeerId sender;
    Incarnation incarnation;
    SharedBytes payload;
    SharedParts parts;  // instead of payload: a large frame left in the transport's parts (engine/transport.h)
    std::uint16_t degree = 0;  // linked mode: the sender's announced degree
  };
  // Model frames waiting for their round, unsorted: appended by drain(), sorted by (round, sender) once
  // per round in endRound() (a flat vector: no per-message node allocation on the hot path).
  std::vector<Inbound> inbox_;
  std::vector<Inbound> ready_;  // this round's frames, sorted by sender (buffer reused across rounds)
  std::vector<algo::Incoming> msgs_;
  // endRound: messages that arrived in parts, copied into one buffer each for a method that does not read
  // parts (Algorithm::readsPayloadParts); kept between rounds so a steady state allocates nothing.
  std::vector<Bytes> gathered_;
  EngineStats stats_;

  bool linked_ = false;
  LinkOptions linkOpts_;
  std::map<PeerId, Link> links_;                 // linked mode: agreed or proposed edges, by peer
  // Closed links: their end, and the frames the peer has not acknowledged yet (a frame of the last mixed
  // round may still be lost; the peer needs it to finish that round, so it is resent until acked).
  struct Closed {
    Incarnation incarnation = 0;
    std::uint64_t life = 0;  // Link::life of the closed edge (its EdgeClose, said again, names it)
    Round end = 0;
    std::vector<Sent> unacked;
    std::uint64_t lastSendMs = 0;
  };
  std::map<PeerId, Closed> closed_;
  void retire(PeerId id, Link& l);  // moves a link into closed_
  std::uint16_t myDegree_ = 0;                   // degree announced for the round begun last
  std::optional<Round> begun_;                   // last round begun
  Round firstRound_ = 0;                         // next round before any has begun
  std::uint64_t proposalSeq_ = 0;
  std::uint64_t nowMs_ = 0;
  std::optional<Round> stateRound_;
  std::vector<StateAsk> stateWanted_;            // state requests that came mid-round (answered after the mix)
  // Stateless linked mode: neighbours (by incarnation) that asked us for our model and have sent no model
  // frame since. They are fetching, not mixing: we send them no model frames (at 100M parameters,
  // DeepSqueeze top-1% frames from two neighbours took 8 of a joiner's 12.5 MB/s while it fetched 400 MB)
  // and our rounds do not wait for theirs (each round waited a whole deadline for the joiner).
  std::map<PeerId, Incarnation> fetching_;
  bool isFetching(PeerId j) const;
  std::optional<FrameHeader> roundHeader_;  // stateless linked mode: the model frame's header of the round begun last
  SharedBytes roundPublic_;                     // EdgeOpen payload of the round begun last (if any edge starts)
  bool inRound_ = false;
  bool holdEdges_ = false;
  std::optional<PeerId> from_;                   // sender of the frame being handled in drain()
  bool graphFallback_ = false;                   // the current view's graph is the fallback (view.h)                         // between beginRound and the end of endRound

};

// How far ahead of the receiver's round a model frame may be and still be kept for later.
inline constexpr Round kMaxRoundsAhead = 2;

}  // namespace gossip::engine
