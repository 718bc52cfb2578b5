#pragma once
// PeerLinks: the node's side of the transport. Which destinations it set up (members by id, seeds by
// endpoint under pseudo ids), the bytes on the wire by peer (/metrics counts them; the transport counts
// node totals only), membership frames out (the Membership's SendFn), and the routing of the frames that
// come in on the node thread: status frames to the status gossip, everything else to the engine's queue
// (membership frames never come this way: the transport hands those to the membership thread).
//
// Threads and shared state. Two threads call in: the node thread (pump, send, traffic, engine transport)
// and the membership thread (MembershipRunner, daemon/node/membership_runner.h: sendMembership as the
// Membership's SendFn, countReceived for every membership frame, followMembers after membership events).
// What both touch, and the guards:
//   directory_ (endpoints, seedIds)   directoryMutex_; held while the transport's addPeer/removePeer run,
//                                     so that the map and the transport's links agree
//   traffic_ (byPeer, unknown,        trafficMutex_ (traffic() copies them under it)
//             lastHeardMs)
//   membershipBytes_                  an atomic
//   self_, net_                       set before the membership thread starts, never written after
//   incarnation_                      written only by setIncarnation, with the membership thread stopped
// Node thread only: modelFrames_/modelPayloadBytes_ (EngineTransport::send) and the engine's queue.
// Lock order: the runner's mutex (it calls sendMembership with it held), then directoryMutex_ or
// trafficMutex_ (never both), then the transport's own.
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/bytes.h"
#include "core/types.h"
#include "daemon/log/log.h"
#include "engine/transport.h"
#include "membership/membership.h"
#include "transport/peer/peer_transport.h"

namespace gossip::daemon {

// Pseudo ids for seed endpoints whose node id is not known yet (transport destinations only; never a
// node id in /metrics).
inline constexpr PeerId kSeedIdBase = 0x80000000u;

class PeerLinks {
 public:
  // maxQueuedModelBytes: the model frames the engine's queue holds before pump drops them (a test sets
  // it low; the daemon keeps the transport inbox's own bound).
  static constexpr std::uint64_t kMaxQueuedModelBytes = std::uint64_t{1} << 30;
  PeerLinks(PeerId self, Incarnation incarnation, peer::PeerTransport& net, logging::Logger memberLog,
            std::uint64_t maxQueuedModelBytes = kMaxQueuedModelBytes);
  ~PeerLinks();
  PeerLinks(const PeerLinks&) = delete;
  PeerLinks& operator=(const PeerLinks&) = delete;

  // ---- membership thread (and the node thread) ----
  // The Membership's SendFn: to a member by id, or to a seed by endpoint (to = kUnknownPeer).
  void sendMembership(PeerId to, const std::string& endpoint, Bytes payload);
  // Connections follow the members: fresh ones for a member that died, left or came back as a new
  // incarnation, a link for every alive or suspect member.
  void followMembers(const std::vector<peer::MembershipEvent>& events, const std::vector<peer::MemberInfo>& table);
  // Bytes by sender and when each member was last heard from.
  void countReceived(const engine::RawFrame& f, std::uint64_t now);
  bool isMember(PeerId p) const;  // a destination this node set up for a member

  // ---- node thread ----
  // Every frame waiting in the transport's model inbox: status frames to onStatus, the rest to the
  // engine's queue (model frames beyond maxQueuedModelBytes waiting there are dropped, with a warning
  // every 100).
  void pump(std::uint64_t now, const std::function<void(const engine::RawFrame&, std::uint64_t)>& onStatus);
  // A frame to a member, counted in its traffic (status gossip's frames).
  void send(PeerId to, Bytes header, engine::SharedBytes payload);
  // The transport the engine sends and receives through. resetEngineTransport() drops the queue (a new
  // engine after a rejoin: frames for the old life are not for it); the old engine must be gone.
  engine::Transport& engineTransport();
  void resetEngineTransport();
  // With the membership thread stopped (a rejoin): the new life's incarnation on membership frames, and
  // every connection closed (ours may be stuck behind a link that was cut).
  void setIncarnation(Incarnation incarnation) { incarnation_ = incarnation; }
  void forgetAll();

  struct Link {
    std::uint64_t sent = 0, received = 0;
  };
  struct Traffic {
    std::map<PeerId, Link> byPeer;  // members; seed pseudo ids (>= kSeedIdBase) too
    Link unknown;                   // seeds not known by id yet, senders that are not members
    std::map<PeerId, std::uint64_t> lastHeardMs;
    std::uint64_t modelFrames = 0, modelPayloadBytes = 0;  // model frames sent (for the compression ratio)
  };
  Traffic traffic() const;  // a copy
  std::uint64_t membershipBytes() const { return membershipBytes_.load(); }

 private:
  class EngineQueue;
  void forgetPeer(PeerId peer);
  void ensurePeer(PeerId peer, const std::string& endpoint);
  void countSent(PeerId to, std::uint64_t bytes, bool unknown = false);

  const PeerId self_;
  Incarnation incarnation_;
  peer::PeerTransport& net_;
  logging::Logger memberLog_;

  mutable std::mutex directoryMutex_;
  std::map<PeerId, std::string> endpoints_;  // members by id
  std::map<std::string, PeerId> seedIds_;    // seeds by endpoint

  mutable std::mutex trafficMutex_;
  Traffic traffic_;  // modelFrames/modelPayloadBytes: node thread only, not under the mutex

  std::atomic<std::uint64_t> membershipBytes_{0};
  std::unique_ptr<EngineQueue> engineQueue_;
  std::uint64_t maxQueuedModelBytes_;
  std::uint64_t droppedModelFrames_ = 0;  // node thread: model frames the engine's queue had no room for
};

}  // namespace gossip::daemon
