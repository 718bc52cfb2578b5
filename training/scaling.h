#pragma once
// Per-feature scaling fitted on the training set and applied unchanged to the test set (and to any
// node's own file), so all of them live in the same coordinates: x' = (x - offset) * scale.
#include <string>

#include "training/dataset.h"

namespace gossip::training {

enum class ScalingKind { None, MinMax, Standardize };

// "none" | "minmax" | "standardize"; ConfigError naming data.scaling otherwise.
ScalingKind parseScaling(const std::string& s);

struct Scaler {
  ScalingKind kind = ScalingKind::None;
  Eigen::VectorXd offset, scale;  // empty for None

  // MinMax maps the training range of each feature to [0, 1]; Standardize to mean 0, variance 1
  // (population variance). Constant features get scale 1 so they become 0 rather than NaN.
  static Scaler fit(const Dataset& train, ScalingKind kind);
  // DataError if the feature count differs from the one fitted on.
  void apply(Dataset& d) const;
};

// Fits a Scaler from rows seen one at a time, with the arithmetic and row order of Scaler::fit (which is
// built on it), so a fit streamed from a file equals a fit on the loaded matrix bit for bit. This is how
// a daemon scales its shard without ever holding the whole training set. Standardize needs two passes
// (the mean, then the centred second moment): feed every row, call endPass(), and while passes() says
// so feed them all again.
class ScalerFitter {
 public:
  ScalerFitter(ScalingKind kind, Eigen::Index features);
  int passes() const { return kind_ == ScalingKind::Standardize ? 2 : kind_ == ScalingKind::MinMax ? 1 : 0; }
  void add(const Eigen::Ref<const Eigen::RowVectorXf>& row);
  void endPass();
  Scaler result() const;

 private:
  ScalingKind kind_;
  int pass_ = 0;
  double n_ = 0;
  Eigen::RowVectorXf lo_, hi_;
  Eigen::VectorXd sum_, var_;
};

}  // namespace gossip::training
