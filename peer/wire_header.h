#pragma once
// Frame 0 of every gossipd message (DESIGN.md §6): a fixed little-endian header. Defined here, ahead of
// the transport, so that the simulator charges exactly the bytes the daemon will put on the wire.
#include <cstdint>

namespace gossip::peer {

#pragma pack(push, 1)
struct WireHeader {
  std::uint32_t magic;        // "GSPD"
  std::uint8_t version;
  std::uint8_t kind;          // model message, ack, membership, state transfer, ...
  std::uint16_t codec;        // compressor codec id of the payload
  std::uint32_t sender;
  std::uint64_t incarnation;
  std::uint64_t round;
  std::uint32_t epoch;        // mixing-weight epoch
  std::uint64_t seq;          // per-link sequence number
  std::uint32_t dim;
  std::uint32_t payload_bytes;
  std::uint32_t crc32c;
};
#pragma pack(pop)

inline constexpr std::uint32_t kWireMagic = 0x44505347;  // "GSPD" little-endian
inline constexpr std::size_t kWireHeaderBytes = sizeof(WireHeader);
static_assert(kWireHeaderBytes == 52);

}  // namespace gossip::peer
