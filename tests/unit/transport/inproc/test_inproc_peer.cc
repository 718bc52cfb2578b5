// InprocPeerNet (transport/inproc/inproc_peer.h): the in-process network the stepped node test builds whole
// nodes on. What the nodes rely on: membership frames in their own inbox, the order between a pair kept under
// any latency, frames to a closed or reopened address lost, cuts and drops applied where the frame arrives.
#include <doctest/doctest.h>

#include <memory>
#include <vector>

#include "engine/frame.h"
#include "transport/inproc/inproc_peer.h"

using namespace gossip;
using engine::InprocPeerNet;

namespace {

Bytes header(engine::FrameKind kind, PeerId sender, Round round) {
  engine::FrameHeader h;
  h.kind = kind;
  h.sender = sender;
  h.round = round;
  Bytes out;
  engine::encodeFrameHeader(h, out);
  return out;
}

Round roundOf(const engine::RawFrame& f) { return engine::decodeFrameHeader(f.header).round; }

}  // namespace

TEST_CASE("inproc peer net: membership frames in their own inbox - the rest in order - unknown peers dropped") {
  InprocPeerNet net;
  auto a = net.open(1), b = net.open(2);
  CHECK(b->endpoint() == "inproc://node-2");
  a->send(2, header(engine::FrameKind::Model, 1, 0), nullptr);  // no address for 2 yet
  CHECK(a->stats().send_dropped == 1);
  a->addPeer(2, b->endpoint());
  a->send(2, header(engine::FrameKind::Model, 1, 7), nullptr);
  a->send(2, header(engine::FrameKind::Membership, 1, 0), nullptr);
  a->send(2, header(engine::FrameKind::Ack, 1, 8), nullptr);
  CHECK(b->waitReadable(std::chrono::milliseconds(0)));
  CHECK(b->waitMembership(std::chrono::milliseconds(0)));
  engine::RawFrame f;
  REQUIRE(b->receiveMembership(f));
  CHECK(engine::peekIsKind(f.header, engine::FrameKind::Membership));
  CHECK_FALSE(b->receiveMembership(f));
  REQUIRE(b->receive(f));
  CHECK(roundOf(f) == 7);
  REQUIRE(b->receive(f));
  CHECK(roundOf(f) == 8);
  CHECK_FALSE(b->receive(f));
  CHECK(a->stats().frames_sent == 3);
  CHECK(b->stats().frames_received == 3);
  CHECK_THROWS(net.open(2));  // the address is held...
  a->send(2, header(engine::FrameKind::Model, 1, 9), nullptr);  // ...and its holder still gets frames
  REQUIRE(b->receive(f));
  CHECK(roundOf(f) == 9);
}

TEST_CASE("inproc peer net: under latency a pair's frames keep their order - a reopened address gets none of the old ones") {
  InprocPeerNet net;
  std::vector<std::uint64_t> delays{5, 1, 3, 0};
  std::size_t k = 0;
  net.setLatency([&] { return delays[k++ % delays.size()]; });
  auto a = net.open(1);
  auto b = net.open(2);
  a->addPeer(2, b->endpoint());
  for (Round r = 0; r < 4; ++r) a->send(2, header(engine::FrameKind::Model, 1, r), nullptr);
  engine::RawFrame f;
  net.advance(4);
  CHECK_FALSE(b->receive(f));  // the first frame is due at 5, and the others wait behind it
  net.advance(5);
  for (Round r = 0; r < 4; ++r) {
    REQUIRE(b->receive(f));
    CHECK(roundOf(f) == r);
  }
  a->send(2, header(engine::FrameKind::Model, 1, 9), nullptr);  // due at 5 + 5 (the delays come round again)
  b.reset();               // a crash: the frame in flight is lost...
  b = net.open(2);         // ...even though the address is open again when it is due
  net.advance(100);
  CHECK_FALSE(b->receive(f));
  CHECK(net.lost() == 1);
}

TEST_CASE("inproc peer net: a cut loses every kind of frame - a drop only model frames") {
  InprocPeerNet net;
  auto a = net.open(1), b = net.open(2);
  a->addPeer(2, b->endpoint());
  bool cut = true;
  net.setCut([&](PeerId from, PeerId to) { return cut && from == 1 && to == 2; });
  a->send(2, header(engine::FrameKind::Membership, 1, 0), nullptr);
  a->send(2, header(engine::FrameKind::Model, 1, 0), nullptr);
  engine::RawFrame f;
  CHECK_FALSE(b->receive(f));
  CHECK_FALSE(b->receiveMembership(f));
  cut = false;
  net.setDrop([](PeerId, PeerId) { return true; });
  a->send(2, header(engine::FrameKind::Model, 1, 1), nullptr);
  a->send(2, header(engine::FrameKind::Ack, 1, 1), nullptr);
  REQUIRE(b->receive(f));
  CHECK(engine::peekIsKind(f.header, engine::FrameKind::Ack));
  CHECK_FALSE(b->receive(f));
  CHECK(net.lost() == 3);
}
