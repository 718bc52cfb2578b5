#include "transport/inproc/inproc_peer.h"

#include <algorithm>
#include <utility>

#include "core/error.h"
#include "engine/frame.h"

namespace gossip::engine {

class InprocPeerNet::Endpoint final : public peer::PeerTransport {
 public:
  Endpoint(InprocPeerNet& net, PeerId id) : net_(net), endpoint_(endpointOf(id)) { inbox_.owner = id; }
  ~Endpoint() override { net_.inboxes_.erase(endpoint_); }  // open() registered it (and no one else)
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
  // Checked before an Endpoint exists: a refused one's destructor would unregister the holder's inbox.
  GOSSIP_CHECK(!inboxes_.count(endpointOf(id)), "InprocPeerNet: address in use: " + endpointOf(id));
  auto e = std::make_unique<Endpoint>(*this, id);
  e->inbox().serial = ++opened_;
  inboxes_.emplace(e->endpoint(), &e->inbox());
  return e;
}

bool InprocPeerNet::deliver(PeerId from, const std::string& endpoint, RawFrame f) {
  const auto it = inboxes_.find(endpoint);
  if (it == inboxes_.end()) return false;
  if (!latency_) {
    put(*it->second, from, std::move(f));
    return true;
  }
  std::uint64_t& last = lastDue_[{from, endpoint}];
  last = std::max(last, now_ + latency_());
  inFlight_.emplace(last, InFlight{from, endpoint, it->second->serial, std::move(f)});
  return true;
}

void InprocPeerNet::advance(std::uint64_t nowMs) {
  now_ = nowMs;
  while (!inFlight_.empty() && inFlight_.begin()->first <= nowMs) {
    InFlight x = std::move(inFlight_.begin()->second);
    inFlight_.erase(inFlight_.begin());
    const auto it = inboxes_.find(x.endpoint);
    if (it == inboxes_.end() || it->second->serial != x.serial) {
      ++lost_;  // the process it was for is gone (a restarted one has new connections)
      continue;
    }
    put(*it->second, x.from, std::move(x.frame));
  }
}

void InprocPeerNet::put(Inbox& in, PeerId from, RawFrame f) {
  if ((cut_ && cut_(from, in.owner)) || (drop_ && peekIsKind(f.header, FrameKind::Model) && drop_(from, in.owner))) {
    ++lost_;
    return;
  }
  (peekIsKind(f.header, FrameKind::Membership) ? in.membership : in.frames).push_back(std::move(f));
}

}  // namespace gossip::engine
