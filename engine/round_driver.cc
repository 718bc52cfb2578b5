#include "engine/round_driver.h"

#include <utility>

#include "core/error.h"

namespace gossip::engine {

RoundDriver::RoundDriver(NodeEngine& engine, RoundDriverOptions options, BeforeBegin beforeBegin)
    : engine_(engine), opts_(options), beforeBegin_(std::move(beforeBegin)) {
  // The sim mode keeps no round state (inRound, nextRound): the simulator runs its rounds in lock step.
  GOSSIP_CHECK(engine_.linked(), "the round driver runs linked-mode engines (enableLinks first)");
}

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
    begunAtMs_ = nowMs;
    return {RoundEvent::Began, t};
  }
  const Round t = e.mixingRound();
  const bool late = e.stateless() && opts_.roundTimeoutMs && nowMs >= begunAtMs_ + *opts_.roundTimeoutMs;
  const bool ready = e.roundReady(t);
  if (!ready && !late) return {RoundEvent::Waiting, t};
  e.endRound(t);
  return {RoundEvent::Ended, t, !ready};
}

}  // namespace gossip::engine
