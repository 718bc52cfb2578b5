#pragma once
// Softmax regression and ReLU multi-layer perceptrons with a softmax cross-entropy output. Softmax
// regression is the network without hidden layers, so both share one implementation.
//
// Parameter layout of the flat x, layer by layer (input -> hidden... -> classes): the weight matrix W_l
// (out x in, row-major) followed by its bias b_l (out). Softmax regression on Fashion-MNIST therefore has
// 10 * 784 + 10 = 7,850 parameters; MLP 784-128-10 has 101,770.
//
// Scratch memory is per thread (see batch_rows.h), so one instance may serve any number of virtual
// nodes and threads. L1 is reported by l1() but never enters lossAndGrad (it is applied by prox steps).
#include <cstdint>
#include <span>
#include <vector>

#include "training/batch_rows.h"
#include "training/model.h"

namespace gossip::training {

class FeedForwardModel final : public Model {
 public:
  static constexpr std::size_t kMaxHidden = 4;  // bounded by the scratch slots used per layer

  // hidden empty = softmax regression. Throws ConfigError on zero sizes or too many layers.
  FeedForwardModel(std::size_t features, int classes, std::vector<int> hidden, double l1, double l2);

  std::string name() const override { return layers_.size() == 1 ? "softmax" : "mlp"; }
  std::size_t dim() const override { return dim_; }
  // Softmax regression starts at zero (convex). MLP: He-normal weights for ReLU layers, Glorot-uniform
  // for the output layer, zero biases.
  void init(Vec& x, Rng& rng) const override;
  double lossAndGrad(const Vec& x, const Dataset& data, std::span<const std::uint32_t> rows,
                     Vec& grad) const override;
  double distillLossAndGrad(const Vec& x, const Dataset& data, std::span<const std::uint32_t> rows,
                            std::span<const Vec* const> teachers, double weight, Vec& grad) const override;
  void predictProbs(const Vec& x, const Dataset& ref, std::vector<double>& probs) const override;
  double addReferenceTerm(const Vec& x, const Dataset& ref, std::span<const double> q, double weight,
                          Vec& grad) const override;
  double loss(const Vec& x, const Dataset& data) const override;
  double accuracy(const Vec& x, const Dataset& data) const override;
  double l1() const override { return l1_; }
  double l2() const override { return l2_; }

  int classes() const { return classes_; }

 private:
  struct Layer {
    Eigen::Index in, out;
    Eigen::Index offset;  // of W_l in x; b_l follows at offset + in * out
  };

  // Forward pass over one chunk; returns the logits (chunk x classes) in scratch.
  detail::MatMap forward(const Vec& x, const Dataset& data, const detail::RowSet& rows, std::size_t begin,
                         std::size_t count) const;
  // Summed cross-entropy over rows; when grad is given, accumulates the summed data gradient into it.
  double sumLoss(const Vec& x, const Dataset& data, const detail::RowSet& rows, Vec* grad) const;
  void backward(const Vec& x, std::size_t count, Vec& grad) const;
  // The teachers' mean class probabilities on one chunk, in the teacher scratch slot.
  detail::MatMap teacherMean(std::span<const Vec* const> teachers, const Dataset& data, const detail::RowSet& rows,
                             std::size_t begin, std::size_t count) const;
  void checkShape(const Vec& x, const Dataset& data) const;

  std::size_t features_;
  int classes_;
  std::vector<Layer> layers_;
  std::size_t dim_ = 0;
  double l1_, l2_;
};

}  // namespace gossip::training
