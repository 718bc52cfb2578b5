// NodeRuntime's loop: what the node thread does on every pass, after a round, per status tick, on a
// rejoin and at the stop (node_runtime_impl.h says how the node is split and who touches what).
#include <cmath>
#include <fstream>
#include <csignal>

#include "core/error.h"
#include "daemon/node/cluster_identity.h"
#include "daemon/node/model_meta.h"
#include "daemon/node/node_runtime_impl.h"
#include "daemon/node/node_status.h"
#include "membership/membership.h"

namespace gossip::daemon {
using detail::writeTextAtomic;

namespace {

// A lock-free atomic is both async-signal-safe and ordered across threads (a volatile sig_atomic_t is
// only the former).
std::atomic<bool> gStop{false};
static_assert(std::atomic<bool>::is_always_lock_free, "the stop flag is written from a signal handler");
extern "C" void onStopSignal(int) { gStop.store(true, std::memory_order_relaxed); }

}  // namespace

const std::atomic<bool>& detail::stopRequested() { return gStop; }

void installStopSignals() {
  struct sigaction sa {};
  sa.sa_handler = onStopSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);  // a closed terminal: stop cleanly too (it killed the node with no checkpoint)
}

int NodeRuntime::run() { return impl_->run(); }

void NodeRuntime::Impl::pumpIncoming(std::uint64_t now) {
  links->pump(now, [this](const engine::RawFrame& f, std::uint64_t t) { statusGossip->receive(f, t); });
}

// Membership changes to the engine (the transport's were applied on the membership thread); when the
// engine takes them is the lifecycle's call (Lifecycle::viewChanged).
void NodeRuntime::Impl::onMembership(std::uint64_t now) {
  if (!report.memberEvents(membership->takeEvents(), *statusGossip)) return;
  if (!life.viewChanged(now)) return;
  if (engine->graphFallback())
    nodeLog->warn("{} cannot serve {} members; using the fallback graph (docs/daemon.md)", c.cluster.topology,
                  membership->alive().size());
}

// Handshakes that failed at the transport (issue 28: CurveZMQ on at one end and off at the other failed
// before any refusal could be sent, and the joiner only said that no seed answered). One line per address
// at once, then at most one a minute with the count since: libzmq retries every reconnect interval. With
// mismatched mechanisms whichever end reads the other's greeting first names the mismatch and closes, and
// the other end sees only the close (a failure without detail), on some attempts or on all of them (its
// line names the likely cause too): such a failure is logged while nothing more specific was seen for that
// address. A node that tried twice in its start timeout may give the other end no more than one event.
void NodeRuntime::Impl::reportHandshakeFailures() {
  const auto failures = net->takeHandshakeFailures();
  if (failures.empty()) return;
  const auto now = env.now();
  for (const auto& f : failures) {
    auto& seen = handshakeLogged[(f.incoming ? "in " : "out ") + f.endpoint];
    const bool vague = f.kind == peer::HandshakeFailure::Kind::Vague;
    ++seen.count;
    const std::string line = f.describe(c.security.enable);
    if (!f.incoming && (!vague || lastHandshakeFailure.empty())) lastHandshakeFailure = line;
    if (vague && seen.specific) continue;
    if (!vague && !seen.specific) {
      seen.specific = true;
      seen.at = {};  // the first specific failure is logged at once
    }
    if (seen.at != Clock::time_point{} && now - seen.at < std::chrono::minutes(1)) continue;
    memberLog->warn("{}{}", line, seen.count > 1 ? " (" + std::to_string(seen.count) + " failed handshakes so far)" : "");
    seen.at = now;
  }
}

