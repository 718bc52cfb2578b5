#include "engine/frame.h"
#include "fuzz/targets.h"

namespace gossip::fuzz {

int frame(const std::uint8_t* data, std::size_t size) {
  const auto* b = reinterpret_cast<const std::byte*>(data);
  const std::size_t headerBytes = std::min(size, engine::kFrameHeaderBytes);
  try {
    const engine::FrameHeader h = engine::decodeFrameHeader(std::span(b, headerBytes));
    engine::checkPayload(h, std::span(b + headerBytes, size - headerBytes));
  } catch (const engine::FrameError& e) {
    if (e.reason.empty()) fail("frame", "a FrameError without a reason label");
  }
  return 0;
}

}  // namespace gossip::fuzz
