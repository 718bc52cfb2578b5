#include "algorithms/codistill.h"

#include <algorithm>
#include <cmath>

#include "algorithms/mixing.h"
#include "algorithms/prox.h"
#include "training/state_io.h"

namespace gossip::algo {
namespace {
constexpr std::uint32_t kCodistillTag = serial::fourcc("CODI");
}  // namespace

Codistill::Codistill(const AlgorithmParams& p, const compress::Compressor& c, PeerId self, Vec x0)
    : p_(p), c_(c), self_(self), hat_(x0), scratch_(Vec::Zero(x0.size())) {
  if (!(p.distill_weight >= 0.0 && std::isfinite(p.distill_weight)))
    throw ConfigError("algorithm.distill_weight must be >= 0 for codistill");
  if (p.distill_period < 1) throw ConfigError("algorithm.distill_period must be >= 1 for codistill");
  x_ = std::move(x0);
}

void Codistill::prepare(Round t, const GradRef& g, double lr, compress::Encoded& out) {
  x_ -= lr * g;
  proxL1(x_, lr * p_.l1);
  out.bytes.clear();
  if (!refreshRound(t)) return;  // an empty message: nothing to refresh this round
  scratch_ = x_ - hat_;
  Rng rng(roundSeed(p_.seed, self_, p_.incarnation, t));
  c_.encode(detail::view(scratch_), rng, out);
  detail::decodeAdd(c_, out.view(), hat_, 1.0);  // xhat_i += q_i, exactly as the neighbours will see it
}

void Codistill::apply(Round t, std::span<const Incoming> msgs, const topology::MixingRow& row) {
  const bool refresh = refreshRound(t);
  // Validation pass: nothing below may throw once a copy has been touched.
  if (refresh) {
    detail::validateReplicaRound("codistill", c_, msgs, row, edges_.size(), detail::incarnationLookup(edges_), scratch_);
  } else {  // the same checks, and the message must be empty
    detail::validateReplicaMessages("codistill", msgs, row, edges_.size(), detail::incarnationLookup(edges_),
                                    [](const Incoming& m) {
                                      if (!m.payload.empty())
                                        throw RejectedMessage(m.from, "codistill: a model refresh outside the refresh rounds");
                                    });
    useRowAsTeachers(row);
    return;
  }
  for (const auto& [j, w] : row.neighbors) detail::decodeAdd(c_, *detail::findMessage(msgs, j), edges_.at(j).hat, 1.0);
  // How far this node's public model is from its neighbours' (the disagreement the runtime reports).
  const double total = detail::replicaSum(edges_, row, scratch_);
  disagreement_ = training::norm64(total * hat_ - scratch_);
  useRowAsTeachers(row);
}

void Codistill::useRowAsTeachers(const topology::MixingRow& row) {
  teachers_.clear();
  for (const auto& [j, w] : row.neighbors) teachers_.push_back(&edges_.at(j).hat);
}

std::span<const Real> Codistill::publicState() const { return detail::view(hat_); }

const Vec& Codistill::copyOf(PeerId j) const {
  auto it = edges_.find(j);
  if (it == edges_.end()) throw ProtocolError("codistill: no edge to neighbour " + std::to_string(j));
  return it->second.hat;
}

void Codistill::addEdge(EdgeKey j, std::span<const Real> pub) {
  detail::addReplica(edges_, "codistill", j, pub, hat_.size());
}

void Codistill::adoptEdge(EdgeKey j, Vec&& pub) {
  detail::addReplica(edges_, "codistill", j, std::move(pub), hat_.size());
}

void Codistill::dropEdge(EdgeKey j) {
  auto it = edges_.find(j.id);
  if (it == edges_.end() || it->second.incarnation != j.incarnation) return;
  std::erase(teachers_, &it->second.hat);
  edges_.erase(it);
}

std::vector<EdgeKey> Codistill::edges() const { return detail::edgeKeys(edges_); }

// x, xhat_i and every copy with its key (scratch_ is rebuilt by prepare).
void Codistill::save(ByteWriter& w) const {
  serial::putTag(w, kCodistillTag);
  training::putVec(w, x_);
  training::putVec(w, hat_);
  detail::putReplicas(w, edges_);
}

void Codistill::load(ByteReader& r) {
  serial::expectTag(r, kCodistillTag, "codistill state");
  const auto n = x_.size();
  Vec x(n), hat(n);
  training::getVecInto(r, x, "codistill x");
  training::getVecInto(r, hat, "codistill x_hat");
  detail::ReplicaEdges edges = detail::getReplicas(r, n, "codistill");
  x_.swap(x);
  hat_.swap(hat);
  edges_.swap(edges);
  // A checkpoint is taken between rounds, when the edges are the last round's neighbours.
  teachers_.clear();
  for (const auto& [id, e] : edges_) teachers_.push_back(&e.hat);
}

}  // namespace gossip::algo