void NodeRuntime::Impl::onRefusals() {
  using Reason = peer::Refusal::Reason;
  auto r = membership->takeRefusals();
  for (const auto& x : r.refused) {
    ++joinsRefused[x.reason == Reason::Identity ? "identity" : x.reason == Reason::Foreign ? "foreign" : "duplicate_id"];
    if (!refusalsLogged.emplace(x.peer, x.endpoint + x.detail).second) continue;  // once: it retries its Join
    if (x.reason == Reason::Foreign)
      memberLog->warn("refused the messages of node {} ({}): it runs with another cluster identity and is not a member "
                      "here (left running with an earlier configuration?); it was sent this cluster's identity",
                      x.peer, x.endpoint);
    else if (x.reason == Reason::Identity)
      memberLog->warn("refused node {} ({}): it belongs to another cluster: {}", x.peer, x.endpoint,
                      describeIdentityDifference(identity, x.detail, "here", "there"));
    else
      memberLog->warn("refused node {} ({}): node.id {} is held by the live member at {}, another data directory",
                      x.peer, x.endpoint, x.peer, x.detail);
  }
  reportHandshakeFailures();
  if (!r.refusedBy) return;
  const auto& by = *r.refusedBy;
  const std::string who = "node " + std::to_string(id) + " was refused by node " + std::to_string(by.peer) + " (" + by.endpoint + "): ";
  if (by.reason == Reason::Identity)
    throw RefusedError(who + "this node's cluster differs: " + describeIdentityDifference(identity, by.detail, "here", "there") +
                       " (docs/daemon.md, \"Cluster identity\")");
  throw RefusedError(who + "node.id " + std::to_string(id) + " is held by the live member at " + by.detail +
                     ", which runs from another data directory; give this node another node.id, or stop that one");
}

void NodeRuntime::Impl::afterRound(Round done) {
  if (evaluation && done % c.monitor.eval_every == 0) evaluation->submit(done, engine->node().algorithm().x());
  if (c.node.checkpoint_every && done % c.node.checkpoint_every == 0) checkpoint(done);
}

// The last round is done (or a stop signal ended training): the whole test set's accuracy, after any
// periodic evaluation still running (the last word is the whole set's), and the last checkpoint.
void NodeRuntime::Impl::finish(NodeState end) {
  if (end == NodeState::Done && fullTest) {
    background->drain();
    if (evaluation) (void)evaluation->take();
    accuracy = problem->model->accuracy(engine->node().algorithm().x(), *fullTest);
    accuracySamples = fullTest->samples();
  }
  checkpoint(engine->nextRound());
}

// Streamed to temp files here (the state changes next round), committed on the background
// (checkpoint_store.h): no copy of the state is held.
void NodeRuntime::Impl::checkpoint(Round next) {
  checkpointWriter->rethrowFailure();
  const auto& x = engine->node().algorithm().x();
  const bool named = bridge && bridge->layout() && !bridge->layout()->tensors.empty();
  auto meta = bridge ? nlohmann::json{{"model", "external"}, {"dim", x.size()},
                                      {"layout", named ? "model_layout.json" : "the trainer's flat parameter vector"},
                                      {"round", next}, {"node", id}, {"incarnation", incarnation}}
                     : modelMeta(c, *problem->model, problem->train, next, id, incarnation);
  checkpointWriter->submit(streamCheckpoint(checkpoints, dir, id, next,
                                            [this](ByteWriter& w) { engine->node().save(w); },
                                            {x.data(), static_cast<std::size_t>(x.size())}, std::move(meta)));
}

// What the node learned since the last pass from elsewhere: a finished periodic evaluation, or the
// accuracy a trainer reported.
void NodeRuntime::Impl::takeAccuracy(std::uint64_t now) {
  if (evaluation)
    if (const auto r = evaluation->take()) accuracy = r->accuracy, accuracySamples = r->samples;
  if (!bridge) return;
  // Until its first round a resumed node's engine says round 0; its round is the checkpoint's (a trainer
  // re-attaching then was told 0, and an LR schedule on g.round jumped: 518 -> 0 -> 696).
  bridge->poll(now, &engine->node().algorithm().x(), life.round());
  if (std::isfinite(bridge->reportedAccuracy())) {
    accuracy = bridge->reportedAccuracy();
    accuracySamples = 0;  // the trainer's own test set, of a size it does not report
  }
}

