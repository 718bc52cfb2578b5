#pragma once
// Shaper: the bandwidth cap of one outgoing channel (ZmqOptions::link_bytes_per_second, config
// faults.link_mbit), for experiments without network namespaces. A token bucket: tokens may go negative (a
// frame larger than the burst is sent whole and paid for afterwards); nothing is sent while in debt. Only
// model channels are capped, so a capped link never delays failure detection.
//
// Threading: none of its own; each channel's shaper belongs to the transport's I/O thread.
#include <chrono>
#include <cstddef>
#include <cstdint>

namespace gossip::peer::detail {

class Shaper {
 public:
  Shaper() = default;  // not capped
  // Capped at `bytesPerSecond` (> 0), starting with a full bucket of `burstBytes`.
  Shaper(double bytesPerSecond, std::size_t burstBytes);

  bool capped() const { return rate_ > 0; }
  // Refills the bucket for the time since the last refill; returns the milliseconds until the channel may
  // send again (0: now). Capped shapers only.
  std::int64_t refill();
  // Pays for a frame just sent (nothing when not capped).
  void spend(std::size_t bytes) {
    if (capped()) tokens_ -= static_cast<double>(bytes);
  }

 private:
  double rate_ = 0;   // bytes per second; 0 = not capped
  double burst_ = 0;  // the bucket's size in bytes
  double tokens_ = 0;
  std::chrono::steady_clock::time_point refilled_{};
};

}  // namespace gossip::peer::detail
