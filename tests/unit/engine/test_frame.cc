// Frame header codec: round trip, rejection of every single-bit flip and every truncation, payload checks,
// and every reason label reachable (they feed per-reason drop counters, so each must be distinct).
#include <doctest/doctest.h>

#include <cstring>
#include <limits>
#include <vector>
#include <set>
#include <string>

#include "core/crc32c.h"
#include "core/rng.h"
#include "engine/frame.h"

using namespace gossip;
using namespace gossip::engine;

namespace {

FrameHeader randomHeader(Rng& rng) {
  FrameHeader h;
  h.kind = static_cast<FrameKind>(1 + rng.below(8));
  h.sender = static_cast<PeerId>(rng.next());
  h.incarnation = rng.next();
  h.round = rng.next();
  h.degree = static_cast<std::uint16_t>(rng.next());
  h.epoch = static_cast<std::uint32_t>(rng.next());
  h.seq = rng.next();
  h.payload_bytes = static_cast<std::uint32_t>(rng.below(kMaxPayloadBytes + 1ull));
  h.payload_crc = static_cast<std::uint32_t>(rng.next());
  return h;
}

bool same(const FrameHeader& a, const FrameHeader& b) {
  return a.kind == b.kind && a.sender == b.sender && a.incarnation == b.incarnation && a.round == b.round &&
         a.degree == b.degree && a.epoch == b.epoch && a.seq == b.seq && a.payload_bytes == b.payload_bytes &&
         a.payload_crc == b.payload_crc;
}

// Overwrites a field and re-seals the header checksum, so a test reaches the check behind it.
template <class T>
void patch(Bytes& b, std::size_t off, T v) {
  std::memcpy(b.data() + off, &v, sizeof v);
  const std::uint32_t crc = crc32c(std::span<const std::byte>(b).first(48));
  std::memcpy(b.data() + 48, &crc, 4);
}

std::string reasonOf(std::span<const std::byte> bytes) {
  try {
    decodeFrameHeader(bytes);
  } catch (const FrameError& e) {
    return e.reason;
  }
  return "accepted";
}

}  // namespace

TEST_CASE("frame header round trip") {
  Rng rng(1);
  Bytes buf;
  for (int i = 0; i < 1000; ++i) {
    const FrameHeader h = randomHeader(rng);
    encodeFrameHeader(h, buf);
    REQUIRE(buf.size() == kFrameHeaderBytes);
    CHECK(same(decodeFrameHeader(buf), h));
  }
  // Layout spot checks against the documented offsets.
  FrameHeader h;
  h.kind = FrameKind::State;
  h.sender = 0x01020304;
  h.seq = 9;
  encodeFrameHeader(h, buf);
  CHECK(std::memcmp(buf.data(), "GSPD", 4) == 0);
  CHECK(buf[4] == std::byte{kFrameVersion});
  CHECK(buf[5] == std::byte{4});
  CHECK(buf[8] == std::byte{4});
  CHECK(buf[11] == std::byte{1});
  CHECK(buf[32] == std::byte{9});
  // Trailing bytes (the payload) are not part of the header.
  buf.resize(100, std::byte{0x55});
  CHECK(same(decodeFrameHeader(buf), h));
}

TEST_CASE("every single-bit flip of a header is rejected") {
  Rng rng(2);
  Bytes buf;
  for (int i = 0; i < 20; ++i) {
    encodeFrameHeader(randomHeader(rng), buf);
    for (std::size_t bit = 0; bit < kFrameHeaderBytes * 8; ++bit) {
      Bytes bad = buf;
      bad[bit / 8] ^= std::byte(1u << (bit % 8));
      CAPTURE(bit);
      CHECK_THROWS_AS(decodeFrameHeader(bad), FrameError);
    }
  }
}

TEST_CASE("every truncation of a header is rejected as short") {
  Rng rng(3);
  Bytes buf;
  encodeFrameHeader(randomHeader(rng), buf);
  for (std::size_t n = 0; n < kFrameHeaderBytes; ++n)
    CHECK(reasonOf(std::span<const std::byte>(buf).first(n)) == "short");
}

TEST_CASE("payload checks catch a wrong length and every single-bit flip") {
  Rng rng(4);
  Bytes payload(257);
  for (auto& b : payload) b = std::byte(rng.below(256));
  FrameHeader h;
  sealPayload(h, payload);
  CHECK(h.payload_bytes == payload.size());
  CHECK_NOTHROW(checkPayload(h, payload));
  for (std::size_t bit = 0; bit < payload.size() * 8; ++bit) {
    Bytes bad = payload;
    bad[bit / 8] ^= std::byte(1u << (bit % 8));
    try {
      checkPayload(h, bad);
      FAIL("flip of bit " << bit << " accepted");
    } catch (const FrameError& e) {
      CHECK(e.reason == "bad_payload_crc");
    }
  }
  try {
    checkPayload(h, std::span<const std::byte>(payload).first(256));
    FAIL("short payload accepted");
  } catch (const FrameError& e) {
    CHECK(e.reason == "length_mismatch");
  }
  // An empty payload seals and checks too (control frames).
  FrameHeader e;
  sealPayload(e, {});
  CHECK_NOTHROW(checkPayload(e, {}));
}

