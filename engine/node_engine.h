#pragma once
// NodeEngine: everything around one node's algorithm round, with no sockets (DESIGN.md §3, §4):
//   membership view -> graph and mixing row -> edges keyed by (peer id, incarnation) -> Node round ->
//   frames through a Transport.
// There is one implementation of the round and two protocols around it, each a type of its own (why:
// docs/engine.md, "One engine, two protocols"):
//   SyncEngine   (engine/sync_engine.h): the simulator's. One view installed on every node at once
//                (setView), rounds in lock step, frames stamped with the view's epoch.
//   LinkedEngine (engine/linked_engine.h): the daemon's. Each node has its own view; every edge is agreed
//                by its two ends, frames of replica methods are acknowledged, the round driver
//                (engine/round_driver.h) decides when rounds begin and end.
// This class is what both share: frame validation, the inbox of model frames, the encode-once outgoing
// payload, the round's mix (messages sorted by sender, Node::endRound, a refused payload), state transfer,
// statistics and checkpoints. The protocol decides through the hooks at the end of this class, each called
// once per frame or per round (never per value).
//
// Frames in: every frame is decoded and validated (header checksum, kind, sender in the view with the
// right incarnation, then the protocol's own checks: epoch and round window, or the link's) before the
// algorithm sees it; what is rejected is counted by reason and never touches the model. A payload the
// algorithm itself rejects (RejectedMessage) is treated as missing for stateless methods; what it means
// for a replica method, whose links must deliver every message, is the protocol's call.
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

inline constexpr Round kNoRound = ~Round{0};

// How far ahead of the receiver's round a model frame may be and still be kept for later.
inline constexpr Round kMaxRoundsAhead = 2;

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
  std::uint64_t edge_asks_sent = 0;     // linked mode: asks for a new edge's public state (engine/edge_fetch.cc)
  std::uint64_t edge_parts_taken = 0;   // linked mode: chunks of it placed (duplicates not counted)
  std::uint64_t edge_parts_twice = 0;   // linked mode: chunks of it that came again (a re-ask crossed the first)
  std::uint64_t edge_parts_still_queued = 0;  // linked mode: asked again while the transport held them, not resent
  std::uint64_t compute_ns = 0;         // wall time inside the algorithm (local steps, encode, decode, mix)
  std::map<std::string, std::uint64_t> rejected;  // by reason label
  // By the sender id a frame's (checksummed) header names, then by reason; at most 1024 senders.
  std::map<PeerId, std::map<std::string, std::uint64_t>> rejected_by_peer;
  std::uint64_t rejectedTotal() const;
};

class NodeEngine {
 public:
  virtual ~NodeEngine() = default;
  NodeEngine(const NodeEngine&) = delete;
  NodeEngine& operator=(const NodeEngine&) = delete;

  PeerId id() const { return self_; }
  Incarnation incarnation() const { return incarnation_; }
  algo::Node& node() { return *node_; }
  const algo::Node& node() const { return *node_; }
  const topology::MixingRow& row() const { return row_; }
  const EngineStats& stats() const { return stats_; }
  bool stateless() const { return stateless_; }
  // The view and graph installed last (null before the first); monitoring draws and analyses it.
  std::shared_ptr<const ViewGraph> viewGraph() const { return vg_; }
  // Out-neighbours of the current view's graph (edges agreed or not).
  const std::vector<PeerId>& viewNeighbors() const { return sendTo_; }

  // Handles every frame waiting in the transport: control frames now, model frames into the inbox.
  void drain(Round current);
  // Local work of round t, then one model frame to every out-neighbour (payload encoded once).
  void beginRound(Round t);
  // Drains the transport, then mixes the round-t messages that arrived (algorithm.apply).
  void endRound(Round t);

  // Fetches a neighbour's model (state transfer for a joining or lagging node): pulls it in chunks from the
  // neighbours `from`, several at once (engine/state_fetch.h, engine/state_transfer.cc). Called again, it
  // adds sources and keeps the chunks already in. When the last chunk is in, the model replaces the node's
  // and takeStateRound() gives the round to continue from.
  void requestState(std::span<const PeerId> from, Round round);
  void requestState(PeerId from, Round round) { requestState(std::span<const PeerId>(&from, 1), round); }
  // Sends the requests that are due (sources with room, silent sources' chunks handed on); the daemon
  // calls it while it waits for the model. LinkedEngine::tick calls it too.
  void stepStateFetch(std::uint64_t nowMs);
  // Stops fetching: chunks that arrive later are refused (a node that gave up and trains on its own model).
  void cancelStateFetch();
  std::optional<StateProgress> stateProgress() const;
  // Chunk size, window and silence of the next fetch (tests use small chunks).
  void setStateFetch(StateFetchOptions options);
  // The round of the last model taken by state transfer (the joiner continues from it), once.
  std::optional<Round> takeStateRound();

  // Whole node state for a checkpoint: identity, view epoch, algorithm (with edges) and estimator.
  Bytes save(Round nextRound) const;
  // Restores a save() of the same node; returns the round to run next. DecodeError on any mismatch.
  Round load(std::span<const std::byte> state);

