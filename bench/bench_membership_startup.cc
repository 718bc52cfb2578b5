// How often do the membership views of 8 nodes stay apart after a loaded start? Each run simulates
// peer::Membership over a virtual network (no sockets, a virtual clock): the nodes start at random times
// within --spread-ms, through seeds 0, 1 and 2 (as docker/ring8.yaml), with docker/node.toml's probing;
// during the first --load-s seconds every message gets up to --jitter-ms of extra delay and each node
// stops for 0.1 s to --pause-max-ms at random (a duty of up to --duty: containers sharing two busy cores;
// a stop longer than the 3 s suspicion timeout can get a node declared dead). A node told
// it is dead rejoins as a new incarnation, as the daemon does. A run is stuck when, --watch-s seconds after
// the load ended, some node's alive view differs from the others'. Views that differ give ring neighbours
// that differ, and every round of such a node waits for its timeout (docs/results.md, the membership
// section). JSON on stdout, as every bench here; never asserted in ctest.
//   bench_membership_startup [--runs N] [--spread-ms MS] [--duty F] [--jitter-ms MS] [--pause-max-ms MS]
//                            [--load-s S] [--watch-s S]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/rng.h"
#include "membership/membership.h"

using namespace gossip;
using namespace gossip::peer;
using namespace std::chrono_literals;
using ms = std::chrono::milliseconds;
using TP = MsClock::time_point;

namespace {

struct Params {
  int runs = 1000;
  int spread_ms = 6000;
  double duty = 0.3;
  int jitter_ms = 100;
  int pause_max_ms = 950;
  int load_s = 10;
  int watch_s = 200;
};

std::string endpointOf(PeerId id) { return "sim://" + std::to_string(id); }

struct Outcome {
  bool stuck = false;
  int unknown = 0;     // (node, member) pairs where the node never heard of the member
  int tombstones = 0;  // Dead records of members alive in that same life
  bool deaths = false, rejoins = false;
  std::uint64_t messages = 0, bytes = 0;  // membership messages sent by every node, all its lives
  double node_seconds = 0;                // the time the nodes ran, summed
};

class Run {
 public:
  Run(const Params& p, std::uint64_t seed) : p_(p), rng_(seed) {
    opt_.probe_interval = 500ms;  // docker/node.toml
    opt_.probe_timeout = 250ms;
    opt_.suspicion_mult = 6;
  }

  Outcome go() {
    std::map<PeerId, TP> startAt;
    std::map<PeerId, double> duty;
    for (PeerId id = 0; id < kNodes; ++id) {
      startAt[id] = now_ + ms(rng_.below(static_cast<std::uint64_t>(p_.spread_ms) + 1));
      duty[id] = rng_.uniform() * p_.duty;
    }
    const TP loadEnd = now_ + std::chrono::seconds(p_.load_s);
    const TP end = loadEnd + std::chrono::seconds(p_.watch_s);
    Outcome out;
    while (now_ < end) {
      loading_ = now_ < loadEnd;
      for (PeerId id = 0; id < kNodes; ++id)
        if (!nodes_.count(id) && now_ >= startAt[id]) add(id, {endpointOf(0), endpointOf(1), endpointOf(2)}, 0);
      if (loading_)
        for (auto& [id, n] : nodes_)  // a stop starts with probability duty/50 per 10 ms step
          if (n.paused_until <= now_ && rng_.uniform() < duty[id] / 50) n.paused_until = now_ + ms(100 + rng_.below(static_cast<std::uint64_t>(std::max(0, p_.pause_max_ms - 100)) + 1));
      step(out);
    }
    for (const auto& [id, n] : nodes_) {
      messages_ += n.m->stats().messages_sent;
      bytes_ += n.m->stats().bytes_sent;
      out.node_seconds += std::chrono::duration<double>(now_ - startAt[id]).count();
    }
    out.messages = messages_;
    out.bytes = bytes_;
    const auto first = nodes_.begin()->second.m->alive();
    for (const auto& [id, n] : nodes_) {
      if (n.m->alive() != first || first.size() != kNodes) out.stuck = true;
      out.unknown += static_cast<int>(kNodes - n.m->members().size());
      for (const auto& m : n.m->members())
        if (m.id != id && m.state == MemberState::Dead && nodes_.at(m.id).incarnation == m.incarnation &&
            !nodes_.at(m.id).m->declaredDead())
          ++out.tombstones;
    }
    return out;
  }

 private:
  static constexpr PeerId kNodes = 8;
  struct Node {
    std::unique_ptr<Membership> m;
    Incarnation incarnation = 0;
    TP paused_until{};
  };
  struct Msg {
    PeerId from, to;
    Bytes bytes;
  };

  void add(PeerId id, std::vector<std::string> seeds, Incarnation inc) {
    Node& n = nodes_[id];
    if (n.m) messages_ += n.m->stats().messages_sent, bytes_ += n.m->stats().bytes_sent;  // a life that ends
    n.m = std::make_unique<Membership>(MemberInfo{id, inc, 0, endpointOf(id), MemberState::Alive, 1000 + id}, std::move(seeds), opt_,
                                       [this, id](PeerId to, const std::string& e, Bytes b) { route(id, to, e, std::move(b)); },
                                       deriveSeed({rng_.next(), id, inc}));
    n.incarnation = inc;
    n.paused_until = {};
  }

