#pragma once
// Codistillation with a reference set (Sodhani et al. 2020, the variant for models much larger than a batch's
// predictions; docs/algorithms.md, "codistill"). Every node holds the same R unlabeled reference rows
// (algorithm.distill_reference). Instead of model copies, a node sends its class probabilities on those
// rows, P_i (R x C), every tau rounds, and adds to its loss a distillation term toward its neighbours' mean
// prediction on the same rows:
//   g_i = grad CE(y, p(x_i)) on its minibatch  +  alpha grad mean_r KL( q_r || p_r(x_i) ) on the R rows,
//   q = mean_j P_j over the last round's neighbours whose predictions arrived
//   x_i <- prox(x_i - lr g_i);   in rounds t % tau == 0: send P_i = p(x_i) (after the step)
// A message costs R x C values whatever the model's size (fp32: 4 R C bytes). Messages are self-contained,
// so the method is stateless: a lost message leaves the neighbour's previous predictions in use, and a new
// neighbour teaches from its first prediction on. Between refreshes a node sends an empty message.
// The predictions come from a function Node installs (setPredictor: the node's model on the reference rows),
// the term from the node's estimator (GradientEstimator::estimateWithReference): this class holds vectors.
#include <map>
#include <vector>

#include "algorithms/algorithm.h"

namespace gossip::algo {

class CodistillReference final : public Algorithm {
 public:
  // c carries the predictions: fp32, fp16 or bf16 (ConfigError otherwise: a sparsified prediction is no
  // distribution). p.distill_reference_values = R x C.
  CodistillReference(const AlgorithmParams& p, const compress::Compressor& c, PeerId self, Vec x0);
  std::string_view name() const override { return "codistill"; }
  bool stateless() const override { return true; }
  void prepare(Round t, const GradRef& g, double lr, compress::Encoded& out) override;
  void apply(Round t, std::span<const Incoming> msgs, const topology::MixingRow& row) override;
  void save(ByteWriter& w) const override;
  void load(ByteReader& r) override;
  std::span<const double> referenceTarget() const override { return target_; }
  double distillWeight() const override { return p_.distill_weight; }
  bool needsPredictor() const override { return true; }
  void setPredictor(Predictor predict) override { predict_ = std::move(predict); }

  bool refreshRound(Round t) const { return t % p_.distill_period == 0; }
  // This node's last sent predictions (empty before the first refresh).
  const std::vector<double>& ownPredictions() const { return own_; }

 private:
  AlgorithmParams p_;
  const compress::Compressor& c_;
  PeerId self_;
  Predictor predict_;
  std::vector<double> own_;                       // P_i as last sent (decoded from its own bytes)
  std::map<PeerId, std::vector<double>> heard_;   // P_j as last received from neighbour j
  std::vector<double> target_;                    // q: mean over the last row's neighbours that have spoken
  std::vector<double> scratch_;
};

}  // namespace gossip::algo
