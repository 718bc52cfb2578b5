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

// The register after `n` zero bytes, i.e. c * x^(8n) mod P (CRC is linear over GF(2)).
inline std::uint32_t zeros(std::uint32_t c, std::size_t n) {
  const auto& t = kTables;
  for (; n >= 8; n -= 8)
    c = t[7][c & 0xFF] ^ t[6][(c >> 8) & 0xFF] ^ t[5][(c >> 16) & 0xFF] ^ t[4][c >> 24];
  while (n--) c = (c >> 8) ^ t[0][c & 0xFFu];
  return c;
}

// The stream length of the hardware path's three interleaved chains (below).
inline constexpr std::size_t kStream = 8192;

#ifdef GOSSIP_CRC32C_HW
// The crc32 instruction has a latency of 3 cycles and a throughput of 1: one dependent chain uses a third
// of it. So a long input is cut into chunks of three streams of kStream bytes, computed in one loop, and
// the three registers are joined with the shift over kStream zero bytes (linear: 4 tables of 256, built
// once from the 32 basis vectors). Measured: the payload checksum was 17% of a 20M-parameter D-PSGD
// daemon's CPU with one chain (docs/results.md §15).

struct Shift {
  std::array<std::array<std::uint32_t, 256>, 4> t{};
  Shift() {
    std::uint32_t basis[32];
    for (int i = 0; i < 32; ++i) basis[i] = zeros(std::uint32_t{1} << i, kStream);
    for (int k = 0; k < 4; ++k)
      for (std::uint32_t b = 0; b < 256; ++b) {
        std::uint32_t v = 0;
        for (int i = 0; i < 8; ++i)
          if (b & (1u << i)) v ^= basis[8 * k + i];
        t[static_cast<std::size_t>(k)][b] = v;
      }
  }
  std::uint32_t operator()(std::uint32_t c) const {
    return t[0][c & 0xFF] ^ t[1][(c >> 8) & 0xFF] ^ t[2][(c >> 16) & 0xFF] ^ t[3][c >> 24];
  }
};

inline const Shift& streamShift() {
  static const Shift s;
  return s;
}

// The loop of hardware() and hardwareCopy(): with kCopy it also stores each word it reads to q, and it
// hands every whole 8-byte word to visit (in no particular order; bytes beyond the last whole word are
// checksummed, and copied, but not visited). Plain stores: streaming stores (movnti, 8 bytes each) were
// tried for the copy and made a 400 MB encode slower (129 ms against 82; the three separate passes it
// replaced took 149: bench/bench_crc32c).
template <bool kCopy, class Visit>
__attribute__((target("sse4.2"))) inline std::uint32_t hardwareWalk(std::uint32_t c, const unsigned char* p,
                                                                     unsigned char* q, std::size_t n, Visit& visit) {
  if (n >= 3 * kStream) {
    const Shift& shift = streamShift();
    while (n >= 3 * kStream) {
      std::uint64_t a = c, b = 0, d = 0;
      for (std::size_t i = 0; i < kStream; i += 8) {
        std::uint64_t va, vb, vd;
        std::memcpy(&va, p + i, 8);
        std::memcpy(&vb, p + kStream + i, 8);
        std::memcpy(&vd, p + 2 * kStream + i, 8);
        if constexpr (kCopy) {
          std::memcpy(q + i, &va, 8);
          std::memcpy(q + kStream + i, &vb, 8);
          std::memcpy(q + 2 * kStream + i, &vd, 8);
        }
        visit(va);
        visit(vb);
        visit(vd);
        a = _mm_crc32_u64(a, va);
        b = _mm_crc32_u64(b, vb);
        d = _mm_crc32_u64(d, vd);
      }
      c = shift(shift(static_cast<std::uint32_t>(a)) ^ static_cast<std::uint32_t>(b)) ^ static_cast<std::uint32_t>(d);
      p += 3 * kStream;
      if constexpr (kCopy) q += 3 * kStream;
      n -= 3 * kStream;
    }
  }
  std::uint64_t c64 = c;
  while (n >= 8) {
    std::uint64_t v;
    std::memcpy(&v, p, 8);
    if constexpr (kCopy) std::memcpy(q, &v, 8);
    visit(v);
    c64 = _mm_crc32_u64(c64, v);
    p += 8;
    if constexpr (kCopy) q += 8;
    n -= 8;
  }
  auto c32 = static_cast<std::uint32_t>(c64);
  while (n--) {
    if constexpr (kCopy) *q++ = *p;
    c32 = _mm_crc32_u8(c32, *p++);
  }
  return c32;
}

__attribute__((target("sse4.2"))) inline std::uint32_t hardware(std::uint32_t c, const unsigned char* p,
                                                                 std::size_t n) {
  auto none = [](std::uint64_t) {};
  return hardwareWalk<false>(c, p, nullptr, n, none);
}

template <class Visit>
__attribute__((target("sse4.2"))) inline std::uint32_t hardwareCopy(std::uint32_t c, const unsigned char* p,
                                                                     unsigned char* q, std::size_t n, Visit& visit) {
  return hardwareWalk<true>(c, p, q, n, visit);
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

// crc32cUpdate(crc, data) that also hands every whole 8-byte word of data to visit(std::uint64_t) in the same
// pass (in no particular order; the last data.size() % 8 bytes are not visited): a check of the words the
// receiver of a frame makes while it verifies the frame's checksum (engine/frame.h, checkPayloadPartsScan).
template <class Visit>
inline std::uint32_t crc32cUpdateVisit(std::uint32_t crc, std::span<const std::byte> data, Visit&& visit) {
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
#ifdef GOSSIP_CRC32C_HW
  if (crc32c_detail::hasHardware()) return ~crc32c_detail::hardwareWalk<false>(~crc, p, nullptr, data.size(), visit);
#endif
  for (std::size_t i = 0; i + 8 <= data.size(); i += 8) {
    std::uint64_t v;
    std::memcpy(&v, p + i, 8);
    visit(v);
  }
  return crc32cUpdateSoftware(crc, data);
}

// Copies src to dst (src.size() bytes, not overlapping) and returns crc32cUpdate(crc, src) from the same
// pass, handing every whole 8-byte word of src to visit(std::uint64_t) on the way (in no particular order;
// the last src.size() % 8 bytes are copied but not visited). An encoder that writes a frame's payload
// computes the frame's checksum as it writes (compress::Encoded::crc) instead of in a second pass over the
// payload. One pass instead of three, but not the price of a memcpy: crc32 runs at about a memcpy's speed
// on this machine, so the fused pass costs about two (bench/bench_crc32c, 400 MB: 83-124 ms against 137-159
// for the copy, the checksum and the check as three passes; docs/results.md §22).
template <class Visit>
inline std::uint32_t crc32cUpdateCopy(std::uint32_t crc, std::span<const std::byte> src, std::byte* dst, Visit&& visit) {
  const auto* p = reinterpret_cast<const unsigned char*>(src.data());
  auto* q = reinterpret_cast<unsigned char*>(dst);
#ifdef GOSSIP_CRC32C_HW
  if (crc32c_detail::hasHardware()) return ~crc32c_detail::hardwareCopy(~crc, p, q, src.size(), visit);
#endif
  std::size_t i = 0;
  for (; i + 8 <= src.size(); i += 8) {
    std::uint64_t v;
    std::memcpy(&v, p + i, 8);
    std::memcpy(q + i, &v, 8);
    visit(v);
  }
  if (i < src.size()) std::memcpy(q + i, p + i, src.size() - i);
  return crc32cUpdateSoftware(crc, std::span<const std::byte>(dst, src.size()));
}

}  // namespace gossip
