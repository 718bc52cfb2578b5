#pragma once
// Transport: how a node's engine moves frames, and nothing else (DESIGN.md §3). The engine encodes a frame
// header per link and hands over the round's payload, which is shared by every link of the round (encode
// once, zero copy): an in-process transport passes the shared buffer itself, the ZeroMQ transport (daemon)
// sends it as the second part of a multipart message. A transport never interprets a frame; the engine
// decodes and validates everything it receives, so a transport is also free to deliver garbage.
#include <memory>

#include "core/bytes.h"
#include "core/types.h"

namespace gossip::engine {

using SharedBytes = std::shared_ptr<const Bytes>;

struct RawFrame {
  Bytes header;         // as received; decoded and validated by the engine
  SharedBytes payload;  // may be shared with other receivers; never written to
};

class Transport {
 public:
  virtual ~Transport() = default;
  // Queues one frame for `to`. Returning does not mean it was delivered.
  virtual void send(PeerId to, Bytes header, SharedBytes payload) = 0;
  // Takes the next frame addressed to this node, if any; never blocks.
  virtual bool receive(RawFrame& out) = 0;
};

}  // namespace gossip::engine
