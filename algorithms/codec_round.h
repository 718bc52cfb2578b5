#pragma once
// A method run on a codec that has state: CltkRound (the round's support) and LgcRound (the learned basis).
// The wrapper owns the codec and the method built on it; it adds a trailer to the method's messages in
// prepare, reads it in apply, and passes everything else through to the method, whose code is unchanged.
#include <functional>
#include <memory>
#include <utility>

#include "algorithms/algorithm.h"

namespace gossip::algo {

class CodecRound : public Algorithm {
 public:
  // Builds the method on the wrapper's codec (called once, in the constructor).
  using MethodMaker = std::function<std::unique_ptr<Algorithm>(const compress::Compressor&, const Vec&)>;

  Vec& x() override { return inner_->x(); }
  const Vec& x() const override { return inner_->x(); }
  std::string_view name() const override { return inner_->name(); }
  bool stateless() const override { return inner_->stateless(); }
  void noteLoss(double loss) override { inner_->noteLoss(loss); }
  std::span<const Real> publicState() const override { return inner_->publicState(); }
  void dropEdge(EdgeKey j) override { inner_->dropEdge(j); }
  std::vector<EdgeKey> edges() const override { return inner_->edges(); }
  std::size_t edgeCount() const override { return inner_->edgeCount(); }
  double consensusStep() const override { return inner_->consensusStep(); }

  const Algorithm& method() const { return *inner_; }

 protected:
  CodecRound(std::unique_ptr<compress::Compressor> codec, const Vec& x0, const MethodMaker& make)
      : codec_(std::move(codec)), inner_(make(*codec_, x0)) {}

  std::unique_ptr<compress::Compressor> codec_;  // the method holds a reference: declared before it
  std::unique_ptr<Algorithm> inner_;
};

}  // namespace gossip::algo
