// State transfer: a joining, restarted or lagging node pulls a neighbour's model, from several neighbours at
// once where it has them (the schedule is engine/state_fetch.h). Two frames:
//
//   StateRequest  u64 first value index | u64 value count | u64 values per chunk
//   State         u64 dimension | u64 first value index | array<Real> values      (one chunk)
//
// A request asks for at most kMaxChunksPerRequest chunks, so one request can make the sender queue only a
// bounded amount; each chunk's frame carries the crc32c of its payload (engine/frame.h), checked before the
// chunk is looked at. The chunks travel on the transport's data channel (transport/zmq/links.cc), not
// beside membership probes and acks; the requests, small, on the control channel. The model is installed
// when every chunk is in; until then the node's own model is untouched.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/serial.h"
#include "engine/node_engine.h"

namespace gossip::engine {

namespace {
// Bounds on what one request may ask for: chunks of at most 4M values (16 MiB of float32), at most 64 of them.
constexpr std::uint64_t kMaxChunkValues = std::uint64_t{1} << 22;
constexpr std::uint64_t kMaxChunksPerRequest = 64;
}  // namespace

bool askInBounds(const StateAsk& a, std::uint64_t dim) {
  return a.chunk != 0 && a.chunk <= kMaxChunkValues && a.at <= dim && a.count <= dim - a.at &&
         (a.count + a.chunk - 1) / a.chunk <= kMaxChunksPerRequest;
}

void putAsk(ByteWriter& w, const StateAsk& a) {
  w.put(a.at);
  w.put(a.count);
  w.put(a.chunk);
}

StateAsk getAsk(ByteReader& r, PeerId from) {
  StateAsk a{.to = from};
  a.at = r.get<std::uint64_t>();
  a.count = r.get<std::uint64_t>();
  a.chunk = r.get<std::uint64_t>();
  return a;
}

void putChunk(ByteWriter& w, std::span<const Real> all, std::uint64_t at, std::size_t n) {
  w.put(static_cast<std::uint64_t>(all.size()));
  w.put(at);
  serial::putArray(w, all.subspan(static_cast<std::size_t>(at), n));
}

Chunk getChunk(ByteReader& r) {
  Chunk c;
  c.dim = r.get<std::uint64_t>();
  c.at = r.get<std::uint64_t>();
  c.values = serial::getArray<Real>(r);
  return c;
}

void NodeEngine::setStateFetch(StateFetchOptions options) { fetchOpts_ = options; }

void NodeEngine::requestState(std::span<const PeerId> from, Round round) {
  const auto dim = static_cast<std::size_t>(node_->algorithm().x().size());
  if (!fetch_) fetch_.emplace(dim, fetchOpts_, nowMs_);
  fetchRound_ = round;
  fetch_->addSources(from, nowMs_);
  pumpStateFetch();
}

void NodeEngine::cancelStateFetch() { fetch_.reset(); }

std::optional<Round> NodeEngine::takeStateRound() {
  auto r = stateRound_;
  stateRound_.reset();
  return r;
}

void NodeEngine::stepStateFetch(std::uint64_t nowMs) {
  nowMs_ = std::max(nowMs_, nowMs);
  if (fetch_) pumpStateFetch();
}

std::optional<StateProgress> NodeEngine::stateProgress() const {
  if (!fetch_) return std::nullopt;
  return StateProgress{.values_have = fetch_->valuesHave(), .dim = fetch_->dim(),
                       .sources_serving = fetch_->sourcesServing(), .last_progress_ms = fetch_->lastProgressMs()};
}

void NodeEngine::pumpStateFetch() {
  asks_.clear();
  fetch_->due(nowMs_, asks_);
  for (const StateAsk& a : asks_) {
    Bytes b;
    ByteWriter w(b);
    putAsk(w, a);
    sendControl(a.to, FrameKind::StateRequest, fetchRound_, std::move(b));
  }
}

void NodeEngine::receiveStateRequest(const FrameHeader& h, const Bytes& payload) {
  ByteReader r(payload, "state request");
  const StateAsk a = getAsk(r, h.sender);
  r.expectEnd();
  const auto dim = static_cast<std::uint64_t>(node_->algorithm().x().size());
  if (!askInBounds(a, dim)) return reject("bad_state_request");
  // The protocol says which round the requester continues from, or keeps the request for later.
  if (const auto round = answerStateAt(h, a)) sendState(a, *round);
}

void NodeEngine::sendState(const StateAsk& a, Round round) {
  const auto& model = node_->algorithm().x();
  const std::span<const Real> x(model.data(), static_cast<std::size_t>(model.size()));
  if (a.at == 0) ++stats_.states_sent;  // counted once per transfer, by its first chunk's request
  // A request for nothing (a model of dimension 0) still gets one empty chunk, so the requester learns the round.
  const std::uint64_t end = a.at + a.count;
  for (std::uint64_t at = a.at; at < end || (at == a.at && a.count == 0); at += a.chunk) {
    const auto n = static_cast<std::size_t>(std::min(a.chunk, end - at));
    Bytes b;
    ByteWriter w(b);
    putChunk(w, x, at, n);
    sendControl(a.to, FrameKind::State, round, std::move(b));
    if (a.count == 0) break;
  }
}

void NodeEngine::receiveStateChunk(const FrameHeader& h, const Bytes& payload) {
  // A model replaces ours only when we asked for it, and only once.
  if (!fetch_) return reject("unrequested_state");
  ByteReader r(payload, "state payload");
  const Chunk c = getChunk(r);
  r.expectEnd();
  if (c.dim != fetch_->dim()) return reject("wrong_dimension");
  if (auto why = fetch_->place(h.sender, h.round, c.at, c.values, nowMs_)) return reject(*why);
  if (!fetch_->complete()) return pumpStateFetch();  // the source's window has room again
  auto& mine = node_->algorithm().x();
  mine = fetch_->values();
  stateRound_ = fetch_->round();
  ++stats_.states_received;
  fetch_.reset();
}

}  // namespace gossip::engine
