// Membership over a simulated network: a virtual clock in 10 ms steps, per-message delay, loss, partitions
// and paused (SIGSTOPped) nodes. Everything is seeded, so every run takes the same path.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/fnv1a.h"
#include "core/rng.h"
#include "core/serial.h"
#include "membership/membership.h"

using namespace gossip;
using namespace gossip::peer;
using namespace std::chrono_literals;
using ms = std::chrono::milliseconds;
using TP = MsClock::time_point;
using Kind = MembershipEvent::Kind;

namespace {

std::string endpointOf(PeerId id) { return "sim://" + std::to_string(id); }

struct SimNet {
  struct Node {
    std::unique_ptr<Membership> m;
    Incarnation incarnation = 0;
    bool paused = false;
    bool crashed = false;
    std::vector<std::pair<TP, MembershipEvent>> events;
  };
  struct Msg {
    PeerId from, to;
    Bytes payload;
    TP sent_at{};
  };

  explicit SimNet(std::uint64_t seed) : seed_(seed), rng_(seed) {}

  TP now = TP{} + 1000s;  // any origin: Membership only compares time points
  MembershipOptions options;
  double loss = 0.0;
  ms delay_min{1}, delay_max{10};
  bool queue_while_paused = false;  // a stopped process's socket buffers keep its messages
  std::set<std::pair<PeerId, PeerId>> blocked;  // (from, to) pairs that lose everything
  std::function<bool(PeerId from, PeerId to, const Bytes&)> drop;  // loses the messages it returns true for
  std::map<PeerId, Node> nodes;
  std::vector<Msg> sent;  // every message, if `capture`
  bool capture = false;
  bool strict = true;  // every send names a node and its endpoint (off when fuzzed input names anything)

  // `instance`: the node's data directory (0: unknown, never checked); `endpoint`: its address.
  void add(PeerId id, std::vector<std::string> seeds, Incarnation inc = 0, std::uint64_t instance = 0,
           std::string endpoint = {}) {
    Node& n = nodes[id];
    n.m = std::make_unique<Membership>(
        MemberInfo{id, inc, 0, endpoint.empty() ? endpointOf(id) : endpoint, MemberState::Alive, instance},
        std::move(seeds), options,
        [this, id](PeerId to, const std::string& ep, Bytes b) { route(id, to, ep, std::move(b)); },
        deriveSeed({seed_, id, inc}));
    n.incarnation = inc;
    n.paused = n.crashed = false;
  }

  // All nodes 1..count, joining through node 1.
  void addCluster(PeerId count) {
    add(1, {});
    for (PeerId id = 2; id <= count; ++id) add(id, {endpointOf(1)});
  }

  Membership& at(PeerId id) { return *nodes.at(id).m; }

  void route(PeerId from, PeerId to, const std::string& ep, Bytes b) {
    if (to == Membership::kUnknownPeer) {
      if (ep.rfind("sim://", 0) != 0) return;
      to = static_cast<PeerId>(std::stoul(ep.substr(6)));
    } else if (strict) {
      REQUIRE(ep == endpointOf(to));
    }
    if (capture) sent.push_back({from, to, b, now});
    if (loss > 0 && rng_.uniform() < loss) return;
    if (blocked.count({from, to})) return;
    if (drop && drop(from, to, b)) return;
    const auto span = static_cast<std::uint64_t>((delay_max - delay_min).count());
    const TP at = now + delay_min + ms(rng_.below(span + 1));
    inflight_.emplace(std::make_pair(at, order_++), Msg{from, to, std::move(b)});
  }

  void deliver(const Msg& msg) {
    auto it = nodes.find(msg.to);
    if (it == nodes.end() || it->second.crashed) return;
    if (it->second.paused) {
      if (queue_while_paused) held_.push_back(msg);
      return;
    }
    REQUIRE_NOTHROW(it->second.m->receive(msg.from, msg.payload, now));
  }

  void step() {
    now += 10ms;
    while (!inflight_.empty() && inflight_.begin()->first.first <= now) {
      const Msg msg = std::move(inflight_.begin()->second);
      inflight_.erase(inflight_.begin());
      deliver(msg);
    }
    for (auto& [id, n] : nodes) {
      if (n.paused || n.crashed) continue;
      n.m->tick(now);
      for (auto& e : n.m->takeEvents()) n.events.emplace_back(now, e);
    }
  }

  void resume(PeerId id) {
    nodes.at(id).paused = false;
    std::vector<Msg> held;
    std::swap(held, held_);
    for (auto& msg : held) {
      if (msg.to == id) deliver(msg);
      else held_.push_back(std::move(msg));
    }
  }

  void run(ms d) {
    const TP end = now + d;
    while (now < end) step();
  }

  // Steps until pred() holds; returns the virtual time it took, or `limit` + 1 ms if it never did.
  template <class Pred>
  ms runUntil(Pred pred, ms limit) {
    const TP start = now;
    while (!pred()) {
      if (now - start > limit) return limit + 1ms;
      step();
    }
    return std::chrono::duration_cast<ms>(now - start);
  }

  std::vector<PeerId> running() const {
    std::vector<PeerId> out;
    for (const auto& [id, n] : nodes)
      if (!n.crashed) out.push_back(id);
    return out;
  }

  // Every running node's alive view equals exactly `ids` (at their current incarnations).
  bool converged(const std::vector<PeerId>& ids) {
    std::vector<engine::Member> want;
    for (PeerId id : ids) want.push_back({id, nodes.at(id).incarnation});
    for (PeerId id : ids)
      if (nodes.at(id).m->alive() != want) return false;
    return true;
  }

  // As the daemon does for a running node told it is dead: a new incarnation that joins first through the
  // accuser whose side won, then through every member it held live. Adds the restarted ids to `rejoined`.
  void restartDeclaredDead(std::set<PeerId>& rejoined) {
    for (auto& [id, n] : nodes) {
      if (n.crashed || !n.m->declaredDead()) continue;
      std::vector<std::string> seeds;
      if (!n.m->rejoinVia().empty()) seeds.push_back(n.m->rejoinVia());
      for (const auto& m : n.m->members())
        if (m.id != id && (m.state == MemberState::Alive || m.state == MemberState::Suspect)) seeds.push_back(m.endpoint);
      add(id, seeds, n.incarnation + 1);  // replaces the value only: the iteration goes on
      rejoined.insert(id);
    }
  }

  std::optional<MemberInfo> infoAt(PeerId observer, PeerId about) {
    for (auto& m : at(observer).members())
      if (m.id == about) return m;
    return std::nullopt;
  }

