#pragma once
// LGC (learned gradient compression, Abrahamyan et al. 2021) adapted to gossip: the codec half. See
// docs/lgc.md for the whole method and how it maps from the paper's parameter-server and ring settings.
//
// The codec encodes a vector x of dimension d in two modes:
//  - no basis installed (the warm-up, or a node that never received one): plain top-k with the configured
//    ratio; the payload is an ordinary topk payload.
//  - with a basis B (b x m, orthonormal columns: the linear autoencoder, encoder B^T and decoder B) the
//    first floor(d / b) blocks of b consecutive entries are each coded by m coefficients c = B^T x_blk
//    (f32), and the rest r = x - B c (every block's reconstruction error and the tail) by top-k. So
//    ||x - C(x)||^2 = ||r - topk(r)||^2 <= (1 - k/d) ||r||^2 <= (1 - k/d) ||x||^2: the same contraction
//    as top-k, which error feedback (DeepSqueeze, CHOCO) needs, and which a projection alone does not give
//    (what is orthogonal to B would never be sent).
// Payload with a basis: header (param m, dim), u32 basis fingerprint, u32 b, floor(d/b) * m f32 codes,
// then a complete topk payload of the residual. A receiver decodes it only with the same basis (matched
// by fingerprint); otherwise DecodeError, so a node never adds codes through the wrong decoder.
//
// Like cltk's, this codec has state (the basis) and belongs to one node (LgcControl::fresh); the runtime
// installs the basis between rounds, never during encode/decode.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "compressors/compressor.h"
#include "core/bytes.h"

namespace gossip::compress {

// The learned linear autoencoder: b x m, column j at cols[j * b .. j * b + b).
class LgcBasis {
 public:
  LgcBasis() = default;
  // cols.size() must be b * m (GOSSIP_CHECK); values must be finite.
  LgcBasis(std::uint32_t b, std::uint32_t m, std::vector<float> cols);
  bool empty() const { return cols_.empty(); }
  std::uint32_t block() const { return b_; }
  std::uint32_t codes() const { return m_; }
  std::span<const float> cols() const { return cols_; }
  std::uint32_t fingerprint() const { return fingerprint_; }
  friend bool operator==(const LgcBasis& a, const LgcBasis& c) { return a.b_ == c.b_ && a.m_ == c.m_ && a.cols_ == c.cols_; }

 private:
  std::uint32_t b_ = 0, m_ = 0;
  std::vector<float> cols_;
  std::uint32_t fingerprint_ = 0;
};

// u32 b, u32 m, u32 fingerprint, b * m f32. readBasis checks b and m against the expected ones, every value
// finite and the fingerprint recomputed; it throws DecodeError.
void writeBasis(const LgcBasis& s, ByteWriter& w);
LgcBasis readBasis(ByteReader& r, std::uint32_t expectedBlock, std::uint32_t expectedCodes);
std::size_t basisBytes(std::uint32_t b, std::uint32_t m);

std::unique_ptr<Compressor> makeLgc(const CompressorSpec& spec);

class LgcControl {
 public:
  virtual ~LgcControl() = default;
  virtual void setBasis(LgcBasis s) = 0;  // empty (back to top-k), or the configured block and codes (GOSSIP_CHECK)
  virtual const LgcBasis& basis() const = 0;
  virtual std::uint32_t block() const = 0;
  virtual std::uint32_t codes() const = 0;
  // A new codec with the same configuration and no basis, for another node.
  virtual std::unique_ptr<Compressor> fresh() const = 0;
};
LgcControl* lgcControl(Compressor& c);
const LgcControl* lgcControl(const Compressor& c);

}  // namespace gossip::compress
