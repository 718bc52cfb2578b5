#include "daemon/node/peer_links.h"

#include <utility>

#include "core/error.h"
#include "engine/frame.h"

namespace gossip::daemon {

// The engine reads from this queue (filled by pump); its sends are counted per peer. The engine drains it
// every pass of the node's loop, except while the node joins (a first join or a rejoin after being
// declared dead: the engine has no view yet, and edge proposals wait here for it). Model frames are
// bounded (1 GiB, the transport inbox's own bound): beyond it they are dropped and counted, as the
// transport's inbox drops them. Without the bound a joining node kept every retransmission of a neighbour's 80 MB LEAD frame
// and grew by ~380 MB/s until the kernel killed it (20M parameters, 3 of 6 runs of bench/model_memory.sh).
class PeerLinks::EngineQueue final : public engine::Transport {
 public:
  EngineQueue(PeerLinks& links, std::uint64_t maxModelBytes) : links_(links), maxModelBytes_(maxModelBytes) {}
  void send(PeerId to, Bytes header, engine::SharedBytes payload) override {
    const std::uint64_t payloadBytes = payload ? payload->size() : 0;
    links_.countSent(to, header.size() + payloadBytes);
    if (engine::peekIsKind(header, engine::FrameKind::Model)) {
      ++links_.traffic_.modelFrames;  // node thread only
      links_.traffic_.modelPayloadBytes += payloadBytes;
    }
    links_.net_.send(to, std::move(header), std::move(payload));
  }
  bool receive(engine::RawFrame& out) override {
    if (q_.empty()) return false;
    out = std::move(q_.front());
    q_.pop_front();
    if (engine::peekIsKind(out.header, engine::FrameKind::Model)) modelBytes_ -= payloadSize(out);
    return true;
  }
  // False (the frame dropped) for a model frame while the queue holds maxModelBytes of them.
  bool push(engine::RawFrame f) {
    if (engine::peekIsKind(f.header, engine::FrameKind::Model)) {
      if (modelBytes_ >= maxModelBytes_) return false;
      modelBytes_ += payloadSize(f);
    }
    q_.push_back(std::move(f));
    return true;
  }
 private:
  static std::uint64_t payloadSize(const engine::RawFrame& f) { return engine::payloadSize(f); }
  PeerLinks& links_;
  const std::uint64_t maxModelBytes_;
  std::deque<engine::RawFrame> q_;
  std::uint64_t modelBytes_ = 0;
};

PeerLinks::PeerLinks(PeerId self, Incarnation incarnation, peer::PeerTransport& net, logging::Logger memberLog,
                     std::uint64_t maxQueuedModelBytes)
    : self_(self), incarnation_(incarnation), net_(net), memberLog_(std::move(memberLog)),
      engineQueue_(std::make_unique<EngineQueue>(*this, maxQueuedModelBytes)),
      maxQueuedModelBytes_(maxQueuedModelBytes) {}

PeerLinks::~PeerLinks() = default;

engine::Transport& PeerLinks::engineTransport() { return *engineQueue_; }
void PeerLinks::resetEngineTransport() { engineQueue_ = std::make_unique<EngineQueue>(*this, maxQueuedModelBytes_); }

void PeerLinks::countSent(PeerId to, std::uint64_t bytes, bool unknown) {
  std::lock_guard lock(trafficMutex_);
  (unknown ? traffic_.unknown : traffic_.byPeer[to]).sent += bytes;
}

void PeerLinks::send(PeerId to, Bytes header, engine::SharedBytes payload) {
  countSent(to, header.size() + (payload ? payload->size() : 0));
  net_.send(to, std::move(header), std::move(payload));
}

void PeerLinks::sendMembership(PeerId to, const std::string& endpoint, Bytes payload) {
  PeerId dest = to;
  if (to == peer::Membership::kUnknownPeer) {
    std::lock_guard lock(directoryMutex_);
    auto it = seedIds_.find(endpoint);
    if (it == seedIds_.end()) {
      it = seedIds_.emplace(endpoint, kSeedIdBase + static_cast<PeerId>(seedIds_.size())).first;
      net_.addPeer(it->second, endpoint);
    }
    dest = it->second;
  } else {
    ensurePeer(to, endpoint);
  }
  engine::FrameHeader h;
  h.kind = engine::FrameKind::Membership;
  h.sender = self_;
  h.incarnation = incarnation_;
  engine::sealPayload(h, payload);
  Bytes header;
  engine::encodeFrameHeader(h, header);
  const std::uint64_t bytes = header.size() + payload.size();
  membershipBytes_ += bytes;
  countSent(to, bytes, to == peer::Membership::kUnknownPeer);
  net_.send(dest, std::move(header), std::make_shared<const Bytes>(std::move(payload)));
}

// Fresh connections for a member that died, left or came back as a new incarnation: a TCP connection that
// carried frames into a cut link keeps them in its retransmission backoff for tens of seconds after the
// link is back (netns_cut: every stateless round then waited a deadline for the frames stuck on it). A
// member we still talk to gets a new link at once.
void PeerLinks::followMembers(const std::vector<peer::MembershipEvent>& events, const std::vector<peer::MemberInfo>& table) {
  using K = peer::MembershipEvent::Kind;
  for (const auto& e : events)
    if (e.kind == K::Died || e.kind == K::Left || (e.kind == K::Joined && e.incarnation > 0)) forgetPeer(e.id);
  for (const auto& m : table) {
    if (m.id == self_) continue;
    if (m.state == peer::MemberState::Alive || m.state == peer::MemberState::Suspect) ensurePeer(m.id, m.endpoint);
  }
}

void PeerLinks::forgetPeer(PeerId peer) {
  std::lock_guard lock(directoryMutex_);
  if (endpoints_.erase(peer)) net_.removePeer(peer);
}

void PeerLinks::forgetAll() {
  std::lock_guard lock(directoryMutex_);
  for (const auto& [peer, endpoint] : endpoints_) net_.removePeer(peer);
  endpoints_.clear();
}

void PeerLinks::ensurePeer(PeerId peer, const std::string& endpoint) {
  if (endpoint.empty() || peer == self_) return;
  std::lock_guard lock(directoryMutex_);
  auto it = endpoints_.find(peer);
  if (it != endpoints_.end() && it->second == endpoint) return;
  try {
    net_.addPeer(peer, endpoint);
    endpoints_[peer] = endpoint;
  } catch (const IoError& e) {
    memberLog_->warn("cannot connect to member {} at '{}': {}", peer, endpoint, e.what());
  }
}

bool PeerLinks::isMember(PeerId p) const {
  std::lock_guard lock(directoryMutex_);
  return endpoints_.count(p) > 0;
}

// The sender a header names once its checksum holds, and only for members (the engine or the membership
// still judge the frame itself).
void PeerLinks::countReceived(const engine::RawFrame& f, std::uint64_t now) {
  const std::uint64_t bytes = f.header.size() + engine::payloadSize(f);
  try {
    const PeerId from = engine::decodeFrameHeader(f.header).sender;
    if (isMember(from)) {
      std::lock_guard lock(trafficMutex_);
      traffic_.byPeer[from].received += bytes;
      traffic_.lastHeardMs[from] = now;
      return;
    }
  } catch (const DecodeError&) {
  }
  std::lock_guard lock(trafficMutex_);
  traffic_.unknown.received += bytes;
}

void PeerLinks::pump(std::uint64_t now, const std::function<void(const engine::RawFrame&, std::uint64_t)>& onStatus) {
  engine::RawFrame f;
  while (net_.receive(f)) {
    countReceived(f, now);
    if (engine::peekIsKind(f.header, engine::FrameKind::Status)) {
      onStatus(f, now);
      continue;
    }
    if (!engineQueue_->push(std::move(f)) && droppedModelFrames_++ % 100 == 0)
      memberLog_->warn("node {}: {} model frame(s) dropped: the engine, which has no view while the node joins, "
                       "holds {} MiB of them already",
                       self_, droppedModelFrames_, maxQueuedModelBytes_ >> 20);
  }
}

PeerLinks::Traffic PeerLinks::traffic() const {
  std::lock_guard lock(trafficMutex_);
  return traffic_;
}

}  // namespace gossip::daemon