  std::size_t countEvents(Kind kind, std::optional<PeerId> about = std::nullopt) const {
    std::size_t c = 0;
    for (const auto& [id, n] : nodes)
      for (const auto& [t, e] : n.events)
        if (e.kind == kind && (!about || e.id == *about)) ++c;
    return c;
  }

 private:
  std::uint64_t seed_;
  Rng rng_;  // loss and delay draws
  std::map<std::pair<TP, std::uint64_t>, Msg> inflight_;
  std::uint64_t order_ = 0;
  std::vector<Msg> held_;
};

std::vector<PeerId> iota(PeerId from, PeerId to) {
  std::vector<PeerId> v;
  for (PeerId i = from; i <= to; ++i) v.push_back(i);
  return v;
}

}  // namespace

TEST_CASE("membership: 8 nodes joining through one seed converge to the same view") {
  SimNet net(1);
  net.addCluster(8);
  const ms took = net.runUntil([&] { return net.converged(iota(1, 8)); }, 10s);
  MESSAGE("8 nodes converged after " << took.count() << " ms");
  CHECK(took <= 3s);
  for (PeerId id = 1; id <= 8; ++id) {
    CHECK(net.at(id).joined());
    CHECK_FALSE(net.at(id).isolated());
    CHECK(net.at(id).stats().join_attempts == (id == 1 ? 0u : 1u));
  }
  // And it stays that way on a quiet network.
  net.run(20s);
  CHECK(net.converged(iota(1, 8)));
  CHECK(net.countEvents(Kind::Suspected) == 0);
}

TEST_CASE("membership: a crashed node is declared dead everywhere within the bound") {
  SimNet net(2);
  net.addCluster(8);
  REQUIRE(net.runUntil([&] { return net.converged(iota(1, 8)); }, 10s) <= 10s);
  net.run(2s);
  const ms timeout = net.at(1).suspicionTimeout();
  CHECK(timeout == 800ms);  // 4 * max(1, log10(8)) * 200 ms
  const ms bound = net.options.probe_interval * 8 + timeout;

  for (PeerId victim : {PeerId{5}, PeerId{1}}) {  // an ordinary node, then the seed itself
    net.nodes.at(victim).crashed = true;
    const TP crash = net.now;
    std::vector<PeerId> others = net.running();
    std::map<PeerId, ms> seen;
    net.runUntil(
        [&] {
          for (PeerId id : others)
            if (!seen.count(id) && net.infoAt(id, victim)->state == MemberState::Dead)
              seen[id] = std::chrono::duration_cast<ms>(net.now - crash);
          return seen.size() == others.size();
        },
        bound * 3);
    REQUIRE(seen.size() == others.size());
    ms first = ms::max(), last = ms::zero();
    for (auto& [id, t] : seen) first = std::min(first, t), last = std::max(last, t);
    MESSAGE("node " << victim << " dead at the first node after " << first.count() << " ms, at all "
                    << others.size() << " after " << last.count() << " ms (bound " << bound.count() << " ms)");
    CHECK(last <= bound);
    CHECK(net.converged(others));
  }
  // Nobody else was taken for dead.
  CHECK(net.countEvents(Kind::Died) == 7 + 6);
}

TEST_CASE("membership: no false deaths among 32 nodes with 10% message loss") {
  SimNet net(3);
  net.loss = 0.10;
  net.delay_max = 20ms;
  net.addCluster(32);
  const ms took = net.runUntil([&] { return net.converged(iota(1, 32)); }, 20s);
  MESSAGE("32 nodes with 10% loss converged after " << took.count() << " ms");
  REQUIRE(took <= 20s);
  net.run(120s);
  std::uint64_t raised = 0, refuted = 0, probes = 0, indirect = 0;
  for (auto& [id, n] : net.nodes) {
    raised += n.m->stats().suspicions_raised;
    refuted += n.m->stats().suspicions_refuted;
    probes += n.m->stats().probes_sent;
    indirect += n.m->stats().indirect_probes_sent;
  }
  MESSAGE("120 s: " << probes << " probes, " << indirect << " ping-reqs, " << raised << " suspicions raised, "
                    << refuted << " refuted, " << net.countEvents(Kind::Died) << " deaths");
  CHECK(net.countEvents(Kind::Died) == 0);
  CHECK(raised > 0);  // the loss does cause suspicions, which is what this test is about...
  CHECK(refuted > 0);  // ...and they get refuted
  CHECK(net.countEvents(Kind::Refuted) > 0);
  net.loss = 0;
  net.run(3s);  // let the last refutations spread
  CHECK(net.converged(iota(1, 32)));
  for (auto& [id, n] : net.nodes) CHECK_FALSE(n.m->declaredDead());
}

TEST_CASE("membership: a short pause is refuted - a long one is death") {
  SimNet net(4);
  net.queue_while_paused = true;
  net.addCluster(8);
  REQUIRE(net.runUntil([&] { return net.converged(iota(1, 8)); }, 10s) <= 10s);
  net.run(1s);
  const ms timeout = net.at(1).suspicionTimeout();

  SUBCASE("shorter than the suspicion timeout") {
    net.nodes.at(3).paused = true;
    net.run(timeout - 200ms);
    net.resume(3);
    net.run(5s);
    MESSAGE("node 3 suspected " << net.countEvents(Kind::Suspected, 3) << " times, refuted "
                                << net.at(3).stats().suspicions_refuted << " times");
    CHECK(net.countEvents(Kind::Suspected, 3) > 0);
    CHECK(net.at(3).stats().suspicions_refuted > 0);
    CHECK(net.countEvents(Kind::Died) == 0);
    CHECK_FALSE(net.at(3).declaredDead());
    CHECK(net.converged(iota(1, 8)));
    CHECK(net.infoAt(1, 3)->version > 0);
  }
  SUBCASE("longer than the suspicion timeout, messages to it lost") {
    net.queue_while_paused = false;
    net.nodes.at(3).paused = true;
    net.run(timeout + 3s);
    for (PeerId id : {1, 2, 4, 5, 6, 7, 8}) CHECK(net.infoAt(id, 3)->state == MemberState::Dead);
    CHECK_FALSE(net.at(3).declaredDead());
    net.resume(3);
    const ms took = net.runUntil([&] { return net.at(3).declaredDead(); }, 5s);
    MESSAGE("resumed node learned it was declared dead after " << took.count() << " ms");
    CHECK(took <= 1s);
    net.run(5s);
    // Its pings after resuming do not bring it back, and it suspected nobody for the time it was away.
    for (PeerId id : {1, 2, 4, 5, 6, 7, 8}) CHECK(net.infoAt(id, 3)->state == MemberState::Dead);
    CHECK(net.at(3).stats().suspicions_raised == 0);
    CHECK(net.countEvents(Kind::Died) == 7);
  }
}

