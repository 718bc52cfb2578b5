#pragma once
// The in-process network: one mailbox per node, filled by InprocTransport::send from any thread (the
// simulator's parallel phases) and drained by the owner. Receivers get the sender's shared payload
// buffer itself, so a round costs no payload copies. A drop rule (faults.drop in the simulator) can
// discard chosen messages; the engine then sees them as missing, exactly like a lost datagram.
#include <functional>
#include <map>
#include <mutex>
#include <vector>

#include "engine/transport.h"

namespace gossip::engine {

class InprocNetwork {
 public:
  // drop(from, to) -> true discards the frame (consulted for model frames and an edge set-up's asks and
  // parts only: the other control frames model a reliable channel).
  using DropRule = std::function<bool(PeerId from, PeerId to)>;

  void attach(PeerId id);
  void detach(PeerId id);  // a crashed node: its mailbox and everything in flight to it disappear
  void setDropRule(DropRule rule) { drop_ = std::move(rule); }
  void deliver(PeerId from, PeerId to, Bytes header, SharedBytes payload, bool droppable);
  bool take(PeerId id, RawFrame& out);
  // Frames waiting in any mailbox (the simulator pumps control traffic until this is 0).
  std::size_t inFlight() const;
  std::uint64_t dropped() const { return dropped_; }

 private:
  struct Mailbox {
    std::mutex mutex;
    std::vector<RawFrame> frames;
    std::size_t head = 0;
  };
  std::map<PeerId, std::unique_ptr<Mailbox>> boxes_;  // structure changes only between phases
  DropRule drop_;
  std::mutex statsMutex_;
  std::uint64_t dropped_ = 0;
};

class InprocTransport final : public Transport {
 public:
  InprocTransport(InprocNetwork& net, PeerId self) : net_(net), self_(self) {}
  void send(PeerId to, Bytes header, SharedBytes payload) override;
  bool receive(RawFrame& out) override { return net_.take(self_, out); }

 private:
  InprocNetwork& net_;
  PeerId self_;
};

}  // namespace gossip::engine