// This tick's snapshot (node_status.h): status.json, /status, /metrics and /cluster show the same numbers.
void NodeRuntime::Impl::writeStatus(std::uint64_t now, bool force) {
  if (!force && now < nextStatus) return;
  nextStatus = now + c.monitor.status_every_ms;
  statusGossip->noteViewGraph(engine->viewGraph());
  const auto written = checkpointWriter->written();
  const NodeStatus s = collectStatus({.c = &c, .id = id, .incarnation = incarnation, .state = life.state(), .round = life.round(),
                                      .isolated = life.isolated(), .failure = failure, .endpoint = advertised, .engine = engine.get(), .membership = membership.get(),
                                      .transport = net.get(), .links = links.get(), .gossip = statusGossip.get(),
                                      .record = &life.record(), .report = &report, .bridge = bridge,
                                      .accuracy = accuracy, .accuracySamples = accuracySamples,
                                      .lastCheckpoint = written.round, .joinsRefused = &joinsRefused,
                                      .lastCheckpointAt = written.atMs},
                                     now);
  statusGossip->refresh(now, s);  // this node's summary and /cluster
  std::string text = renderStatusJson(s);
  try {
    writeTextAtomic(dir / "status.json", text, /*durable=*/false);  // rewritten every tick
  } catch (const IoError&) {
    if (!finished(life.state())) throw;
    // Leaving on a full disk (failOnDisk): there is no room for a second copy, so overwrite in place,
    // in the blocks the old one frees; a reader may see a torn file for that moment, never a stale state.
    std::ofstream out(dir / "status.json", std::ios::trunc);
    out << text;
    if (!out.flush()) nodeLog->warn("status.json could not be rewritten either");
  }
  if (http) {
    http->publish("/status", "application/json", std::move(text));
    http->publish("/metrics", "text/plain; version=0.0.4; charset=utf-8", renderMetrics(toMetrics(s)));
  }
}

std::uint64_t NodeRuntime::Impl::bytesSent() const {
  const auto& st = engine->stats();
  return st.model_bytes_sent + st.control_bytes_sent + links->membershipBytes();
}

// Someone declared this life dead: go on as a new incarnation with the same model and no edges.
void NodeRuntime::Impl::rejoinAsNewIncarnation(std::uint64_t now) {
  nodeLog->warn("declared dead by the cluster; rejoining as incarnation {}", incarnation + 1);
  statusGossip->noteEvent(id, incarnation + 1, "rejoined", "this node was declared dead; rejoining as incarnation " + std::to_string(incarnation + 1));
  checkpointWriter->drain();  // the old life's checkpoints are on disk before the new life begins
  membership->stop();  // its SendFn reads `incarnation`; makeMembership starts it again with the new life
  const LifeCarry carry = LifeCarry::takeFrom(*engine);
  // A round the trainer waits for is abandoned with the engine: give it the model as it is.
  if (bridge) bridge->finishRound(engine->node().algorithm().x(), carry.next, false);
  writeTextAtomic(dir / "incarnation", std::to_string(incarnation + 1) + "\n");
  incarnation += 1;
  links->setIncarnation(incarnation);
  statusGossip->setIncarnation(incarnation);
  // The new life's seeds (daemon/node/join_seeds.h): the accuser that won, then everyone we knew.
  rejoinVia = membership->rejoinVia();
  extraSeeds = knownEndpoints(membership->members(), id);
  // New connections to everyone (see PeerLinks::followMembers): ours may be stuck behind a cut link.
  links->forgetAll();
  driver.reset();  // it refers to the engine
  engine.reset();
  report.engineReplaced();
  links->resetEngineTransport();
  makeEngine();
  carry.putInto(*engine);
  makeMembership();
  startMembership();
  life.rejoined(carry.next, now);
}

void NodeRuntime::Impl::startMembership() {
  if (!env.stepped) membership->start();
}

// What run() and step() do with an error out of the loop.
std::optional<int> NodeRuntime::Impl::guarded(const std::function<std::optional<int>()>& f) {
  try {
    return f();
  } catch (const IoError& e) {
    failOnDisk(e);
  } catch (const UnreachableError& e) {
    if (lastHandshakeFailure.empty()) throw;
    throw UnreachableError(std::string(e.what()) + "; " + lastHandshakeFailure);
  }
}

int NodeRuntime::Impl::run() {
  GOSSIP_CHECK(!env.stepped, "NodeRuntime::run is for a node with threads; a stepped node is driven by step()");
  if (!engine) {
    nodeLog->info("stopped before a trainer attached");
    return 0;
  }
  startMembership();
  return *guarded([this]() -> std::optional<int> {
    for (;;) {
      if (const auto code = pass(nowMs())) return code;
      if (!progressed) waitForFrames(std::chrono::milliseconds(leavingUntil ? 10 : 2));
    }
  });
}

std::optional<int> NodeRuntime::Impl::step() {
  GOSSIP_CHECK(env.stepped, "NodeRuntime::step is for a node built with NodeEnvironment::stepped");
  if (!engine) return 0;
  if (exitCode) return exitCode;
  exitCode = guarded([this] {
    membership->step(std::chrono::milliseconds(0));
    return pass(nowMs());
  });
  return exitCode;
}

