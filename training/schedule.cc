#include "training/schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/error.h"

namespace gossip::training {

namespace {
[[noreturn]] void bad(const std::string& prefix, const char* field, const std::string& why) {
  throw ConfigError(prefix + "." + field + ": " + why);
}
bool positive(double v) { return std::isfinite(v) && v > 0; }
}  // namespace

double LrSchedule::value(Round t) const {
  const double td = static_cast<double>(t);
  if (kind == "step") return lr * std::pow(gamma, static_cast<double>(t / step_every));
  if (kind == "inverse") return a / (b + td);
  if (kind == "cosine") {
    const double frac = std::min(td, static_cast<double>(horizon)) / static_cast<double>(horizon);
    return lr_min + (lr - lr_min) * 0.5 * (1.0 + std::cos(std::numbers::pi * frac));
  }
  return lr;
}

void LrSchedule::validate(const std::string& prefix) const {
  if (kind == "constant" || kind == "step" || kind == "cosine") {
    if (!positive(lr)) bad(prefix, "lr", "must be > 0");
  } else if (kind == "inverse") {
    if (!positive(a)) bad(prefix, "a", "must be > 0");
    if (!positive(b)) bad(prefix, "b", "must be > 0");
  } else {
    bad(prefix, "kind", "unknown '" + kind + "' (constant, step, inverse, cosine)");
  }
  if (kind == "step") {
    if (!(gamma > 0 && gamma <= 1)) bad(prefix, "gamma", "must be in (0, 1]");
    if (step_every == 0) bad(prefix, "step_every", "must be >= 1");
  }
  if (kind == "cosine") {
    if (horizon == 0) bad(prefix, "horizon", "must be >= 1");
    if (!(lr_min >= 0 && lr_min <= lr)) bad(prefix, "lr_min", "must be in [0, lr]");
  }
}

int LocalStepsSchedule::value(Round t) const {
  if (kind != "adaptive" || p_max <= p0) return p0;
  const double frac = static_cast<double>(std::min(t, ramp)) / static_cast<double>(ramp);
  return p0 + static_cast<int>(std::floor(static_cast<double>(p_max - p0) * frac));
}

void LocalStepsSchedule::validate(const std::string& prefix) const {
  if (kind != "constant" && kind != "adaptive") bad(prefix, "kind", "unknown '" + kind + "' (constant, adaptive)");
  if (p0 < 1) bad(prefix, "p0", "must be >= 1");
  if (kind == "adaptive") {
    if (p_max < p0) bad(prefix, "p_max", "must be >= p0");
    if (ramp == 0) bad(prefix, "ramp", "must be >= 1");
  }
}

}  // namespace gossip::training
