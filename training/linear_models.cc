#include "training/linear_models.h"

#include <cmath>
#include <limits>

#include "core/error.h"

namespace gossip::training {

using detail::gatherRows;
using detail::kChunkRows;
using detail::RowSet;
using detail::Scratch;

namespace {
constexpr int kSlotRows = 0;
constexpr int kSlotMargins = 1;

// log(1 + e^z) without overflow for large |z|.
double softplus(double z) { return z > 0 ? z + std::log1p(std::exp(-z)) : std::log1p(std::exp(z)); }
double sigmoid(double z) {
  if (z >= 0) return 1.0 / (1.0 + std::exp(-z));
  const double e = std::exp(z);
  return e / (1.0 + e);
}
}  // namespace

LinearModel::LinearModel(std::size_t features, bool bias, double l1, double l2)
    : features_(features), bias_(bias), l1_(l1), l2_(l2) {}

void LinearModel::init(Vec& x, Rng&) const { x.setZero(static_cast<Eigen::Index>(dim())); }

void LinearModel::checkShape(const Vec& x, const Dataset& data) const {
  GOSSIP_CHECK(static_cast<std::size_t>(x.size()) == dim(), name(), ": x has ", x.size(), " entries, model ", dim());
  GOSSIP_CHECK(data.features() == features_, name(), ": data has ", data.features(), " features, model ",
               features_);
  if (usesTargets())
    GOSSIP_CHECK(data.targets.size() == data.samples(), name(), " needs one regression target per sample");
  else
    GOSSIP_CHECK(data.y.size() == data.samples(), name(), " needs one label per sample");
}

detail::VecMap LinearModel::margins(const Vec& x, const detail::MatMap& a, int slot) const {
  detail::VecMap z = Scratch::vector(slot, a.rows());
  const auto f = static_cast<Eigen::Index>(features_);
  z.noalias() = a * x.head(f);
  if (bias_) z.array() += x[f];
  return z;
}

// Summed data loss over rows; when grad is given, adds sum_j l'(z_j) [a_j; 1] to it.
double LinearModel::sumLoss(const Vec& x, const Dataset& data, const RowSet& rows, Vec* grad) const {
  checkShape(x, data);
  const auto f = static_cast<Eigen::Index>(features_);
  double total = 0.0;
  for (std::size_t begin = 0; begin < rows.size(); begin += kChunkRows) {
    const std::size_t count = std::min(kChunkRows, rows.size() - begin);
    auto a = gatherRows(data, rows, begin, count, kSlotRows);
    auto z = margins(x, a, kSlotMargins);
    if (grad == nullptr) {
      total += chunkLoss(data, rows, begin, z);
      continue;
    }
    total += chunkLossDeriv(data, rows, begin, z);
    grad->head(f).noalias() += a.transpose() * z;
    if (bias_) (*grad)[f] += z.sum();
  }
  return total;
}

double LinearModel::lossAndGrad(const Vec& x, const Dataset& data, std::span<const std::uint32_t> rows,
                                Vec& grad) const {
  grad.setZero(static_cast<Eigen::Index>(dim()));
  const double n = static_cast<double>(rows.size());
  double data_loss = sumLoss(x, data, RowSet(rows), &grad);
  if (n > 0) {
    grad /= n;
    data_loss /= n;
  }
  grad += l2_ * x;
  return data_loss + 0.5 * l2_ * x.squaredNorm();
}

double LinearModel::loss(const Vec& x, const Dataset& data) const {
  const double n = static_cast<double>(data.samples());
  const double total = sumLoss(x, data, RowSet::all(data), nullptr);
  return (n > 0 ? total / n : 0.0) + 0.5 * l2_ * x.squaredNorm();
}

double LinearModel::marginDerivatives(const Vec& x, const Dataset& data, std::span<const std::uint32_t> rows,
                                      Vec& deriv) const {
  checkShape(x, data);
  const RowSet set(rows);
  deriv.resize(static_cast<Eigen::Index>(rows.size()));
  double total = 0.0;
  for (std::size_t begin = 0; begin < rows.size(); begin += kChunkRows) {
    const std::size_t count = std::min(kChunkRows, rows.size() - begin);
    auto a = gatherRows(data, set, begin, count, kSlotRows);
    auto seg = deriv.segment(static_cast<Eigen::Index>(begin), static_cast<Eigen::Index>(count));
    seg = margins(x, a, kSlotMargins);
    total += chunkLossDeriv(data, set, begin, seg);
  }
  return rows.empty() ? 0.0 : total / static_cast<double>(rows.size());
}

void LinearModel::addFeatureCombination(const Dataset& data, std::span<const std::uint32_t> rows,
                                        const Vec& coef, double scale, Vec& acc) const {
  GOSSIP_CHECK(static_cast<std::size_t>(coef.size()) == rows.size(), "one coefficient per row");
  GOSSIP_CHECK(static_cast<std::size_t>(acc.size()) == dim(), "accumulator size");
  const auto f = static_cast<Eigen::Index>(features_);
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const std::uint32_t r = rows[k];
    GOSSIP_CHECK(r < data.samples(), "row ", r, " out of range");
    const double c = scale * coef[static_cast<Eigen::Index>(k)];
    acc.head(f) += static_cast<Real>(c) * data.X.row(r).transpose().cast<Real>();
    if (bias_) acc[f] += c;
  }
}