TEST_CASE("every header reason label is reachable") {
  FrameHeader h;
  h.kind = FrameKind::Ack;
  Bytes good;
  encodeFrameHeader(h, good);
  std::set<std::string> seen;
  auto expect = [&](const Bytes& b, const std::string& reason) {
    CHECK(reasonOf(b) == reason);
    seen.insert(reasonOf(b));
  };
  expect(Bytes(good.begin(), good.begin() + 10), "short");
  Bytes b = good;
  patch<std::uint32_t>(b, 0, 0x12345678);
  expect(b, "bad_magic");
  b = good;
  patch<std::uint8_t>(b, 4, 3);  // version 3 pushed an edge's public state whole (EdgeOpen)
  expect(b, "bad_version");
  for (std::uint8_t k : {0, 12, 255}) {
    b = good;
    patch<std::uint8_t>(b, 5, k);
    expect(b, "bad_kind");
  }
  b = good;
  b[20] ^= std::byte{1};  // a field flip without re-sealing
  expect(b, "bad_header_crc");
  b = good;
  patch<std::uint32_t>(b, 40, kMaxPayloadBytes + 1);
  expect(b, "too_large");
  b = good;
  patch<std::uint32_t>(b, 40, kMaxPayloadBytes);
  CHECK(reasonOf(b) == "accepted");
  CHECK(seen.size() == 6);
}

TEST_CASE("peekKindByte - peekIsKind and peekSender read the fields decodeFrameHeader reads") {
  Rng rng(7);
  for (int k = 0; k < 200; ++k) {
    const FrameHeader h = randomHeader(rng);
    Bytes buf;
    encodeFrameHeader(h, buf);
    const FrameHeader d = decodeFrameHeader(buf);
    REQUIRE(peekKindByte(buf));
    CHECK(*peekKindByte(buf) == static_cast<std::uint8_t>(d.kind));
    CHECK(peekIsKind(buf, d.kind));
    CHECK(!peekIsKind(buf, d.kind == FrameKind::Model ? FrameKind::Ack : FrameKind::Model));
    REQUIRE(peekSender(buf));
    CHECK(*peekSender(buf) == d.sender);
  }
  // Too short to hold the field: empty, never a read past the end.
  Bytes shortHeader(5);
  CHECK(!peekKindByte(shortHeader));
  CHECK(!peekIsKind(shortHeader, FrameKind::Model));
  Bytes eleven(11);
  CHECK(peekKindByte(eleven));
  CHECK(!peekSender(eleven));
  CHECK(peekSender(Bytes(12)));
}

TEST_CASE("checkPayloadPartsScan checks as checkPayloadParts and finds a non-finite float32 word in any part") {
  // An fp32-like payload (an 8-byte header, then float32 values), whole and cut into parts of 4-aligned
  // irregular sizes (some ending in half a word, whose last value the 8-byte walk does not visit): clean,
  // it scans true; a NaN or infinity at any value makes it false; a part that starts inside a word proves
  // nothing (false); the checksum and length checks are checkPayloadParts's.
  Rng rng(11);
  for (std::size_t values : {1u, 2u, 7u, 4000u}) {
    CAPTURE(values);
    Bytes payload(8 + 4 * values);
    const std::uint32_t dim = static_cast<std::uint32_t>(values);
    std::memcpy(payload.data() + 4, &dim, 4);
    for (std::size_t i = 0; i < values; ++i) {
      const float f = static_cast<float>(rng.normal());
      std::memcpy(payload.data() + 8 + 4 * i, &f, 4);
    }
    auto cut = [&](const Bytes& p, std::size_t step) {  // parts of 12, then 4 * (1 + offset % step) bytes
      std::vector<std::span<const std::byte>> parts;
      for (std::size_t at = 0, n = 12; at < p.size(); at += n, n = 4 * (1 + at % step))
        parts.emplace_back(p.data() + at, std::min(n, p.size() - at));
      return parts;
    };
    auto scan = [&](const Bytes& p, const std::vector<std::span<const std::byte>>& parts) {
      FrameHeader h;
      h.kind = FrameKind::Model;
      sealPayload(h, p);
      return checkPayloadPartsScan(h, parts);
    };
    const std::vector<std::span<const std::byte>> whole{std::span<const std::byte>(payload)};
    CHECK(scan(payload, whole));
    CHECK(scan(payload, cut(payload, 7)));
    CHECK(scan(payload, cut(payload, 3)));
    for (std::size_t at : {std::size_t{0}, values / 2, values - 1}) {
      for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
        CAPTURE(at);
        Bytes b = payload;
        std::memcpy(b.data() + 8 + 4 * at, &bad, 4);
        const std::vector<std::span<const std::byte>> w{std::span<const std::byte>(b)};
        CHECK_FALSE(scan(b, w));
        CHECK_FALSE(scan(b, cut(b, 7)));
        CHECK_FALSE(scan(b, cut(b, 3)));
      }
    }
    if (payload.size() > 13) {  // a part boundary inside a value: the words walked are not the payload's
      const std::vector<std::span<const std::byte>> odd{std::span<const std::byte>(payload).first(13),
                                                        std::span<const std::byte>(payload).subspan(13)};
      CHECK_FALSE(scan(payload, odd));
    }
    FrameHeader h;
    sealPayload(h, payload);
    ++h.payload_crc;
    CHECK_THROWS_AS(checkPayloadPartsScan(h, whole), FrameError);
    sealPayload(h, payload);
    ++h.payload_bytes;
    CHECK_THROWS_AS(checkPayloadPartsScan(h, whole), FrameError);
  }
}