TEST_CASE("membership: a node cut off from everyone learns it was declared dead once the network heals") {
  SimNet net(9);
  net.addCluster(5);
  REQUIRE(net.runUntil([&] { return net.converged(iota(1, 5)); }, 10s) <= 10s);
  net.run(1s);
  // Node 3's network is disconnected: both sides declare the other dead.
  for (PeerId id : {1, 2, 4, 5}) {
    net.blocked.insert({3, id});
    net.blocked.insert({id, 3});
  }
  const ms timeout = net.at(1).suspicionTimeout();
  net.run(timeout + 3s);
  CHECK(net.at(3).alive() == std::vector<engine::Member>{{3, 0}});
  CHECK(net.at(3).isolated());  // the daemon holds its rounds
  for (PeerId id : {1, 2, 4, 5}) CHECK(net.infoAt(id, 3)->state == MemberState::Dead);
  for (PeerId id : {1, 2, 4, 5}) CHECK_FALSE(net.at(id).isolated());
  CHECK_FALSE(net.at(3).declaredDead());
  // Half reconnected first, node 3 to the others only: its re-contact pings carry its verdicts on them.
  // Each contests the verdict (a Join back, which is lost) instead of taking it; before, each receiver
  // took its "death" and rejoined as a new incarnation.
  net.blocked.clear();
  for (PeerId id : {1, 2, 4, 5}) net.blocked.insert({id, 3});
  net.run(6s);
  std::uint64_t contested = 0;
  for (PeerId id : {1, 2, 4, 5}) {
    CHECK_FALSE(net.at(id).declaredDead());
    contested += net.at(id).stats().verdicts_contested;
  }
  CHECK(contested > 0);
  // Reconnected: nobody probes the dead, so only node 3's knocking can bring the two sides together.
  net.blocked.clear();
  const ms took = net.runUntil([&] { return net.at(3).declaredDead(); }, 10s);
  MESSAGE("reconnected node learned it was declared dead after " << took.count() << " ms");
  CHECK(took <= 10s);
  // The others never took it back as the old incarnation.
  for (PeerId id : {1, 2, 4, 5}) CHECK(net.infoAt(id, 3)->state == MemberState::Dead);
  // It rejoins through a member of the side that outnumbered it, and only it rejoins.
  const std::string via = net.at(3).rejoinVia();
  CHECK(via != "");
  net.add(3, {via}, 1);
  const ms merged = net.runUntil([&] { return net.converged(iota(1, 5)); }, 10s);
  MESSAGE("merged again " << merged.count() << " ms after it rejoined");
  CHECK(merged <= 5s);
  net.run(10s);
  CHECK(net.converged(iota(1, 5)));
  for (PeerId id : {1, 2, 4, 5}) {
    CHECK_FALSE(net.at(id).declaredDead());
    CHECK(net.nodes.at(id).incarnation == 0);
  }
  CHECK_FALSE(net.at(3).isolated());
}

TEST_CASE("membership: a restarted node replaces its old incarnation everywhere") {
  SimNet net(5);
  net.addCluster(8);
  REQUIRE(net.runUntil([&] { return net.converged(iota(1, 8)); }, 10s) <= 10s);
  net.run(1s);

  // Restarted at once, before anyone noticed the crash...
  net.add(4, {endpointOf(1)}, 1);
  ms took = net.runUntil([&] { return net.converged(iota(1, 8)); }, 10s);
  MESSAGE("incarnation 1 everywhere after " << took.count() << " ms");
  CHECK(took <= 3s);
  for (PeerId id : iota(1, 8)) CHECK(net.infoAt(id, 4)->incarnation == 1);
  for (PeerId id : iota(1, 8)) {
    if (id == 4) continue;
    const auto& ev = net.nodes.at(id).events;
    CHECK(std::any_of(ev.begin(), ev.end(), [](auto& p) {
      return p.second == MembershipEvent{Kind::Joined, 4, 1};
    }));
  }

  // ...and after it had been declared dead: the tombstone of incarnation 1 gives way to incarnation 2.
  net.nodes.at(4).crashed = true;
  net.run(5s);
  for (PeerId id : {1, 2, 3, 5, 6, 7, 8}) CHECK(net.infoAt(id, 4)->state == MemberState::Dead);
  net.add(4, {endpointOf(1)}, 2);
  took = net.runUntil([&] { return net.converged(iota(1, 8)); }, 10s);
  MESSAGE("incarnation 2 everywhere after " << took.count() << " ms");
  CHECK(took <= 3s);
  net.run(5s);
  CHECK(net.converged(iota(1, 8)));
  CHECK_FALSE(net.at(4).declaredDead());
  for (PeerId id : iota(1, 8)) CHECK(net.infoAt(id, 4)->state == MemberState::Alive);
}

// A 4/4 partition long enough for each half to declare the other dead, then healed. Dead is final, so
// the halves merge only if someone speaks to a Dead member again (recontact_interval) and the member told
// it was declared dead rejoins as a new incarnation, as the daemon does (restart() below).
struct HealResult {
  bool merged = false;
  std::set<PeerId> rejoined;  // nodes that were declared dead and came back as a new incarnation
};
static HealResult partitionHeals(MembershipOptions opt) {
  HealResult result;
  SimNet net(11);
  net.options = opt;
  net.addCluster(8);
  REQUIRE(net.runUntil([&] { return net.converged(iota(1, 8)); }, 10s) <= 10s);
  for (PeerId a = 1; a <= 4; ++a)
    for (PeerId b = 5; b <= 8; ++b) net.blocked.insert({a, b}), net.blocked.insert({b, a});
  net.run(10s);
  CHECK(net.infoAt(1, 8)->state == MemberState::Dead);
  CHECK(net.infoAt(8, 1)->state == MemberState::Dead);
  CHECK(net.converged(iota(1, 4)));
  CHECK(net.converged(iota(5, 8)));
  net.blocked.clear();
  const ms took = net.runUntil([&] { net.restartDeclaredDead(result.rejoined); return net.converged(iota(1, 8)); }, 60s);
  MESSAGE("merged after " << took.count() << " ms (recontact every " << opt.recontact_interval.count() << " ms), "
                          << result.rejoined.size() << " nodes rejoined");
  result.merged = took <= 60s;
  return result;
}

