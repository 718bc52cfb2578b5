#pragma once
// The scalar of the algorithms' state: every model, replica, dual and error memory a node keeps
// (docs/algorithms.md, "Precision and memory"). float by default: a model of d parameters costs 4d bytes per
// copy, as it does in the trainer, and the wire carries at most fp32 anyway. The float64 build
// (cmake -DGOSSIP_STATE_FLOAT64=ON; the asan preset is one) keeps the machine-precision checks of the exact
// methods. Reductions that need the range or the precision (losses, norms of state) are computed in double
// whatever Real is; the reference solver runs on the model, so in Real (docs/algorithms.md says what that costs).
namespace gossip {
#if defined(GOSSIP_STATE_FLOAT64) && GOSSIP_STATE_FLOAT64
using Real = double;
inline constexpr bool kRealIsDouble = true;
#else
using Real = float;
inline constexpr bool kRealIsDouble = false;
#endif
// The name of the state's precision, for checkpoints, cluster identity and logs.
inline constexpr const char* kRealName = kRealIsDouble ? "float64" : "float32";
}  // namespace gossip
