// daemon/node/peer_links.h: the engine's queue, which the node thread fills from the transport and the
// engine drains (except while the node joins), holds a bounded amount of model frames; control frames
// always pass. Two ZmqTransports on loopback; every wait has a deadline and says what it awaited.
#include <doctest/doctest.h>

#include <chrono>
#include <memory>
#include <sstream>
#include <thread>

#include <spdlog/sinks/ostream_sink.h>

#include "daemon/node/peer_links.h"
#include "engine/frame.h"
#include "transport/zmq/zmq_transport.h"

using namespace gossip;
using namespace gossip::daemon;

namespace {

// Sends a frame from node `self` to `to`; returns its bytes on the wire (header and payload).
std::uint64_t frameTo(peer::ZmqTransport& from, PeerId self, PeerId to, engine::FrameKind kind, std::size_t bytes,
                      std::uint64_t seq) {
  auto p = std::make_shared<Bytes>(bytes, std::byte{0x5A});
  engine::FrameHeader h;
  h.kind = kind;
  h.sender = self;
  h.seq = seq;
  engine::sealPayload(h, *p);
  Bytes header;
  engine::encodeFrameHeader(h, header);
  const std::uint64_t total = header.size() + bytes;
  from.send(to, std::move(header), p);
  return total;
}

// Pumps until pump has taken `bytes` bytes of frames in all from the transport (the sender is not a member
// here, so its frames count as unknown traffic), i.e. every frame sent was queued or dropped.
void pumpUntil(PeerLinks& links, peer::ZmqTransport& t, std::uint64_t bytes, const char* what) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (;;) {
    links.pump(0, [](const engine::RawFrame&, std::uint64_t) {});
    if (links.traffic().unknown.received >= bytes) return;
    if (std::chrono::steady_clock::now() > until)
      FAIL("timed out waiting for " << what << ": " << links.traffic().unknown.received << " of " << bytes << " bytes");
    t.waitReadable(std::chrono::milliseconds(20));
  }
}

}  // namespace

TEST_CASE("peer links: the engine's queue holds a bounded amount of model frames - control frames always pass") {
  std::ostringstream logText;
  auto log = std::make_shared<spdlog::logger>("membership", std::make_shared<spdlog::sinks::ostream_sink_mt>(logText));
  peer::ZmqTransport a(1, "tcp://127.0.0.1:0"), b(2, "tcp://127.0.0.1:0");
  a.addPeer(2, b.endpoint());
  // At most 250 kB of model frames: three 100 kB frames go in (0, 100 and 200 kB were queued before each).
  PeerLinks links(2, 0, b, log, 250'000);
  std::uint64_t sent = 0;
  for (std::uint64_t k = 0; k < 10; ++k) {
    sent += frameTo(a, 1, 2, engine::FrameKind::Model, 100'000, k);
    if (k % 2 == 0) sent += frameTo(a, 1, 2, engine::FrameKind::Ack, 8, 100 + k);
  }
  pumpUntil(links, b, sent, "15 frames from node 1");  // nothing drains the engine's queue meanwhile
  int model = 0, control = 0;
  engine::RawFrame f;
  while (links.engineTransport().receive(f))
    ++(engine::peekIsKind(f.header, engine::FrameKind::Model) ? model : control);
  CHECK(model == 3);
  CHECK(control == 5);
  CHECK(logText.str().find("model frame(s) dropped") != std::string::npos);
  // Drained, the queue takes model frames again.
  for (std::uint64_t k = 20; k < 22; ++k) sent += frameTo(a, 1, 2, engine::FrameKind::Model, 100'000, k);
  pumpUntil(links, b, sent, "2 more frames");
  model = 0;
  while (links.engineTransport().receive(f)) model += engine::peekIsKind(f.header, engine::FrameKind::Model);
  CHECK(model == 2);
}