// ---------------------------------------------------------------- logistic

double LogisticModel::chunkLossDeriv(const Dataset& data, const RowSet& rows, std::size_t begin,
                                     Eigen::Ref<Vec> z) const {
  double total = 0.0;
  for (Eigen::Index k = 0; k < z.size(); ++k) {
    const double y = data.y[rows[begin + static_cast<std::size_t>(k)]];
    total += softplus(z[k]) - y * z[k];
    z[k] = sigmoid(z[k]) - y;
  }
  return total;
}

double LogisticModel::chunkLoss(const Dataset& data, const RowSet& rows, std::size_t begin,
                                Eigen::Ref<const Vec> z) const {
  double total = 0.0;
  for (Eigen::Index k = 0; k < z.size(); ++k)
    total += softplus(z[k]) - data.y[rows[begin + static_cast<std::size_t>(k)]] * z[k];
  return total;
}

double LogisticModel::accuracy(const Vec& x, const Dataset& data) const {
  checkShape(x, data);
  const RowSet rows = RowSet::all(data);
  std::size_t correct = 0;
  for (std::size_t begin = 0; begin < rows.size(); begin += kChunkRows) {
    const std::size_t count = std::min(kChunkRows, rows.size() - begin);
    auto z = margins(x, gatherRows(data, rows, begin, count, kSlotRows), kSlotMargins);
    for (std::size_t k = 0; k < count; ++k)
      correct += (z[static_cast<Eigen::Index>(k)] > 0) == (data.y[rows[begin + k]] == 1);
  }
  return rows.size() == 0 ? 0.0 : static_cast<double>(correct) / static_cast<double>(rows.size());
}

// ---------------------------------------------------------------- least squares

double LeastSquaresModel::chunkLossDeriv(const Dataset& data, const RowSet& rows, std::size_t begin,
                                         Eigen::Ref<Vec> z) const {
  double total = 0.0;
  for (Eigen::Index k = 0; k < z.size(); ++k) {
    const double r = z[k] - data.targets[rows[begin + static_cast<std::size_t>(k)]];
    total += 0.5 * r * r;
    z[k] = r;
  }
  return total;
}

double LeastSquaresModel::chunkLoss(const Dataset& data, const RowSet& rows, std::size_t begin,
                                    Eigen::Ref<const Vec> z) const {
  double total = 0.0;
  for (Eigen::Index k = 0; k < z.size(); ++k) {
    const double r = z[k] - data.targets[rows[begin + static_cast<std::size_t>(k)]];
    total += 0.5 * r * r;
  }
  return total;
}

double LeastSquaresModel::accuracy(const Vec&, const Dataset&) const {
  return std::numeric_limits<double>::quiet_NaN();
}

}  // namespace gossip::training
