#include "transport/inproc/inproc_peer.h"

#include <utility>

#include "core/error.h"
#include "engine/frame.h"

namespace gossip::engine {

class InprocPeerNet::Endpoint final : public peer::PeerTransport {
 public:
  Endpoint(InprocPeerNet& net, PeerId id) : net_(net), endpoint_(endpointOf(id)) { inbox_.owner = id; }
  ~Endpoint() override { net_.inboxes_.erase(endpoint_); }
  Inbox& inbox() { return inbox_; }

  void send(PeerId to, Bytes header, SharedBytes payload) override {
    const auto it = peers_.find(to);
    const std::size_t bytes = header.size() + (payload ? payload->size() : 0);
    if (it == peers_.end() || !net_.deliver(inbox_.owner, it->second, RawFrame{std::move(header), std::move(payload), nullptr})) {
      ++stats_.send_dropped;
      return;
    }
    ++stats_.frames_sent;
    stats_.bytes_sent += bytes;
  }
  bool receive(RawFrame& out) override { return pop(inbox_.frames, out); }
  const std::string& endpoint() const override { return endpoint_; }
  void addPeer(PeerId peer, const std::string& endpoint) override { peers_[peer] = endpoint; }
  void removePeer(PeerId peer) override { peers_.erase(peer); }
  std::vector<PeerId> takeDisconnects() override { return {}; }
  std::vector<peer::HandshakeFailure> takeHandshakeFailures() override { return {}; }
  bool waitReadable(std::chrono::milliseconds) override { return !inbox_.frames.empty(); }
  bool receiveMembership(RawFrame& out) override { return pop(inbox_.membership, out); }
  bool waitMembership(std::chrono::milliseconds) override { return !inbox_.membership.empty(); }
  peer::TransportStats stats() const override { return stats_; }

 private:
  bool pop(std::deque<RawFrame>& q, RawFrame& out) {
    if (q.empty()) return false;
    out = std::move(q.front());
    q.pop_front();
    ++stats_.frames_received;
    stats_.bytes_received += out.header.size() + payloadSize(out);
    return true;
  }

  InprocPeerNet& net_;
  std::string endpoint_;
  Inbox inbox_;
  std::map<PeerId, std::string> peers_;
  peer::TransportStats stats_;
};

std::unique_ptr<peer::PeerTransport> InprocPeerNet::open(PeerId id) {
  auto e = std::make_unique<Endpoint>(*this, id);
  GOSSIP_CHECK(inboxes_.emplace(e->endpoint(), &e->inbox()).second, "InprocPeerNet: address in use: " + e->endpoint());
  return e;
}

bool InprocPeerNet::deliver(PeerId from, const std::string& endpoint, RawFrame f) {
  const auto it = inboxes_.find(endpoint);
  if (it == inboxes_.end()) return false;
  Inbox& in = *it->second;
  const bool isMembership = peekIsKind(f.header, FrameKind::Membership);
  if ((cut_ && cut_(from, in.owner)) || (drop_ && peekIsKind(f.header, FrameKind::Model) && drop_(from, in.owner))) {
    ++lost_;
    return true;  // sent, and lost on the way
  }
  (isMembership ? in.membership : in.frames).push_back(std::move(f));
  return true;
}

}  // namespace gossip::engine
