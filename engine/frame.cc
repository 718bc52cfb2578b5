#include "engine/frame.h"

#include "core/crc32c.h"
#include "core/float_words.h"

namespace gossip::engine {

namespace {
// Offset of the header checksum: it covers every byte before it.
constexpr std::size_t kHeaderCrcOffset = 48;
}  // namespace

bool validKind(std::uint8_t k) { return k >= 1 && k <= 11; }

void sealPayload(FrameHeader& h, std::span<const std::byte> payload, std::optional<std::uint32_t> knownCrc) {
  GOSSIP_CHECK(payload.size() <= kMaxPayloadBytes, "payload of ", payload.size(), " bytes exceeds the frame limit");
  h.payload_bytes = static_cast<std::uint32_t>(payload.size());
#ifndef NDEBUG
  GOSSIP_CHECK(!knownCrc || *knownCrc == crc32c(payload), "the encoder's checksum is not the payload's");
#endif
  h.payload_crc = knownCrc ? *knownCrc : crc32c(payload);
}

void encodeFrameHeader(const FrameHeader& h, Bytes& out) {
  // A header we would reject ourselves is a bug in the caller, not a wire condition.
  GOSSIP_CHECK(validKind(static_cast<std::uint8_t>(h.kind)), "frame kind ", int(h.kind));
  GOSSIP_CHECK(h.payload_bytes <= kMaxPayloadBytes, "payload length ", h.payload_bytes);
  out.clear();
  out.reserve(kFrameHeaderBytes);
  ByteWriter w(out);
  w.put<std::uint32_t>(kFrameMagic);
  w.put<std::uint8_t>(kFrameVersion);
  w.put<std::uint8_t>(static_cast<std::uint8_t>(h.kind));
  w.put<std::uint16_t>(h.degree);
  w.put<std::uint32_t>(h.sender);
  w.put<std::uint64_t>(h.incarnation);
  w.put<std::uint64_t>(h.round);
  w.put<std::uint32_t>(h.epoch);
  w.put<std::uint64_t>(h.seq);
  w.put<std::uint32_t>(h.payload_bytes);
  w.put<std::uint32_t>(h.payload_crc);
  GOSSIP_CHECK(w.size() == kHeaderCrcOffset);
  w.put<std::uint32_t>(crc32c(std::span<const std::byte>(out).first(kHeaderCrcOffset)));
}

FrameHeader decodeFrameHeader(std::span<const std::byte> bytes) {
  if (bytes.size() < kFrameHeaderBytes)
    throw FrameError("short", std::to_string(bytes.size()) + " of " + std::to_string(kFrameHeaderBytes) +
                                  " header bytes");
  ByteReader r(bytes.first(kFrameHeaderBytes), "frame header");
  // Magic and version first: anything else (another protocol, a future version) is reported as such
  // rather than as a checksum failure, which would suggest corruption.
  if (const auto magic = r.get<std::uint32_t>(); magic != kFrameMagic)
    throw FrameError("bad_magic", "magic " + std::to_string(magic));
  if (const auto version = r.get<std::uint8_t>(); version != kFrameVersion)
    throw FrameError("bad_version", "version " + std::to_string(version));
  const auto kind = r.get<std::uint8_t>();
  FrameHeader h;
  h.degree = r.get<std::uint16_t>();
  h.sender = r.get<std::uint32_t>();
  h.incarnation = r.get<std::uint64_t>();
  h.round = r.get<std::uint64_t>();
  h.epoch = r.get<std::uint32_t>();
  h.seq = r.get<std::uint64_t>();
  h.payload_bytes = r.get<std::uint32_t>();
  h.payload_crc = r.get<std::uint32_t>();
  const auto header_crc = r.get<std::uint32_t>();
  // The checksum before the field checks: a corrupted kind or length byte is corruption, and counting it
  // as such keeps "bad_kind" meaning a sender speaking a kind we do not know.
  if (header_crc != crc32c(bytes.first(kHeaderCrcOffset)))
    throw FrameError("bad_header_crc", "header checksum mismatch");
  if (!validKind(kind)) throw FrameError("bad_kind", "kind " + std::to_string(kind));
  if (h.payload_bytes > kMaxPayloadBytes)
    throw FrameError("too_large", "payload of " + std::to_string(h.payload_bytes) + " bytes");
  h.kind = static_cast<FrameKind>(kind);
  return h;
}

void checkPayload(const FrameHeader& h, std::span<const std::byte> payload) {
  checkPayloadParts(h, std::span<const std::span<const std::byte>>(&payload, 1));
}

namespace {
// The two checks of checkPayloadParts and checkPayloadPartsScan: the parts' length against the header's,
// before any byte is read, and the checksum computed over them against the header's.
void checkLength(const FrameHeader& h, std::span<const std::span<const std::byte>> parts) {
  std::size_t bytes = 0;
  for (const auto& p : parts) bytes += p.size();
  if (bytes != h.payload_bytes)
    throw FrameError("length_mismatch", std::to_string(bytes) + " payload bytes, header says " +
                                            std::to_string(h.payload_bytes));
}
void checkCrc(const FrameHeader& h, std::uint32_t crc) {
  if (crc != h.payload_crc) throw FrameError("bad_payload_crc", "payload checksum mismatch");
}
}  // namespace

void checkPayloadParts(const FrameHeader& h, std::span<const std::span<const std::byte>> parts) {
  checkLength(h, parts);
  std::uint32_t crc = 0;
  for (const auto& p : parts) crc = crc32cUpdate(crc, p);
  checkCrc(h, crc);
}

bool checkPayloadPartsScan(const FrameHeader& h, std::span<const std::span<const std::byte>> parts) {
  checkLength(h, parts);
  std::uint32_t crc = 0;
  std::uint64_t bad = 0;
  bool aligned = true;
  for (const auto& p : parts) {
    // Words are walked from each part's start: they are the payload's 4-byte words only if the part starts
    // at a multiple of 4 (all parts before it have such sizes).
    aligned = aligned && p.size() % 4 == 0;
    crc = crc32cUpdateVisit(crc, p, [&bad](std::uint64_t w) { bad |= nonFiniteFloatPair(w); });
    if (p.size() % 8 == 4) {  // the part's last value is not in a whole word: not visited
      std::uint32_t u;
      std::memcpy(&u, p.data() + p.size() - 4, 4);
      bad |= nonFiniteFloatPair(u);
    }
  }
  checkCrc(h, crc);
  return aligned && bad == 0;
}

}  // namespace gossip::engine
