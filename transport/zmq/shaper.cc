// The bandwidth shaper's token bucket (shaper.h). I/O thread only.
#include "transport/zmq/shaper.h"

#include <algorithm>

namespace gossip::peer::detail {

Shaper::Shaper(double bytesPerSecond, std::size_t burstBytes)
    : rate_(bytesPerSecond),
      burst_(static_cast<double>(burstBytes)),
      tokens_(static_cast<double>(burstBytes)),
      refilled_(std::chrono::steady_clock::now()) {}

std::int64_t Shaper::refill() {
  const auto now = std::chrono::steady_clock::now();
  tokens_ = std::min(burst_, tokens_ + rate_ * std::chrono::duration<double>(now - refilled_).count());
  refilled_ = now;
  return tokens_ > 0 ? 0 : static_cast<std::int64_t>(-tokens_ / rate_ * 1000.0) + 1;
}

}  // namespace gossip::peer::detail
