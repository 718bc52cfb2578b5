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

}  // namespace gossip::training