TEST_CASE("membership: halves that declared each other dead merge again after the partition heals") {
  const HealResult healed = partitionHeals(MembershipOptions{});
  CHECK(healed.merged);
  // One side rejoins, the other goes on: the sides tie at four, and the one holding the lowest id stays.
  CHECK(healed.rejoined == std::set<PeerId>{5, 6, 7, 8});
  MembershipOptions off;
  off.recontact_interval = 0ms;
  CHECK_FALSE(partitionHeals(off).merged);  // the mechanism above is what merges them
}

TEST_CASE("membership: a Join with another cluster identity is refused - and nothing of the joiner is kept") {
  SimNet net(12);
  net.options.identity = "cluster=a\n";
  net.addCluster(3);
  REQUIRE(net.runUntil([&] { return net.converged(iota(1, 3)); }, 10s) <= 10s);
  net.options.identity = "cluster=b\n";
  net.add(4, {endpointOf(2)});
  REQUIRE(net.runUntil([&] { return net.at(4).refusedBy().has_value(); }, 5s) <= 5s);
  CHECK(net.at(4).refusedBy()->peer == 2);
  CHECK(net.at(4).refusedBy()->reason == Refusal::Reason::Identity);
  CHECK(net.at(4).refusedBy()->detail == "cluster=a\n");
  CHECK_FALSE(net.at(4).joined());
  const auto refusals = net.at(2).takeRefusals();
  REQUIRE_FALSE(refusals.empty());
  CHECK(refusals.front() == Refusal{4, endpointOf(4), Refusal::Reason::Identity, "cluster=b\n"});
  net.run(3s);
  CHECK(net.converged(iota(1, 3)));  // node 4 is in nobody's table
  for (PeerId id : iota(1, 3)) CHECK_FALSE(net.infoAt(id, 4).has_value());
  // The same identity joins.
  net.options.identity = "cluster=a\n";
  net.add(5, {endpointOf(2)});
  CHECK(net.runUntil([&] { return net.converged({1, 2, 3, 5}); }, 10s) <= 3s);
  CHECK_FALSE(net.at(5).refusedBy().has_value());
}

// Issue 28: a node left running with its old configuration while the rest of its cluster restarted with a
// new one kept probing the new nodes at their old addresses, and each took it in from the sender record of a
// Ping (only a Join compared identities): its frames were then `bad_payload`, or its models of another
// problem averaged in silence. Every message carries the identity's fingerprint; a message of another
// cluster is dropped whole and answered with a Refuse, and the straggler, cut off from everyone, is refused
// at its next Join with the keys named.
TEST_CASE("membership: a node of another cluster that probes our members is never taken in - and learns it was refused") {
  SimNet net(14);
  net.options.identity = "cluster=old\n";
  net.addCluster(3);
  REQUIRE(net.runUntil([&] { return net.converged(iota(1, 3)); }, 10s) <= 10s);
  net.options.identity = "cluster=new\n";
  net.add(1, {}, 1);  // nodes 1 and 2 restarted with the new configuration, at their addresses
  net.add(2, {endpointOf(1)}, 1);
  REQUIRE(net.runUntil([&] { return net.converged({1, 2}); }, 10s) <= 10s);
  net.run(5s);  // node 3 probes them, and gossips, all along
  for (PeerId id : {1u, 2u}) {
    CAPTURE(id);
    CHECK_FALSE(net.infoAt(id, 3).has_value());
    CHECK(net.at(id).alive().size() == 2);
  }
  CHECK(net.at(1).stats().foreign_messages + net.at(2).stats().foreign_messages > 0);
  const auto refusals = net.at(1).takeRefusals();
  REQUIRE_FALSE(refusals.empty());
  CHECK(refusals.front().peer == 3);
  CHECK(refusals.front().reason == Refusal::Reason::Foreign);
  // Nobody answers node 3's probes: it loses the others, knocks with a Join, and that is refused by name.
  CHECK(net.runUntil([&] { return net.at(3).refusedBy().has_value(); }, 20s) <= 20s);
  CHECK(net.at(3).refusedBy()->reason == Refusal::Reason::Identity);
  CHECK(net.at(3).refusedBy()->detail == "cluster=new\n");
}

TEST_CASE("membership: a second node with a live member's id is refused - the same instance restarted is not") {
  SimNet net(13);
  net.add(1, {}, 0, 101);
  for (PeerId id = 2; id <= 4; ++id) net.add(id, {endpointOf(1)}, 0, 100 + id);
  REQUIRE(net.runUntil([&] { return net.converged(iota(1, 4)); }, 10s) <= 10s);
  // Another data directory claims id 3, joining through node 1. SimNet routes by id, so node 3's own Membership
  // is set aside and the duplicate put in its place for the join; it sends from 3 like the real one would.
  auto real = std::move(net.nodes.at(3).m);
  net.add(3, {endpointOf(1)}, 0, 999);
  REQUIRE(net.runUntil([&] { return net.at(3).refusedBy().has_value(); }, 5s) <= 5s);
  CHECK(net.at(3).refusedBy()->reason == Refusal::Reason::DuplicateId);
  CHECK(net.at(3).refusedBy()->detail == endpointOf(3));
  const auto refusals = net.at(1).takeRefusals();
  REQUIRE_FALSE(refusals.empty());
  CHECK(refusals.front().reason == Refusal::Reason::DuplicateId);
  CHECK(net.infoAt(1, 3)->instance == 103);  // the member already there keeps its id
  net.nodes.at(3).m = std::move(real);
  net.run(2s);
  CHECK(net.converged(iota(1, 4)));
  // The same instance restarted (a higher incarnation) is a restart, not a duplicate.
  net.add(3, {endpointOf(1)}, 1, 103);
  CHECK(net.runUntil([&] { return net.converged(iota(1, 4)); }, 10s) <= 3s);
  CHECK_FALSE(net.at(3).refusedBy().has_value());
  CHECK(net.infoAt(2, 3)->incarnation == 1);
}

TEST_CASE("membership: a graceful leave is Left everywhere at once - without suspicion") {
  SimNet net(6);
  net.addCluster(8);
  REQUIRE(net.runUntil([&] { return net.converged(iota(1, 8)); }, 10s) <= 10s);
  net.run(1s);
  net.at(6).leave(net.now);
  const std::vector<PeerId> rest = {1, 2, 3, 4, 5, 7, 8};
  const ms took = net.runUntil(
      [&] {
        return std::all_of(rest.begin(), rest.end(),
                           [&](PeerId id) { return net.infoAt(id, 6)->state == MemberState::Left; });
      },
      5s);
  MESSAGE("Left at all 7 after " << took.count() << " ms");
  CHECK(took <= net.options.probe_interval * 3);
  net.run(1s);
  net.nodes.at(6).crashed = true;  // the daemon exits after lingering a moment
  net.run(10s);
  CHECK(net.countEvents(Kind::Left, 6) == 7);
  CHECK(net.countEvents(Kind::Suspected) == 0);
  CHECK(net.countEvents(Kind::Died) == 0);
  CHECK(net.converged(rest));
}

