#pragma once
// Transport: how a node's engine moves frames, and nothing else (DESIGN.md §3). The engine encodes a frame
// header per link and hands over the round's payload, which is shared by every link of the round (encode
// once, zero copy): an in-process transport passes the shared buffer itself, the ZeroMQ transport (daemon)
// sends it as the second part of a multipart message. A transport never interprets a frame; the engine
// decodes and validates everything it receives, so a transport is also free to deliver garbage.
#include <cstddef>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include "core/bytes.h"
#include "core/types.h"

namespace gossip::engine {

using SharedBytes = std::shared_ptr<const Bytes>;

// A received payload left where the transport received it: its bytes are the parts' concatenation, in order.
// Why: a 100M-parameter model frame arrives in 1 MiB parts (transport/zmq/multipart.h), and copying them into
// one buffer cost a receive buffer of the model's size per neighbour and a memcpy per neighbour every round
// (issue 29). The fp32 mixes read the parts in place (Algorithm::readsPayloadParts); for every other method
// the engine gathers them into one buffer first. A transport subclasses this to own the parts' memory.
struct PayloadParts {
  virtual ~PayloadParts() = default;
  std::vector<std::span<const std::byte>> parts;
  std::size_t bytes = 0;  // the parts' total size
};
using SharedParts = std::shared_ptr<const PayloadParts>;

struct RawFrame {
  Bytes header;         // as received; decoded and validated by the engine
  SharedBytes payload;  // may be shared with other receivers; never written to
  SharedParts parts;    // instead of payload: a large model frame's payload in the transport's own parts
};

// The payload's size, however it is held.
inline std::size_t payloadSize(const RawFrame& f) {
  return f.parts ? f.parts->bytes : (f.payload ? f.payload->size() : 0);
}
// The parts' bytes in one buffer (the engine's fallback for a method that reads one contiguous payload).
inline void gatherParts(const PayloadParts& p, Bytes& out) {
  out.resize(p.bytes);
  std::size_t at = 0;
  for (const auto& part : p.parts) {
    if (!part.empty()) std::memcpy(out.data() + at, part.data(), part.size());
    at += part.size();
  }
}

class Transport {
 public:
  virtual ~Transport() = default;
  // Queues one frame for `to`. Returning does not mean it was delivered.
  virtual void send(PeerId to, Bytes header, SharedBytes payload) = 0;
  // Takes the next frame addressed to this node, if any, into every field of out; never blocks.
  virtual bool receive(RawFrame& out) = 0;
};

}  // namespace gossip::engine
