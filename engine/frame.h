#pragma once
// The wire frame (DESIGN.md §6): a fixed 52-byte little-endian header followed by the payload.
//
//   off size field
//    0   4   magic "GSPD"
//    4   1   version (kFrameVersion)
//    5   1   kind (FrameKind)
//    6   2   degree: the sender's mixing degree in this round (model frames of the daemon's linked
//            mode, where both ends of an edge compute w_ij from the two announced degrees; 0 otherwise)
//    8   4   sender id
//   12   8   sender incarnation
//   20   8   round
//   28   4   mixing epoch
//   32   8   per-link sequence number
//   40   4   payload length in bytes
//   44   4   crc32c of the payload
//   48   4   crc32c of bytes 0..47 of the header
//
// Codec id and dimension are not repeated here: every model payload starts with the codec's own 8-byte
// header (compressors/compressor.h) that carries both and is checked by the decoder. The payload checksum
// is computed once per round and shared by every link's header (encode once for all neighbours); only the
// per-link fields (sequence number) and the header checksum differ between links.
//
// decodeFrameHeader checks magic, version, kind, the header checksum and the payload length
// limit before anything else looks at the frame; checkPayload then verifies the payload length and crc.
// Every failure is a FrameError whose `reason` is a short stable label for counters ("bad_magic", ...).
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>

#include "core/bytes.h"
#include "core/error.h"
#include "core/types.h"

namespace gossip::engine {

inline constexpr std::uint32_t kFrameMagic = 0x44505347;  // "GSPD" read as little-endian u32
// Version 2: bytes 6-7 carry the sender's degree (were reserved flags in version 1).
// Version 3: a StateRequest asks for a range of the model and a State frame carries one chunk of it,
// without version 2's whole-model checksum (engine/state_transfer.cc).
// Version 4: the daemon's linked mode no longer pushes an edge's public state as one EdgeOpen frame of the
// model's size; the receiving end pulls it in chunks (EdgeAsk, EdgePart: engine/edge_fetch.cc).
inline constexpr std::uint8_t kFrameVersion = 4;
inline constexpr std::size_t kFrameHeaderBytes = 52;
// Largest payload accepted (and produced): 1 GiB, far above a 64M-parameter fp32 model.
inline constexpr std::uint32_t kMaxPayloadBytes = 1u << 30;

enum class FrameKind : std::uint8_t {
  Model = 1,        // a round's algorithm message
  EdgeOpen = 2,     // edge handshake of the simulator's SyncEngine: the sender's public state for the new edge
                    // (the daemon's linked mode pulls it instead: EdgeAsk, EdgePart)
  StateRequest = 3, // a joiner asks a neighbour for a range of its model (engine/state_transfer.cc)
  State = 4,        // one chunk of a model transfer (Real values)
  Ack = 5,          // per-link delivery acknowledgement (daemon)
  Membership = 6,   // membership gossip (daemon)
  EdgeHello = 7,    // linked mode: "I want this edge; my next round is `round`" (both ends send one)
  EdgeClose = 8,    // linked mode: "I use this edge up to round `round` - 1, no further"; payload: u64 proposal id
                    // of the edge (or proposal) it ends, declines or cancels (empty from senders before it)
  Status = 9,       // monitoring: the sender's table of node summaries (daemon/monitor/cluster_status.h)
  EdgeAsk = 10,     // linked mode: the receiving end of a new edge asks for a range of the sender's public state
  EdgePart = 11,    // linked mode: one chunk of an edge's public state, answering EdgeAsk
};
bool validKind(std::uint8_t k);

struct FrameHeader {
  FrameKind kind = FrameKind::Model;
  PeerId sender = 0;
  Incarnation incarnation = 0;
  Round round = 0;
  std::uint16_t degree = 0;
  std::uint32_t epoch = 0;
  std::uint64_t seq = 0;
  std::uint32_t payload_bytes = 0;
  std::uint32_t payload_crc = 0;
};

struct FrameError : DecodeError {
  FrameError(std::string reasonLabel, const std::string& detail)
      : DecodeError("frame rejected (" + reasonLabel + "): " + detail), reason(std::move(reasonLabel)) {}
  std::string reason;
};

// Fills h.payload_bytes and h.payload_crc from payload (call once per round; reuse h for every link).
// knownCrc: the payload's crc32c when its encoder computed it as it wrote the bytes (compress::Encoded::crc),
// taken instead of a pass over the payload.
void sealPayload(FrameHeader& h, std::span<const std::byte> payload, std::optional<std::uint32_t> knownCrc = std::nullopt);
// Writes the 52 header bytes (with the header checksum) into out (resized to kFrameHeaderBytes).
void encodeFrameHeader(const FrameHeader& h, Bytes& out);
// Parses and validates the first kFrameHeaderBytes of `bytes`; throws FrameError.
FrameHeader decodeFrameHeader(std::span<const std::byte> bytes);
// Checks that payload has exactly h.payload_bytes bytes and matches h.payload_crc; throws FrameError.
void checkPayload(const FrameHeader& h, std::span<const std::byte> payload);
// The same for a payload held in parts (engine/transport.h, PayloadParts): their concatenation is checked.
void checkPayloadParts(const FrameHeader& h, std::span<const std::span<const std::byte>> parts);
// checkPayloadParts, and in the same pass over the bytes whether no 4-byte word of the payload (at an offset
// from its start that is a multiple of 4) has a float32's eight exponent bits all set. For a payload of
// float32 values (fp32) that is proof that none is NaN or infinite, so the receiving method may skip its
// own pass over the values (algo::Incoming::wordsFinite). False, which proves nothing, also when a part
// does not start at such an offset; a header word that happens to look like a non-finite value only costs
// the method its own check.
bool checkPayloadPartsScan(const FrameHeader& h, std::span<const std::span<const std::byte>> parts);

// Unchecked reads of single header fields, for code that must route or count a frame before (or without)
// decoding it: the transport picks a channel by kind, the runtime counts bytes by sender. Nothing here
// validates the header; empty when it is too short to hold the field. The offsets are the table above's.
inline constexpr std::size_t kFrameKindOffset = 5;
inline constexpr std::size_t kFrameSenderOffset = 8;
inline std::optional<std::uint8_t> peekKindByte(std::span<const std::byte> header) {
  if (header.size() <= kFrameKindOffset) return std::nullopt;
  return static_cast<std::uint8_t>(header[kFrameKindOffset]);
}
inline bool peekIsKind(std::span<const std::byte> header, FrameKind k) {
  const auto b = peekKindByte(header);
  return b && *b == static_cast<std::uint8_t>(k);
}
inline std::optional<PeerId> peekSender(std::span<const std::byte> header) {
  if (header.size() < kFrameSenderOffset + 4) return std::nullopt;
  std::uint8_t b[4];
  std::memcpy(b, header.data() + kFrameSenderOffset, 4);
  return static_cast<PeerId>(b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<std::uint32_t>(b[3]) << 24));
}

}  // namespace gossip::engine
