#pragma once
// Tolerances of checks whose precision is the state's (core/real.h): the float64 build keeps the
// machine-precision bound a check was written with, the float32 build (the default) uses the bound float32
// state can meet, stated next to each use. Checks of bit-identical results need no tolerance in either.
#include "core/real.h"

namespace gossip::precision {

inline constexpr double tol(double float64Bound, double float32Bound) {
  return kRealIsDouble ? float64Bound : float32Bound;
}

}  // namespace gossip::precision
