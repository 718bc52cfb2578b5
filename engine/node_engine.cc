#include "engine/node_engine.h"

#include <algorithm>
#include <chrono>
#include <utility>
#include <cmath>

#include "core/serial.h"
#include "training/state_io.h"

namespace gossip::engine {

namespace {
// Adds the wall time of the algorithm's own work (gradients, encode, decode and mix) to a counter, so the
// daemon can tell its compute from its transport and bookkeeping in the same run (bench/daemon_round.sh).
class ComputeTimer {
 public:
  explicit ComputeTimer(std::uint64_t& total) : total_(total), start_(std::chrono::steady_clock::now()) {}
  ~ComputeTimer() {
    total_ += static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                             std::chrono::steady_clock::now() - start_).count());
  }
  ComputeTimer(const ComputeTimer&) = delete;
  ComputeTimer& operator=(const ComputeTimer&) = delete;

 private:
  std::uint64_t& total_;
  std::chrono::steady_clock::time_point start_;
};

constexpr std::uint32_t kEngineTag = serial::fourcc("ENGN");

}  // namespace

Bytes NodeEngine::realsPayload(std::span<const Real> v) {
  Bytes b;
  ByteWriter w(b);
  serial::putArray(w, v);
  return b;
}

std::uint64_t EngineStats::rejectedTotal() const {
  std::uint64_t n = 0;
  for (const auto& [reason, count] : rejected) n += count;
  return n;
}

NodeEngine::NodeEngine(PeerId self, Incarnation incarnation, std::unique_ptr<algo::Node> node, Transport& transport)
    : self_(self), incarnation_(incarnation), node_(std::move(node)), transport_(transport) {
  GOSSIP_CHECK(node_);
  stateless_ = node_->algorithm().stateless();
  payload_ = payloadPool_->take();
}

void NodeEngine::reject(const std::string& reason) {
  ++stats_.rejected[reason];
  if (!from_) return;
  // Bounded: a flood of frames claiming random sender ids must not grow this map without limit.
  constexpr std::size_t kMaxPeersTracked = 1024;
  auto it = stats_.rejected_by_peer.find(*from_);
  if (it == stats_.rejected_by_peer.end() && stats_.rejected_by_peer.size() >= kMaxPeersTracked) return;
  ++stats_.rejected_by_peer[*from_][reason];
}

const Member* NodeEngine::member(PeerId id) const {
  if (!vg_) return nullptr;
  const auto& v = vg_->view;
  auto it = std::lower_bound(v.begin(), v.end(), Member{id, 0},
                             [](const Member& a, const Member& b) { return a.id < b.id; });
  return it != v.end() && it->id == id ? &*it : nullptr;
}