  void route(PeerId from, PeerId to, const std::string& endpoint, Bytes b) {
    if (to == Membership::kUnknownPeer) to = static_cast<PeerId>(std::stoul(endpoint.substr(6)));
    const auto extra = loading_ ? rng_.below(static_cast<std::uint64_t>(p_.jitter_ms) + 1) : 0;
    inflight_.emplace(std::make_pair(now_ + ms(1 + rng_.below(10) + extra), order_++), Msg{from, to, std::move(b)});
  }

  void step(Outcome& out) {
    now_ += 10ms;
    while (!inflight_.empty() && inflight_.begin()->first.first <= now_) {
      Msg msg = std::move(inflight_.begin()->second);
      inflight_.erase(inflight_.begin());
      const auto it = nodes_.find(msg.to);
      if (it == nodes_.end()) continue;  // not started: nobody listens
      if (it->second.paused_until > now_) {  // a stopped process: its socket keeps the message
        inflight_.emplace(std::make_pair(it->second.paused_until, order_++), std::move(msg));
        continue;
      }
      it->second.m->receive(msg.from, msg.bytes, now_);
    }
    for (auto& [id, n] : nodes_) {
      if (n.paused_until > now_) continue;
      n.m->tick(now_);
      for (const auto& e : n.m->takeEvents()) out.deaths |= e.kind == MembershipEvent::Kind::Died;
    }
    // A node declared dead rejoins as the next incarnation: through the accuser that won, then whom it knew.
    for (PeerId id = 0; id < kNodes; ++id) {
      const auto it = nodes_.find(id);
      if (it == nodes_.end() || !it->second.m->declaredDead()) continue;
      std::vector<std::string> seeds;
      if (!it->second.m->rejoinVia().empty()) seeds.push_back(it->second.m->rejoinVia());
      for (const auto& m : it->second.m->members())
        if (m.id != id && m.state != MemberState::Left) seeds.push_back(m.endpoint);
      out.rejoins = true;
      add(id, std::move(seeds), it->second.incarnation + 1);
    }
  }

  Params p_;
  Rng rng_;
  MembershipOptions opt_;
  TP now_ = TP{} + 1000s;
  bool loading_ = true;
  std::map<PeerId, Node> nodes_;
  std::map<std::pair<TP, std::uint64_t>, Msg> inflight_;
  std::uint64_t order_ = 0;
  std::uint64_t messages_ = 0, bytes_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  Params p;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const char* v = argv[i + 1];
    if (k == "--runs") p.runs = std::atoi(v);
    else if (k == "--spread-ms") p.spread_ms = std::atoi(v);
    else if (k == "--duty") p.duty = std::atof(v);
    else if (k == "--jitter-ms") p.jitter_ms = std::atoi(v);
    else if (k == "--pause-max-ms") p.pause_max_ms = std::atoi(v);
    else if (k == "--load-s") p.load_s = std::atoi(v);
    else if (k == "--watch-s") p.watch_s = std::atoi(v);
    else {
      std::fprintf(stderr, "bench_membership_startup: unknown option %s\n", k.c_str());
      return 2;
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  int stuck = 0, stuckUnknown = 0, stuckTombstones = 0, withDeaths = 0, withRejoins = 0;
  double messages = 0, bytes = 0, nodeSeconds = 0;
  std::vector<int> stuckSeeds;
  for (int seed = 1; seed <= p.runs; ++seed) {
    const Outcome o = Run(p, static_cast<std::uint64_t>(seed)).go();
    withDeaths += o.deaths;
    withRejoins += o.rejoins;
    messages += static_cast<double>(o.messages);
    bytes += static_cast<double>(o.bytes);
    nodeSeconds += o.node_seconds;
    if (!o.stuck) continue;
    ++stuck;
    stuckUnknown += o.unknown > 0;
    stuckTombstones += o.tombstones > 0;
    stuckSeeds.push_back(seed);
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  nlohmann::json j = {{"bench", "membership_startup"},
                      {"nodes", 8},
                      {"runs", p.runs},
                      {"spread_ms", p.spread_ms},
                      {"duty", p.duty},
                      {"jitter_ms", p.jitter_ms},
                      {"pause_max_ms", p.pause_max_ms},
                      {"load_s", p.load_s},
                      {"watch_s", p.watch_s},
                      {"stuck", stuck},
                      {"stuck_with_unknown_members", stuckUnknown},
                      {"stuck_with_live_tombstones", stuckTombstones},
                      {"stuck_seeds", stuckSeeds},
                      {"runs_with_deaths", withDeaths},
                      {"runs_with_rejoins", withRejoins},
                      {"messages_per_node_second", messages / nodeSeconds},
                      {"bytes_per_node_second", bytes / nodeSeconds},
                      {"wall_seconds", wall}};
  std::printf("%s\n", j.dump().c_str());
  return 0;
}
