#pragma once
// A small synchronous cluster for algorithm tests, run through the real round engine (engine/) over the
// in-process transport: a ring over the sorted alive ids with Metropolis weights, rebuilt when membership
// changes, with edges opened by the engine's handshake and dropped at both ends. Every alive node prepares,
// every message reaches every current neighbour (unless the test drops it), every node applies.
// The algorithm tests therefore exercise the same edge lifecycle and frame path as the simulator and the
// daemon; the exactness tests compare against centralized solutions, which is the independent oracle.
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/node.h"
#include "engine/sync_engine.h"
#include "transport/inproc/inproc.h"
#include "problems.h"

namespace gossip::testing {

class MiniNet {
 public:
  using Factory = std::function<std::unique_ptr<algo::Node>(PeerId)>;

  MiniNet(std::size_t n, Factory make) : make_(std::move(make)) {
    for (PeerId i = 0; i < n; ++i) add(i, 0, make_(i));
    rewire();
  }

  // Removes node i (crash): its edges disappear at both ends.
  void crash(PeerId i) {
    remove(i);
    rewire();
  }
  // Adds a new node with id i.
  void join(PeerId i) {
    add(i, 0, make_(i));
    rewire();
  }
  // Restarts node i as a new incarnation: its neighbours drop the edges to the old life and open new ones
  // to the new life. Rows do not change.
  void restart(PeerId i, Incarnation inc, std::unique_ptr<algo::Node> fresh) {
    remove(i);
    add(i, inc, std::move(fresh));
    rewire();
  }
  Incarnation incarnation(PeerId i) const { return engines_.at(i)->incarnation(); }
  const topology::MixingRow& row(PeerId i) const { return engines_.at(i)->row(); }

  // drop(from, to, round) -> true drops that message (stateless algorithms only).
  void round(Round t, const std::function<bool(PeerId, PeerId, Round)>& drop = {}) {
    if (drop) net_.setDropRule([&](PeerId from, PeerId to) { return drop(from, to, t); });
    for (auto& [id, e] : engines_) e->beginRound(t);
    for (auto& [id, e] : engines_) e->endRound(t);
    net_.setDropRule({});
  }

  // The alive nodes (owned by their engines).
  std::map<PeerId, algo::Node*> nodes() {
    std::map<PeerId, algo::Node*> m;
    for (auto& [id, e] : engines_) m[id] = &e->node();
    return m;
  }
  std::vector<std::size_t> members() const {
    std::vector<std::size_t> m;
    for (const auto& [id, e] : engines_) m.push_back(id);
    return m;
  }
  // Messages the alive nodes' engines rejected so far (for stateless methods a rejected message counts
  // as missing; replica methods throw instead).
  std::uint64_t rejectedTotal() const {
    std::uint64_t n = 0;
    for (const auto& [id, e] : engines_) n += e->stats().rejectedTotal();
    return n;
  }
  // Largest relative error max_i ||x_i - xs|| / ||xs||.
  // xs is the oracle's double solution; the nodes' state is Real (core/real.h).
  double maxRelError(const Vec64& xs) const {
    double err = 0.0;
    for (const auto& [id, e] : engines_)
      err = std::max(err, (e->node().algorithm().x().cast<double>() - xs).norm() / xs.norm());
    return err;
  }
  Vec dualSum() const {
    Vec s;
    for (const auto& [id, e] : engines_) {
      const Vec* d = e->node().algorithm().dual();
      if (!d) return {};
      s = s.size() ? Vec(s + *d) : *d;
    }
    return s;
  }

 private:
  void add(PeerId i, Incarnation inc, std::unique_ptr<algo::Node> node) {
    net_.attach(i);
    transports_[i] = std::make_unique<engine::InprocTransport>(net_, i);
    engines_[i] = std::make_unique<engine::SyncEngine>(i, inc, std::move(node), *transports_[i]);
  }
  void remove(PeerId i) {
    engines_.erase(i);
    transports_.erase(i);
    net_.detach(i);
  }
  void rewire() {
    if (engines_.empty()) return;
    engine::View view;
    for (const auto& [id, e] : engines_) view.push_back({id, e->incarnation()});
    topology::TopologyParams ring;
    ring.kind = topology::Kind::Ring;
    auto vg = engine::buildViewGraph(std::move(view), ring, topology::WeightRule::Metropolis,
                                     engines_.begin()->second->stateless(), ++epoch_);
    for (auto& [id, e] : engines_) e->setView(vg, 0);
    for (int pass = 0; pass < 3 && net_.inFlight() > 0; ++pass)
      for (auto& [id, e] : engines_) e->drain(0);
  }

  Factory make_;
  engine::InprocNetwork net_;
  std::map<PeerId, std::unique_ptr<engine::InprocTransport>> transports_;
  std::map<PeerId, std::unique_ptr<engine::SyncEngine>> engines_;
  std::uint64_t epoch_ = 0;
};

}  // namespace gossip::testing