TEST_CASE("membership: join retries an unreachable seed with backoff - then joins through a good one") {
  SimNet net(7);
  net.options.join_retry_max = 1000ms;
  net.capture = true;
  net.add(2, {endpointOf(99), endpointOf(1)});  // 99 never exists; 1 starts late
  net.run(2500ms);
  CHECK_FALSE(net.at(2).joined());
  net.add(1, {});
  CHECK_FALSE(net.at(1).isolated());  // alone, but a first node: nobody died
  const ms took = net.runUntil([&] { return net.converged({1, 2}); }, 10s);
  CHECK(took <= 2s);
  CHECK(net.at(2).joined());

  // Join attempts went 99, 1, 99, 1, ... with gaps of 200, 400, 800, then the 1000 ms cap.
  std::vector<PeerId> targets;
  std::vector<std::int64_t> gaps;
  TP last{};
  for (const auto& m : net.sent)
    if (m.from == 2 && m.payload.size() > 5 && m.payload[5] == std::byte{1}) {
      targets.push_back(m.to);
      gaps.push_back(std::chrono::duration_cast<ms>(m.sent_at - last).count());
      last = m.sent_at;
    }
  REQUIRE(targets.size() == net.at(2).stats().join_attempts);
  CHECK(targets == std::vector<PeerId>{99, 1, 99, 1, 99, 1});
  gaps.erase(gaps.begin());
  CHECK(gaps == std::vector<std::int64_t>{200, 400, 800, 1000, 1000});
}

TEST_CASE("membership: a transport hint probes at once - it leads to suspicion - never straight to death") {
  SimNet net(9);
  net.addCluster(8);
  REQUIRE(net.runUntil([&] { return net.converged(iota(1, 8)); }, 10s) <= 10s);
  net.run(1s);
  // A hint about a live member costs a probe and nothing else.
  const auto probes = net.at(2).stats().probes_sent;
  net.at(2).hintUnreachable(3, net.now);
  CHECK(net.at(2).stats().probes_sent == probes + 1);
  net.run(1s);
  CHECK(net.countEvents(Kind::Suspected) == 0);

  net.nodes.at(5).crashed = true;
  const TP crash = net.now;
  net.at(2).hintUnreachable(5, net.now);
  net.run(net.options.probe_interval + 10ms);
  CHECK(net.infoAt(2, 5)->state == MemberState::Suspect);
  CHECK(net.at(2).stats().suspicions_raised == 1);
  net.runUntil([&] { return net.infoAt(2, 5)->state == MemberState::Dead; }, 5s);
  // Dead only once the suspicion timed out at the node that raised it.
  CHECK(net.now - crash >= net.options.probe_interval + net.at(2).suspicionTimeout());
}

namespace {

// A snapshot of everything receive() could change.
struct Snapshot {
  std::vector<MemberInfo> members;
  MembershipStats stats;
  bool joined, dead;
  explicit Snapshot(Membership& m)
      : members(m.members()), stats(m.stats()), joined(m.joined()), dead(m.declaredDead()) {}
  bool operator==(const Snapshot&) const = default;
};

Bytes header(std::uint8_t kind, const MemberInfo& sender) {
  Bytes b;
  ByteWriter w(b);
  serial::putTag(w, serial::fourcc("GSWM"));
  w.put(Membership::kWireVersion);
  w.put(kind);
  w.put(gossip::fnv1a64(""));  // the fingerprint of the empty identity
  w.put(sender.id);
  w.put(sender.incarnation);
  w.put(sender.instance);
  w.put(sender.version);
  w.put(static_cast<std::uint8_t>(sender.state));
  w.put(static_cast<std::uint16_t>(sender.endpoint.size()));
  std::memcpy(w.reserveTail(sender.endpoint.size()), sender.endpoint.data(), sender.endpoint.size());
  return b;
}

// A Gossip message (kind 7) from `sender` carrying `updates`, built by hand from the documented format.
void putRecords(ByteWriter& w, const std::vector<MemberInfo>& records) {
  for (const auto& u : records) {
    w.put(u.id);
    w.put(u.incarnation);
    w.put(u.instance);
    w.put(u.version);
    w.put(static_cast<std::uint8_t>(u.state));
    w.put(static_cast<std::uint16_t>(u.endpoint.size()));
    std::memcpy(w.reserveTail(u.endpoint.size()), u.endpoint.data(), u.endpoint.size());
  }
}

Bytes gossipMsg(const MemberInfo& sender, const std::vector<MemberInfo>& updates) {
  Bytes b = header(7, sender);
  ByteWriter w(b);
  w.put(static_cast<std::uint16_t>(updates.size()));
  putRecords(w, updates);
  return b;
}

Bytes joinReplyMsg(const MemberInfo& sender, const std::vector<MemberInfo>& table) {
  Bytes b = header(2, sender);
  ByteWriter w(b);
  w.put(static_cast<std::uint32_t>(table.size()));
  putRecords(w, table);
  w.put(std::uint16_t{0});
  return b;
}

}  // namespace

TEST_CASE("membership: a second-hand death of a member our JoinReply listed alive is a suspicion") {
  std::vector<std::pair<PeerId, Bytes>> out;
  Membership m({1, 1, 0, endpointOf(1), MemberState::Alive}, {endpointOf(2)}, {}, [&](PeerId to, const std::string&, Bytes b) {
    out.emplace_back(to, std::move(b));
  }, 1);
  const MemberInfo two{2, 0, 0, endpointOf(2), MemberState::Alive}, three{3, 0, 0, endpointOf(3), MemberState::Alive},
      four{4, 0, 0, endpointOf(4), MemberState::Alive};
  TP t = TP{} + 1s;
  // Joined (a rejoin as incarnation 1) through node 2, whose table holds 3 and 4 alive.
  m.receive(2, joinReplyMsg(two, {two, three, four}), t);
  auto stateOf = [&](PeerId id) {
    for (const auto& i : m.members())
      if (i.id == id) return i.state;
    return MemberState::Left;
  };
  REQUIRE(stateOf(3) == MemberState::Alive);
  // Node 4, of the side that has not heard yet, gossips its stale verdict on 3: a suspicion, not a death.
  MemberInfo deadThree = three;
  deadThree.state = MemberState::Dead;
  m.receive(4, gossipMsg(four, {deadThree}), t + 100ms);
  CHECK(stateOf(3) == MemberState::Suspect);
  CHECK(m.stats().deaths_doubted == 1);
  // Past the suspicion timeout the listing is no evidence any more.
  MemberInfo deadFour = four;
  deadFour.state = MemberState::Dead;
  m.receive(2, gossipMsg(two, {deadFour}), t + m.suspicionTimeout() + 1s);
  CHECK(stateOf(4) == MemberState::Dead);
}

