#include "compressors/topk.h"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "compressors/codec_base.h"
#include "compressors/select.h"
#include "compressors/sparse_common.h"

namespace gossip::compress {
namespace {

// Payload: header (param 0, dim), u32 k, index set (select.h coding), k little-endian f32 values in
// ascending index order. k must equal the configured k for dim: both ends run the same configuration
// (ALGORITHMS.md §7), so any other count is a malformed or foreign message.
class TopK final : public detail::CodecBase<TopK> {
 public:
  explicit TopK(const CompressorSpec& spec) : count_(spec, "topk") {}

  std::string_view name() const override { return count_.name(); }
  CodecId codec() const override { return CodecId::TopK; }
  bool unbiased() const override { return false; }
  Quality quality(std::uint32_t dim) const override {
    return {Quality::Kind::Contraction, dim == 0 ? 1.0 : double(count_.k(dim)) / double(dim)};
  }
  std::size_t encodedBytes(std::uint32_t dim) const override {
    const std::uint32_t k = count_.k(dim);
    return kCodecHeaderBytes + 4 + indexBytes(dim, k) + 4ull * k;
  }

  template <class T>
  void encodeT(std::span<const T> x, Rng&, Encoded& out) const {
    const std::uint32_t dim = detail::checkedDim(x.size());
    auto& idx = detail::indexScratch();
    selectTopK(x, count_.k(dim), idx);
    write(x, idx, out);
  }

  // Error feedback's m += x fused into the selection's pass (select.h, addAndSelectTopK).
  bool encodeAdded(std::span<float> m, std::span<const float> x, Rng&, Encoded& out) const override {
    return encodeAddedT(m, x, out);
  }
  bool encodeAdded(std::span<double> m, std::span<const double> x, Rng&, Encoded& out) const override {
    return encodeAddedT(m, x, out);
  }

  template <class T>
  void decodeAddT(std::span<const std::byte> p, std::span<T> acc, double scale) const {
    auto& idx = detail::indexScratch();
    const auto values = parse(p, acc.size(), idx);
    detail::scatterAdd(values, idx, scale, acc);
  }

  bool sparse() const override { return true; }
  bool sparseSupport(std::span<const std::byte> p, std::uint32_t dim, std::vector<std::uint32_t>& out) const override {
    auto& idx = detail::indexScratch();
    parse(p, dim, idx);
    out.insert(out.end(), idx.begin(), idx.end());
    return true;
  }

 private:
  template <class T>
  bool encodeAddedT(std::span<T> m, std::span<const T> x, Encoded& out) const {
    GOSSIP_CHECK(m.size() == x.size(), "topk encodeAdded: the vectors' sizes differ");
    const std::uint32_t dim = detail::checkedDim(m.size());
    auto& idx = detail::indexScratch();
    if (!addAndSelectTopK(m, x, count_.k(dim), idx)) return false;
    write(std::span<const T>(m), idx, out);
    return true;
  }

  template <class T>
  void write(std::span<const T> x, const std::vector<std::uint32_t>& idx, Encoded& out) const {
    const auto dim = static_cast<std::uint32_t>(x.size());
    detail::writeHeader(out, codec(), 0, dim, encodedBytes(dim));
    ByteWriter w(out.bytes);
    w.put(static_cast<std::uint32_t>(idx.size()));
    writeIndices(idx, dim, w);
    detail::writeValues(x, idx, w);
  }

  // Validates a payload for a vector of `dim`: its indices into idx, its value block returned.
  std::span<const std::byte> parse(std::span<const std::byte> p, std::size_t dim, std::vector<std::uint32_t>& idx) const {
    ByteReader r(p, "topk payload");
    const auto h = detail::readHeader(r, codec(), dim);
    if (h.param != 0) throw DecodeError("topk payload: unexpected header param " + std::to_string(h.param));
    const auto k = r.get<std::uint32_t>();
    if (k != count_.k(h.dim))
      throw DecodeError("topk payload: k " + std::to_string(k) + " differs from configured " +
                        std::to_string(count_.k(h.dim)));
    readIndices(r, h.dim, k, idx);
    const auto values = r.take(4ull * k);
    r.expectEnd();
    detail::checkFiniteValues(values, "topk");
    return values;
  }

  detail::SparseCount count_;
};

}  // namespace

std::unique_ptr<Compressor> makeTopK(const CompressorSpec& spec) { return std::make_unique<TopK>(spec); }

}  // namespace gossip::compress
