#include "compressors/lgc.h"

#include <cmath>
#include <cstring>

#include <Eigen/Dense>
#include <string>
#include <utility>

#include "compressors/codec_base.h"
#include "compressors/sparse_common.h"
#include "compressors/topk.h"
#include "core/error.h"

namespace gossip::compress {
namespace {

std::uint32_t basisFingerprint(std::uint32_t b, std::uint32_t m, std::span<const float> cols) {
  // splitmix64 finaliser chained over (b, m, the values' bits): makes an accidental disagreement between
  // two nodes' bases visible; not cryptographic.
  auto mix = [](std::uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  std::uint64_t h = mix(0x6C67630000000000ull ^ (std::uint64_t{b} << 32 | m));  // "lgc"
  for (float v : cols) {
    std::uint32_t bits;
    std::memcpy(&bits, &v, 4);
    h = mix(h + 0x9E3779B97F4A7C15ull + bits);
  }
  return static_cast<std::uint32_t>(h ^ (h >> 32));
}

}  // namespace

LgcBasis::LgcBasis(std::uint32_t b, std::uint32_t m, std::vector<float> cols) : b_(b), m_(m), cols_(std::move(cols)) {
  GOSSIP_CHECK(b > 0 && m > 0 && cols_.size() == std::size_t{b} * m, "lgc basis of ", cols_.size(), " values for b ", b,
               " and m ", m);
  fingerprint_ = basisFingerprint(b_, m_, cols_);
}

std::size_t basisBytes(std::uint32_t b, std::uint32_t m) { return 12 + 4ull * b * m; }

void writeBasis(const LgcBasis& s, ByteWriter& w) {
  w.put(s.block());
  w.put(s.codes());
  w.put(s.fingerprint());
  for (float v : s.cols()) w.put(v);
}

LgcBasis readBasis(ByteReader& r, std::uint32_t expectedBlock, std::uint32_t expectedCodes) {
  const auto b = r.get<std::uint32_t>();
  const auto m = r.get<std::uint32_t>();
  const auto fp = r.get<std::uint32_t>();
  if (b != expectedBlock || m != expectedCodes)
    throw DecodeError("lgc basis is " + std::to_string(b) + " x " + std::to_string(m) + ", configured " +
                      std::to_string(expectedBlock) + " x " + std::to_string(expectedCodes));
  const auto raw = r.take(4ull * b * m);
  std::vector<float> cols(std::size_t{b} * m);
  std::memcpy(cols.data(), raw.data(), raw.size());
  for (float v : cols) detail::requireFinite(v, "lgc basis value");
  LgcBasis s(b, m, std::move(cols));
  if (s.fingerprint() != fp) throw DecodeError("lgc basis fingerprint does not match its values");
  return s;
}

namespace {

class Lgc final : public detail::CodecBase<Lgc>, public LgcControl {
 public:
  explicit Lgc(const CompressorSpec& spec) : spec_(spec), topk_(makeTopK(spec)), m_(spec.codes) {
    if (spec.block == 0)
      throw ConfigError("compressor.block: lgc needs the autoencoder's input length (e.g. 784, one row of a layer "
                        "fed 28x28 images)");
    if (spec.codes == 0 || spec.codes > spec.block || spec.codes > 0xFFFF)
      throw ConfigError("compressor.codes must be in [1, block] for lgc, got " + std::to_string(spec.codes));
    name_ = "lgc(b=" + std::to_string(spec.block) + ",m=" + std::to_string(spec.codes) + "," +
            std::string(topk_->name()) + ")";
  }

  std::string_view name() const override { return name_; }
  CodecId codec() const override { return CodecId::Lgc; }
  bool unbiased() const override { return false; }
  // Both modes keep the top-k of what is left to send (header): the top-k bound holds.
  Quality quality(std::uint32_t dim) const override { return topk_->quality(dim); }
  std::size_t encodedBytes(std::uint32_t dim) const override {
    if (basis_.empty()) return topk_->encodedBytes(dim);
    return kCodecHeaderBytes + 8 + 4ull * (dim / spec_.block) * m_ + topk_->encodedBytes(dim);
  }

  void setBasis(LgcBasis s) override {
    GOSSIP_CHECK(s.empty() || (s.block() == spec_.block && s.codes() == m_), "lgc basis ", s.block(), "x", s.codes(),
                 " installed in a codec for ", spec_.block, "x", m_);
    basis_ = std::move(s);
    b64_ = basis_.empty() ? Eigen::MatrixXd()
                          : Eigen::Map<const Eigen::MatrixXf>(basis_.cols().data(), spec_.block, m_).cast<double>();
  }
  const LgcBasis& basis() const override { return basis_; }
  std::uint32_t block() const override { return spec_.block; }
  std::uint32_t codes() const override { return m_; }
  std::unique_ptr<Compressor> fresh() const override { return std::make_unique<Lgc>(spec_); }

