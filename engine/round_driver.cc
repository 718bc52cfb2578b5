#include "engine/round_driver.h"

#include <utility>


namespace gossip::engine {

// Only a LinkedEngine has round state (inRound, nextRound): the simulator's SyncEngine runs in lock step.
RoundDriver::RoundDriver(LinkedEngine& engine, RoundDriverOptions options, BeforeBegin beforeBegin)
    : engine_(engine), opts_(options), beforeBegin_(std::move(beforeBegin)) {}

void RoundDriver::pump(std::uint64_t nowMs) {
  engine_.drain(engine_.mixingRound());
  engine_.tick(nowMs);
}

RoundStep RoundDriver::step(std::uint64_t nowMs) {
  auto& e = engine_;
  if (!e.inRound()) {
    const Round t = e.nextRound();
    if (t >= opts_.rounds) return {RoundEvent::Finished, t};
    if (!e.readyToBegin(t, nowMs, opts_.barrier == StartBarrier::EveryRound)) return {RoundEvent::Waiting, t};
    if (beforeBegin_ && !beforeBegin_(t, nowMs)) return {RoundEvent::Waiting, t};
    e.beginRound(t);
    waitingSinceMs_.reset();
    return {RoundEvent::Began, t};
  }
  const Round t = e.mixingRound();
  // The deadline counts from the first step after the round began, i.e. once this node's local steps and
  // encoding are done and its frames are out: `nowMs` of the step that began the round was taken before
  // that work, which at 50M parameters alone took longer than the 2 s default, so neighbours' frames were
  // refused as late for a round this node had barely started waiting in.
  if (!waitingSinceMs_) waitingSinceMs_ = nowMs;
  const bool late = e.stateless() && opts_.roundTimeoutMs && nowMs >= *waitingSinceMs_ + *opts_.roundTimeoutMs;
  const bool ready = e.roundReady(t);
  if (!ready && !late) return {RoundEvent::Waiting, t};
  e.endRound(t);
  return {RoundEvent::Ended, t, !ready};
}

}  // namespace gossip::engine
