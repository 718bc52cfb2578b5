#pragma once
// RoundDriver: the one place that decides when a LinkedEngine (the daemon's protocol) begins and ends its rounds. The daemon
// (daemon/node/node_runtime.cc), the seeded protocol test (tests/unit/engine/test_links.cc) and the fuzz rig
// (fuzz/engine_rig.cc) all step their engines through it, so the tests run the policy production runs.
//
// A step does at most one of:
//   - begin round t (LinkedEngine::beginRound) when the engine may (readyToBegin, with the start barrier of
//     the options), the run is not over, and the caller's hook agrees (the daemon's trainer input);
//   - end the round in progress (LinkedEngine::endRound) when its messages are in (roundReady) or, for a
//     stateless method, when the round deadline of the options has passed.
// It returns what happened, and the caller does its own work from that (metrics, checkpoints, logs).
// Frames and timers are separate (pump): the daemon pumps the engine in phases where it runs no round
// (syncing, finishing).
//
// Why the barrier applies in every round (docs/engine.md, "The round driver"): a replica method's node
// that began a round while one of its view's edges was still being agreed (a rejoin, the merge after a
// partition) ran its rounds alone at compute speed; the barrier makes it wait for the edge instead.
//
// Not thread-safe: one thread drives one driver and its engine. The engine must outlive the driver.
#include <cstdint>
#include <functional>
#include <optional>

#include "engine/linked_engine.h"

namespace gossip::engine {

enum class StartBarrier {
  EveryRound,  // production: a replica round begins only when every view neighbour's edge is agreed for it
  None,        // only a proposal waiting for its answer holds a round back (tests of the barrier itself)
};

struct RoundDriverOptions {
  Round rounds = kNoRound;                      // the run is over when the next round would be this one
  StartBarrier barrier = StartBarrier::EveryRound;
  // Stateless methods: a round that has waited this long for its neighbours (ms since the first step after
  // it began, so the round's own local steps and encoding do not count) mixes what has arrived. None: wait
  // for every neighbour's frame (or its having gone past the round; LinkedEngine::roundReady).
  std::optional<std::uint64_t> roundTimeoutMs = std::nullopt;
};

enum class RoundEvent {
  Waiting,   // nothing to do yet
  Began,     // round `round` began (local work done, frames sent)
  Ended,     // round `round` was mixed
  Finished,  // no round in progress and the next would be options.rounds
};

struct RoundStep {
  RoundEvent event = RoundEvent::Waiting;
  Round round = 0;        // Began / Ended: that round. Waiting / Finished: the round in progress or next.
  bool deadline = false;  // Ended: by the stateless round deadline, not because every message was in
};

class RoundDriver {
 public:
  // Asked before round t begins, once the engine is ready for it: false holds the round (asked again at
  // the next step). The daemon supplies its trainer's input here.
  using BeforeBegin = std::function<bool(Round t, std::uint64_t nowMs)>;

  RoundDriver(LinkedEngine& engine, RoundDriverOptions options, BeforeBegin beforeBegin = {});

  // Takes the frames waiting in the transport and runs the engine's due timers (retransmits, retries).
  void pump(std::uint64_t nowMs);
  // Begins or ends at most one round (see the top of this file). Does not pump.
  RoundStep step(std::uint64_t nowMs);

  const RoundDriverOptions& options() const { return opts_; }
  LinkedEngine& engine() { return engine_; }

 private:
  LinkedEngine& engine_;
  RoundDriverOptions opts_;
  BeforeBegin beforeBegin_;
  // When the round in progress started waiting for its neighbours: the first step after it began (for the
  // stateless deadline; empty right after beginRound).
  std::optional<std::uint64_t> waitingSinceMs_;
};

}  // namespace gossip::engine
