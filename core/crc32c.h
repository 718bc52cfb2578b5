#pragma once
// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as used by iSCSI, ext4 and many wire formats.
// crc32c(data) == crc32cUpdate(0, data); crc32cUpdate chains: crc32cUpdate(crc32cUpdate(0, a), b) equals
// crc32c of a followed by b. Check value: crc32c("123456789") == 0xE3069283.
#include <cstddef>
#include <cstdint>
#include <span>

namespace gossip {

std::uint32_t crc32cUpdate(std::uint32_t crc, std::span<const std::byte> data);
inline std::uint32_t crc32c(std::span<const std::byte> data) { return crc32cUpdate(0, data); }

}  // namespace gossip
