#pragma once
// InprocPeerNet: an in-process network of whole daemon nodes (daemon/node/node_runtime.h, built with
// NodeEnvironment::stepped). Each node's PeerTransport listens at "inproc://node-<id>" until it is
// destroyed (a crashed node's address goes with it; a restarted one opens it again). A frame is put in the
// receiver's inbox when it is sent: membership frames in the membership inbox, the rest in the frame
// inbox, in the order sent. A test may cut pairs of nodes (every frame between them lost, as when a cable
// is pulled) and drop model frames by a rule of its own (a lost datagram: the engine sees a missing
// message). Receivers get the sender's payload buffer itself, as with InprocNetwork.
//
// Threads: none; one thread (the test's) calls everything, and nothing blocks: waitReadable and
// waitMembership only say whether a frame is waiting.
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "transport/peer/peer_transport.h"

namespace gossip::engine {

class InprocPeerNet {
 public:
  using Rule = std::function<bool(PeerId from, PeerId to)>;

  static std::string endpointOf(PeerId id) { return "inproc://node-" + std::to_string(id); }
  // Node `id`'s transport; throws if its address is held by another transport still open.
  std::unique_ptr<peer::PeerTransport> open(PeerId id);
  void setCut(Rule cut) { cut_ = std::move(cut); }     // true: every frame from -> to is lost
  void setDrop(Rule drop) { drop_ = std::move(drop); }  // true: this model frame from -> to is lost
  std::uint64_t lost() const { return lost_; }         // frames lost to a cut or a drop

 private:
  class Endpoint;
  struct Inbox {
    PeerId owner;
    std::deque<RawFrame> frames;
    std::deque<RawFrame> membership;
  };
  // Puts the frame in the inbox at `endpoint`; false if no one listens there.
  bool deliver(PeerId from, const std::string& endpoint, RawFrame f);

  std::map<std::string, Inbox*> inboxes_;  // by address: the open transports' inboxes
  Rule cut_, drop_;
  std::uint64_t lost_ = 0;
};

}  // namespace gossip::engine
