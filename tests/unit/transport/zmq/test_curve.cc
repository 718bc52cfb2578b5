// CurveZMQ in ZmqTransport (docs/security.md): keys from `gossipd keygen`'s files, the ZAP allow-list,
// the start-up self-test, and a sender id bound to its key. Loopback only; every wait has a deadline.
#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "core/error.h"
#include "engine/frame.h"
#include "transport/zmq/curve_keys.h"
#include "transport/zmq/zmq_transport.h"

using namespace gossip;
using engine::FrameKind;
using engine::RawFrame;
using peer::ZmqTransport;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

const std::string kAny = "tcp://127.0.0.1:0";

struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/gossip-curve-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    path = tmpl;
  }
  ~TempDir() { fs::remove_all(path); }
};

Bytes header(PeerId sender, std::uint64_t seq) {
  engine::FrameHeader h;
  h.kind = FrameKind::Ack;
  h.sender = sender;
  h.seq = seq;
  h.payload_bytes = 3;
  Bytes out;
  engine::encodeFrameHeader(h, out);
  return out;
}

void waitFor(const std::function<bool()>& cond, const std::string& what) {
  const auto until = Clock::now() + std::chrono::seconds(20);
  while (!cond()) {
    if (Clock::now() > until) FAIL("timed out waiting for " << what);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // polling interval, bounded by the deadline
  }
}

peer::ZmqOptions secure(const fs::path& dir, PeerId id) {
  peer::ZmqOptions o;
  o.curve = std::make_shared<const peer::CurveKeys>(peer::loadCurveKeys(dir, id));
  return o;
}

const auto kPayload = std::make_shared<const Bytes>(Bytes(3, std::byte{7}));

}  // namespace

TEST_CASE("curve keys: keygen writes listed keys with private modes - loading checks what it reads") {
  TempDir d;
  CHECK(peer::writeClusterKeys(d.path, 3) == 3);
  CHECK(peer::writeClusterKeys(d.path, 4) == 1);  // keys already there are kept
  const auto k2 = peer::loadCurveKeys(d.path, 2);
  CHECK(k2.allowed.size() == 4);
  CHECK(k2.node.public_key.size() == 40);
  CHECK((fs::status(d.path / "node-2.key").permissions() & fs::perms::others_read) == fs::perms::none);
  CHECK((fs::status(d.path / "cluster.key").permissions() & fs::perms::group_read) == fs::perms::none);
  // A node whose key is not listed under its id, a missing file, a broken allow-list: one message each.
  fs::copy_file(d.path / "node-1.key", d.path / "node-9.key");
  CHECK_THROWS_WITH_AS(peer::loadCurveKeys(d.path, 9), doctest::Contains("is not listed for node 9"), ConfigError);
  CHECK_THROWS_WITH_AS(peer::loadCurveKeys(d.path / "nope", 0), doctest::Contains("cluster.key"), ConfigError);
  std::ofstream(d.path / "allow.txt", std::ios::app) << "7 not-a-key\n";
  CHECK_THROWS_WITH_AS(peer::loadCurveKeys(d.path, 0), doctest::Contains("allow.txt:"), ConfigError);
}

TEST_CASE("curve: listed keys exchange frames - an unlisted key is refused - a key cannot speak for another id") {
  TempDir d;
  peer::writeClusterKeys(d.path, 3);
  ZmqTransport b(2, kAny, secure(d.path, 2));  // the constructor's self-test refused an unlisted key
  CHECK(b.stats().unlisted_key == 0);          // ... and did not count it

  SUBCASE("a listed key naming its own id gets through, with the frame intact") {
    ZmqTransport a(1, kAny, secure(d.path, 1));
    a.addPeer(2, b.endpoint());
    a.send(2, header(1, 5), kPayload);
    RawFrame f;
    waitFor([&] { return b.receive(f); }, "node 1's frame at node 2");
    CHECK(engine::decodeFrameHeader(f.header).seq == 5);
    CHECK(*f.payload == *kPayload);
  }
  SUBCASE("a payload of several parts (zmq_transport.h) arrives intact under Curve") {
#if defined(__SANITIZE_THREAD__)
    // Not under ThreadSanitizer: libsodium (not built with TSan) writes every decrypted byte, so copying a
    // 1 MiB part out raises a suppressed race report per word, and TSan's linear search over the racy
    // addresses it has seen made this subcase run for minutes. The same parts are checked under TSan
    // without Curve (test_zmq_transport.cc), and this subcase runs in the release and ASan builds.
    MESSAGE("skipped under ThreadSanitizer (see the comment)");
#else
    ZmqTransport a(1, kAny, secure(d.path, 1));
    a.addPeer(2, b.endpoint());
    const std::size_t n = 3 * peer::kPayloadPartBytes + 11;
    auto big = std::make_shared<Bytes>(n);
    for (std::size_t i = 0; i < n; ++i) (*big)[i] = static_cast<std::byte>(i * 2654435761u >> 13);
    engine::FrameHeader h;
    h.kind = FrameKind::Model;
    h.sender = 1;
    h.payload_bytes = static_cast<std::uint32_t>(n);
    Bytes head;
    engine::encodeFrameHeader(h, head);
    a.send(2, head, big);
    RawFrame f;
    waitFor([&] { return b.receive(f); }, "node 1's multi-part frame at node 2");
    REQUIRE(f.parts);  // a large model frame is handed over in its parts (engine/transport.h)
    Bytes got;
    engine::gatherParts(*f.parts, got);
    CHECK(got == *big);
#endif
  }
  SUBCASE("a listed key naming another id is dropped and counted") {
    ZmqTransport a(1, kAny, secure(d.path, 1));
    a.addPeer(2, b.endpoint());
    a.send(2, header(0, 1), kPayload);  // claims to be node 0
    a.send(2, header(1, 2), kPayload);  // then honest
    RawFrame f;
    waitFor([&] { return b.receive(f); }, "the honest frame at node 2");
    CHECK(engine::decodeFrameHeader(f.header).seq == 2);
    CHECK(b.stats().wrong_key_for_sender == 1);
    CHECK(!b.receive(f));
  }
  SUBCASE("a key nobody listed is refused at the handshake: nothing it sends arrives") {
    TempDir other;
    fs::copy_file(d.path / "cluster.key", other.path / "cluster.key");  // even with the cluster key
    peer::writeClusterKeys(other.path, 2);                            // its own node-1 key, listed only there
    ZmqTransport a(1, kAny, secure(other.path, 1));
    a.addPeer(2, b.endpoint());
    a.send(2, header(1, 1), kPayload);
    waitFor([&] { return b.stats().unlisted_key >= 1; }, "node 2 to refuse the unlisted key");
    RawFrame f;
    CHECK(!b.receive(f));
    CHECK(b.stats().frames_received == 0);
  }
}
