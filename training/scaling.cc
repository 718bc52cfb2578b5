#include "training/scaling.h"

#include <cmath>

#include "core/error.h"

namespace gossip::training {

ScalingKind parseScaling(const std::string& s) {
  if (s == "none") return ScalingKind::None;
  if (s == "minmax") return ScalingKind::MinMax;
  if (s == "standardize") return ScalingKind::Standardize;
  throw ConfigError("data.scaling: unknown '" + s + "' (none, minmax, standardize)");
}

Scaler Scaler::fit(const Dataset& train, ScalingKind kind) {
  Scaler s;
  s.kind = kind;
  if (kind == ScalingKind::None) return s;
  const auto f = static_cast<Eigen::Index>(train.features());
  s.offset.setZero(f);
  s.scale.setOnes(f);
  if (train.samples() == 0) return s;
  if (kind == ScalingKind::MinMax) {
    const Eigen::VectorXd lo = train.X.colwise().minCoeff().transpose().cast<double>();
    const Eigen::VectorXd hi = train.X.colwise().maxCoeff().transpose().cast<double>();
    for (Eigen::Index j = 0; j < f; ++j) {
      s.offset[j] = lo[j];
      if (hi[j] > lo[j]) s.scale[j] = 1.0 / (hi[j] - lo[j]);
    }
    return s;
  }
  // Two passes in double: the mean first, then the centred second moment (no cancellation).
  const double n = static_cast<double>(train.samples());
  // Row by row: a cast of the whole matrix would materialize a double copy of the data set.
  for (Eigen::Index i = 0; i < train.X.rows(); ++i) s.offset += train.X.row(i).transpose().cast<double>();
  s.offset /= n;
  Eigen::VectorXd var = Eigen::VectorXd::Zero(f);
  for (Eigen::Index i = 0; i < train.X.rows(); ++i)
    var += (train.X.row(i).transpose().cast<double>() - s.offset).cwiseAbs2();
  var /= n;
  for (Eigen::Index j = 0; j < f; ++j)
    if (var[j] > 0) s.scale[j] = 1.0 / std::sqrt(var[j]);
  return s;
}

void Scaler::apply(Dataset& d) const {
  if (kind == ScalingKind::None) return;
  if (static_cast<Eigen::Index>(d.features()) != offset.size())
    throw DataError("scaling: data has " + std::to_string(d.features()) + " features, the scaler was fitted on " +
                    std::to_string(offset.size()));
  const Eigen::RowVectorXf off = offset.transpose().cast<float>();
  const Eigen::RowVectorXf sc = scale.transpose().cast<float>();
  for (Eigen::Index i = 0; i < d.X.rows(); ++i) d.X.row(i) = (d.X.row(i) - off).cwiseProduct(sc);
}

}  // namespace gossip::training