TEST_CASE("membership: precedence of updates within and across incarnations") {
  std::vector<Bytes> out;
  Membership m({1, 0, 0, endpointOf(1), MemberState::Alive}, {}, {}, [&](PeerId, const std::string&, Bytes b) {
    out.push_back(std::move(b));
  }, 1);
  const TP t = TP{} + 1s;
  const MemberInfo nine{9, 0, 0, endpointOf(9), MemberState::Alive};
  auto say = [&](MemberInfo u) { m.receive(9, gossipMsg(nine, {u}), t); };
  auto five = [&] { return m.members().at(1); };
  MemberInfo u{5, 3, 2, endpointOf(5), MemberState::Alive};

  say(u);
  CHECK(five() == u);
  u.state = MemberState::Suspect;
  u.version = 1;
  say(u);  // Suspect(1) does not beat Alive(2)
  CHECK(five().state == MemberState::Alive);
  u.version = 2;
  say(u);  // Suspect(2) beats Alive(2)
  CHECK(five().state == MemberState::Suspect);
  u.state = MemberState::Alive;
  say(u);  // Alive(2) does not beat Suspect(2)
  CHECK(five().state == MemberState::Suspect);
  u.version = 3;
  say(u);  // Alive(3) does
  CHECK(five().state == MemberState::Alive);
  u.state = MemberState::Dead;
  u.version = 0;
  say(u);  // Dead beats any version
  CHECK(five().state == MemberState::Dead);
  u.state = MemberState::Alive;
  u.version = 100;
  say(u);  // no resurrection within an incarnation
  CHECK(five().state == MemberState::Dead);
  u.incarnation = 2;
  say(u);  // nor from an older one
  CHECK(five().incarnation == 3);
  u.incarnation = 4;
  u.version = 0;
  say(u);  // a newer incarnation is a new member
  CHECK(five() == u);
  u.state = MemberState::Left;
  say(u);
  u.state = MemberState::Alive;
  u.version = 9;
  say(u);  // Left is final
  CHECK(five().state == MemberState::Left);

  const auto ev = m.takeEvents();
  const std::vector<MembershipEvent> want = {
      {Kind::Joined, 9, 0},    {Kind::Joined, 5, 3},  {Kind::Suspected, 5, 3}, {Kind::Refuted, 5, 3},
      {Kind::Died, 5, 3},      {Kind::Joined, 5, 4},  {Kind::Left, 5, 4}};
  CHECK(ev == want);

  // About ourselves: a suspicion is refuted with a higher version and answered.
  out.clear();
  say({1, 0, 0, endpointOf(1), MemberState::Suspect});
  CHECK(m.self().version == 1);
  CHECK(m.stats().suspicions_refuted == 1);
  CHECK(out.size() == 1);
  CHECK_FALSE(m.declaredDead());
  // Death heard in gossip is contested: the accuser is asked for its table (a Join), nothing applies.
  out.clear();
  say({1, 0, 1, endpointOf(1), MemberState::Dead});
  CHECK_FALSE(m.declaredDead());
  CHECK(m.stats().verdicts_contested == 1);
  REQUIRE(out.size() == 1);
  CHECK(static_cast<int>(out[0][5]) == 1);  // kind: Join
  // Its side is 9 alone against our camp of 1 alone: a tie, and our camp holds the lower id.
  const MemberInfo deadOne{1, 0, 1, endpointOf(1), MemberState::Dead};
  m.receive(9, joinReplyMsg(nine, {deadOne, nine}), t);
  CHECK_FALSE(m.declaredDead());
  CHECK(m.stats().verdicts_rejected == 1);
  // A side of three outnumbers us: death is taken, and the accuser is where to rejoin.
  const MemberInfo seven{7, 0, 0, endpointOf(7), MemberState::Alive}, eight{8, 0, 0, endpointOf(8), MemberState::Alive};
  m.receive(9, joinReplyMsg(nine, {deadOne, seven, eight, nine}), t);
  CHECK(m.declaredDead());
  CHECK(m.rejoinVia() == endpointOf(9));
  CHECK(m.self().version == 1);
}

TEST_CASE("membership: a second-hand death of a member that spoke to us within the timeout is a suspicion") {
  std::vector<std::pair<PeerId, Bytes>> out;
  Membership m({1, 0, 0, endpointOf(1), MemberState::Alive}, {}, {}, [&](PeerId to, const std::string&, Bytes b) {
    out.emplace_back(to, std::move(b));
  }, 1);
  const MemberInfo two{2, 0, 0, endpointOf(2), MemberState::Alive}, three{3, 0, 0, endpointOf(3), MemberState::Alive};
  TP t = TP{} + 1s;
  m.receive(2, gossipMsg(two, {}), t);
  m.receive(3, gossipMsg(three, {}), t);
  auto stateOf = [&](PeerId id) {
    for (const auto& i : m.members())
      if (i.id == id) return i.state;
    return MemberState::Left;
  };
  // Node 3 says 2 is dead, 100 ms after 2 spoke to us: held as our suspicion, not as a death.
  t += 100ms;
  MemberInfo deadTwo = two;
  deadTwo.state = MemberState::Dead;
  m.receive(3, gossipMsg(three, {deadTwo}), t);
  CHECK(stateOf(2) == MemberState::Suspect);
  CHECK(m.stats().deaths_doubted == 1);
  // Node 2 is alive and refutes it.
  MemberInfo two1 = two;
  two1.version = 1;
  m.receive(2, gossipMsg(two1, {}), t + 50ms);
  CHECK(stateOf(2) == MemberState::Alive);
  // Silent for longer than the suspicion timeout, the same verdict is a death.
  t += m.suspicionTimeout() + 100ms;
  m.tick(t);
  deadTwo.version = 1;
  m.receive(3, gossipMsg(three, {deadTwo}), t);
  CHECK(stateOf(2) == MemberState::Dead);
  CHECK(m.stats().deaths_doubted == 1);
}

