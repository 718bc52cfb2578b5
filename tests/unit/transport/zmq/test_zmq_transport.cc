// ZmqTransport over loopback TCP on ephemeral ports. Every wait has a deadline and fails naming what it
// awaited; nothing sleeps as synchronisation.
#include <doctest/doctest.h>

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <zmq.hpp>

#include "core/error.h"
#include "engine/frame.h"
#include "transport/zmq/zmq_transport.h"

using namespace gossip;
using engine::FrameKind;
using engine::RawFrame;
using engine::SharedBytes;
using peer::ZmqTransport;
using Clock = std::chrono::steady_clock;

namespace {

constexpr auto kDeadline = std::chrono::seconds(20);
const std::string kAny = "tcp://127.0.0.1:0";

Bytes header(PeerId sender, FrameKind kind, std::uint64_t seq, std::size_t payloadBytes) {
  engine::FrameHeader h;
  h.kind = kind;
  h.sender = sender;
  h.seq = seq;
  h.payload_bytes = static_cast<std::uint32_t>(payloadBytes);
  Bytes out;
  engine::encodeFrameHeader(h, out);
  return out;
}

// A received frame's payload bytes, whether in one buffer or (a large model frame) in parts.
Bytes bytesOf(const RawFrame& f) {
  if (!f.parts) return f.payload ? *f.payload : Bytes{};
  Bytes all;
  engine::gatherParts(*f.parts, all);
  return all;
}

SharedBytes payload(std::size_t n, std::uint64_t seed) {
  auto b = std::make_shared<Bytes>(n);
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (auto& v : *b) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    v = static_cast<std::byte>(x);
  }
  return b;
}

// Receives exactly n frames or fails naming what was awaited.
std::vector<RawFrame> receiveN(ZmqTransport& t, std::size_t n, const std::string& what) {
  std::vector<RawFrame> got;
  const auto until = Clock::now() + kDeadline;
  while (got.size() < n) {
    RawFrame f;
    if (t.receive(f)) {
      got.push_back(std::move(f));
      continue;
    }
    if (Clock::now() > until)
      FAIL("timed out waiting for " << what << ": got " << got.size() << " of " << n << " frames");
    t.waitReadable(std::chrono::milliseconds(50));
  }
  return got;
}

void waitFor(const std::function<bool()>& cond, const std::string& what) {
  const auto until = Clock::now() + kDeadline;
  while (!cond()) {
    if (Clock::now() > until) FAIL("timed out waiting for " << what);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // polling interval, bounded by the deadline
  }
}

std::uint64_t seqOf(const RawFrame& f) { return engine::decodeFrameHeader(f.header).seq; }
PeerId senderOf(const RawFrame& f) { return engine::decodeFrameHeader(f.header).sender; }

}  // namespace

TEST_CASE("peer zmq: two transports exchange frames intact and in order per link and channel") {
  ZmqTransport a(1, kAny), b(2, kAny);
  CHECK(a.endpoint().rfind("tcp://127.0.0.1:", 0) == 0);
  CHECK(a.endpoint() != "tcp://127.0.0.1:0");
  a.addPeer(2, b.endpoint());
  b.addPeer(1, a.endpoint());

  // Sizes straddle the copy/zero-copy threshold; every 5th frame is a control frame (own channel).
  const std::size_t sizes[] = {0, 1, 52, 4095, 4096, 100000};
  const int n = 60;
  std::map<std::uint64_t, SharedBytes> sent;
  for (int i = 0; i < n; ++i) {
    const auto kind = i % 5 == 0 ? FrameKind::Ack : FrameKind::Model;
    auto p = payload(sizes[i % 6], static_cast<std::uint64_t>(i));
    sent[static_cast<std::uint64_t>(i)] = p;
    a.send(2, header(1, kind, static_cast<std::uint64_t>(i), p->size()), p);
  }
  b.send(1, header(2, FrameKind::Model, 7, 3), payload(3, 7));

  auto got = receiveN(b, n, "frames from node 1 at node 2");
  std::uint64_t lastModel = 0, lastControl = 0;
  bool firstModel = true, firstControl = true;
  for (const RawFrame& f : got) {
    const auto h = engine::decodeFrameHeader(f.header);  // header bytes intact (checksummed)
    REQUIRE(sent.count(h.seq) == 1);
    CHECK(bytesOf(f) == *sent[h.seq]);
    auto& last = h.kind == FrameKind::Model ? lastModel : lastControl;
    auto& first = h.kind == FrameKind::Model ? firstModel : firstControl;
    if (!first) CHECK(h.seq > last);
    first = false;
    last = h.seq;
  }
  auto back = receiveN(a, 1, "the frame from node 2 at node 1");
  CHECK(seqOf(back[0]) == 7);
  CHECK(*back[0].payload == *payload(3, 7));

  RawFrame extra;
  CHECK_FALSE(b.receive(extra));
  const auto sa = a.stats(), sb = b.stats();
  CHECK(sa.frames_sent == n);
  CHECK(sb.frames_received == n);
  CHECK(sa.bytes_sent == sb.bytes_received);
  CHECK(sa.frames_received == 1);
  CHECK(sb.malformed_dropped == 0);
}

