#pragma once
// A minimal synchronous in-process network for algorithm tests: every alive node prepares, every message
// reaches every current neighbour (unless the test drops it), every node applies. Neighbourhoods are a ring
// over the sorted alive ids with Metropolis weights, rebuilt when membership changes; edges are added and
// dropped at both ends in the same step, as the runtime must do. Deliberately independent of topology/ and
// sim/ so it can serve as an oracle for them.
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/node.h"
#include "problems.h"

namespace gossip::testing {

class MiniNet {
 public:
  using Factory = std::function<std::unique_ptr<algo::Node>(PeerId)>;

  MiniNet(std::size_t n, Factory make) : make_(std::move(make)) {
    for (PeerId i = 0; i < n; ++i) nodes_[i] = make_(i);
    rewire();
  }

  // Removes node i (crash): its edges disappear at both ends at once.
  void crash(PeerId i) {
    nodes_.erase(i);
    rewire();
  }
  // Adds a new node with id i.
  void join(PeerId i) {
    nodes_[i] = make_(i);
    rewire();
  }

  // Restarts node i in place as a new incarnation: its neighbours drop the edge to the old life and add one
  // to the new life, as the runtime does for a restarted peer. Rows do not change.
  void restart(PeerId i, Incarnation inc, std::unique_ptr<algo::Node> fresh) {
    const Incarnation old = incarnation(i);
    for (const auto& [j, w] : rows_.at(i).neighbors) nodes_.at(j)->algorithm().dropEdge({i, old});
    nodes_[i] = std::move(fresh);
    inc_[i] = inc;
    auto& a = nodes_.at(i)->algorithm();
    for (const auto& [j, w] : rows_.at(i).neighbors) {
      auto& b = nodes_.at(j)->algorithm();
      const auto pa = a.publicState(), pb = b.publicState();
      b.addEdge({i, inc}, pa);
      a.addEdge({j, incarnation(j)}, pb);
    }
  }
  Incarnation incarnation(PeerId i) const {
    auto it = inc_.find(i);
    return it == inc_.end() ? 0 : it->second;
  }
  const topology::MixingRow& row(PeerId i) const { return rows_.at(i); }

  // drop(from, to, round) -> true drops that message (stateless algorithms only).
  void round(Round t, const std::function<bool(PeerId, PeerId, Round)>& drop = {}) {
    std::map<PeerId, compress::Encoded> out;
    for (auto& [id, node] : nodes_) node->beginRound(t, out[id]);
    for (auto& [id, node] : nodes_) {
      std::vector<algo::Incoming> msgs;
      for (const auto& [j, w] : rows_[id].neighbors)
        if (!drop || !drop(j, id, t)) msgs.push_back({j, incarnation(j), out[j].view()});
      node->endRound(t, msgs, rows_[id]);
    }
  }

  std::map<PeerId, std::unique_ptr<algo::Node>>& nodes() { return nodes_; }
  std::vector<std::size_t> members() const {
    std::vector<std::size_t> m;
    for (const auto& [id, n] : nodes_) m.push_back(id);
    return m;
  }
  // Largest relative error max_i ||x_i - xs|| / ||xs||.
  double maxRelError(const Vec& xs) const {
    double e = 0.0;
    for (const auto& [id, n] : nodes_) e = std::max(e, (n->algorithm().x() - xs).norm() / xs.norm());
    return e;
  }
  Vec dualSum() const {
    Vec s;
    for (const auto& [id, n] : nodes_) {
      const Vec* d = n->algorithm().dual();
      if (!d) return {};
      s = s.size() ? Vec(s + *d) : *d;
    }
    return s;
  }

 private:
  std::set<std::pair<PeerId, PeerId>> ringEdges() const {
    std::vector<PeerId> ids;
    for (const auto& [id, n] : nodes_) ids.push_back(id);
    std::set<std::pair<PeerId, PeerId>> e;
    const std::size_t n = ids.size();
    if (n < 2) return e;
    for (std::size_t k = 0; k < n; ++k) {
      PeerId a = ids[k], b = ids[(k + 1) % n];
      if (a != b) e.insert({std::min(a, b), std::max(a, b)});
    }
    return e;
  }

  void rewire() {
    auto want = ringEdges();
    for (const auto& e : edges_)
      if (!want.count(e)) {
        if (nodes_.count(e.first)) nodes_[e.first]->algorithm().dropEdge({e.second, incarnation(e.second)});
        if (nodes_.count(e.second)) nodes_[e.second]->algorithm().dropEdge({e.first, incarnation(e.first)});
      }
    for (const auto& e : want)
      if (!edges_.count(e)) {
        auto& a = nodes_[e.first]->algorithm();
        auto& b = nodes_[e.second]->algorithm();
        const auto pa = a.publicState(), pb = b.publicState();
        a.addEdge({e.second, incarnation(e.second)}, pb);
        b.addEdge({e.first, incarnation(e.first)}, pa);
      }
    edges_ = want;
    std::map<PeerId, std::vector<PeerId>> adj;
    for (const auto& [a, b] : edges_) {
      adj[a].push_back(b);
      adj[b].push_back(a);
    }
    rows_.clear();
    for (const auto& [id, n] : nodes_) {
      topology::MixingRow r;
      double sum = 0.0;
      for (PeerId j : adj[id]) {
        const double w = 1.0 / (1.0 + static_cast<double>(std::max(adj[id].size(), adj[j].size())));
        r.neighbors.push_back({j, w});
        sum += w;
      }
      std::sort(r.neighbors.begin(), r.neighbors.end());
      r.self = 1.0 - sum;
      rows_[id] = r;
    }
  }

  Factory make_;
  std::map<PeerId, std::unique_ptr<algo::Node>> nodes_;
  std::set<std::pair<PeerId, PeerId>> edges_;
  std::map<PeerId, topology::MixingRow> rows_;
  std::map<PeerId, Incarnation> inc_;  // absent = incarnation 0
};

}  // namespace gossip::testing
