#pragma once
// Learning-rate and local-step schedules as small value types: value(t) is a pure function of the round,
// so every node (and a restarted node resuming at round t) computes the same number without state.
#include <cstdint>
#include <string>

#include "core/types.h"

namespace gossip::training {

struct LrSchedule {
  // constant: lr
  // step:     lr * gamma^floor(t / step_every)
  // inverse:  a / (b + t)            (CHOCO-SGD convex runs use a = 0.1/lambda, b = d)
  // cosine:   lr_min + (lr - lr_min) (1 + cos(pi min(t, T) / T)) / 2,  T = horizon
  std::string kind = "constant";
  double lr = 0.1;
  double gamma = 0.1;
  Round step_every = 1000;
  double a = 1.0, b = 1.0;
  double lr_min = 0.0;
  Round horizon = 1000;

  double value(Round t) const;
  // ConfigError naming "<prefix>.<field>" for bad values, e.g. prefix "algorithm.lr".
  void validate(const std::string& prefix = "algorithm.lr") const;
};

// Local SGD steps before round t's communication. "adaptive" is the ADPSGD-style period: communicate
// after every step early (when models disagree most and mixing matters most) and less often later. The
// period grows linearly from p0 at round 0 to p_max at round `ramp` and stays there:
//   value(t) = p0 + floor((p_max - p0) * min(t, ramp) / ramp).
struct LocalStepsSchedule {
  std::string kind = "constant";  // constant (always p0) | adaptive
  int p0 = 1;
  int p_max = 1;
  Round ramp = 1000;

  int value(Round t) const;
  void validate(const std::string& prefix = "algorithm.local_steps") const;
};

}  // namespace gossip::training
