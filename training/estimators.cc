#include "training/estimators.h"

#include <numeric>

#include "core/error.h"

namespace gossip::training {

SampledEstimator::SampledEstimator(const Model& model, const Dataset& data, std::vector<std::uint32_t> rows,
                                   std::size_t batch, std::uint64_t seed)
    : model_(model), data_(data), rows_(std::move(rows)), batch_(std::min(batch, rows_.size())), rng_(seed) {
  GOSSIP_CHECK(!rows_.empty(), "estimator over an empty row list");
  GOSSIP_CHECK(batch >= 1, "estimator batch must be >= 1");
  perm_.resize(rows_.size());
  std::iota(perm_.begin(), perm_.end(), 0u);
  batch_rows_.resize(batch_);
}

void SampledEstimator::drawBatch() {
  // Whatever permutation perm_ holds, this picks a uniform batch_-subset in uniform order.
  const std::size_t m = perm_.size();
  for (std::size_t k = 0; k < batch_; ++k) {
    const std::size_t j = k + rng_.below(m - k);
    std::swap(perm_[k], perm_[j]);
    batch_rows_[k] = rows_[perm_[k]];
  }
}

double SampledEstimator::fullGradient(const Vec& x, Vec& g) {
  evaluated_ += rows_.size();
  return model_.lossAndGrad(x, data_, rows_, g);
}

double SgdEstimator::estimate(const Vec& x, Vec& g) {
  drawBatch();
  evaluated_ += batch_;
  return model_.lossAndGrad(x, data_, batchRows(), g);
}

// The same draw as estimate(): with no teachers both give the same gradients from the same RNG state.
double SgdEstimator::estimateDistilled(const Vec& x, std::span<const Vec* const> teachers, double weight, Vec& g) {
  drawBatch();
  evaluated_ += batch_;
  return model_.distillLossAndGrad(x, data_, batchRows(), teachers, weight, g);
}

double SgdEstimator::estimateWithReference(const Vec& x, std::span<const double> q, double weight, Vec& g) {
  const double loss = estimate(x, g);
  if (weight == 0.0) return loss;
  if (reference_ == nullptr) throw ConfigError("codistillation's reference variant: the estimator has no reference rows");
  return loss + model_.addReferenceTerm(x, *reference_, q, weight, g);
}

void SgdEstimator::predictReference(const Vec& x, std::vector<double>& probs) {
  if (reference_ == nullptr) throw ConfigError("codistillation's reference variant: the estimator has no reference rows");
  model_.predictProbs(x, *reference_, probs);
}

// ---------------------------------------------------------------- LSVRG

LsvrgEstimator::LsvrgEstimator(const Model& model, const Dataset& data, std::vector<std::uint32_t> rows,
                               std::size_t batch, double p, std::uint64_t seed)
    : SampledEstimator(model, data, std::move(rows), batch, seed), p_(p) {}

double LsvrgEstimator::estimate(const Vec& x, Vec& g) {
  if (!has_ref_) {
    w_ = x;
    fullGradient(w_, mu_);
    has_ref_ = true;
  }
  drawBatch();
  const double loss = model_.lossAndGrad(x, data_, batchRows(), g);
  model_.lossAndGrad(w_, data_, batchRows(), tmp_);
  evaluated_ += 2 * batch_;
  g += mu_ - tmp_;
  // Refresh after the estimate is formed (loopless SVRG): the estimate must use the old reference to
  // stay unbiased.
  if (rng_.uniform() < p_) {
    w_ = x;
    fullGradient(w_, mu_);
  }
  return loss;
}

// ---------------------------------------------------------------- SAGA (table)

void SagaTableEstimator::initialize(const Vec& x) {
  const auto m = static_cast<Eigen::Index>(rows_.size());
  table_.resize(x.size(), m);
  for (Eigen::Index j = 0; j < m; ++j) {
    model_.lossAndGrad(x, data_, std::span<const std::uint32_t>(&rows_[static_cast<std::size_t>(j)], 1), tmp_);
    table_.col(j) = tmp_ - model_.l2() * x;
  }
  avg_ = table_.rowwise().mean();
  evaluated_ += rows_.size();
  ready_ = true;
}

double SagaTableEstimator::estimate(const Vec& x, Vec& g) {
  if (!ready_) initialize(x);
  drawBatch();
  const auto pos = positions();
  const auto rows = batchRows();
  acc_.setZero(x.size());
  double loss = 0.0;
  for (std::size_t k = 0; k < batch_; ++k) {
    loss += model_.lossAndGrad(x, data_, rows.subspan(k, 1), tmp_);
    tmp_ -= model_.l2() * x;
    auto phi = table_.col(pos[k]);
    acc_ += tmp_ - phi;
    phi = tmp_;
  }
  evaluated_ += batch_;
  g = avg_ + acc_ / static_cast<double>(batch_) + model_.l2() * x;
  avg_ += acc_ / static_cast<double>(rows_.size());
  return loss / static_cast<double>(batch_);
}

// ---------------------------------------------------------------- SAGA (scalar memory)

SagaScalarEstimator::SagaScalarEstimator(const LinearModel& model, const Dataset& data,
                                         std::vector<std::uint32_t> rows, std::size_t batch, std::uint64_t seed)
    : SampledEstimator(model, data, std::move(rows), batch, seed), linear_(model) {}

double SagaScalarEstimator::estimate(const Vec& x, Vec& g) {
  const double m = static_cast<double>(rows_.size());
  if (!ready_) {
    linear_.marginDerivatives(x, data_, rows_, phi_);
    avg_.setZero(x.size());
    linear_.addFeatureCombination(data_, rows_, phi_, 1.0 / m, avg_);
    evaluated_ += rows_.size();
    ready_ = true;
  }
  drawBatch();
  const auto pos = positions();
  const auto rows = batchRows();
  const double data_loss = linear_.marginDerivatives(x, data_, rows, deriv_);
  evaluated_ += batch_;
  diff_.resize(static_cast<Eigen::Index>(batch_));
  for (std::size_t k = 0; k < batch_; ++k) {
    const auto kk = static_cast<Eigen::Index>(k);
    diff_[kk] = deriv_[kk] - phi_[pos[k]];
    phi_[pos[k]] = deriv_[kk];
  }
  const double l2 = linear_.l2();
  g = avg_ + l2 * x;
  linear_.addFeatureCombination(data_, rows, diff_, 1.0 / static_cast<double>(batch_), g);
  linear_.addFeatureCombination(data_, rows, diff_, 1.0 / m, avg_);
  return data_loss + 0.5 * l2 * x.squaredNorm();
}

// ---------------------------------------------------------------- factory

std::unique_ptr<GradientEstimator> makeEstimator(const EstimatorSpec& spec, const Model& model,
                                                 const Dataset& data, std::vector<std::uint32_t> rows,
                                                 std::uint64_t seed) {
  if (rows.empty()) throw ConfigError("estimator: the node has no training samples");
  if (spec.batch < 1) throw ConfigError("estimator.batch: must be >= 1");
  for (std::uint32_t r : rows)
    if (r >= data.samples())
      throw ConfigError("estimator: row " + std::to_string(r) + " outside the data set (" +
                        std::to_string(data.samples()) + " samples)");
  const std::size_t m = rows.size();
  const std::size_t b = std::min(spec.batch, m);
  const auto* linear = dynamic_cast<const LinearModel*>(&model);
  if (spec.kind == "sgd") {
    auto sgd = std::make_unique<SgdEstimator>(model, data, std::move(rows), b, seed);
    sgd->setReference(spec.reference);
    return sgd;
  }
  if (spec.kind == "full") return std::make_unique<FullGradientEstimator>(model, data, std::move(rows), b, seed);
  if (spec.kind == "lsvrg") {
    if (!(spec.lsvrg_p >= 0.0 && spec.lsvrg_p <= 1.0))
      throw ConfigError("estimator.lsvrg_p: must be in [0, 1] (0 = batch/m), got " + std::to_string(spec.lsvrg_p));
    const double p = spec.lsvrg_p > 0 ? spec.lsvrg_p : static_cast<double>(b) / static_cast<double>(m);
    return std::make_unique<LsvrgEstimator>(model, data, std::move(rows), b, p, seed);
  }
  if (spec.kind == "saga_scalar" || (spec.kind == "saga" && linear != nullptr)) {
    if (linear == nullptr)
      throw ConfigError("estimator.kind: saga_scalar needs a linear model (logistic, least_squares), not " +
                        model.name());
    return std::make_unique<SagaScalarEstimator>(*linear, data, std::move(rows), b, seed);
  }
  if (spec.kind == "saga" || spec.kind == "saga_table") {
    // The table holds m full gradients; refuse sizes that cannot be meant (> 2 GiB per node).
    if (static_cast<double>(m) * static_cast<double>(model.dim()) * 8.0 > 2.0 * (1u << 30))
      throw ConfigError("estimator.kind: a SAGA table of " + std::to_string(m) + " x " + std::to_string(model.dim()) +
                        " doubles is too large; use lsvrg");
    return std::make_unique<SagaTableEstimator>(model, data, std::move(rows), b, seed);
  }
  throw ConfigError("estimator.kind: unknown '" + spec.kind + "' (sgd, full, lsvrg, saga, saga_table, saga_scalar)");
}

}  // namespace gossip::training