TEST_CASE("peer zmq: three transports: every node receives every other node's frames in order") {
  std::vector<std::unique_ptr<ZmqTransport>> t;
  for (PeerId i = 0; i < 3; ++i) t.push_back(std::make_unique<ZmqTransport>(i, kAny));
  for (PeerId i = 0; i < 3; ++i)
    for (PeerId j = 0; j < 3; ++j)
      if (i != j) t[i]->addPeer(j, t[j]->endpoint());
  const int k = 40;
  for (int s = 0; s < k; ++s)
    for (PeerId i = 0; i < 3; ++i)
      for (PeerId j = 0; j < 3; ++j)
        if (i != j) {
          auto p = payload(1000 + 37 * static_cast<std::size_t>(s), i * 1000 + static_cast<std::uint64_t>(s));
          t[i]->send(j, header(i, FrameKind::Model, static_cast<std::uint64_t>(s), p->size()), p);
        }
  for (PeerId j = 0; j < 3; ++j) {
    auto got = receiveN(*t[j], 2 * k, "frames from both other nodes at node " + std::to_string(j));
    std::map<PeerId, std::uint64_t> next;
    for (const RawFrame& f : got) {
      const PeerId from = senderOf(f);
      const std::uint64_t s = seqOf(f);
      CHECK(s == next[from]);
      next[from] = s + 1;
      CHECK(*f.payload == *payload(1000 + 37 * s, from * 1000 + s));
    }
    CHECK(next.size() == 2);
  }
}

TEST_CASE("peer zmq: a 64 MB payload arrives intact") {
  ZmqTransport a(1, kAny), b(2, kAny);
  a.addPeer(2, b.endpoint());
  auto p = payload(std::size_t{64} << 20, 42);
  a.send(2, header(1, FrameKind::Model, 0, p->size()), p);
  auto got = receiveN(b, 1, "the 64 MB frame");
  REQUIRE(engine::payloadSize(got[0]) == p->size());
  CHECK(bytesOf(got[0]) == *p);
  CHECK(b.stats().bytes_received == p->size() + engine::kFrameHeaderBytes);
}

TEST_CASE("peer zmq: payloads around the part size arrive intact - in order - counted once") {
  // Payloads over kPayloadPartBytes travel in several parts (zmq_transport.h); the edges of the split.
  constexpr std::size_t P = peer::kPayloadPartBytes;
  const std::vector<std::size_t> sizes = {0, 1, P - 1, P, P + 1, 2 * P, 3 * P + 5};
  ZmqTransport a(1, kAny), b(2, kAny);
  a.addPeer(2, b.endpoint());
  std::size_t total = 0;
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    a.send(2, header(1, FrameKind::Model, k, sizes[k]), payload(sizes[k], k + 7));
    total += sizes[k] + engine::kFrameHeaderBytes;
  }
  auto got = receiveN(b, sizes.size(), "one frame per payload size");
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    CAPTURE(sizes[k]);
    CHECK(seqOf(got[k]) == k);
    CHECK(bytesOf(got[k]) == *payload(sizes[k], k + 7));
  }
  CHECK(b.stats().frames_received == sizes.size());
  CHECK(b.stats().bytes_received == total);
  CHECK(b.stats().malformed_dropped == 0);
}