void NodeEngine::setView(std::shared_ptr<const ViewGraph> vg, Round round) {
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

bool NodeEngine::edgesReady() const {
  if (stateless_) return true;
  return node_->algorithm().edgeCount() == wanted_.size();
}

void NodeEngine::sendControl(PeerId to, FrameKind kind, Round round, Bytes payload) {
  FrameHeader h;
  h.kind = kind;
  h.sender = self_;
  h.incarnation = incarnation_;
  h.round = round;
  h.epoch = static_cast<std::uint32_t>(vg_ ? vg_->epoch : 0);
  sealPayload(h, payload);
  sendFrame(to, h, std::make_shared<const Bytes>(std::move(payload)), nullptr);
}

void NodeEngine::handleControl(const FrameHeader& h, const SharedBytes& shared) {
  const Bytes& payload = *shared;
  if (linked_ && (h.kind == FrameKind::EdgeOpen || h.kind == FrameKind::EdgeHello ||
                  h.kind == FrameKind::EdgeClose || h.kind == FrameKind::Ack))
    return linkedControl(h, shared);
  switch (h.kind) {
    case FrameKind::EdgeOpen: {
      if (stateless_) return reject("unexpected_kind");
      auto it = wanted_.find(h.sender);
      if (it == wanted_.end() || it->second != h.incarnation) return reject("unwanted_edge");
      auto& algo = node_->algorithm();
      const auto open = algo.edges();
      if (std::binary_search(open.begin(), open.end(), algo::EdgeKey{h.sender, h.incarnation}))
        return reject("duplicate_edge");
      ByteReader r(payload, "edge-open payload");
      const auto pub = serial::getArray<Real>(r);
      r.expectEnd();
      for (Real v : pub)
        if (!std::isfinite(v)) return reject("non_finite");
      try {
        algo.addEdge({h.sender, h.incarnation}, pub);
      } catch (const ProtocolError&) {
        return reject("bad_public_state");
      }
      return;
    }
    case FrameKind::StateRequest:
      return receiveStateRequest(h, payload);
    case FrameKind::State:
      return receiveStateChunk(h, payload);
    default:
      return reject("unexpected_kind");
  }
}

void NodeEngine::drain(Round current) {
  RawFrame f;
  while (transport_.receive(f)) {
    ++stats_.frames_received;
    FrameHeader h;
    from_.reset();
    try {
      h = decodeFrameHeader(f.header);
      from_ = h.sender;  // the header checksum holds: count rejections against the id it names
      if (f.parts) {
        checkPayloadParts(h, f.parts->parts);
      } else {
        if (!f.payload) throw FrameError("length_mismatch", "no payload part");
        checkPayload(h, *f.payload);
      }
    } catch (const FrameError& e) {
      reject(e.reason);
      continue;
    }
    if (f.parts && h.kind != FrameKind::Model) {  // only model frames are read in parts
      auto whole = std::make_shared<Bytes>();
      gatherParts(*f.parts, *whole);
      f.payload = std::move(whole);
      f.parts.reset();
    }
    const Member* m = member(h.sender);
    if (!m || h.sender == self_) {
      reject("unknown_sender");
      continue;
    }
    if (m->incarnation != h.incarnation) {
      reject("stale_incarnation");
      continue;
    }
    if (h.kind != FrameKind::Model) {
      try {
        handleControl(h, f.payload);
      } catch (const DecodeError&) {
        reject("bad_control_payload");
      }
      continue;
    }
    if (linked_) {
      if (acceptLinkedModel(h, current))
        inbox_.push_back({h.round, h.sender, h.incarnation, std::move(f.payload), std::move(f.parts), h.degree});
      continue;
    }
    if (h.epoch != static_cast<std::uint32_t>(vg_->epoch)) {
      reject("epoch_mismatch");
      continue;
    }
    if (h.round < current) {
      reject("late");
      continue;
    }
    if (h.round > current + kMaxRoundsAhead) {
      reject("bad_round");
      continue;
    }
    inbox_.push_back({h.round, h.sender, h.incarnation, std::move(f.payload), std::move(f.parts)});
  }
  from_.reset();
}

void NodeEngine::beginRound(Round t) {
  if (linked_) capturePublic(t);  // before the local work: CHOCO's prepare moves its public x_hat
  // The frame is encoded straight into a buffer no one else holds (engine/payload_pool.h). Last round's is
  // let go first: once libzmq's zero-copy send (and, linked, the peer's ack) is done with it, it is the very
  // buffer taken back, so a steady state keeps one outgoing model, not three (the encoder's vector, this
  // round's frame and last round's back in the pool: 8 bytes per parameter of a fp32 D-PSGD daemon held for
  // nothing), and allocates nothing (a fresh vector costs a zero-fill and a page fault per 4 KiB, measured
  // as 7% of a 64 MB round's CPU). Between rounds encoded_ holds an empty vector.
  payload_.reset();
  payload_ = payloadPool_->take();
  std::swap(*payload_, encoded_.bytes);  // the encoder writes into the pool's buffer...
  {
    const ComputeTimer timer(stats_.compute_ns);
    node_->beginRound(t, encoded_);
  }
  std::swap(*payload_, encoded_.bytes);  // ...which becomes this round's frame
  FrameHeader h;
  h.kind = FrameKind::Model;
  h.sender = self_;
  h.incarnation = incarnation_;
  h.round = t;
  h.epoch = static_cast<std::uint32_t>(vg_->epoch);
  sealPayload(h, *payload_);  // checksum once for every link
  if (linked_) return linkedBegin(t, h);
  for (PeerId j : sendTo_) {
    h.seq = ++linkSeq_[j];
    Bytes header;
    encodeFrameHeader(h, header);
    stats_.model_bytes_sent += header.size() + payload_->size();
    transport_.send(j, std::move(header), payload_);
  }
}

void NodeEngine::endRound(Round t) {
  drain(t);
  if (!linked_ && !stateless_ && !edgesReady())
    throw ProtocolError("node " + std::to_string(self_) + ": round " + std::to_string(t) +
                        " would mix over an edge that is not open at both ends");
  // Move this round's frames out (older ones cannot be left: drain() rejects them as late), sort by
  // sender, and reject all but the first copy of a sender's frame.
  ready_.clear();
  std::size_t keep = 0;
  for (std::size_t k = 0; k < inbox_.size(); ++k) {
    if (inbox_[k].round > t) {
      if (keep != k) inbox_[keep] = std::move(inbox_[k]);
      ++keep;
    } else if (inbox_[k].round == t) {
      ready_.push_back(std::move(inbox_[k]));
    }
  }
  inbox_.resize(keep);
  std::stable_sort(ready_.begin(), ready_.end(), [](const Inbound& a, const Inbound& b) { return a.sender < b.sender; });
  for (std::size_t k = 1; k < ready_.size(); ++k)
    if (ready_[k].sender == ready_[k - 1].sender) reject("duplicate");
  ready_.erase(std::unique(ready_.begin(), ready_.end(),
                           [](const Inbound& a, const Inbound& b) { return a.sender == b.sender; }),
               ready_.end());

  if (linked_) row_ = linkedRow(t);  // weights of this round from the degrees both ends announced
  // Row neighbours and ready_ are both sorted by id: one merge walk.
  std::vector<algo::Incoming>& msgs = msgs_;
  msgs.clear();
  const bool inParts = node_->algorithm().readsPayloadParts();
  std::size_t gathered = 0;
  auto in = ready_.begin();
  for (const auto& [j, w] : row_.neighbors) {
    while (in != ready_.end() && in->sender < j) ++in;
    if (in == ready_.end() || in->sender != j) continue;
    if (!in->parts) {
      msgs.push_back({j, in->incarnation, *in->payload});
    } else if (inParts) {
      msgs.push_back({j, in->incarnation, {}, in->parts->parts});
    } else {  // a method that reads one buffer: the parts are copied into one of gathered_, reused every round
      // (growing gathered_ moves its vectors, whose heap buffers, which earlier msgs point into, stay put)
      if (gathered_.size() <= gathered) gathered_.emplace_back();
      gatherParts(*in->parts, gathered_[gathered]);
      msgs.push_back({j, in->incarnation, gathered_[gathered++]});
    }
  }
  if (stateless_) stats_.messages_missing += (linked_ ? sendTo_.size() : row_.neighbors.size()) - msgs.size();
  const ComputeTimer timer(stats_.compute_ns);
  for (;;) {
    try {
      node_->endRound(t, msgs, row_);
      break;
    } catch (const algo::RejectedMessage& e) {
      // apply left the node untouched. Stateless: mix without that message (own-value substitute). The
      // simulator's replica methods never see a bad payload unless there is a bug: let it surface there.
      if (!stateless_ && !linked_) throw;
      reject("bad_payload");
      if (stateless_) ++stats_.messages_missing;
      std::erase_if(msgs, [&](const algo::Incoming& m) { return m.from == e.from; });
      if (linked_) {  // the substitute's weight goes to the self weight (the row lists present frames)
        std::erase_if(ready_, [&](const Inbound& m) { return m.sender == e.from; });
        // A replica method cannot mix a round without the neighbour's message, and the payload passed its
        // checksum, so waiting gives nothing: the sender is broken or an impostor. The edge ends here (a
        // daemon must not die of one frame, found by fuzz/target_engine.cc); the view proposes it again
        // at its next change.
        if (!stateless_) breakLink(e.from, t);
        row_ = linkedRow(t);
      }
    }
  }
  ready_.clear();  // release the payloads: senders reuse their buffers next round
  if (linked_) linkedEnd(t);
}

Bytes NodeEngine::save(Round nextRound) const {
  Bytes out;
  ByteWriter w(out);
  serial::putTag(w, kEngineTag);
  w.put<std::uint32_t>(self_);
  w.put<std::uint64_t>(incarnation_);
  w.put<std::uint64_t>(nextRound);
  node_->save(w);
  return out;
}

Round NodeEngine::load(std::span<const std::byte> state) {
  ByteReader r(state, "node state");
  serial::expectTag(r, kEngineTag, "a node engine");
  const auto id = r.get<std::uint32_t>();
  const auto inc = r.get<std::uint64_t>();
  const auto next = r.get<std::uint64_t>();
  if (id != self_) throw DecodeError("state belongs to node " + std::to_string(id) + ", not " + std::to_string(self_));
  if (inc != incarnation_)
    throw DecodeError("state is of incarnation " + std::to_string(inc) + ", this node runs " +
                      std::to_string(incarnation_));
  // Node::load is transactional by itself; trailing bytes after it must undo it too.
  Bytes backup;
  ByteWriter bw(backup);
  node_->save(bw);
  node_->load(r);
  if (r.remaining() != 0) {
    ByteReader br(backup, "node backup");
    node_->load(br);
    r.expectEnd();  // throws, naming the trailing bytes
  }
  return next;
}

}  // namespace gossip::engine
