#pragma once
// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as used by iSCSI, ext4 and many wire formats.
// crc32c(data) == crc32cUpdate(0, data); crc32cUpdate chains: crc32cUpdate(crc32cUpdate(0, a), b) equals
// crc32c of a followed by b. Check value: crc32c("123456789") == 0xE3069283.
//
// Header-only because core is an INTERFACE library. Two implementations with identical results: portable
// slice-by-8 tables (constexpr, built at compile time) and, on x86-64 CPUs with SSE4.2, the crc32
// instruction (~10x faster; every frame payload is checksummed, so this is on the hot path). The choice
// is made once at run time so one binary runs on any x86-64 host.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
#define GOSSIP_CRC32C_HW 1
#endif

namespace gossip {

namespace crc32c_detail {

inline constexpr std::uint32_t kPoly = 0x82F63B78u;

// t[k][b]: crc of byte b followed by k zero bytes; lets the loop fold 8 input bytes per step.
inline constexpr auto kTables = [] {
  std::array<std::array<std::uint32_t, 256>, 8> t{};
  for (std::uint32_t b = 0; b < 256; ++b) {
    std::uint32_t c = b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (kPoly & (0u - (c & 1u)));
    t[0][b] = c;
  }
  for (std::size_t k = 1; k < 8; ++k)
    for (std::size_t b = 0; b < 256; ++b) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xFFu];
  return t;
}();

// Works on the inverted register (the caller does the pre/post inversion).
inline std::uint32_t software(std::uint32_t c, const unsigned char* p, std::size_t n) {
  const auto& t = kTables;
  while (n >= 8) {
    std::uint64_t v;
    std::memcpy(&v, p, 8);  // little-endian host (core/bytes.h asserts it)
    v ^= c;
    c = t[7][v & 0xFF] ^ t[6][(v >> 8) & 0xFF] ^ t[5][(v >> 16) & 0xFF] ^ t[4][(v >> 24) & 0xFF] ^
        t[3][(v >> 32) & 0xFF] ^ t[2][(v >> 40) & 0xFF] ^ t[1][(v >> 48) & 0xFF] ^ t[0][v >> 56];
    p += 8;
    n -= 8;
  }
  while (n--) c = (c >> 8) ^ t[0][(c ^ *p++) & 0xFFu];
  return c;
}

#ifdef GOSSIP_CRC32C_HW
__attribute__((target("sse4.2"))) inline std::uint32_t hardware(std::uint32_t c, const unsigned char* p,
                                                                 std::size_t n) {
  std::uint64_t c64 = c;
  while (n >= 8) {
    std::uint64_t v;
    std::memcpy(&v, p, 8);
    c64 = _mm_crc32_u64(c64, v);
    p += 8;
    n -= 8;
  }
  auto c32 = static_cast<std::uint32_t>(c64);
  while (n--) c32 = _mm_crc32_u8(c32, *p++);
  return c32;
}

inline bool hasHardware() {
  static const bool yes = __builtin_cpu_supports("sse4.2");
  return yes;
}
#else
inline bool hasHardware() { return false; }
#endif

}  // namespace crc32c_detail

// Always the table implementation (tests compare it with the dispatched one).
inline std::uint32_t crc32cUpdateSoftware(std::uint32_t crc, std::span<const std::byte> data) {
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  return ~crc32c_detail::software(~crc, p, data.size());
}

// True when crc32cUpdate uses the CPU's crc32 instruction.
inline bool crc32cHardwareAvailable() { return crc32c_detail::hasHardware(); }

inline std::uint32_t crc32cUpdate(std::uint32_t crc, std::span<const std::byte> data) {
#ifdef GOSSIP_CRC32C_HW
  if (crc32c_detail::hasHardware()) {
    const auto* p = reinterpret_cast<const unsigned char*>(data.data());
    return ~crc32c_detail::hardware(~crc, p, data.size());
  }
#endif
  return crc32cUpdateSoftware(crc, data);
}
inline std::uint32_t crc32c(std::span<const std::byte> data) { return crc32cUpdate(0, data); }

}  // namespace gossip
