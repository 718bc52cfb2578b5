#pragma once
// ExternalGradient: a gradient estimator whose gradients come from outside the process: the daemon's
// trainer bridge (docs/trainer.md) writes the trainer's gradient into buffer() and calls supply() before
// each gradient the Node asks for, or, when the trainer's dtype is the state's, hands over where the trainer
// wrote it with supplyShared() (read in place: no copy, no buffer); model mode and a detached trainer supply
// a zero gradient.
//
// Why an estimator and not a new Node entry point: Node::beginRound already decides when a gradient is
// needed (start step, local steps, the round's gradient), and every method consumes it the same way; the
// bridge only has to make sure one fresh gradient is waiting each time. Asking for a gradient that was
// not supplied is a logic error of the runtime (the trainer would have computed it at another point).
#include <cmath>
#include <limits>
#include <memory>
#include <utility>

#include "core/error.h"
#include "core/serial.h"
#include "training/estimator.h"

namespace gossip::training {

class ExternalGradient final : public GradientEstimator {
 public:
  // The gradient buffer is made on the first buffer() call: model mode never asks for one, and its d values
  // would be a whole model's worth of memory held for nothing.
  explicit ExternalGradient(Eigen::Index dim) : dim_(dim) {}

  // Where the next gradient is written (dim values): a Node's g itself (gradientStorage), which only a caller
  // of estimate() with a vector of its own swaps away.
  Vec& buffer() {
    if (g_.size() != dim_) g_ = Vec::Zero(dim_);
    callerZero_ = false;  // when g_ is the caller's own (gradientStorage), it is about to hold something else
    return g_;
  }
  // The gradient in buffer() is the next one; `loss` is the trainer's minibatch loss (NaN: not reported).
  void supply(double loss) {
    fresh_ = true;
    zero_ = false;
    shared_ = nullptr;
    keep_.reset();
    loss_ = loss;
  }
  // The next gradient is the dim values at `data`, read there (takeSharedGradient) until the next supply of
  // any kind or releaseShared() at the end of the round: `keep` holds that memory (the trainer's shared-memory
  // mapping) alive until then, so a trainer that detaches or is replaced in the middle of a round unmaps
  // nothing under the reader.
  void supplyShared(const Real* data, std::shared_ptr<const void> keep, double loss) {
    GOSSIP_CHECK(data != nullptr);
    fresh_ = true;
    zero_ = false;
    shared_ = data;
    keep_ = std::move(keep);
    loss_ = loss;
  }
  // The next gradient is zero (model mode, or no trainer attached); `loss` as for supply.
  void supplyZero(double loss) {
    fresh_ = true;
    zero_ = true;
    shared_ = nullptr;
    keep_.reset();
    loss_ = loss;
  }
  bool fresh() const { return fresh_; }
  // The round a shared gradient was supplied for is over: lets go of the memory, whether the node took the
  // gradient (its apply ran) or not (a final consensus round takes none). Only the runtime's end of a round
  // calls this; the next round is supplied afresh.
  void releaseShared() {
    if (!shared_) return;
    fresh_ = false;
    shared_ = nullptr;
    keep_.reset();
  }

  // buffer() itself: Node writes no gradient of its own (GradientEstimator::gradientStorage).
  Vec* gradientStorage() override { return &g_; }

  // The supplied gradient is already in g when g is buffer() (a Node: gradientStorage); any other caller gets
  // it by swapping buffers (no copy of dim values per round). A zero gradient is written only when the
  // caller's buffer does not hold one already.
  double estimate(const Vec& x, Vec& g) override {
    GOSSIP_CHECK(fresh_, "a gradient was asked for that the trainer did not supply");
    GOSSIP_CHECK(x.size() == dim_, "model size ", x.size(), " differs from the trainer's ", dim_);
    fresh_ = false;
    if (zero_) {
      if (g.size() != dim_ || !callerZero_) g = Vec::Zero(dim_);
      callerZero_ = true;
    } else if (shared_) {  // a caller that cannot read it in place (not Node): a copy
      g = Eigen::Map<const Vec>(shared_, dim_);
      callerZero_ = false;
    } else {
      if (&g != &g_) std::swap(g, g_);
      callerZero_ = false;
    }
    ++calls_;
    return loss_;
  }
  std::optional<double> takeZeroGradient() override {
    if (!fresh_ || !zero_) return std::nullopt;
    fresh_ = false;
    ++calls_;
    return loss_;
  }
  std::optional<SharedGradient> takeSharedGradient() override {
    if (!fresh_ || !shared_) return std::nullopt;
    fresh_ = false;
    ++calls_;
    return SharedGradient{shared_, loss_};
  }
  std::uint64_t sampleGradients() const override { return calls_; }

  // Nothing decides future gradients here (they come from the trainer): only a tag, so that a checkpoint
  // of a built-in model's node is refused by a trainer node and the other way round.
  void saveState(ByteWriter& w) const override { serial::putTag(w, kTag); }
  void loadState(ByteReader& r) override { serial::expectTag(r, kTag, "a trainer node's estimator state"); }

 private:
  static constexpr std::uint32_t kTag = serial::fourcc("EXTG");
  Eigen::Index dim_;
  Vec g_;
  bool fresh_ = false, zero_ = false;
  const Real* shared_ = nullptr;    // the next (or last) gradient lies there (supplyShared)
  std::shared_ptr<const void> keep_;  // keeps shared_'s memory mapped
  bool callerZero_ = false;  // the buffer last handed to estimate's caller holds zeros
  double loss_ = std::numeric_limits<double>::quiet_NaN();
  std::uint64_t calls_ = 0;
};

}  // namespace gossip::training
