#pragma once
// MembershipRunner: the node's peer::Membership (SWIM, pure logic) driven by a thread of its own, so that
// probes, acks and suspicion timers run on time whatever the node thread is doing. Issue 27: with one loop
// for everything, a 20M-parameter model's rounds, checkpoints (six fsyncs) and evaluations held the acks
// long enough for healthy nodes to be declared dead.
//
// Threads and ownership
//  - The membership thread (start() to stop()) is the only reader of the transport's membership inbox
//    (PeerTransport::receiveMembership) and of its disconnect hints. It waits at most probe_timeout / 2 for a
//    frame (Membership asks to be ticked that often), checks each frame's header and payload checksum, hands
//    the payload to Membership::receive, turns disconnect hints into hintUnreachable, ticks, and queues the
//    events it took for the node thread.
//  - mutex_ guards membership_, events_ and rejected_. Every call into the Membership happens with it held,
//    on either thread: the membership thread's receive/tick, the node thread's leave and reads. The node
//    thread's getters return copies, never references into the locked state.
//  - Callbacks run on the membership thread (and, for SendFn, on whichever thread called leave):
//      the Membership's SendFn   with mutex_ held (it is called from inside receive/tick/leave);
//      Hooks::frame              without it, for every membership frame before it is judged;
//      Hooks::changed            with it, after events were taken (the runtime's connections follow), so
//                                that no reader of the view sees a member before its connection exists.
//    None may call back into this object. Lock order: mutex_, then whatever the callbacks lock (the
//    runtime's peer directory and traffic counters, the transport's own mutexes).
//  - start(), stop() and restart() belong to the node thread. restart() replaces the Membership (a rejoin as
//    a new incarnation) between stopping and starting the thread; the queued events and the rejection
//    counts carry over. The thread's start and join order everything the node thread wrote before them
//    (e.g. the incarnation the SendFn stamps on frames) with the thread's reads.
//  - Time: the runner reads its clock (steady_clock, or the test's) for every call, so the Membership sees
//    one clock.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine/transport.h"
#include "daemon/node/membership_view.h"
#include "membership/membership.h"
#include "transport/peer/peer_transport.h"

namespace gossip::daemon {

struct StampedEvent {
  peer::MembershipEvent event;
  std::int64_t wall_ms;  // system clock when the membership thread took it (log lines' [t=...] stamps)
};

class MembershipRunner final : public MembershipView {
 public:
  struct Hooks {
    std::function<void(const engine::RawFrame&)> frame;  // every membership frame received (traffic counters)
    // After events: every event taken and the member table as it was then.
    std::function<void(const std::vector<peer::MembershipEvent>&, const std::vector<peer::MemberInfo>&)> changed;
  };

  using Now = std::function<peer::MsClock::time_point()>;
  // Does not start the thread. `tick_every` bounds the wait for a frame (at most probe_timeout / 2). `now`
  // is the clock every call into the Membership reads (a test's fake one; default steady_clock).
  MembershipRunner(std::unique_ptr<peer::Membership> membership, peer::PeerTransport& transport, Hooks hooks,
                   std::chrono::milliseconds tick_every, Now now = nullptr);
  ~MembershipRunner();  // stops the thread
  MembershipRunner(const MembershipRunner&) = delete;
  MembershipRunner& operator=(const MembershipRunner&) = delete;

  void start();
  void stop();  // joins within about tick_every; idempotent
  void restart(std::unique_ptr<peer::Membership> membership);  // stop, replace, start
  bool running() const { return thread_.joinable(); }

  // Node thread (any thread but the membership thread's callbacks): each locks mutex_.
  void leave();
  void hintUnreachable(PeerId id);
  bool joined() const override;
  bool declaredDead() const;
  std::string rejoinVia() const;  // Membership::rejoinVia: where to rejoin after a contested verdict
  bool isolated() const override;  // Membership::isolated
  std::vector<peer::MemberInfo> members() const;
  std::vector<engine::Member> alive() const override;
  peer::MembershipStats stats() const override;
  std::vector<StampedEvent> takeEvents();
  struct Refusals {
    std::vector<peer::Refusal> refused;      // Joins we refused since the last call
    std::optional<peer::Refusal> refusedBy;  // a member refused our Join
  };
  Refusals takeRefusals();
  // Membership frames refused by reason (the frame checks' labels, "bad_membership" for a payload that does
  // not decode), over every Membership this runner drove.
  std::map<std::string, std::uint64_t> rejected() const;

  // One pass of the thread's loop without the thread (tests, and a node driven step by step).
  void step(std::chrono::milliseconds wait);

 private:
  void loop();
  void handle(const engine::RawFrame& f);
  void takeEventsLocked(std::vector<peer::MembershipEvent>& fresh);  // mutex_ held
  void followLocked(const std::vector<peer::MembershipEvent>& fresh,
                    const std::vector<peer::MemberInfo>& table);  // mutex_ held: runs Hooks::changed

  peer::PeerTransport& transport_;
  Hooks hooks_;
  Now now_;
  std::chrono::milliseconds tick_every_;
  mutable std::mutex mutex_;
  std::unique_ptr<peer::Membership> membership_;  // guarded by mutex_
  std::vector<StampedEvent> events_;              // guarded by mutex_: taken by the node thread
  std::map<std::string, std::uint64_t> rejected_; // guarded by mutex_
  std::atomic<bool> stop_{false};
  std::thread thread_;  // node thread only (start/stop)
};

}  // namespace gossip::daemon
