#pragma once
// Shared plumbing for codec implementations: the float/double virtual pairs forwarded to one template
// per codec (CRTP, so the hot loops are monomorphic and inlined), and the common payload header.
#include <cmath>
#include <limits>
#include <span>
#include <string>

#include "compressors/compressor.h"
#include "core/bytes.h"
#include "core/error.h"

namespace gossip::compress::detail {

// Derived implements:
//   template <class T> void encodeT(std::span<const T> x, Rng& rng, Encoded& out) const;
//   template <class T> void decodeAddT(std::span<const std::byte> p, std::span<T> acc, double scale) const;
template <class Derived>
class CodecBase : public Compressor {
 public:
  void encode(std::span<const float> x, Rng& rng, Encoded& out) const final { self().encodeT(x, rng, out); }
  void encode(std::span<const double> x, Rng& rng, Encoded& out) const final { self().encodeT(x, rng, out); }
  void decodeAdd(std::span<const std::byte> p, std::span<float> acc, double scale) const final {
    self().decodeAddT(p, acc, scale);
  }
  void decodeAdd(std::span<const std::byte> p, std::span<double> acc, double scale) const final {
    self().decodeAddT(p, acc, scale);
  }

 private:
  const Derived& self() const { return static_cast<const Derived&>(*this); }
};

inline std::uint32_t checkedDim(std::size_t n) {
  if (n > std::numeric_limits<std::uint32_t>::max()) throw Error("vector too long to encode: " + std::to_string(n));
  return static_cast<std::uint32_t>(n);
}

// Clears out and writes the 8-byte header; returns a writer positioned after it.
inline void writeHeader(Encoded& out, CodecId codec, std::uint16_t param, std::uint32_t dim,
                        std::size_t totalBytes) {
  out.crc.reset();  // whoever computes the checksum sets it after writing the bytes (Encoded::crc)
  out.bytes.clear();
  out.bytes.reserve(totalBytes);
  ByteWriter w(out.bytes);
  w.put(static_cast<std::uint8_t>(codec));
  w.put(kCodecVersion);
  w.put(param);
  w.put(dim);
}

struct Header {
  std::uint16_t param;
  std::uint32_t dim;
};

// Reads and checks the header: codec, version, and that dim equals the accumulator length.
inline Header readHeader(ByteReader& r, CodecId expected, std::size_t accDim) {
  const auto codec = r.get<std::uint8_t>();
  const auto version = r.get<std::uint8_t>();
  Header h{r.get<std::uint16_t>(), r.get<std::uint32_t>()};
  if (codec != static_cast<std::uint8_t>(expected))
    throw DecodeError("payload codec " + std::to_string(codec) + " does not match expected " +
                      std::to_string(static_cast<int>(expected)));
  if (version != kCodecVersion) throw DecodeError("unknown codec version " + std::to_string(version));
  if (h.dim != accDim)
    throw DecodeError("payload dimension " + std::to_string(h.dim) + " does not match " + std::to_string(accDim));
  return h;
}

inline void requireFinite(float v, const char* what) {
  if (!std::isfinite(v)) throw DecodeError(std::string("non-finite ") + what + " in payload");
}

}  // namespace gossip::compress::detail
