#pragma once
// Fixed-width field streams for the quantizing codecs.
//
// Layout: field i of a stream of `width`-bit fields (width 1..32) occupies bits [i*width, (i+1)*width)
// of a sequence of little-endian 64-bit words, LSB first; the stream is padded with zero bits to a whole
// word, so n fields take packedBytes(n, width) bytes. This is exactly what core/bitpack.h's BitWriter
// produces, so either side may be read with the other.
//
// Why not BitWriter in the hot loops: here the fields move 64 at a time. 64 fields of `width` bits are
// exactly `width` whole words, so with the width as a template parameter every shift and word index is a
// compile-time constant and packing a chunk is straight-line code with no branches. The codecs compute
// their codes for a chunk in a simple (vectorizable) loop, then pack the chunk with one indirect call.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/bitpack.h"

namespace gossip::compress::detail {

inline constexpr unsigned kChunk = 64;         // fields per packing step
inline constexpr unsigned kMaxFieldBits = 32;  // codes are u32

// Packs codes[0..64) (each < 2^width; higher bits are masked off) into `width` words at dst.
using PackFn = void (*)(const std::uint32_t* codes, std::byte* dst);
// Unpacks `width` words at src into codes[0..64).
using UnpackFn = void (*)(const std::byte* src, std::uint32_t* codes);

// width in 1..kMaxFieldBits, else gossip::Error (a caller bug).
PackFn packFn(unsigned width);
UnpackFn unpackFn(unsigned width);

// Writes a stream chunk by chunk. dst must hold packedBytes(n, width) bytes for the n fields written.
class FieldWriter {
 public:
  FieldWriter(std::byte* dst, unsigned width) : dst_(dst), width_(width), pack_(packFn(width)) {}

  // Appends codes[0..count), count <= 64. Only the final call may pass count < 64; it clears
  // codes[count..64) so that the stream's padding bits are zero (decoders reject anything else).
  void put(std::uint32_t* codes, unsigned count) {
    if (count == kChunk) {
      pack_(codes, dst_);
      dst_ += 8 * width_;
      return;
    }
    std::fill(codes + count, codes + kChunk, 0u);
    std::byte tmp[8 * kMaxFieldBits];
    pack_(codes, tmp);
    const std::size_t n = packedBytes(count, width_);
    std::memcpy(dst_, tmp, n);
    dst_ += n;
  }

 private:
  std::byte* dst_;
  unsigned width_;
  PackFn pack_;
};

// Reads a stream chunk by chunk. The caller has checked that src holds packedBytes(n, width) bytes.
class FieldReader {
 public:
  FieldReader(const std::byte* src, unsigned width) : src_(src), width_(width), unpack_(unpackFn(width)) {}

  // Reads the next count (<= 64) fields into codes[0..count); codes[count..64) receive the padding.
  void get(std::uint32_t* codes, unsigned count) {
    if (count == kChunk) {
      unpack_(src_, codes);
      src_ += 8 * width_;
      return;
    }
    std::byte tmp[8 * kMaxFieldBits] = {};
    const std::size_t n = packedBytes(count, width_);
    std::memcpy(tmp, src_, n);
    unpack_(tmp, codes);
    src_ += n;
  }

 private:
  const std::byte* src_;
  unsigned width_;
  UnpackFn unpack_;
};

// True if the bits after field n-1 in the last word of an n-field stream are all zero.
bool fieldPaddingIsZero(const std::byte* src, std::size_t n, unsigned width);

// Runs fn(first, codes, count) for consecutive chunks of an n-field stream: codes[0..count) are fields
// first..first+count-1. fn may modify codes (it is scratch).
template <class Fn>
void visitFields(const std::byte* src, std::size_t n, unsigned width, Fn&& fn) {
  FieldReader reader(src, width);
  std::uint32_t codes[kChunk];
  for (std::size_t first = 0; first < n; first += kChunk) {
    const auto count = static_cast<unsigned>(std::min<std::size_t>(kChunk, n - first));
    reader.get(codes, count);
    fn(first, codes, count);
  }
}

// Runs fn(first, codes, count), which must fill codes[0..count), for consecutive chunks of an n-field
// stream, and packs what it produced at dst (packedBytes(n, width) bytes).
template <class Fn>
void produceFields(std::byte* dst, std::size_t n, unsigned width, Fn&& fn) {
  FieldWriter writer(dst, width);
  std::uint32_t codes[kChunk];
  for (std::size_t first = 0; first < n; first += kChunk) {
    const auto count = static_cast<unsigned>(std::min<std::size_t>(kChunk, n - first));
    fn(first, codes, count);
    writer.put(codes, count);
  }
}

}  // namespace gossip::compress::detail
