#pragma once
// Proximal operator of t * ||x||_1 (soft thresholding), applied in place. t = 0 is the identity.
#include "training/dataset.h"

namespace gossip::algo {

inline void proxL1(training::Vec& x, double t) {
  if (t <= 0.0) return;
  const auto th = static_cast<Real>(t);
  x = x.unaryExpr([th](Real v) { return v > th ? v - th : (v < -th ? v + th : Real(0)); });
}

}  // namespace gossip::algo