 protected:
  NodeEngine(PeerId self, Incarnation incarnation, std::unique_ptr<algo::Node> node, Transport& transport);

  // ---- the protocol's hooks: each called once per frame or per round ----
  // A control frame that is not the state transfer's (edge handshakes, acks), its sender in the view.
  virtual void protocolControl(const FrameHeader& h, const SharedBytes& payload) = 0;
  // Whether a model frame whose sender is in the view (with its incarnation) goes into the inbox; a frame
  // refused is counted here (reject) with its reason.
  virtual bool acceptModel(const FrameHeader& h, Round current) = 0;
  // Before round t's local work and encoding.
  virtual void beforeLocalWork(Round) {}
  // Sends round t's model frame: header h (checksum of payload_ sealed in it) with payload_.
  virtual void sendRound(Round t, FrameHeader h) = 0;
  // Round t's frames are in ready_ (sorted by sender, one each): set row_ for the mix, or throw if the
  // round cannot be mixed.
  virtual void roundRow(Round t) = 0;
  // How many neighbours' frames round t would mix if all came (stateless methods count the missing ones).
  virtual std::size_t expectedMessages() const = 0;
  // The algorithm refused `from`'s payload of round t and the node is unchanged. True: mix without it (the
  // protocol has adjusted ready_ and row_ as it needs); false: the refusal is a bug, let it surface.
  virtual bool mixWithout(PeerId from, Round t) = 0;
  // After round t is mixed and its payloads released.
  virtual void afterMix(Round) {}
  // A state request that passed its bounds: the round to tell the requester to continue from, or nothing
  // (declined, or kept for later by the protocol).
  virtual std::optional<Round> answerStateAt(const FrameHeader& h, const StateAsk& ask) = 0;

  // ---- for the protocols ----
  void reject(const std::string& reason);
  const Member* member(PeerId id) const;
  // Returns the payload as handed to the transport (whoever needs to know when the transport let go of it).
  SharedBytes sendControl(PeerId to, FrameKind kind, Round round, Bytes payload);
  // Numbers the frame on its link (the caller has sealed h's payload checksum), counts its bytes and sends it;
  // returns a copy of the encoded header when `keepHeader` (a frame kept for retransmission).
  Bytes sendFrame(PeerId to, FrameHeader h, SharedBytes payload, bool keepHeader = false);
  void sendState(const StateAsk& ask, Round round);  // the asked part of our model, continuing at `round`
  static Bytes realsPayload(std::span<const Real> v);

  PeerId self_;
  Incarnation incarnation_;
  std::unique_ptr<algo::Node> node_;
  Transport& transport_;
  bool stateless_;

  std::shared_ptr<const ViewGraph> vg_;
  topology::MixingRow row_;
  std::vector<PeerId> sendTo_;                 // out-neighbours (= neighbours for undirected graphs)
  std::shared_ptr<Bytes> payload_;             // this round's payload, shared with receivers
  struct Inbound {
    Round round;
    PeerId sender;
    Incarnation incarnation;
    SharedBytes payload;
    SharedParts parts;  // instead of payload: a large frame left in the transport's parts (engine/transport.h)
    std::uint16_t degree = 0;  // linked mode: the sender's announced degree
    bool wordsFinite = false;  // checkPayloadPartsScan found no non-finite float32 word (algo::Incoming::wordsFinite)
  };
  // Model frames waiting for their round, unsorted: appended by drain(), sorted by (round, sender) once
  // per round in endRound() (a flat vector: no per-message node allocation on the hot path).
  std::vector<Inbound> inbox_;
  std::vector<Inbound> ready_;  // this round's frames, sorted by sender (buffer reused across rounds)
  EngineStats stats_;
  std::uint64_t nowMs_ = 0;     // the time last passed in (the state fetch's clock)

 private:
  void handleControl(const FrameHeader& h, const SharedBytes& payload);
  void receiveStateRequest(const FrameHeader& h, const Bytes& payload);
  void receiveStateChunk(const FrameHeader& h, const Bytes& payload);
  void pumpStateFetch();

  std::map<PeerId, std::uint64_t> linkSeq_;    // per-link sequence numbers of sent frames
  std::optional<StateFetch> fetch_;            // the model being fetched (state transfer), while it is
  StateFetchOptions fetchOpts_;
  Round fetchRound_ = 0;                       // carried on our requests (the sync sender answers with it)
  std::vector<StateAsk> asks_;                 // scratch of pumpStateFetch
  std::optional<Round> stateRound_;

  compress::Encoded encoded_;
  std::shared_ptr<PayloadPool> payloadPool_ = PayloadPool::create();  // buffers come back when released
  std::vector<algo::Incoming> msgs_;
  // endRound: messages that arrived in parts, copied into one buffer each for a method that does not read
  // parts (Algorithm::readsPayloadParts); kept between rounds so a steady state allocates nothing.
  std::vector<Bytes> gathered_;
  std::optional<PeerId> from_;                 // sender of the frame being handled in drain()
};

}  // namespace gossip::engine
