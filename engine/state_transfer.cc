// State transfer: a joining, restarted or lagging node asks a neighbour for its model (StateRequest); the
// neighbour answers with its model in State chunks. Each chunk's payload is
//
//   u64 dimension | u64 first value index | u32 crc32c of the whole model | array<f64> values
//
// and each frame carries the CRC of its own payload (engine/frame.h). The receiver assembles the chunks of
// one (sender, round) answer; chunks of another answer replace a partial one (the newest request wins),
// and a repeated answer to a repeated request fills only what is missing. The model is installed when
// every chunk is in and the whole-model CRC matches; until then the node's own model is untouched.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/crc32c.h"
#include "core/serial.h"
#include "engine/node_engine.h"

namespace gossip::engine {

namespace {
std::uint32_t modelCrc(std::span<const Real> x) { return crc32c(std::as_bytes(x)); }
}  // namespace

void NodeEngine::setStateChunk(std::size_t values) {
  GOSSIP_CHECK(values > 0, "state chunk of 0 values");
  stateChunk_ = values;
}

void NodeEngine::sendState(PeerId to, Round round) {
  const auto& model = node_->algorithm().x();
  const std::span<const Real> x(model.data(), static_cast<std::size_t>(model.size()));
  const std::uint32_t crc = modelCrc(x);
  ++stats_.states_sent;
  // A model of dimension 0 still gets one (empty) chunk so the requester learns the round.
  for (std::size_t at = 0; at < x.size() || (at == 0 && x.empty()); at += stateChunk_) {
    Bytes b;
    ByteWriter w(b);
    w.put(static_cast<std::uint64_t>(x.size()));
    w.put(static_cast<std::uint64_t>(at));
    w.put(crc);
    serial::putArray(w, x.subspan(at, std::min(stateChunk_, x.size() - at)));
    sendControl(to, FrameKind::State, round, std::move(b));
    if (x.empty()) break;
  }
}

void NodeEngine::receiveStateChunk(const FrameHeader& h, const Bytes& payload) {
  // A model replaces ours only when we asked this peer for it, and only once.
  if (!stateFrom_.count(h.sender)) return reject("unrequested_state");
  ByteReader r(payload, "state payload");
  const auto dim = r.get<std::uint64_t>();
  const auto at = r.get<std::uint64_t>();
  const auto crc = r.get<std::uint32_t>();
  auto values = serial::getArray<Real>(r);
  r.expectEnd();
  auto& mine = node_->algorithm().x();
  const auto n = static_cast<std::size_t>(mine.size());
  if (dim != n) return reject("wrong_dimension");
  // Chunks are placed by their first value index; any chunking the sender chose assembles the same way.
  if (at > n || values.size() > n - at || (n > 0 && values.empty())) return reject("bad_state_chunk");
  for (Real v : values)
    if (!std::isfinite(v)) return reject("non_finite");
  if (!assembly_ || assembly_->from != h.sender || assembly_->round != h.round || assembly_->crc != crc) {
    // A chunk of another answer (another peer, round or model) starts the assembly afresh.
    assembly_ = StateAssembly{.from = h.sender, .round = h.round, .crc = crc, .x = std::vector<Real>(n),
                              .have = std::vector<bool>(n, false), .missing = n};
  }
  auto& a = *assembly_;
  for (std::size_t k = 0; k < values.size(); ++k) {
    if (!a.have[at + k]) {
      a.have[at + k] = true;
      --a.missing;
    }
    a.x[at + k] = values[k];
  }
  if (a.missing > 0) return;
  if (modelCrc(a.x) != a.crc) {
    assembly_.reset();
    return reject("state_checksum");
  }
  mine = Eigen::Map<const training::Vec>(a.x.data(), static_cast<Eigen::Index>(n));
  stateFrom_.clear();
  stateRound_ = a.round;
  ++stats_.states_received;
  assembly_.reset();
}

}  // namespace gossip::engine