  template <class T>
  void encodeT(std::span<const T> x, Rng& rng, Encoded& out) const {
    if (basis_.empty()) {
      topk_->encode(x, rng, out);
      return;
    }
    const std::uint32_t dim = detail::checkedDim(x.size());
    const std::uint32_t b = spec_.block;
    const std::size_t blocks = dim / b;
    detail::writeHeader(out, codec(), static_cast<std::uint16_t>(m_), dim, encodedBytes(dim));
    ByteWriter w(out.bytes);
    w.put(basis_.fingerprint());
    w.put(b);
    // The residual is x minus what receivers reconstruct from the f32 codes, so error feedback sees
    // exactly the loss of this message. The blocks are the columns of a b x blocks matrix laid over the
    // residual: codes and reconstruction are two matrix products.
    residual_.assign(x.begin(), x.end());
    Eigen::Map<Eigen::MatrixXd> blk(residual_.data(), b, static_cast<Eigen::Index>(blocks));
    codes_.noalias() = b64_.transpose() * blk;
    codesF_ = codes_.cast<float>();
    for (Eigen::Index k = 0; k < codesF_.cols(); ++k)
      for (Eigen::Index j = 0; j < codesF_.rows(); ++j) w.put(codesF_(j, k));
    blk.noalias() -= b64_ * codesF_.cast<double>();
    topk_->encode(std::span<const double>(residual_), rng, residualOut_);
    out.bytes.insert(out.bytes.end(), residualOut_.bytes.begin(), residualOut_.bytes.end());
  }

  template <class T>
  void decodeAddT(std::span<const std::byte> p, std::span<T> acc, double scale) const {
    if (!p.empty() && p[0] == static_cast<std::byte>(CodecId::TopK)) {
      topk_->decodeAdd(p, acc, scale);  // a warm-up message, or a sender without a basis
      return;
    }
    ByteReader r(p, "lgc payload");
    const auto h = detail::readHeader(r, codec(), acc.size());
    if (h.param != m_) throw DecodeError("lgc payload: " + std::to_string(h.param) + " codes per block, configured " +
                                         std::to_string(m_));
    const auto fp = r.get<std::uint32_t>();
    const auto b = r.get<std::uint32_t>();
    if (b != spec_.block) throw DecodeError("lgc payload: block " + std::to_string(b) + ", configured " +
                                            std::to_string(spec_.block));
    if (basis_.empty() || fp != basis_.fingerprint())
      throw DecodeError(basis_.empty() ? "lgc payload coded with a basis this node does not have"
                                       : "lgc payload coded with a different basis than this node's");
    const std::size_t blocks = h.dim / b;
    const auto codes = r.take(4ull * blocks * m_);
    detail::checkFiniteValues(codes, "lgc code");
    const auto rest = p.subspan(p.size() - r.remaining());
    // Validate the residual before touching acc: decode it into scratch first (also needed for order:
    // the codes are added after, so a bad residual leaves acc untouched).
    scratch_.assign(acc.size(), 0.0);
    topk_->decodeAdd(rest, std::span<double>(scratch_), 1.0);
    codesF_.resize(m_, static_cast<Eigen::Index>(blocks));
    if (!codes.empty()) std::memcpy(codesF_.data(), codes.data(), codes.size());  // column k: block k's m codes
    Eigen::Map<Eigen::MatrixXd> blk(scratch_.data(), b, static_cast<Eigen::Index>(blocks));
    blk.noalias() += b64_ * codesF_.cast<double>();
    for (std::size_t i = 0; i < acc.size(); ++i) acc[i] += static_cast<T>(scale * scratch_[i]);
  }

 private:
  CompressorSpec spec_;
  std::unique_ptr<Compressor> topk_;
  std::uint32_t m_;
  std::string name_;
  LgcBasis basis_;
  Eigen::MatrixXd b64_;  // the basis in double, b x m
  // Scratch reused every round (a codec belongs to one node, header).
  mutable std::vector<double> residual_;
  mutable std::vector<double> scratch_;
  mutable Encoded residualOut_;
  mutable Eigen::MatrixXd codes_;
  mutable Eigen::MatrixXf codesF_;
};

}  // namespace

std::unique_ptr<Compressor> makeLgc(const CompressorSpec& spec) { return std::make_unique<Lgc>(spec); }

LgcControl* lgcControl(Compressor& c) { return dynamic_cast<LgcControl*>(&c); }
const LgcControl* lgcControl(const Compressor& c) { return dynamic_cast<const LgcControl*>(&c); }

}  // namespace gossip::compress