// Sleeps until the next thing to do could be there: the trainer's request when the next step is the
// trainer's, otherwise a frame.
void NodeRuntime::Impl::waitForFrames(std::chrono::milliseconds timeout) {
  if (trainer && trainer->waiting() && !leavingUntil)
    bridge->waitReadable(static_cast<int>(timeout.count()));
  else
    net->waitReadable(timeout);
}

// A write into node.data_dir failed (a full disk, a directory gone read-only): no checkpoint can be trusted
// to land, so the node leaves the cluster cleanly (a leave, not a death, at the others), says so in
// status.json if that can still be written, and ends with one line naming the path, the cause and the
// newest checkpoint on disk (exit 2). Issue 28: a full disk was "internal error", exit 1, no leave, and
// status.json stayed at "joining" (gossipd health said healthy for 10 s).
void NodeRuntime::Impl::failOnDisk(const IoError& e) {
  nodeLog->error("{}; leaving the cluster", e.what());
  failure = e.what();
  announceLeave();
  // 200 ms for the leave on the wire, taking frames meanwhile (a stepped node's network has it already).
  for (const std::uint64_t until = nowMs() + 200; !env.stepped && nowMs() < until;) {
    pumpIncoming(nowMs());
    net->waitReadable(std::chrono::milliseconds(10));
  }
  writeStatus(nowMs(), true);
  const Round last = checkpointWriter->written().round;
  throw ConfigError(std::string(e.what()) + "; the node left the cluster. Free space (or fix the permissions) in node.data_dir '" +
                    dir.string() + "' and restart it" +
                    (last ? "; the newest checkpoint it wrote is for round " + std::to_string(last) : std::string()));
}

// One pass of the node thread's loop (node_runtime.h). Once the lifecycle has said stop, passes only take
// frames until the leave's 200 ms are over, then end the stop.
std::optional<int> NodeRuntime::Impl::pass(std::uint64_t now) {
  progressed = false;
  pumpIncoming(now);
  if (leavingUntil) {
    if (now < *leavingUntil) return std::nullopt;
    return endStop();
  }
  takeAccuracy(now);
  checkpointWriter->rethrowFailure();  // a write on the background failed: the run ends with its error
  onMembership(now);  // probes, acks and disconnect hints are the membership thread's (MembershipRunner)
  onRefusals();
  if (membership->declaredDead() && !finished(life.state())) rejoinAsNewIncarnation(now);
  switch (life.step(now)) {
    case Lifecycle::Outcome::Continue: break;
    case Lifecycle::Outcome::Stop: beginStop(false); return std::nullopt;
    case Lifecycle::Outcome::Finished: beginStop(true); return std::nullopt;
  }
  writeStatus(now, false);
  statusGossip->gossip(now);
  report.progress(now, [&] {
    return NodeReport::Progress{life.round(), life.record().loss, accuracy, membership->alive().size(),
                                engine->links().size(), bytesSent(), life.state(),
                                bridge ? std::optional(bridge->stateName(now)) : std::nullopt};
  });
  report.rejections(now, engine->stats());
  progressed = life.takeProgress();
  return std::nullopt;
}

// Stopped and the leave sent; the transport's linger flushes the rest.
void NodeRuntime::Impl::announceLeave() {
  life.markStopped();
  membership->leave();
}

// The last checkpoint (unless the lifecycle wrote it), Stopped, the leave announced; the passes of the
// next 200 ms only take frames (the leave's time on the wire), then endStop.
void NodeRuntime::Impl::beginStop(bool checkpointed) {
  if (!checkpointed && life.state() == NodeState::Training && !engine->inRound()) checkpoint(engine->nextRound());
  announceLeave();
  leavingUntil = nowMs() + 200;  // from the leave, not from before the checkpoint (a large model's takes a while)
}

int NodeRuntime::Impl::endStop() {
  checkpointWriter->drain();  // the last checkpoint and model files are on disk before we say so
  writeStatus(nowMs(), true);
  nodeLog->info("{} at round {}, loss {:.4f}{}, sent {:.2f} MB", nodeStateName(life.state()), engine->nextRound(),
                life.record().loss,
                accuracy >= 0 ? ", accuracy " + std::to_string(100 * accuracy).substr(0, 5) + "%" +
                                    (accuracySamples ? " (" + std::to_string(accuracySamples) + " test samples)" : "")
                              : "",
                static_cast<double>(bytesSent()) / 1e6);
  return 0;
}

std::optional<int> NodeRuntime::step() { return impl_->step(); }

}  // namespace gossip::daemon
