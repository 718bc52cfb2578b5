#include "training/model_factory.h"

#include <cmath>
#include <string>

#include "core/error.h"
#include "training/feedforward.h"
#include "training/linear_models.h"

namespace gossip::training {

namespace {
void checkCoefficient(double v, const char* field) {
  if (!std::isfinite(v) || v < 0)
    throw ConfigError(std::string(field) + ": must be a finite number >= 0, got " + std::to_string(v));
}
}  // namespace

std::unique_ptr<Model> makeModel(const ModelSpec& spec, std::size_t features, int classes) {
  checkCoefficient(spec.l1, "model.l1");
  checkCoefficient(spec.l2, "model.l2");
  if (features == 0) throw ConfigError("model: the data set has no features");
  const std::string cls = std::to_string(classes);
  if (spec.kind == "logistic") {
    if (classes != 2)
      throw ConfigError("model.kind: logistic regression needs binary labels, the data has " + cls + " classes");
    if (!spec.hidden.empty()) throw ConfigError("model.hidden: only valid for kind mlp");
    return std::make_unique<LogisticModel>(features, spec.bias, spec.l1, spec.l2);
  }
  if (spec.kind == "least_squares") {
    if (classes != 0)
      throw ConfigError("model.kind: least_squares needs regression targets, the data has " + cls + " classes");
    if (!spec.hidden.empty()) throw ConfigError("model.hidden: only valid for kind mlp");
    return std::make_unique<LeastSquaresModel>(features, spec.bias, spec.l1, spec.l2);
  }
  if (spec.kind == "softmax" || spec.kind == "mlp") {
    if (classes < 2)
      throw ConfigError("model.kind: " + spec.kind + " needs class labels (>= 2 classes), the data has " + cls);
    if (spec.kind == "softmax" && !spec.hidden.empty())
      throw ConfigError("model.hidden: only valid for kind mlp");
    if (spec.kind == "mlp" && (spec.hidden.empty() || spec.hidden.size() > 2))
      throw ConfigError("model.hidden: mlp needs 1 or 2 hidden layer sizes, got " +
                        std::to_string(spec.hidden.size()));
    if (!spec.bias) throw ConfigError("model.bias: " + spec.kind + " always has biases");
    return std::make_unique<FeedForwardModel>(features, classes, spec.hidden, spec.l1, spec.l2);
  }
  throw ConfigError("model.kind: unknown '" + spec.kind + "' (logistic, softmax, mlp, least_squares)");
}

}  // namespace gossip::training
