#pragma once
// InprocPeerNet: an in-process network of whole daemon nodes (daemon/node/node_runtime.h, built with
// NodeEnvironment::stepped). Each node's PeerTransport listens at "inproc://node-<id>" until it is
// destroyed (a crashed node's address goes with it; a restarted one opens it again). A frame is put in the
// receiver's inbox when it is sent, or with setLatency when advance() reaches its due time (frames in
// flight to an address no one holds then are lost): membership frames in the membership inbox, the rest in
// the frame inbox, in the order sent between each pair (a later frame is never due before an earlier one
// of the same pair, as on a TCP connection). A test may cut pairs of nodes (every frame between them lost, as when a cable
// is pulled) and drop model frames by a rule of its own (a lost datagram: the engine sees a missing
// message). Receivers get the sender's payload buffer itself, as with InprocNetwork.
//
// Threads: none; one thread (the test's) calls everything, and nothing blocks: waitReadable and
// waitMembership only say whether a frame is waiting. Ownership: the net must outlive the transports it
// opened (a transport unregisters its address from the net when it goes).
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
  // Each frame's delay in ms from when it is sent (a test's seeded draw); frames wait for advance().
  void setLatency(std::function<std::uint64_t()> latency) { latency_ = std::move(latency); }
  // The network's time is now `nowMs`: frames due by then go to their inboxes.
  void advance(std::uint64_t nowMs);
  std::uint64_t lost() const { return lost_; }         // frames lost to a cut, a drop or a closed address

 private:
  class Endpoint;
  struct Inbox {
    PeerId owner;
    std::uint64_t serial = 0;  // which opening of the address: frames in flight to an earlier one are lost
    std::deque<RawFrame> frames;
    std::deque<RawFrame> membership;
  };
  struct InFlight {
    PeerId from;
    std::string endpoint;
    std::uint64_t serial;  // the receiving Inbox's when sent
    RawFrame frame;
  };
  // Puts the frame in the inbox at `endpoint` (at once, or in flight with a latency); false if no one
  // listens there when it is sent.
  bool deliver(PeerId from, const std::string& endpoint, RawFrame f);
  void put(Inbox& in, PeerId from, RawFrame f);  // the cut and the drop rule, then the inbox

  std::map<std::string, Inbox*> inboxes_;  // by address: the open transports' inboxes
  Rule cut_, drop_;
  std::function<std::uint64_t()> latency_;
  std::uint64_t now_ = 0;
  std::uint64_t opened_ = 0;  // addresses opened so far (Inbox::serial)
  std::multimap<std::uint64_t, InFlight> inFlight_;                 // by due time, equal times in send order
  std::map<std::pair<PeerId, std::string>, std::uint64_t> lastDue_;  // per pair: FIFO
  std::uint64_t lost_ = 0;
};

}  // namespace gossip::engine
