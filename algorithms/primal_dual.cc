#include "algorithms/primal_dual.h"

#include "algorithms/mixing.h"
#include "algorithms/primal_dual_fp32.h"
#include "algorithms/prox.h"
#include "training/state_io.h"

namespace gossip::algo {
namespace {
constexpr std::uint32_t kPrimalDualTag = serial::fourcc("PDUL");
}

PrimalDual::PrimalDual(std::string name, const AlgorithmParams& p, const compress::Compressor& c, PeerId self,
                       Vec x0, std::unique_ptr<compress::Compressor> owned)
    : name_(std::move(name)), p_(p), owned_(std::move(owned)), c_(owned_ ? *owned_ : c), self_(self) {
  if (p_.gamma == 0.0) p_.gamma = 1.0;  // the config's "default" (algorithm.gamma = 0)
  if (!(p.alpha > 0.0 && p.alpha <= 1.0)) throw ConfigError("algorithm.alpha must be in (0, 1] for " + name_);
  if (!(p_.gamma > 0.0)) throw ConfigError("algorithm.gamma must be > 0 for " + name_);
  const auto n = x0.size();
  x_ = std::move(x0);
  d_ = h_ = Vec::Zero(n);
  // The general path's yhat_ is made by its first prepare, its scratch_ and mix_ by its first apply: the fp32
  // path needs none of them.
}

void PrimalDual::startStep(const GradRef& g, double lr) {
  x_ -= lr * g;
  proxL1(x_, lr * p_.l1);
  started_ = true;
}

void PrimalDual::prepare(Round t, const GradRef& g, double lr, compress::Encoded& out) {
  GOSSIP_CHECK(started_, "startStep must run before the first round");
  eta_ = lr;
  g_.hold(g);  // Node keeps g unchanged until apply: the step lr g is taken from it there, not kept (4d bytes)
#if !(defined(GOSSIP_STATE_FLOAT64) && GOSSIP_STATE_FLOAT64)
  if (detail::exactForState(c_)) {
    // q_i is y_i - h_i itself (fp32 of float32 values), written straight into the frame; apply reads it back
    // there (the caller keeps out until then, Algorithm::prepare) for yhat_i = h_i + q_i. The decode's
    // finiteness check, which Node turns into "diverged", is kept.
    const auto dim = static_cast<std::size_t>(x_.size());
    GOSSIP_CHECK(g.size() == x_.size(), name_, " takes a gradient of the model's size");
    const std::span<std::byte> body = compress::fp32PayloadBody(out, dim);
    if (!detail::primalDualPrepareFp32(x_.data(), g.data(), d_.data(), h_.data(), static_cast<float>(lr), dim, body.data()))
      throw DecodeError("non-finite value in fp32 payload");
    ownBody_ = body.data();
    return;
  }
#endif
  // yhat_ holds y_i - h_i until it is encoded, then yhat_i = h_i + q_i: no vector of its own for y_i - h_i.
  yhat_ = x_ - lr * g - lr * d_ - h_;
  Rng rng(roundSeed(p_.seed, self_, p_.incarnation, t));
  c_.encode(detail::view(yhat_), rng, out);
  yhat_ = h_;
  detail::decodeAdd(c_, out.view(), yhat_, 1.0);  // yhat_i = h_i + q_i, bit-identical at the receivers
}

void PrimalDual::apply(Round, std::span<const Incoming> msgs, const topology::MixingRow& row) {
#if !(defined(GOSSIP_STATE_FLOAT64) && GOSSIP_STATE_FLOAT64)
  if (detail::exactForState(c_)) return applyFp32(msgs, row);
#endif
  if (scratch_.size() != x_.size()) scratch_ = mix_ = Vec::Zero(x_.size());
  // Validate first (presence, incarnation, decodability) so a bad round leaves the state untouched.
  detail::validateReplicaRound(name_, c_, msgs, row, edges_.size(), detail::incarnationLookup(edges_), scratch_);
  const double dualStep = p_.gamma / (2.0 * eta_);
  const double a = p_.alpha;
  mix_.setZero();
  for (const auto& [j, w] : row.neighbors) {
    Edge& e = edges_.at(j);
    // scratch = yhat_j = h_j + q_j
    scratch_ = e.h;
    detail::decodeAdd(c_, *detail::findMessage(msgs, j), scratch_, 1.0);  // yhat_j = h_j + q_j
    e.h = (1.0 - a) * e.h + a * scratch_;
    scratch_ = yhat_ - scratch_;
    mix_ += w * scratch_;
    scratch_ *= dualStep * w;  // this round's increment of e_ij
    e.e += scratch_;
    d_ += scratch_;
  }
  disagreement_ = training::norm64(mix_);
  x_ -= eta_ * g_.view() + eta_ * d_;  // the same float operations as a stored step lr g: bit for bit
  proxL1(x_, eta_ * p_.l1);
  h_ = (1.0 - a) * h_ + a * yhat_;
}

#if !(defined(GOSSIP_STATE_FLOAT64) && GOSSIP_STATE_FLOAT64)
void PrimalDual::applyFp32(std::span<const Incoming> msgs, const topology::MixingRow& row) {
  const auto dim = static_cast<std::size_t>(x_.size());
  // Every message checked before any state is written: a refused round leaves the node untouched.
  // The messages' runs are collected in the row's order (a message in parts is read in place).
  fp32Runs_.clear();
  fp32FirstRun_.clear();
  detail::validateReplicaMessages(name_, msgs, row, edges_.size(), detail::incarnationLookup(edges_),
                                  [&](const Incoming& m) {
                                    const std::size_t first = fp32Runs_.size();
                                    fp32FirstRun_.push_back(first);
                                    try {
                                      compress::fp32BodyRuns(messageParts(m), dim, fp32Runs_);
                                    } catch (const DecodeError& e) {
                                      throw RejectedMessage(m.from, e.what());
                                    }
                                    const auto body = compress::Fp32Runs(fp32Runs_).subspan(first);
                                    if (!m.wordsFinite && !compress::fp32Finite(body))
                                      throw RejectedMessage(m.from, "non-finite value in fp32 payload");
                                  });
  fp32FirstRun_.push_back(fp32Runs_.size());
  const double dualStep = p_.gamma / (2.0 * eta_);
  const double a = p_.alpha;
  fp32Edges_.clear();
  std::size_t k = 0;
  for (const auto& [j, w] : row.neighbors) {
    Edge& e = edges_.at(j);
    const auto body = compress::Fp32Runs(fp32Runs_).subspan(fp32FirstRun_[k], fp32FirstRun_[k + 1] - fp32FirstRun_[k]);
    ++k;
    fp32Edges_.push_back({e.h.data(), e.e.data(), body, static_cast<float>(w), static_cast<float>(dualStep * w)});
  }
  detail::PrimalDualFp32 s;
  GOSSIP_CHECK(ownBody_, "apply without this round's prepare");
  s.x = x_.data(), s.d = d_.data(), s.h = h_.data(), s.own = ownBody_, s.g = g_.data, s.dim = dim;
  s.keep = static_cast<float>(1.0 - a), s.take = static_cast<float>(a), s.eta = static_cast<float>(eta_);
  s.prox = eta_ * p_.l1 > 0.0;
  s.threshold = static_cast<float>(eta_ * p_.l1);
  disagreement_ = std::sqrt(detail::primalDualApplyFp32(s, fp32Edges_));
}
#endif

bool PrimalDual::readsPayloadParts() const { return detail::exactForState(c_); }

std::span<const Real> PrimalDual::publicState() const { return detail::view(h_); }

void PrimalDual::addEdge(EdgeKey j, std::span<const Real> pub) {
  if (pub.size() != static_cast<std::size_t>(h_.size()))
    throw ProtocolError(name_ + ": neighbour public state has wrong dimension");
  adoptEdge(j, Vec(Eigen::Map<const Vec>(pub.data(), static_cast<Eigen::Index>(pub.size()))));
}

void PrimalDual::adoptEdge(EdgeKey j, Vec&& pub) {
  // An overwrite would leave the old e_ij inside d_i and break sum_i d_i = 0.
  if (edges_.count(j.id))
    throw ProtocolError(name_ + ": an edge to neighbour " + std::to_string(j.id) + " already exists (drop it first)");
  if (pub.size() != h_.size()) throw ProtocolError(name_ + ": neighbour public state has wrong dimension");
  Edge e;
  e.incarnation = j.incarnation;
  e.h = std::move(pub);
  e.e = Vec::Zero(h_.size());
  edges_[j.id] = std::move(e);
}

void PrimalDual::dropEdge(EdgeKey j) {
  auto it = edges_.find(j.id);
  if (it == edges_.end() || it->second.incarnation != j.incarnation) return;
  d_ -= it->second.e;  // the edge's dual share leaves with the edge (its mirror leaves at the other end)
  edges_.erase(it);
}

std::vector<EdgeKey> PrimalDual::edges() const { return detail::edgeKeys(edges_); }

// started, x, d, h and every edge's (key, h_j, e_ij); yhat_, ownBody_, g_ and eta_ are rebuilt by prepare,
// scratch_ and mix_ by apply.
// The name is saved too: lead and prox_lead share the layout but not the parameters.
void PrimalDual::save(ByteWriter& w) const {
  serial::putTag(w, kPrimalDualTag);
  serial::putString(w, name_);
  w.put<std::uint8_t>(started_ ? 1 : 0);
  training::putVec(w, x_);
  training::putVec(w, d_);
  training::putVec(w, h_);
  w.put<std::uint64_t>(edges_.size());
  for (const auto& [id, e] : edges_) {
    w.put<std::uint32_t>(id);
    w.put<std::uint64_t>(e.incarnation);
    training::putVec(w, e.h);
    training::putVec(w, e.e);
  }
}

void PrimalDual::load(ByteReader& r) {
  serial::expectTag(r, kPrimalDualTag, (name_ + " state").c_str());
  const std::string name = serial::getString(r);
  if (name != name_) throw DecodeError("state of algorithm '" + name + "' cannot be loaded into " + name_);
  const auto started = r.get<std::uint8_t>();
  if (started > 1) throw DecodeError(name_ + " state: bad started flag");
  const auto n = x_.size();
  Vec x(n), d(n), h(n);
  training::getVecInto(r, x, "primal-dual x");
  training::getVecInto(r, d, "primal-dual d");
  training::getVecInto(r, h, "primal-dual h");
  const std::size_t count = serial::getCount(r, 4 + 8 + 8 + 8);  // id, incarnation, two vector lengths
  std::map<PeerId, Edge> edges;
  for (std::size_t k = 0; k < count; ++k) {
    const auto id = r.get<std::uint32_t>();
    Edge e{r.get<std::uint64_t>(), Vec(n), Vec(n)};
    training::getVecInto(r, e.h, "primal-dual edge h");
    training::getVecInto(r, e.e, "primal-dual edge e");
    if (!edges.empty() && id <= edges.rbegin()->first)
      throw DecodeError(name_ + " state: edge ids not strictly increasing");
    edges.emplace(id, std::move(e));
  }
  started_ = started == 1;
  ownBody_ = nullptr;  // a round begins with prepare
  x_.swap(x);
  d_.swap(d);
  h_.swap(h);
  edges_.swap(edges);
}

}  // namespace gossip::algo
