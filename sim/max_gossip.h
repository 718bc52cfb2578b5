#pragma once
// Max-consensus by gossip: each round every node takes the largest value among its own and its
// in-neighbours'. On a (strongly) connected graph all nodes hold the global maximum after at most
// diameter rounds, with one number per edge and round on the wire. The simulator uses it to agree on
// the automatic step size (algorithm.lr_auto): the step of the least smooth node is safe for all.
#include <cstddef>
#include <vector>

#include "topology/topology.h"

namespace gossip::sim {

// Runs rounds until no value changes; returns how many rounds changed something. `merge(a, b)` returns
// the larger of two values (for a struct: field-wise), and must be idempotent and commutative.
template <class T, class Merge>
unsigned agreeByMaxGossip(const topology::Graph& g, std::vector<T>& values, Merge merge) {
  unsigned rounds = 0;
  std::vector<T> next = values;
  for (;;) {
    bool changed = false;
    for (std::size_t i = 0; i < g.size(); ++i) {
      T v = values[i];
      for (const auto j : g.directed ? g.in[i] : g.out[i]) v = merge(v, values[j]);
      changed |= !(v == values[i]);
      next[i] = v;
    }
    if (!changed) return rounds;
    values.swap(next);
    ++rounds;
  }
}

}  // namespace gossip::sim
