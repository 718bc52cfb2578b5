#include "daemon/node/membership_runner.h"

#include <algorithm>
#include <utility>

#include "core/error.h"
#include "engine/frame.h"

namespace gossip::daemon {
namespace {

std::int64_t wallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

MembershipRunner::MembershipRunner(std::unique_ptr<peer::Membership> membership, peer::PeerTransport& transport,
                                   Hooks hooks, std::chrono::milliseconds tick_every, Now now)
    : transport_(transport),
      hooks_(std::move(hooks)),
      now_(now ? std::move(now) : Now([] { return peer::MsClock::now(); })),
      tick_every_(std::max(tick_every, std::chrono::milliseconds(1))),
      membership_(std::move(membership)) {
  GOSSIP_CHECK(membership_ != nullptr, "MembershipRunner needs a Membership");
}

MembershipRunner::~MembershipRunner() { stop(); }

void MembershipRunner::start() {
  if (thread_.joinable()) return;
  stop_.store(false);
  thread_ = std::thread([this] { loop(); });
}

void MembershipRunner::stop() {
  if (!thread_.joinable()) return;
  stop_.store(true);
  thread_.join();
}

void MembershipRunner::restart(std::unique_ptr<peer::Membership> membership) {
  GOSSIP_CHECK(membership != nullptr, "MembershipRunner::restart needs a Membership");
  const bool was = running();
  stop();
  {
    std::lock_guard lock(mutex_);
    membership_ = std::move(membership);
  }
  if (was) start();
}

void MembershipRunner::loop() {
  while (!stop_.load()) step(tick_every_);
}

void MembershipRunner::step(std::chrono::milliseconds wait) {
  transport_.waitMembership(wait);
  engine::RawFrame f;
  // Bounded, so that a flood of membership frames cannot postpone the tick (and the probes) indefinitely.
  for (int k = 0; k < 256 && transport_.receiveMembership(f); ++k) handle(f);
  const auto hints = transport_.takeDisconnects();
  std::vector<peer::MembershipEvent> fresh;
  std::vector<peer::MemberInfo> table;
  {
    std::lock_guard lock(mutex_);
    const auto now = now_();
    // A broken connection is a reason to probe the peer now: a suspicion, never a death.
    for (PeerId p : hints) membership_->hintUnreachable(p, now);
    membership_->tick(now);
    takeEventsLocked(fresh);
    if (!fresh.empty()) table = membership_->members();
    followLocked(fresh, table);
  }
}

void MembershipRunner::handle(const engine::RawFrame& f) {
  if (hooks_.frame) hooks_.frame(f);
  std::vector<peer::MembershipEvent> fresh;
  std::vector<peer::MemberInfo> table;
  {
    std::lock_guard lock(mutex_);
    try {
      const auto h = engine::decodeFrameHeader(f.header);
      if (!f.payload) throw engine::FrameError("length_mismatch", "no payload");
      engine::checkPayload(h, *f.payload);
      membership_->receive(h.sender, *f.payload, now_());
    } catch (const engine::FrameError& e) {
      ++rejected_[e.reason];
    } catch (const DecodeError&) {
      ++rejected_["bad_membership"];
    }
    takeEventsLocked(fresh);
    if (!fresh.empty()) table = membership_->members();
    followLocked(fresh, table);
  }
}

// With mutex_ held, so that the node thread, whose every read of the view locks it, cannot see a member
// before the runtime's connection to it exists. Run after the lock was released (as before), a node that
// started training on seeing its last member sent its round-0 frames before the transport had a link to
// that member: the frames were dropped as addressed to no peer, the neighbour mixed round 0 without them
// (a stateless method) or waited for their retransmission (a replica method), and daemon_run_matches_sim's
// codistill case differed from the simulator in about one run in six on a loaded machine.
void MembershipRunner::followLocked(const std::vector<peer::MembershipEvent>& fresh,
                                    const std::vector<peer::MemberInfo>& table) {
  if (!fresh.empty() && hooks_.changed) hooks_.changed(fresh, table);
}

void MembershipRunner::takeEventsLocked(std::vector<peer::MembershipEvent>& fresh) {
  fresh = membership_->takeEvents();
  const std::int64_t wall = fresh.empty() ? 0 : wallMs();
  for (const auto& e : fresh) events_.push_back({e, wall});
}

void MembershipRunner::leave() {
  std::lock_guard lock(mutex_);
  membership_->leave(now_());
}

void MembershipRunner::hintUnreachable(PeerId id) {
  std::lock_guard lock(mutex_);
  membership_->hintUnreachable(id, now_());
}

bool MembershipRunner::joined() const {
  std::lock_guard lock(mutex_);
  return membership_->joined();
}

bool MembershipRunner::declaredDead() const {
  std::lock_guard lock(mutex_);
  return membership_->declaredDead();
}

MembershipRunner::Refusals MembershipRunner::takeRefusals() {
  std::lock_guard lock(mutex_);
  return {membership_->takeRefusals(), membership_->refusedBy()};
}

bool MembershipRunner::isolated() const {
  std::lock_guard lock(mutex_);
  return membership_->isolated();
}

std::string MembershipRunner::rejoinVia() const {
  std::lock_guard lock(mutex_);
  return membership_->rejoinVia();
}

std::vector<peer::MemberInfo> MembershipRunner::members() const {
  std::lock_guard lock(mutex_);
  return membership_->members();
}

std::vector<engine::Member> MembershipRunner::alive() const {
  std::lock_guard lock(mutex_);
  return membership_->alive();
}

peer::MembershipStats MembershipRunner::stats() const {
  std::lock_guard lock(mutex_);
  return membership_->stats();
}

std::vector<StampedEvent> MembershipRunner::takeEvents() {
  std::lock_guard lock(mutex_);
  return std::exchange(events_, {});
}

std::map<std::string, std::uint64_t> MembershipRunner::rejected() const {
  std::lock_guard lock(mutex_);
  return rejected_;
}

}  // namespace gossip::daemon
