#include "compressors/topk.h"

#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "compressors/codec_base.h"
#include "core/float_words.h"
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

  // Error feedback: m += x fused into the selection's pass (select.h, addAndSelectTopK), and m -= c as the
  // kept values are copied out: c_i is m_i there, so m_i - c_i is exactly +0 (what decodeAdd(-1) gives).
  bool encodeWithFeedback(std::span<float> m, std::span<const float> x, Rng&, Encoded& out) const override {
    return encodeWithFeedbackT(m, x, out);
  }
  bool encodeWithFeedback(std::span<double> m, std::span<const double> x, Rng&, Encoded& out) const override {
    return encodeWithFeedbackT(m, x, out);
  }

  template <class T>
  void decodeAddT(std::span<const std::byte> p, std::span<T> acc, double scale) const {
    auto& idx = detail::indexScratch();
    const auto values = parse(p, acc.size(), idx);
    detail::scatterAdd(values, idx, scale, acc);
  }

  bool sparseEntries(std::span<const std::byte> p, std::uint32_t dim, std::vector<std::uint32_t>& idx,
                     std::vector<float>& values) const override {
    const auto bytes = parse(p, dim, idx);
    values.resize(idx.size());
    if (!bytes.empty()) std::memcpy(values.data(), bytes.data(), bytes.size());
    return true;
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
  bool encodeWithFeedbackT(std::span<T> m, std::span<const T> x, Encoded& out) const {
    GOSSIP_CHECK(m.size() == x.size(), "topk encodeWithFeedback: the vectors' sizes differ");
    const std::uint32_t dim = detail::checkedDim(m.size());
    auto& idx = detail::indexScratch();
    if (!addAndSelectTopK(m, x, count_.k(dim), idx)) return false;
    ByteWriter w = writeIndexPart(dim, idx, out);
    // The values go out as float32, c_i = float(m_i), and m_i - c_i is left in m, in the pass that copies
    // them: +0 with float state (what decodeAdd(-1) gives), the rounding error with double state.
    std::byte* dst = w.reserveTail(4 * idx.size());
    std::uint32_t bad = 0;
    for (std::size_t j = 0; j < idx.size(); ++j) {
      // ~1% of m, each index a cache miss: the line 16 indices ahead is asked for now (halved the time of
      // DeepSqueeze's merged mix, which walks its supports the same way; docs/results.md §23).
      if (j + 16 < idx.size()) __builtin_prefetch(m.data() + idx[j + 16], 1);
      const float f = static_cast<float>(m[idx[j]]);
      bad |= nonFiniteBits(f);
      std::memcpy(dst + 4 * j, &f, 4);
      if constexpr (std::is_same_v<T, float>)
        m[idx[j]] = 0.0f;
      else
        m[idx[j]] += -1.0 * static_cast<double>(f);
    }
    // x was finite but a sum m_i + x_i is not a float32 (it overflowed, or is a double beyond float's
    // range): the frame would carry an infinity. What decodeAdd(-1) refused before, refused here.
    if (bad) throw DecodeError("topk: the error memory plus x left float32's range");
    return true;
  }

  template <class T>
  void write(std::span<const T> x, const std::vector<std::uint32_t>& idx, Encoded& out) const {
    ByteWriter w = writeIndexPart(static_cast<std::uint32_t>(x.size()), idx, out);
    detail::writeValues(x, idx, w);
  }

  // The header, k and the index set; the values follow.
  ByteWriter writeIndexPart(std::uint32_t dim, const std::vector<std::uint32_t>& idx, Encoded& out) const {
    detail::writeHeader(out, codec(), 0, dim, encodedBytes(dim));
    ByteWriter w(out.bytes);
    w.put(static_cast<std::uint32_t>(idx.size()));
    writeIndices(idx, dim, w);
    return w;
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
