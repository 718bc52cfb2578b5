#pragma once
// Fixed-width bit packing, LSB-first into little-endian 64-bit words. Used by every quantizer and by
// top-k index coding. Writers and readers are inline and branch-light so hot loops stay vectorizable
// around them; the reader never touches memory outside the span it was given.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace gossip {

// Bytes needed for n fields of `bits` bits each, rounded up to whole 64-bit words.
constexpr std::size_t packedBytes(std::size_t n, unsigned bits) {
  return ((n * bits + 63) / 64) * 8;
}

// Number of bits to represent values 0..maxValue (at least 1).
constexpr unsigned bitsFor(std::uint64_t maxValue) {
  unsigned b = 1;
  while (b < 64 && (maxValue >> b) != 0) ++b;
  return b;
}

class BitWriter {
 public:
  // dst must hold packedBytes(n, bits) bytes, zero-initialised is not required.
  explicit BitWriter(std::byte* dst) : dst_(dst) {}

  // Appends the low `bits` bits of v (bits in 1..57, v < 2^bits).
  void put(std::uint64_t v, unsigned bits) {
    acc_ |= v << fill_;
    fill_ += bits;
    if (fill_ >= 64) {
      flushWord();
      fill_ -= 64;
      acc_ = fill_ ? (v >> (bits - fill_)) : 0;
    }
  }

  // Writes the partially filled last word. Call exactly once at the end.
  void finish() {
    if (fill_ > 0) flushWord();
    fill_ = 0;
    acc_ = 0;
  }

 private:
  void flushWord() {
    std::memcpy(dst_, &acc_, 8);
    dst_ += 8;
  }
  std::byte* dst_;
  std::uint64_t acc_ = 0;
  unsigned fill_ = 0;
};

class BitReader {
 public:
  // src must span packedBytes(n, bits) bytes for the n fields the caller will read.
  explicit BitReader(const std::byte* src) : src_(src) {}

  std::uint64_t get(unsigned bits) {
    const std::uint64_t mask = (bits == 64) ? ~0ull : ((1ull << bits) - 1);
    if (avail_ >= bits) {
      const std::uint64_t v = acc_ & mask;
      acc_ = (bits == 64) ? 0 : (acc_ >> bits);
      avail_ -= bits;
      return v;
    }
    std::uint64_t next;
    std::memcpy(&next, src_, 8);
    src_ += 8;
    const std::uint64_t v = (acc_ | (next << avail_)) & mask;
    const unsigned used = bits - avail_;
    acc_ = (used == 64) ? 0 : (next >> used);
    avail_ = 64 - used;
    return v;
  }

 private:
  const std::byte* src_;
  std::uint64_t acc_ = 0;
  unsigned avail_ = 0;
};

}  // namespace gossip
