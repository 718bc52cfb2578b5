#pragma once
// Builds a Model from the [model] configuration section. The factory is the single place that checks
// model parameters against the data (class count, regression targets), so bad combinations surface as a
// ConfigError naming the field before any training starts.
#include <memory>
#include <string>
#include <vector>

#include "training/model.h"

namespace gossip::training {

struct ModelSpec {
  std::string kind = "logistic";  // logistic | softmax | mlp | least_squares
  std::vector<int> hidden;        // mlp only: 1 or 2 hidden layer sizes
  double l1 = 0.0;                // R(x) = l1 ||x||_1, applied by proximal steps, never in lossAndGrad
  double l2 = 0.0;                // l2/2 ||x||^2, part of the smooth loss
  bool bias = true;               // logistic / least_squares: append an intercept to x
};

// `classes` is Dataset::classes (0 for a regression data set). Throws ConfigError naming the field
// ("model.kind", "model.hidden", "model.l1", "model.l2") on bad values or a mismatch with the data.
std::unique_ptr<Model> makeModel(const ModelSpec& spec, std::size_t features, int classes);

}  // namespace gossip::training
