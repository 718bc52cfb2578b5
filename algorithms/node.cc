#include "algorithms/node.h"

#include <cmath>
#include <cstring>
#include <type_traits>
#include <utility>

#include "algorithms/mixing.h"
#include "algorithms/prox.h"
#include "core/error.h"
#include "core/serial.h"

namespace gossip::algo {
namespace {
constexpr std::uint32_t kNodeTag = serial::fourcc("NODE");

// Whether a vector diverged: a NaN or infinite entry, or (double state) a squared norm above double's range.
// Float state: one integer pass over the bits (inf and NaN have all eight exponent bits set), which the
// compiler vectorizes at the baseline ISA. Eigen's cast<double>().squaredNorm() ran scalar there and cost
// as much as D-PSGD's whole fused mix (13% of a 20M-parameter daemon's CPU). A float vector's squared norm
// cannot overflow a double (d * 3.4e38^2 < 1e300 for any d that fits in memory), so the two tests agree.
template <class T>
bool blewUp(const T* v, std::size_t n) {
  if constexpr (std::is_same_v<T, float>) {
    std::uint32_t bad = 0;
    for (std::size_t i = 0; i < n; ++i) {
      std::uint32_t u;
      std::memcpy(&u, v + i, 4);
      bad |= static_cast<std::uint32_t>((u & 0x7F800000u) == 0x7F800000u);
    }
    return bad != 0;
  } else {
    return !std::isfinite(training::squaredNorm64(Eigen::Map<const Eigen::VectorX<T>>(v, static_cast<Eigen::Index>(n))));
  }
}
template <class V>
bool blewUp(const V& v) {
  return blewUp(v.data(), static_cast<std::size_t>(v.size()));
}
}  // namespace

Node::Node(PeerId id, std::unique_ptr<Algorithm> algorithm, std::unique_ptr<training::GradientEstimator> estimator,
           NodeSchedule schedule)
    : id_(id), algo_(std::move(algorithm)), est_(std::move(estimator)), sched_(std::move(schedule)) {
  GOSSIP_CHECK(algo_ && est_);
  if (Vec* shared = est_->gradientStorage()) g_ = shared;
  if (algo_->needsPredictor())
    algo_->setPredictor([e = est_.get()](const Vec& x, std::vector<double>& probs) { e->predictReference(x, probs); });
}

double Node::gradient() {
  ++gradCalls_;
  gZero_ = false;
  sharedG_ = nullptr;
  const auto teachers = algo_->teachers();
  if (!teachers.empty()) return est_->estimateDistilled(algo_->x(), teachers, algo_->distillWeight(), *g_);
  const auto target = algo_->referenceTarget();
  if (!target.empty()) return est_->estimateWithReference(algo_->x(), target, algo_->distillWeight(), *g_);
  if (algo_->acceptsZeroGradient()) {
    if (const auto loss = est_->takeZeroGradient()) {  // g_ is neither written nor (ever) allocated
      gZero_ = true;
      return *loss;
    }
  }
  if (const auto shared = est_->takeSharedGradient()) {  // read where the trainer wrote it: g_ is not written
    sharedG_ = shared->data;
    return shared->loss;
  }
  return est_->estimate(algo_->x(), *g_);
}

// A too large step makes the iterates blow up; without this check the first symptom is an encoder or
// decoder error far from the cause. Diverging is a configuration problem, hence a ConfigError subtype.
void Node::diverged(Round t, const char* what) const {
  std::string msg = "training diverged at round " + std::to_string(t) + ": " + what + "; lower algorithm.lr";
  if (algo_->name() == "choco") msg += " or algorithm.gamma";
  throw DivergedError(msg);
}

// One vectorised pass each (blewUp() above): a NaN or infinite entry, or with double state a norm above
// ~1e154, far beyond what any codec can carry (the wire is at most fp32, max 3.4e38), is a diverged run.
void Node::checkFinite(Round t) const {
  if (blewUp(algo_->x())) diverged(t, "the model became non-finite");
  if (!gZero_ && blewUp(grad())) diverged(t, "the gradient became non-finite");
}

Eigen::Map<const Vec> Node::grad() const {
  if (gZero_) return {nullptr, 0};
  if (sharedG_) return {sharedG_, algo_->x().size()};
  return {g_->data(), g_->size()};
}

void Node::startStep(Round t) {
  GOSSIP_CHECK(needsStartStep(t), "round ", t, " has no start step");
  startLoss_ = gradient();
  checkFinite(t);
  algo_->startStep(grad(), sched_.lr(t));
  startDone_ = true;
}

void Node::beginRound(Round t, compress::Encoded& out) {
  if (consensusRound(t)) return beginConsensusRound(out);
  const double lr = sched_.lr(t);
  double lossSum = 0.0;
  unsigned calls = 0;
  if (std::exchange(startDone_, false)) {
    lossSum += startLoss_;
    ++calls;
  } else if (algo_->needsStartStep()) {
    lossSum += gradient();
    ++calls;
    checkFinite(t);
    algo_->startStep(grad(), lr);
  }
  const unsigned steps = std::max(1u, sched_.localSteps(t));
  for (unsigned s = 1; s < steps; ++s) {
    lossSum += gradient();
    ++calls;
    checkFinite(t);
    if (!gZero_) algo_->x() -= lr * grad();
    proxL1(algo_->x(), lr * sched_.l1);
  }
  lossSum += gradient();
  ++calls;
  // A method whose prepare checks x as it encodes it (Algorithm::prepareChecksFinite) spares the pass over x.
  const bool prepareChecks = algo_->prepareChecksFinite();
  if (!prepareChecks || (!gZero_ && blewUp(grad()))) checkFinite(t);  // x first: a non-finite x makes g so too
  lastLoss_ = lossSum / calls;
  algo_->noteLoss(lastLoss_);
  try {
    algo_->prepare(t, grad(), lr, out);  // empty when exactly zero (Algorithm::acceptsZeroGradient)
  } catch (const NonFiniteModel&) {  // where prepare checks x (prepareChecks)
    diverged(t, "the model became non-finite");
  } catch (const DecodeError&) {
    // Our own freshly encoded message cannot fail to decode unless its values left the codec's finite
    // range (e.g. a finite double above the fp32 maximum, or an error memory plus x above it).
    diverged(t, "the model left the range the compressor can encode");
  }
}

void Node::endRound(Round t, std::span<const Incoming> msgs, const topology::MixingRow& row) {
  if (consensusRound(t)) return endConsensusRound(msgs, row);
  algo_->apply(t, msgs, row);
  sharedG_ = nullptr;  // the estimator may let go of that memory now (ExternalGradient::releaseShared)
}

void Node::beginConsensusRound(compress::Encoded& out) {
  if (!exact_) {
    exact_ = compress::makeCompressor({.name = sched_.consensus_codec});
    own_ = Vec::Zero(algo_->x().size());
    acc_ = Vec::Zero(algo_->x().size());
  }
  Rng unused(0);  // fp32, fp16 and bf16 draw nothing
  exact_->encode(detail::view(algo_->x()), unused, out);
  detail::decodeInto(*exact_, out.view(), own_);
}

void Node::endConsensusRound(std::span<const Incoming> msgs, const topology::MixingRow& row) {
  // Every message is decoded into acc_ before x changes: a payload that does not decode throws
  // RejectedMessage with x untouched, as in the methods' own apply.
  detail::mixArrived(*exact_, msgs, row, own_, acc_);
  consensusDisagreement_ = training::norm64(acc_ - own_);
  consensusMixed_ = true;
  algo_->x().swap(acc_);
}

void Node::save(ByteWriter& w) const {
  serial::putTag(w, kNodeTag);
  w.put<std::uint64_t>(gradCalls_);
  w.put<double>(lastLoss_);
  algo_->save(w);
  est_->saveState(w);
}

void Node::load(ByteReader& r) {
  serial::expectTag(r, kNodeTag, "node state");
  const auto calls = r.get<std::uint64_t>();
  const auto loss = r.get<double>();
  // The algorithm and the estimator each load transactionally; keep the algorithm's old state so a failure
  // in the estimator's part can undo the algorithm's commit.
  Bytes backup;
  ByteWriter bw(backup);
  algo_->save(bw);
  algo_->load(r);
  try {
    est_->loadState(r);
  } catch (...) {
    ByteReader br(backup, "node backup");
    algo_->load(br);
    throw;
  }
  gradCalls_ = calls;
  lastLoss_ = loss;
}

}  // namespace gossip::algo
