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

SharedBytes NodeEngine::sendControl(PeerId to, FrameKind kind, Round round, Bytes payload) {
  FrameHeader h;
  h.kind = kind;
  h.sender = self_;
  h.incarnation = incarnation_;
  h.round = round;
  h.epoch = static_cast<std::uint32_t>(vg_ ? vg_->epoch : 0);
  sealPayload(h, payload);
  auto shared = std::make_shared<const Bytes>(std::move(payload));
  sendFrame(to, h, shared);
  return shared;
}

Bytes NodeEngine::sendFrame(PeerId to, FrameHeader h, SharedBytes payload, bool keepHeader) {
  h.seq = ++linkSeq_[to];
  Bytes header;
  encodeFrameHeader(h, header);
  const std::size_t bytes = header.size() + payload->size();
  if (h.kind == FrameKind::Model)
    stats_.model_bytes_sent += bytes;
  else
    stats_.control_bytes_sent += bytes;
  Bytes kept;
  if (keepHeader) kept = header;
  transport_.send(to, std::move(header), std::move(payload));
  return kept;
}

void NodeEngine::handleControl(const FrameHeader& h, const SharedBytes& shared) {
  switch (h.kind) {
    case FrameKind::StateRequest:
      return receiveStateRequest(h, *shared);
    case FrameKind::State:
      return receiveStateChunk(h, *shared);
    default:
      return protocolControl(h, shared);
  }
}

void NodeEngine::drain(Round current) {
  RawFrame f;
  while (transport_.receive(f)) {
    ++stats_.frames_received;
    FrameHeader h;
    bool wordsFinite = false;
    from_.reset();
    try {
      h = decodeFrameHeader(f.header);
      from_ = h.sender;  // the header checksum holds: count rejections against the id it names
      // For a method of fp32 messages, the checksum's pass over a model frame also looks for non-finite
      // values, so that the method need not read the frame a second time for them.
      const bool scan = h.kind == FrameKind::Model && node_->algorithm().messagesAreFp32();
      if (!f.parts && !f.payload) throw FrameError("length_mismatch", "no payload part");
      const std::span<const std::byte> whole = f.parts ? std::span<const std::byte>() : std::span<const std::byte>(*f.payload);
      const auto parts = f.parts ? std::span<const std::span<const std::byte>>(f.parts->parts)
                                 : std::span<const std::span<const std::byte>>(&whole, 1);
      if (scan)
        wordsFinite = checkPayloadPartsScan(h, parts);
      else
        checkPayloadParts(h, parts);
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
    if (acceptModel(h, current))
      inbox_.push_back({h.round, h.sender, h.incarnation, std::move(f.payload), std::move(f.parts), h.degree, wordsFinite});
  }
  from_.reset();
}

void NodeEngine::beginRound(Round t) {
  beforeLocalWork(t);
  // The frame is encoded straight into a buffer no one else holds (engine/payload_pool.h). Last round's is
  // let go first: once libzmq's zero-copy send (and, linked, the peer's ack) is done with it, it is the very
  // buffer taken back, so a steady state keeps one outgoing model, not three (the encoder's vector, this
  // round's frame and last round's back in the pool: 8 bytes per parameter of a fp32 D-PSGD daemon held for
  // nothing), and allocates nothing (a fresh vector costs a zero-fill and a page fault per 4 KiB, measured
  // as 7% of a 64 MB round's CPU). Between rounds encoded_ holds an empty vector.
  payload_.reset();
  payload_ = payloadPool_->take();
  std::swap(*payload_, encoded_.bytes);  // the encoder writes into the pool's buffer...
  encoded_.crc.reset();
  {
    const ComputeTimer timer(stats_.compute_ns);
    node_->beginRound(t, encoded_);
  }
  const std::optional<std::uint32_t> crc = encoded_.knownCrc();  // computed as the payload was written, if it was
  std::swap(*payload_, encoded_.bytes);  // ...which becomes this round's frame
  FrameHeader h;
  h.kind = FrameKind::Model;
  h.sender = self_;
  h.incarnation = incarnation_;
  h.round = t;
  h.epoch = static_cast<std::uint32_t>(vg_->epoch);
  sealPayload(h, *payload_, crc);  // checksum once for every link
  sendRound(t, h);
}

void NodeEngine::endRound(Round t) {
  drain(t);
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

  roundRow(t);
  // Row neighbours and ready_ are both sorted by id: one merge walk.
  std::vector<algo::Incoming>& msgs = msgs_;
  msgs.clear();
  const bool inParts = node_->readsPayloadParts(t);
  std::size_t gathered = 0;
  auto in = ready_.begin();
  for (const auto& [j, w] : row_.neighbors) {
    while (in != ready_.end() && in->sender < j) ++in;
    if (in == ready_.end() || in->sender != j) continue;
    if (!in->parts) {
      msgs.push_back({j, in->incarnation, *in->payload, {}, in->wordsFinite});
    } else if (inParts) {
      msgs.push_back({j, in->incarnation, {}, in->parts->parts, in->wordsFinite});
    } else {  // a method that reads one buffer: the parts are copied into one of gathered_, reused every round
      // (growing gathered_ moves its vectors, whose heap buffers, which earlier msgs point into, stay put)
      if (gathered_.size() <= gathered) gathered_.emplace_back();
      gatherParts(*in->parts, gathered_[gathered]);
      msgs.push_back({j, in->incarnation, gathered_[gathered++], {}, in->wordsFinite});
    }
  }
  if (stateless_) stats_.messages_missing += expectedMessages() - msgs.size();
  const ComputeTimer timer(stats_.compute_ns);
  for (;;) {
    try {
      node_->endRound(t, msgs, row_);
      break;
    } catch (const algo::RejectedMessage& e) {
      // apply left the node untouched; the protocol says whether the round goes on without the message.
      std::erase_if(msgs, [&](const algo::Incoming& m) { return m.from == e.from; });
      if (!mixWithout(e.from, t)) throw;
      reject("bad_payload");
      if (stateless_) ++stats_.messages_missing;
    }
  }
  ready_.clear();  // release the payloads: senders reuse their buffers next round
  afterMix(t);
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
