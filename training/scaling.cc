#include "training/scaling.h"

#include <cmath>
#include <limits>

#include "core/error.h"

namespace gossip::training {

ScalingKind parseScaling(const std::string& s) {
  if (s == "none") return ScalingKind::None;
  if (s == "minmax") return ScalingKind::MinMax;
  if (s == "standardize") return ScalingKind::Standardize;
  throw ConfigError("data.scaling: unknown '" + s + "' (none, minmax, standardize)");
}

ScalerFitter::ScalerFitter(ScalingKind kind, Eigen::Index features) : kind_(kind) {
  lo_.setConstant(features, std::numeric_limits<float>::infinity());
  hi_.setConstant(features, -std::numeric_limits<float>::infinity());
  sum_.setZero(features);
  var_.setZero(features);
}

void ScalerFitter::add(const Eigen::Ref<const Eigen::RowVectorXf>& row) {
  if (pass_ == 0) n_ += 1;
  if (kind_ == ScalingKind::MinMax) {
    lo_ = lo_.cwiseMin(row);
    hi_ = hi_.cwiseMax(row);
  } else if (kind_ == ScalingKind::Standardize) {
    // Row by row in double: a cast of the whole matrix would materialize a double copy of the data set.
    if (pass_ == 0)
      sum_ += row.transpose().cast<double>();
    else
      var_ += (row.transpose().cast<double>() - sum_).cwiseAbs2();
  }
}

void ScalerFitter::endPass() {
  // Two passes in double: the mean first, then the centred second moment (no cancellation).
  if (kind_ == ScalingKind::Standardize && pass_ == 0 && n_ > 0) sum_ /= n_;
  ++pass_;
}

Scaler ScalerFitter::result() const {
  Scaler s;
  s.kind = kind_;
  if (kind_ == ScalingKind::None) return s;
  const Eigen::Index f = sum_.size();
  s.offset.setZero(f);
  s.scale.setOnes(f);
  if (n_ == 0) return s;
  if (kind_ == ScalingKind::MinMax) {
    for (Eigen::Index j = 0; j < f; ++j) {
      s.offset[j] = static_cast<double>(lo_[j]);
      if (hi_[j] > lo_[j]) s.scale[j] = 1.0 / (static_cast<double>(hi_[j]) - static_cast<double>(lo_[j]));
    }
    return s;
  }
  s.offset = sum_;
  const Eigen::VectorXd var = var_ / n_;
  for (Eigen::Index j = 0; j < f; ++j)
    if (var[j] > 0) s.scale[j] = 1.0 / std::sqrt(var[j]);
  return s;
}

Scaler Scaler::fit(const Dataset& train, ScalingKind kind) {
  ScalerFitter fitter(kind, static_cast<Eigen::Index>(train.features()));
  for (int pass = 0; pass < fitter.passes(); ++pass) {
    for (Eigen::Index i = 0; i < train.X.rows(); ++i) fitter.add(train.X.row(i));
    fitter.endPass();
  }
  return fitter.result();
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
