#include "daemon/node/lifecycle.h"

#include <algorithm>
#include <utility>

#include "core/error.h"

namespace gossip::daemon {

Lifecycle::Lifecycle(const Config& c, PeerId id, logging::Logger log, const std::atomic<bool>& stop, Hooks hooks)
    : c_(c), id_(id), log_(std::move(log)), stop_(stop), hooks_(std::move(hooks)) {}

void Lifecycle::resumeAt(Round next) {
  resumed_ = true;
  resumeRound_ = next;
}

void Lifecycle::rejoined(Round next, std::uint64_t now) {
  resumed_ = true;
  rejoined_ = true;
  resumeRound_ = next;
  isolated_ = false;
  unansweredLogged_ = 0;  // a new Membership counts its attempts afresh
  state_ = NodeState::Joining;
  since_ = now;
}

LifeCarry LifeCarry::takeFrom(engine::LinkedEngine& old) {
  LifeCarry carry;
  ByteWriter w(carry.state);
  old.node().save(w);
  carry.next = old.inRound() ? old.mixingRound() : old.nextRound();
  return carry;
}

void LifeCarry::putInto(engine::LinkedEngine& fresh) const {
  ByteReader r(state, "node state");
  fresh.node().load(r);
  fresh.dropAllEdges();
}

std::optional<Round> resumeFromNewest(CheckpointStore& store, engine::LinkedEngine& engine, PeerId id, Round rounds,
                                      const std::filesystem::path& dataDir) {
  const auto next = store.loadNewest(id, [&](ByteReader& r) { engine.node().load(r); });
  if (!next) return std::nullopt;
  if (*next >= rounds)
    throw RefusedError("node.data_dir: the run in '" + dataDir.string() + "' is finished (its newest checkpoint is at round " +
                       std::to_string(*next) + ", algorithm.rounds = " + std::to_string(rounds) +
                       "; the model is in model.npy); raise algorithm.rounds to train on, or start anew with --fresh "
                       "(the run is moved to previous/) or in an empty node.data_dir");
  store.setAsideSkipped();  // a newer file it could not resume no longer outranks the ones that verify
  engine.dropAllEdges();
  return next;
}

bool Lifecycle::lateStarter() const { return resumed_ || p_.incarnation > 0 || id_ >= c_.cluster.nodes; }

Lifecycle::Outcome Lifecycle::step(std::uint64_t now) {
  if (!stepped_) {
    // cluster.start_timeout_ms counts from here, when the node has its data and model and begins to join,
    // not from the process's start: a 100M-parameter synthetic problem took 60 s to generate, and the
    // joiner gave up at its first step ("no seed answered within 60000 ms; tried 0 times").
    stepped_ = true;
    if (state_ == NodeState::Joining) since_ = now;
  }
  // While joining the engine has no view yet: frames for it wait in its queue (early edge proposals are
  // answered once the view is installed instead of being refused).
  if (state_ != NodeState::Joining) p_.driver->pump(now);
  switch (state_) {
    case NodeState::Joining:
      if (stop_) return Outcome::Stop;
      stepJoining(now);
      break;
    case NodeState::Syncing:
      if (stop_) return Outcome::Stop;
      stepSyncing(now);
      break;
    case NodeState::Training:
      if (!stepTraining(now)) beginFinishing(now);
      break;
    case NodeState::Stopped:
    case NodeState::Done: {
      // Neighbours still mixing our last round need its frames (retransmitted if lost): leave once all
      // are acknowledged (replica methods) or a round deadline has passed (stateless).
      const bool acked = p_.engine->stateless() ? now >= finishDeadline_ - 2 * c_.cluster.link_timeout_ms
                                                : p_.engine->unackedFrames() == 0;
      if (acked || now >= finishDeadline_) return Outcome::Finished;
      break;
    }
  }
  // A SIGTERM mid-round lets the round finish (bounded), so the checkpoint holds a whole round.
  if (stop_ && !stopAt_) stopAt_ = now;
  if (stop_ && state_ == NodeState::Training && p_.engine->inRound() && now > stopAt_ + 2000) return Outcome::Stop;
  return Outcome::Continue;
}

bool Lifecycle::viewChanged(std::uint64_t now) {
  if (state_ == NodeState::Joining || finished(state_)) return false;
  p_.engine->setMembers(p_.membership->alive(), p_.engine->nextRound(), now);
  return true;
}

void Lifecycle::startTraining(Round first, std::uint64_t now) {
  state_ = NodeState::Training;
  p_.engine->setMembers(p_.membership->alive(), first, now);
  p_.engine->holdEdges(false, now);
  p_.engine->cancelStateFetch();  // a node that gave up on a transfer must not take a late one mid-training
  log_->info("training from round {} with {} members", first, p_.membership->alive().size());
}

// No member answered our Join yet. One line per unanswered attempt (the membership retries with backoff,
// 0.2 s doubling up to 5 s), and for this process's first life an end after cluster.start_timeout_ms:
// a seed that was a closed port, an HTTP server or an unknown host left the node joining forever with
// nothing logged (issue 28). A rejoin keeps trying: its cluster existed a moment ago.
void Lifecycle::waitForSeeds(std::uint64_t now) {
  const std::uint64_t attempts = p_.membership->stats().join_attempts;
  const bool timedOut = !everJoined_ && now >= since_ + c_.cluster.start_timeout_ms;
  if (attempts <= unansweredLogged_ + 1 && !timedOut) return;  // the common pass: nothing to say
  std::string seeds;
  for (const auto& s : c_.cluster.seeds) seeds += (seeds.empty() ? "" : ", ") + s;
  if (seeds.empty()) seeds = "the members it knew";
  if (attempts > unansweredLogged_ + 1) {  // attempt k went out: k - 1 were not answered
    unansweredLogged_ = attempts - 1;
    log_->warn("no answer yet from {} ({} unanswered join attempts){}", seeds, unansweredLogged_,
               everJoined_ ? "; still trying"
                           : "; still trying until cluster.start_timeout_ms (" + std::to_string(c_.cluster.start_timeout_ms) +
                                 " ms) has passed");
  }
  if (timedOut)
    throw UnreachableError("no seed answered within cluster.start_timeout_ms (" + std::to_string(c_.cluster.start_timeout_ms) +
                           " ms; tried " + seeds + " " + std::to_string(attempts) +
                           " times): check cluster.seeds, and that a member of this cluster runs and is reachable there");
}

void Lifecycle::stepJoining(std::uint64_t now) {
  if (!p_.membership->joined()) return waitForSeeds(now);
  everJoined_ = true;
  const auto alive = p_.membership->alive();
  const bool full = alive.size() >= c_.cluster.nodes;
  // A late starter syncs with whoever is there, but one alone (a whole cluster resuming: the first node
  // back knows nobody yet) waits for members like a first start: it began alone and ran at compute speed
  // (a 4-node resume: node 0 went from round 15127 to 34852 before the others were back, and they all
  // took its model).
  if (!full && now < since_ + c_.cluster.start_timeout_ms && (!lateStarter() || alive.size() <= 1)) return;
  if (!lateStarter()) return startTraining(0, now);
  // A restarted or late node asks a neighbour of its view for the current model and round; it agrees to
  // no edge before it has them (it would be asked to mix rounds it has not reached).
  auto& e = *p_.engine;
  e.holdEdges(true, now);
  e.setMembers(alive, resumed_ ? resumeRound_ : 0, now);
  // A node resumed from its own checkpoint keeps a copy of that state: if the neighbour turns out to be
  // no further ahead than linked nodes normally are, the checkpoint is put back (stepSyncing).
  ownState_.reset();
  if (resumed_ && !rejoined_) {
    ownState_.emplace();
    ByteWriter w(*ownState_);
    e.node().save(w);
  }
  const auto& nbrs = e.viewNeighbors();
  if (nbrs.empty()) {
    e.holdEdges(false, now);
    return startTraining(resumed_ ? resumeRound_ : 0, now);
  }
  // Every neighbour of the view serves a part of the model (engine/state_fetch.h): a large model comes in
  // at the joiner's download speed, not at one neighbour's upload speed.
  e.stepStateFetch(now);
  e.requestState(nbrs, e.nextRound());
  log_->info("fetching the current model ({:.1f} MB) from {} neighbours",
             static_cast<double>(e.node().algorithm().x().size()) * static_cast<double>(sizeof(Real)) / 1e6, nbrs.size());
  stateAskedAt_ = now;
  stateLoggedAt_ = now;
  state_ = NodeState::Syncing;
  since_ = now;
}

void Lifecycle::stepSyncing(std::uint64_t now) {
  auto& e = *p_.engine;
  if (auto r = e.takeStateRound()) {
    // A restarted or new node takes the neighbour's round with its model (DESIGN.md §4: linked nodes stay
    // within a round of each other): its own, from a checkpoint, is behind. A node that was declared dead
    // while it ran on (a cut link, a partition) keeps the lower of the two rounds: the side that was cut
    // off trains alone, faster, and whoever took its round would wait for neighbours far behind
    // (tests/netns/netns_cut.sh: node 0 rejoined with the cut-off node's round 107400 while its other
    // neighbours were at 9909, and stopped). The cut-off node itself rejoins too and so comes back down.
    const Round next = rejoined_ ? std::min(*r, resumeRound_) : *r;
    if (p_.trainer) p_.trainer->bridge().modelChanged();  // the neighbour's model replaced ours
    if (ownState_ && *r <= resumeRound_ + engine::kMaxRoundsAhead) {
      // The neighbour is not ahead of our checkpoint by more than linked nodes drift apart: the whole
      // cluster resumed (a Ctrl-C, then the same command again). Our own checkpoint is as current as its
      // model, and is ours: put it back (issue 28: 7 of 8 nodes replaced their checkpointed model with a
      // neighbour's on such a resume).
      ByteReader back(*ownState_, "own checkpointed state");
      e.node().load(back);
      ownState_.reset();
      log_->info("kept its own checkpoint of round {} (the neighbour is at round {}), continuing at round {}",
                 resumeRound_, *r, resumeRound_);
      return startTraining(resumeRound_, now);
    }
    ownState_.reset();
    log_->info("state transfer done, continuing at round {}", next);
    return startTraining(next, now);
  }
  e.stepStateFetch(now);  // requests due: windows with room, silent neighbours' chunks handed on
  if (now > stateAskedAt_ + 500) {
    // A neighbour may not know us yet (our join is still spreading) and the view may have changed: ask the
    // view's neighbours again; the chunks already in are kept.
    const auto& nbrs = e.viewNeighbors();
    if (!nbrs.empty()) e.requestState(nbrs, e.nextRound());
    stateAskedAt_ = now;
  }
  const auto progress = e.stateProgress();
  if (progress && progress->values_have > 0 && now >= stateLoggedAt_ + 5000) {
    // A 100M-parameter model is 400 MB: minutes on a slow link. Say how far it is.
    const double mb = static_cast<double>(sizeof(Real)) / 1e6;
    log_->info("state transfer: {:.1f} of {:.1f} MB from {} neighbours ({:.1f} MB/s)",
               static_cast<double>(progress->values_have) * mb, static_cast<double>(progress->dim) * mb,
               progress->sources_serving,
               static_cast<double>(progress->values_have) * mb * 1000.0 / static_cast<double>(std::max<std::uint64_t>(1, now - since_)));
    stateLoggedAt_ = now;
  }
  // Given up only when nothing new came for 5 s: a large model may take minutes, and comes in all along.
  const std::uint64_t lastNews = progress ? std::max(since_, progress->last_progress_ms) : since_;
  if (now > lastNews + 5000) {
    ownState_.reset();
    if (resumed_)  // its neighbours may be resuming too: a syncing node declines state requests
      log_->info("no neighbour gave its model within 5 s (they may be resuming too): continuing from its own checkpoint");
    else
      log_->warn("no state transfer within 5 s{}, starting from its own model",
                 progress && progress->values_have > 0 ? " (it stalled: no new chunk for 5 s)" : "");
    startTraining(resumed_ ? resumeRound_ : 0, now);
  }
}

// Returns false when the run is over. The driver (engine/round_driver.h, set up by the runtime) decides
// when a round begins and ends; this does the node's work around what it reports.
bool Lifecycle::stepTraining(std::uint64_t now) {
  auto& e = *p_.engine;
  if (!e.inRound() && stop_) return false;
  // Every other member dead (our network was cut, or all of them crashed): rounds wait for one to come
  // back. Alone, a node ran the rest of its rounds at compute speed, finished, and reported itself done
  // and healthy with a model of its shard alone (issue 28; in tests/netns/netns_split.sh it left the run
  // in the middle of the merge); and when its network comes back it rejoins with a state transfer that
  // replaces whatever it trained alone. Checked only with no view neighbour, so it costs nothing else.
  const bool isolated = !e.inRound() && e.viewNeighbors().empty() && p_.membership->isolated();
  if (isolated != isolated_) {
    isolated_ = isolated;
    if (isolated)
      log_->warn("every other member is dead: holding round {} until one of them is back (its network may be cut)",
                 e.nextRound());
    else
      log_->info("a member is back: training on from round {}", e.nextRound());
  }
  if (isolated) return true;
  const engine::RoundStep s = p_.driver->step(now);
  switch (s.event) {
    case engine::RoundEvent::Finished:
      return false;
    case engine::RoundEvent::Waiting:
      return true;
    case engine::RoundEvent::Began:
      roundBeganAt_ = std::chrono::steady_clock::now();
      progressed_ = true;
      return true;
    case engine::RoundEvent::Ended:
      break;
  }
  const Round t = s.round;
  if (p_.trainer && !p_.trainer->roundEnded(e.node().algorithm().x(), t + 1, t + 1 >= c_.algorithm.rounds))
    p_.trainer->bridge().modelChanged();  // a round the trainer did not see
  auto& r = record_;
  r.durations.observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - roundBeganAt_).count());
  r.loss = e.node().lastLoss();
  r.disagreement = e.node().disagreement();
  const double gamma = e.node().algorithm().consensusStep();
  if (gamma != r.gamma && std::isfinite(gamma) && std::isfinite(r.gamma)) {  // CHOCO halved its step
    log_->info("consensus step gamma {:.6g} -> {:.6g} at round {} (this node's disagreement kept growing)", r.gamma,
               gamma, t + 1);
  }
  r.gamma = gamma;
  if (const auto w = r.drift.afterRound(t + 1, r.disagreement, e.node().algorithm().x())) {
    log_->warn("warning: {}", *w);  // "warning: " kept: tests/integration/drift_warning.sh counts the lines
  }
  log_->debug("round {} mixed: loss {:.4f}, disagreement {:.4g}", t + 1, r.loss, r.disagreement);
  hooks_.afterRound(t + 1);
  progressed_ = true;
  return true;
}

void Lifecycle::beginFinishing(std::uint64_t now) {
  auto& e = *p_.engine;
  if (p_.trainer) p_.trainer->bridge().setDone(e.nextRound());
  state_ = stop_ ? NodeState::Stopped : NodeState::Done;
  hooks_.finish(state_);
  finishDeadline_ = now + 2 * c_.cluster.link_timeout_ms + c_.algorithm.round_timeout_ms;
  log_->info("{} at round {}; waiting for neighbours to acknowledge the last frames", nodeStateName(state_), e.nextRound());
}

}  // namespace gossip::daemon