// Found by a swarm CI run (8 containers on 2 busy cores): three nodes held four others dead while everyone
// else, the four included, held them all alive. Each victim, told of its death, fetched its accuser's
// table and refused the verdict (its camp of four tied the accusers' side of four and held the lowest id),
// the accusers kept their tombstones, and nothing else ever happened: the two views stayed apart for good
// and every ring round hit its timeout. Here the state is made directly: the victims go unheard at the
// accusers for longer than a suspicion timeout (so that a second-hand death is taken, not doubted), then
// the bystander's gossip brings the accusers the verdicts. The settlement wanted: the outnumbered accusers
// rejoin as new lives (as the daemon does on declaredDead()), the victims stay, and every view agrees.
TEST_CASE("membership: one-sided death verdicts of a minority end with the minority rejoining - not a split for good") {
  const std::vector<PeerId> accusers{3, 4, 5}, victims{1, 2, 6, 7};
  const PeerId bystander = 8;
  int settled = 0, accusersRejoined = 0;
  const int seeds = 24;
  for (int seed = 1; seed <= seeds; ++seed) {
    CAPTURE(seed);
    SimNet net(static_cast<std::uint64_t>(seed));
    // docker/node.toml's probing: the configuration of the CI run that found it.
    net.options.probe_interval = 500ms;
    net.options.probe_timeout = 250ms;
    net.options.suspicion_mult = 6;
    net.addCluster(8);
    REQUIRE(net.runUntil([&] { return net.converged(iota(1, 8)); }, 20s) <= 20s);
    for (PeerId v : victims)
      for (PeerId a : accusers) net.blocked.insert({v, a});
    net.run(net.at(1).suspicionTimeout() + 300ms);
    net.blocked.clear();
    for (PeerId a : accusers) {
      std::vector<MemberInfo> verdicts;
      for (PeerId v : victims) {
        MemberInfo d = *net.infoAt(bystander, v);
        d.state = MemberState::Dead;
        verdicts.push_back(d);
      }
      net.at(a).receive(bystander, gossipMsg(net.at(bystander).self(), verdicts), net.now);
    }
    std::set<PeerId> rejoined;
    const ms took = net.runUntil([&] { net.restartDeclaredDead(rejoined); return net.converged(iota(1, 8)); }, 120s);
    if (took > 120s) {
      std::string views;
      for (PeerId id : iota(1, 8)) {
        views += " " + std::to_string(id) + ":{";
        for (const auto& m : net.at(id).alive()) views += std::to_string(m.id) + ",";
        views += "}";
      }
      FAIL_CHECK("views still apart 120 s after the verdicts:" << views);
      continue;
    }
    ++settled;
    CHECK(rejoined.count(bystander) == 0);
    std::uint64_t returned = 0;
    for (PeerId v : victims) returned += rejoined.count(v) ? 0 : net.at(v).stats().verdicts_returned;
    CHECK((rejoined.empty() || returned > 0));  // what status.json's death_verdicts shows an operator
    accusersRejoined += !rejoined.empty() &&
                        std::all_of(rejoined.begin(), rejoined.end(), [&](PeerId id) { return std::count(accusers.begin(), accusers.end(), id) > 0; });
    net.run(10s);
    CHECK(net.converged(iota(1, 8)));
  }
  MESSAGE(settled << " of " << seeds << " seeds settled, " << accusersRejoined << " of them by the accusers rejoining");
  // Usually only the accusers rejoin. Not always: in 1 seed of 400 tried, the returned verdicts spread
  // second-hand, victims and accusers declared each other dead in turn, and six of the eight rejoined
  // before the views agreed (the bystander stayed).
  CHECK(accusersRejoined >= seeds * 3 / 4);
}

// Two nodes joining at once through different seeds are each missing from the other's JoinReply; if their
// join gossip then misses each other (every record is piggybacked a few times only), neither ever learns
// of the other, neither probes the other, and their ring neighbours differ for good (2 of 1000 simulated
// startups of 8 nodes under load). Made here directly: until the join gossip has run out, every message
// that would tell 7 of 8 or 8 of 7 is lost. The anti-entropy slot (membership.h, "Dissemination") must then
// bring them together.
TEST_CASE("membership: two members whose join gossip missed each other learn of each other - anti-entropy") {
  SimNet net(3);
  net.options.probe_interval = 500ms;  // docker/node.toml's probing
  net.options.probe_timeout = 250ms;
  net.options.suspicion_mult = 6;
  net.addCluster(6);
  REQUIRE(net.runUntil([&] { return net.converged(iota(1, 6)); }, 20s) <= 20s);
  // A record as it starts on the wire: u32 id, u64 incarnation 0, u64 instance 0 (SimNet's defaults).
  const auto recordOf = [](PeerId id) {
    Bytes r(20, std::byte{0});
    for (int k = 0; k < 4; ++k) r[static_cast<std::size_t>(k)] = static_cast<std::byte>((id >> (8 * k)) & 0xFF);
    return r;
  };
  const Bytes of7 = recordOf(7), of8 = recordOf(8);
  const auto carries = [](const Bytes& b, const Bytes& r) { return std::search(b.begin(), b.end(), r.begin(), r.end()) != b.end(); };
  std::size_t dropped = 0;
  net.drop = [&](PeerId, PeerId to, const Bytes& b) {
    const bool lose = (to == 7 && carries(b, of8)) || (to == 8 && carries(b, of7));
    dropped += lose;
    return lose;
  };
  net.add(7, {endpointOf(1)});
  net.add(8, {endpointOf(2)});
  net.run(10s);
  REQUIRE_FALSE(net.infoAt(7, 8));  // the state this test is about
  REQUIRE_FALSE(net.infoAt(8, 7));
  REQUIRE(dropped > 0);
  for (PeerId id : iota(1, 6)) CHECK(net.at(id).alive().size() == 8);
  net.drop = nullptr;
  const ms took = net.runUntil([&] { return net.converged(iota(1, 8)); }, 60s);
  MESSAGE("7 and 8 learned of each other " << took.count() << " ms after the losses stopped");
  CHECK(took <= 10s);
  CHECK(net.countEvents(Kind::Died) == 0);
}

