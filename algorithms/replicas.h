#pragma once
// The per-neighbour replicas of the methods that keep a full copy of each neighbour's public vector (CHOCO's
// x_hat_j, codistill's model copies): the edge, its creation from the neighbour's public state, and one
// checkpoint format for both.
#include <map>
#include <span>
#include <string>
#include <string_view>

#include "algorithms/algorithm.h"
#include "core/serial.h"
#include "training/state_io.h"

namespace gossip::algo::detail {

struct ReplicaEdge {
  Incarnation incarnation = 0;  // the neighbour's life this replica belongs to
  Vec hat;                      // the replica
};
using ReplicaEdges = std::map<PeerId, ReplicaEdge>;  // at most one edge per neighbour id

// Adds the edge to j from its public state. ProtocolError if an edge to j.id exists (a restarted neighbour
// is dropped first) or the state has the wrong dimension.
// The vector becomes the replica (Algorithm::adoptEdge).
inline void addReplica(ReplicaEdges& edges, std::string_view who, EdgeKey j, Vec&& pub, Eigen::Index dim) {
  if (edges.count(j.id))
    throw ProtocolError(std::string(who) + ": an edge to neighbour " + std::to_string(j.id) + " already exists (drop it first)");
  if (pub.size() != dim) throw ProtocolError(std::string(who) + ": neighbour public state has wrong dimension");
  edges[j.id] = ReplicaEdge{j.incarnation, std::move(pub)};
}
inline void addReplica(ReplicaEdges& edges, std::string_view who, EdgeKey j, std::span<const Real> pub, Eigen::Index dim) {
  if (pub.size() != static_cast<std::size_t>(dim))
    throw ProtocolError(std::string(who) + ": neighbour public state has wrong dimension");
  addReplica(edges, who, j, Vec(Eigen::Map<const Vec>(pub.data(), dim)), dim);
}

// sum = sum_j w_ij hat_j over the row's neighbours (each must have an edge); returns sum_j w_ij.
inline double replicaSum(const ReplicaEdges& edges, const topology::MixingRow& row, Vec& sum) {
  sum.setZero();
  double total = 0.0;
  for (const auto& [j, w] : row.neighbors) {
    sum += w * edges.at(j).hat;
    total += w;
  }
  return total;
}

// Count, then id, incarnation and replica of each edge in id order.
inline void putReplicas(ByteWriter& w, const ReplicaEdges& edges) {
  w.put<std::uint64_t>(edges.size());
  for (const auto& [id, e] : edges) {
    w.put<std::uint32_t>(id);
    w.put<std::uint64_t>(e.incarnation);
    training::putVec(w, e.hat);
  }
}

// Parses what putReplicas wrote, each replica of dimension dim; DecodeError on any mismatch.
inline ReplicaEdges getReplicas(ByteReader& r, Eigen::Index dim, std::string_view who) {
  const std::string replica = std::string(who) + " replica";
  const std::size_t count = serial::getCount(r, 4 + 8 + 8);  // id, incarnation and a vector length at least
  ReplicaEdges edges;
  for (std::size_t k = 0; k < count; ++k) {
    const auto id = r.get<std::uint32_t>();
    ReplicaEdge e{r.get<std::uint64_t>(), Vec(dim)};
    training::getVecInto(r, e.hat, replica.c_str());
    if (!edges.empty() && id <= edges.rbegin()->first)
      throw DecodeError(std::string(who) + " state: edge ids not strictly increasing");
    edges.emplace(id, std::move(e));
  }
  return edges;
}

}  // namespace gossip::algo::detail