TEST_CASE("peer zmq: payload parts of the wrong sizes are dropped as malformed") {
  constexpr std::size_t P = peer::kPayloadPartBytes;
  ZmqTransport b(2, kAny);
  zmq::context_t ctx;
  zmq::socket_t raw(ctx, zmq::socket_type::dealer);
  raw.set(zmq::sockopt::linger, 0);
  raw.connect(b.endpoint());
  const std::vector<std::byte> full(P, std::byte{1}), shorter(P - 1, std::byte{2});
  auto sendParts = [&](const std::vector<const std::vector<std::byte>*>& parts) {
    const char head[] = "head";
    raw.send(zmq::buffer(head, 4), zmq::send_flags::sndmore);
    for (std::size_t k = 0; k < parts.size(); ++k)
      raw.send(zmq::buffer(*parts[k]), k + 1 < parts.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
  };
  const std::vector<std::byte> empty, five(5, std::byte{3});
  sendParts({&shorter, &five});       // a part before the last one is not full
  sendParts({&full, &empty});         // an empty last part
  sendParts({&full, &full, &shorter, &five});
  waitFor([&] { return b.stats().malformed_dropped == 3; }, "3 malformed part layouts counted");
  sendParts({&full, &full, &five});   // the layout send() makes: accepted as one payload
  auto got = receiveN(b, 1, "the well-formed 3-part payload");
  CHECK(got[0].payload->size() == 2 * P + 5);
  CHECK((*got[0].payload)[P] == std::byte{1});
  CHECK((*got[0].payload)[2 * P] == std::byte{3});
  CHECK(b.stats().malformed_dropped == 3);
}

TEST_CASE("peer zmq: messages with a wrong number of parts are dropped and counted") {
  ZmqTransport b(2, kAny);
  zmq::context_t ctx;
  zmq::socket_t raw(ctx, zmq::socket_type::dealer);
  raw.set(zmq::sockopt::linger, 0);
  raw.connect(b.endpoint());
  const char bytes[] = "garbage";
  raw.send(zmq::buffer(bytes, 7), zmq::send_flags::none);  // 1 part
  raw.send(zmq::buffer(bytes, 1), zmq::send_flags::sndmore);  // 3 parts
  raw.send(zmq::buffer(bytes, 2), zmq::send_flags::sndmore);
  raw.send(zmq::buffer(bytes, 3), zmq::send_flags::none);
  waitFor([&] { return b.stats().malformed_dropped == 2; }, "2 malformed messages counted");
  // A well-formed 2-part message still gets through afterwards, bytes untouched (never interpreted).
  raw.send(zmq::buffer(bytes, 4), zmq::send_flags::sndmore);
  raw.send(zmq::buffer(bytes, 5), zmq::send_flags::none);
  auto got = receiveN(b, 1, "the well-formed message after the malformed ones");
  CHECK(got[0].header.size() == 4);
  CHECK(got[0].payload->size() == 5);
  CHECK(b.stats().malformed_dropped == 2);
  CHECK(b.stats().frames_received == 1);
}

TEST_CASE("peer zmq: binding a port in use is an IoError naming the address") {
  ZmqTransport a(1, kAny);
  try {
    ZmqTransport b(2, a.endpoint());
    FAIL("second bind to " << a.endpoint() << " succeeded");
  } catch (const IoError& e) {
    CHECK(std::string(e.what()) == "listen address " + a.endpoint() + ": address already in use");
  }
  CHECK_THROWS_AS(a.addPeer(3, "nonsense://x"), IoError);
}

TEST_CASE("peer zmq: a removed peer re-added at a new endpoint (restart on a new port) gets frames again") {
  ZmqTransport a(1, kAny);
  auto b = std::make_unique<ZmqTransport>(2, kAny);
  a.addPeer(2, b->endpoint());
  b->addPeer(1, a.endpoint());
  a.send(2, header(1, FrameKind::Model, 0, 10), payload(10, 0));
  receiveN(*b, 1, "the first frame at the first incarnation of node 2");
  b->send(1, header(2, FrameKind::Model, 0, 10), payload(10, 1));
  receiveN(a, 1, "the frame from the first incarnation of node 2");

  const std::string oldEndpoint = b->endpoint();
  b.reset();  // node 2 dies
  a.removePeer(2);
  b = std::make_unique<ZmqTransport>(2, kAny);  // and restarts on another port
  CHECK(b->endpoint() != oldEndpoint);
  a.addPeer(2, b->endpoint());
  b->addPeer(1, a.endpoint());
  a.send(2, header(1, FrameKind::Model, 1, 20), payload(20, 2));
  auto got = receiveN(*b, 1, "the frame at the restarted node 2");
  CHECK(seqOf(got[0]) == 1);
  CHECK(*got[0].payload == *payload(20, 2));
  b->send(1, header(2, FrameKind::Model, 5, 10), payload(10, 3));  // same routing id as before: handover
  got = receiveN(a, 1, "the frame from the restarted node 2");
  CHECK(seqOf(got[0]) == 5);
}

// libzmq 4.3.4 sends socket-monitor events with a blocking send from its I/O thread: a link removed while
// its dead peer's disconnect was still to be reported blocked that thread for good once the link's monitor
// PAIR had closed, and no connect or send of the transport happened again (sockets.h, stopMonitor). Each
// round below removes a link whose peer has just died, then needs a new connection to work.
TEST_CASE("peer zmq: removing links to dead peers never freezes the transport") {
  ZmqTransport a(1, kAny);
  for (std::uint64_t round = 0; round < 12; ++round) {
    auto b = std::make_unique<ZmqTransport>(2, kAny);
    a.addPeer(2, b->endpoint());
    a.send(2, header(1, FrameKind::Model, round, 8), payload(8, round));
    receiveN(*b, 1, "the frame of round " + std::to_string(round) + " (the transport froze after a removal)");
    b.reset();  // the peer dies: its connection's disconnect is now to be reported
    a.removePeer(2);
  }
}

TEST_CASE("peer zmq: frames to an unknown peer are dropped and counted - frames to an unreachable peer do not block") {
  auto a = std::make_unique<ZmqTransport>(1, kAny);
  a->send(9, header(1, FrameKind::Model, 0, 1), payload(1, 0));
  waitFor([&] { return a->stats().send_dropped == 1; }, "the frame to unknown peer 9 counted as dropped");
  std::string deadEndpoint;
  {
    ZmqTransport gone(2, kAny);
    deadEndpoint = gone.endpoint();
  }  // nobody listens there any more
  a->addPeer(2, deadEndpoint);
  for (int i = 0; i < 5; ++i) a->send(2, header(1, FrameKind::Model, 0, 1 << 20), payload(1 << 20, 1));
  a.reset();  // joins the I/O thread with frames still queued (linger 0): must return promptly
  CHECK(a == nullptr);
}

TEST_CASE("peer zmq: a large model frame is handed over in its parts - uncopied - and outlives the transport") {
  ZmqTransport a(1, kAny);
  auto b = std::make_unique<ZmqTransport>(2, kAny);
  a.addPeer(2, b->endpoint());
  const std::size_t n = (std::size_t{5} << 20) / 2 + 12;  // 2.5 MiB and a bit: three parts, the last short
  a.send(2, header(1, FrameKind::Model, 0, n), payload(n, 7));
  auto got = receiveN(*b, 1, "the 2.5 MiB model frame");
  REQUIRE(got[0].parts);
  CHECK_FALSE(got[0].payload);
  CHECK(engine::payloadSize(got[0]) == n);
  REQUIRE(got[0].parts->parts.size() == 3);
  CHECK(got[0].parts->parts[0].size() == peer::kPayloadPartBytes);
  b.reset();  // the parts keep libzmq's messages alive without the transport
  Bytes whole;
  engine::gatherParts(*got[0].parts, whole);
  CHECK(whole == *payload(n, 7));
  // A small model frame is one buffer, as before.
  ZmqTransport c(3, kAny);
  a.addPeer(3, c.endpoint());
  a.send(3, header(1, FrameKind::Model, 0, 100), payload(100, 8));
  got = receiveN(c, 1, "the small model frame");
  CHECK_FALSE(got[0].parts);
  CHECK(*got[0].payload == *payload(100, 8));
}

TEST_CASE("peer zmq: a large frame of another kind arrives as one buffer of its own - which outlives the transport") {
  ZmqTransport a(1, kAny);
  auto b = std::make_unique<ZmqTransport>(2, kAny);
  a.addPeer(2, b->endpoint());
  const std::size_t n = std::size_t{2} << 20;
  // A state transfer's chunk (up to 16 MiB): its reader wants one buffer (model frames are handed over in parts).
  a.send(2, header(1, FrameKind::State, 0, n), payload(n, 0));
  auto got = receiveN(*b, 1, "the 2 MB state chunk");
  CHECK_FALSE(got[0].parts);
  REQUIRE(got[0].payload);
  CHECK(got[0].payload.use_count() == 1);  // nothing else (no pool) keeps it or will keep it once released
  b.reset();
  CHECK(*got[0].payload == *payload(n, 0));
}

TEST_CASE("peer zmq: a broken connection to a peer is reported once as a disconnect hint") {
  ZmqTransport a(1, kAny);
  auto b = std::make_unique<ZmqTransport>(2, kAny);
  a.addPeer(2, b->endpoint());
  a.send(2, header(1, FrameKind::Ack, 0, 4), payload(4, 0));  // a control frame: the monitored channel
  receiveN(*b, 1, "a control frame over the new connection");
  CHECK(a.takeDisconnects().empty());
  b.reset();  // the peer's process goes away: its sockets close, our TCP connection breaks
  std::vector<PeerId> hints;
  waitFor([&] {
    auto more = a.takeDisconnects();
    hints.insert(hints.end(), more.begin(), more.end());
    return !hints.empty();
  }, "a disconnect hint for peer 2 after it went away");
  CHECK(hints == std::vector<PeerId>{2});
  CHECK(a.stats().disconnects >= 1);
  CHECK(a.takeDisconnects().empty());
}

TEST_CASE("peer zmq: a full inbox drops and counts what arrives - and receiving resumes once it drains") {
  peer::ZmqOptions small;
  small.inbox_max_frames = 8;
  ZmqTransport b(2, kAny, small);
  ZmqTransport a(1, kAny);
  a.addPeer(2, b.endpoint());
  const auto p = payload(100, 1);
  for (std::uint64_t s = 0; s < 50; ++s) a.send(2, header(1, FrameKind::Model, s, 100), p);
  waitFor([&] { return b.stats().frames_received + b.stats().inbox_dropped == 50; }, "50 frames read by node 2");
  CHECK(b.stats().frames_received == 8);
  CHECK(b.stats().inbox_dropped == 42);
  auto first = receiveN(b, 8, "the 8 frames the inbox held");
  CHECK(seqOf(first.front()) == 0);
  CHECK(seqOf(first.back()) == 7);  // the oldest were kept, in order
  for (std::uint64_t s = 50; s < 55; ++s) a.send(2, header(1, FrameKind::Model, s, 100), p);
  auto later = receiveN(b, 5, "frames sent after the inbox drained");
  CHECK(seqOf(later.front()) == 50);
  CHECK(b.stats().inbox_dropped == 42);
}

TEST_CASE("peer zmq: a capped link sends model frames no faster than its rate - control frames pass") {
  // 1 MB/s with a 64 KiB burst: a frame goes out while the bucket holds any tokens and is paid for
  // afterwards, so the 20th of 20 model frames of 100 kB cannot leave before the first 19 are paid for
  // beyond the burst: (19 x 100 kB - 64 KiB) / 1 MB/s ~ 1.84 s, however fast or loaded the machine (a lower
  // bound only: no upper bound on time is asserted). A control frame sent after them overtakes them.
  peer::ZmqOptions capped;
  capped.link_bytes_per_second = 1e6;
  capped.link_burst_bytes = 64 * 1024;
  ZmqTransport b(2, kAny);
  ZmqTransport a(1, kAny, capped);
  a.addPeer(2, b.endpoint());
  const auto p = payload(100000, 3);
  const auto start = Clock::now();
  for (std::uint64_t s = 0; s < 20; ++s) a.send(2, header(1, FrameKind::Model, s, p->size()), p);
  a.send(2, header(1, FrameKind::Ack, 99, 100), payload(100, 4));
  auto got = receiveN(b, 21, "20 capped model frames and one control frame");
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  CHECK(seconds >= (19 * (100000.0 + 52) - 64 * 1024) / 1e6);
  std::size_t controlAt = 0;
  for (std::size_t k = 0; k < got.size(); ++k)
    if (seqOf(got[k]) == 99) controlAt = k;
  CHECK(controlAt < 20);
  CHECK(seqOf(got.back()) == 19);
}

TEST_CASE("peer zmq: control frames still get in while model frames fill the inbox") {
  peer::ZmqOptions small;
  small.inbox_max_frames = 8;
  ZmqTransport b(2, kAny, small);
  ZmqTransport a(1, kAny);
  a.addPeer(2, b.endpoint());
  const auto p = payload(100, 5);
  for (std::uint64_t s = 0; s < 20; ++s) a.send(2, header(1, FrameKind::Model, s, 100), p);
  waitFor([&] { return b.stats().frames_received + b.stats().inbox_dropped == 20; }, "20 model frames read");
  for (std::uint64_t s = 100; s < 104; ++s) a.send(2, header(1, FrameKind::Ack, s, 100), p);
  auto got = receiveN(b, 12, "8 model frames and the 4 control frames sent after the inbox filled");
  CHECK(b.stats().inbox_dropped == 12);
  CHECK(seqOf(got.back()) == 103);
}

TEST_CASE("peer zmq: membership frames reach their own inbox while the model inbox is full and unread") {
  peer::ZmqOptions small;
  small.inbox_max_frames = 8;
  ZmqTransport b(2, kAny, small);
  ZmqTransport a(1, kAny);
  a.addPeer(2, b.endpoint());
  const auto p = payload(100, 6);
  for (std::uint64_t s = 0; s < 40; ++s) a.send(2, header(1, FrameKind::Model, s, 100), p);
  waitFor([&] { return b.stats().frames_received + b.stats().inbox_dropped == 40; }, "40 model frames read");
  for (std::uint64_t s = 100; s < 150; ++s) a.send(2, header(1, FrameKind::Membership, s, 100), payload(100, s));
  // Nobody calls b.receive(): the membership inbox is read on its own, as the membership thread does.
  std::vector<RawFrame> got;
  const auto until = Clock::now() + kDeadline;
  while (got.size() < 50) {
    RawFrame f;
    if (b.receiveMembership(f)) {
      got.push_back(std::move(f));
      continue;
    }
    if (Clock::now() > until) FAIL("timed out waiting for 50 membership frames: got " << got.size());
    b.waitMembership(std::chrono::milliseconds(50));
  }
  for (std::size_t k = 0; k < got.size(); ++k) {
    CHECK(seqOf(got[k]) == 100 + k);  // in order, payload intact
    CHECK(*got[k].payload == *payload(100, 100 + k));
  }
  CHECK(b.stats().inbox_dropped == 32);  // only model frames were dropped
  CHECK(b.stats().membership_inbox_dropped == 0);
  RawFrame f;
  CHECK_FALSE(b.receiveMembership(f));
  // The model inbox holds only model frames, its first 8.
  auto model = receiveN(b, 8, "the 8 model frames the inbox held");
  for (const auto& m : model) CHECK(engine::decodeFrameHeader(m.header).kind == FrameKind::Model);
  CHECK_FALSE(b.receive(f));
}

TEST_CASE("peer zmq: a full membership inbox drops and counts - waitMembership wakes for membership frames only") {
  peer::ZmqOptions small;
  small.membership_inbox_max_frames = 4;
  ZmqTransport b(2, kAny, small);
  ZmqTransport a(1, kAny);
  a.addPeer(2, b.endpoint());
  a.send(2, header(1, FrameKind::Model, 1, 10), payload(10, 1));
  receiveN(b, 1, "a model frame");
  CHECK_FALSE(b.waitMembership(std::chrono::milliseconds(20)));
  for (std::uint64_t s = 0; s < 10; ++s) a.send(2, header(1, FrameKind::Membership, s, 10), payload(10, s));
  waitFor([&] { return b.stats().membership_inbox_dropped == 6; }, "6 membership frames dropped");
  CHECK(b.waitMembership(std::chrono::milliseconds(0)));
  for (std::uint64_t s = 0; s < 4; ++s) {
    RawFrame f;
    REQUIRE(b.receiveMembership(f));
    CHECK(seqOf(f) == s);  // the oldest were kept
  }
  RawFrame f;
  CHECK_FALSE(b.receive(f));
}