// The stale camp of a node back from a pause: while node 1 was stopped, nodes 2, 3 and 4 crashed and the
// four others declared all four dead. Resumed, node 1 still holds 2, 3 and 4 live (until it has probed
// them and its restarted timers ran out), so its camp {1, 2, 3, 4} ties the accusers' side {5, 6, 7, 8}
// and holds the lowest id: it refuses. Returning that verdict would make the four healthy nodes rejoin
// through node 1, one after the other. It must instead wait for its own timers and rejoin alone.
TEST_CASE("membership: a node back from a pause does not return a verdict on the healthy side - its camp is stale") {
  for (std::uint64_t seed : {1, 2, 3, 4, 5}) {
    CAPTURE(seed);
    SimNet net(seed);
    net.options.probe_interval = 500ms;  // docker/node.toml's probing
    net.options.probe_timeout = 250ms;
    net.options.suspicion_mult = 6;
    net.addCluster(8);
    REQUIRE(net.runUntil([&] { return net.converged(iota(1, 8)); }, 20s) <= 20s);
    net.nodes.at(1).paused = true;
    for (PeerId id : {2, 3, 4}) net.nodes.at(id).crashed = true;
    REQUIRE(net.runUntil([&] {
      for (PeerId a : iota(5, 8))
        for (PeerId d : iota(1, 4))
          if (net.infoAt(a, d)->state != MemberState::Dead) return false;
      return true;
    }, 30s) <= 30s);
    net.resume(1);
    std::set<PeerId> rejoined;
    const ms took = net.runUntil([&] { net.restartDeclaredDead(rejoined); return net.converged({1, 5, 6, 7, 8}); }, 60s);
    CHECK(took <= 60s);
    CHECK(rejoined == std::set<PeerId>{1});
    CHECK(net.nodes.at(1).incarnation == 1);
  }
}

TEST_CASE("membership: malformed input throws DecodeError and changes nothing") {
  // Capture real traffic of every kind: joins, probes, indirect probes (a partition), refutations, a leave.
  SimNet net(8);
  net.capture = true;
  net.addCluster(5);
  REQUIRE(net.runUntil([&] { return net.converged(iota(1, 5)); }, 10s) <= 10s);
  net.blocked = {{2, 3}, {3, 2}};
  net.run(5s);
  net.blocked.clear();
  net.nodes.at(4).paused = true;
  net.run(net.at(1).suspicionTimeout() - 200ms);
  net.resume(4);
  net.run(2s);
  net.at(5).leave(net.now);
  net.run(1s);
  std::map<int, std::vector<std::size_t>> byKind;
  for (std::size_t i = 0; i < net.sent.size(); ++i) byKind[int(net.sent[i].payload[5])].push_back(i);
  for (int k = 1; k <= 7; ++k) {
    CAPTURE(k);
    REQUIRE(byKind[k].size() > 0);
  }

  net.capture = false;  // `sent` must not grow while its messages are replayed
  net.strict = false;
  Membership& target = net.at(1);
  const TP t = net.now;
  auto expectRejected = [&](PeerId from, std::span<const std::byte> bytes) {
    const Snapshot before(target);
    CHECK_THROWS_AS(target.receive(from, bytes, t), DecodeError);
    CHECK(Snapshot(target) == before);
    CHECK(target.takeEvents().empty());
  };

  // Every truncation of a few messages of each kind.
  std::size_t truncations = 0;
  for (const auto& [k, idx] : byKind)
    for (std::size_t j = 0; j < std::min<std::size_t>(3, idx.size()); ++j) {
      const auto& msg = net.sent[idx[j * idx.size() / 3]];
      for (std::size_t len = 0; len < msg.payload.size(); ++len, ++truncations)
        expectRejected(msg.from, std::span<const std::byte>(msg.payload).first(len));
      // One trailing byte is as bad, and so is a frame from someone other than the record's sender.
      Bytes longer = msg.payload;
      longer.push_back(std::byte{0});
      expectRejected(msg.from, longer);
      expectRejected(msg.from + 100, msg.payload);
    }
  MESSAGE(truncations << " truncations rejected");

  // Random bytes: rejected. Random bytes behind a valid header: rejected without a trace, or (rarely, when
  // they happen to form a valid body) accepted.
  Rng rng(42);
  for (int i = 0; i < 3000; ++i) {
    Bytes b(rng.below(200));
    for (auto& x : b) x = std::byte(rng.below(256));
    expectRejected(7, b);
  }
  std::size_t rejected = 0, accepted = 0;
  auto tryReceive = [&](PeerId from, const Bytes& b) {
    const Snapshot before(target);
    try {
      target.receive(from, b, t);
      ++accepted;
    } catch (const DecodeError&) {
      ++rejected;
      CHECK(Snapshot(target) == before);
    }
  };
  for (int i = 0; i < 3000; ++i) {
    Bytes b = header(static_cast<std::uint8_t>(1 + rng.below(7)), {7, 0, 0, endpointOf(7), MemberState::Alive});
    for (std::size_t n = rng.below(64); n > 0; --n) b.push_back(std::byte(rng.below(256)));
    tryReceive(7, b);
  }
  MESSAGE("random bodies: " << rejected << " rejected, " << accepted << " accepted");
  CHECK(rejected > 2900);

  // Hostile counts and lengths: a member list of 65536 records, a long endpoint, an unknown state.
  const MemberInfo seven{7, 0, 0, endpointOf(7), MemberState::Alive};
  {
    Bytes b = header(2, seven);
    ByteWriter w(b);
    w.put(std::uint32_t{65536});
    w.put(std::uint16_t{0});
    expectRejected(7, b);
  }
  expectRejected(7, gossipMsg({7, 0, 0, std::string(257, 'x'), MemberState::Alive}, {}));
  expectRejected(7, gossipMsg(seven, {{8, 0, 0, "x", static_cast<MemberState>(4)}}));
  expectRejected(7, gossipMsg(seven, {{8, 0, 0, "", MemberState::Alive}}));
  expectRejected(7, gossipMsg(seven, {{Membership::kUnknownPeer, 0, 0, "x", MemberState::Alive}}));
  expectRejected(7, gossipMsg({7, 0, 0, endpointOf(7), MemberState::Dead}, {}));

  // Bit flips of valid messages: rejected without a trace, or accepted; never a crash.
  rejected = accepted = 0;
  for (int i = 0; i < 3000; ++i) {
    const auto& msg = net.sent[rng.below(net.sent.size())];
    Bytes b = msg.payload;
    for (int f = 0; f < 1 + int(rng.below(3)); ++f) b[rng.below(b.size())] ^= std::byte(1u << rng.below(8));
    tryReceive(msg.from, b);
  }
  MESSAGE("bit flips: " << rejected << " rejected, " << accepted << " accepted");
  CHECK(rejected > 0);
}
