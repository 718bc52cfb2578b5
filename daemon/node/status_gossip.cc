#include "daemon/node/status_gossip.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"
#include "core/rng.h"
#include "engine/frame.h"

namespace gossip::daemon {
namespace {

std::int64_t wallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

StatusGossip::StatusGossip(const Config& c, PeerId self, PeerLinks& links, HttpServer* http)
    : c_(c), self_(self), links_(links), http_(http), table_(self), rng_(deriveSeed({c.cluster.seed, self, 0x57A7ull})) {}

void StatusGossip::receive(const engine::RawFrame& f, std::uint64_t now) {
  try {
    const auto h = engine::decodeFrameHeader(f.header);
    if (!f.payload) throw engine::FrameError("length_mismatch", "no payload");
    engine::checkPayload(h, *f.payload);
    if (!links_.isMember(h.sender)) return void(++rejected_["status_not_member"]);
    auto entries = ClusterStatus::decode(*f.payload);
    // Only summaries of members this node knows are kept: hearsay about made-up ids could otherwise fill
    // the table (it holds at most ClusterStatus::kMaxEntries) and crowd out real members.
    const auto known = membership_->members();  // sorted by id
    std::erase_if(entries, [&](const NodeSummary& e) {
      const auto it = std::lower_bound(known.begin(), known.end(), e.id, [](const peer::MemberInfo& m, PeerId x) { return m.id < x; });
      return it == known.end() || it->id != e.id;
    });
    table_.merge(entries, now);
  } catch (const engine::FrameError& e) {
    ++rejected_[e.reason];
  } catch (const DecodeError&) {
    ++rejected_["bad_status"];
  }
}

void StatusGossip::gossip(std::uint64_t now) {
  if (now < nextPush_) return;
  nextPush_ = now + kPeriodMs;
  std::vector<PeerId> peers;
  for (const auto& m : membership_->alive())
    if (m.id != self_ && links_.isMember(m.id)) peers.push_back(m.id);
  if (peers.empty()) return;
  std::shuffle(peers.begin(), peers.end(), rng_);
  peers.resize(std::min(peers.size(), kFanout));
  auto payload = std::make_shared<const Bytes>(table_.encode());
  engine::FrameHeader h;
  h.kind = engine::FrameKind::Status;
  h.sender = self_;
  h.incarnation = incarnation_;
  engine::sealPayload(h, *payload);
  Bytes header;
  engine::encodeFrameHeader(h, header);
  for (PeerId p : peers) {
    bytesSent_ += header.size() + payload->size();
    links_.send(p, Bytes(header), payload);
  }
}

void StatusGossip::noteViewGraph(std::shared_ptr<const engine::ViewGraph> vg) {
  if (!vg || vg == summarizedView_) return;
  graphSummary_ = summarizeGraph(*vg, self_);
  summarizedView_ = std::move(vg);
}

void StatusGossip::noteEvent(PeerId node, Incarnation inc, const char* kind, std::string text) {
  events_.add({wallMs(), node, inc, kind, std::move(text)});
}

void StatusGossip::refresh(std::uint64_t now, const NodeStatus& st) {
  const Round r = st.round;
  if (rateAt_ && now > rateAt_)
    roundsPerSecond_ = static_cast<double>(r >= rateRound_ ? r - rateRound_ : 0) * 1000.0 / static_cast<double>(now - rateAt_);
  rateRound_ = r;
  rateAt_ = now;
  if (st.states_sent > statesSentSeen_)
    noteEvent(self_, incarnation_, "state_sent", "node " + std::to_string(self_) + " sent its model to a joining neighbour");
  if (st.states_received > statesReceivedSeen_)
    noteEvent(self_, incarnation_, "state_received", "node " + std::to_string(self_) + " took its model from a neighbour");
  statesSentSeen_ = st.states_sent;
  statesReceivedSeen_ = st.states_received;
  NodeSummary s;
  s.incarnation = incarnation_;
  s.state = static_cast<std::uint8_t>(st.state);
  s.round = r;
  s.rounds = st.rounds;
  s.loss = summaryFloat(st.loss);
  s.disagreement = summaryFloat(st.disagreement);
  s.accuracy = static_cast<float>(st.accuracy);
  if (st.compression_ratio) s.compression_ratio = static_cast<float>(*st.compression_ratio);
  s.rounds_per_second = static_cast<float>(roundsPerSecond_);
  s.neighbors = static_cast<std::uint32_t>(st.neighbors);
  s.bytes_sent = st.bytes_sent;
  s.states_sent = st.states_sent;
  s.states_received = st.states_received;
  table_.updateSelf(s, now);
  if (!http_) return;
  ClusterViewInput in;
  in.self = self_;
  in.wallMs = wallMs();
  in.nowMs = now;
  in.algorithm = c_.algorithm.name;
  in.compressor = c_.compressor.name;
  in.topology = c_.cluster.topology;
  in.rounds = c_.algorithm.rounds;
  in.members = membership_->members();
  in.graph = graphSummary_ ? &*graphSummary_ : nullptr;
  in.status = &table_;
  in.events = &events_;
  http_->publish("/cluster", "application/json", renderClusterJson(in));
}

}  // namespace gossip::daemon
