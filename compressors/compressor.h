#pragma once
// Compressor: a pure, stateless transform from a vector to wire bytes and back.
//
// Why this shape:
//  - encode() writes into a caller-owned Encoded so a node reuses one buffer every round and encodes ONCE
//    for all neighbours (ALGORITHMS.md §1.1). The bytes are the complete, self-describing payload
//    (codec header + body) and are exactly what goes on the wire.
//  - decodeAdd(bytes, acc, scale) fuses decoding with mixing: acc += scale * C(x). Mixing a neighbour's
//    message with weight w_ij never materialises a dense temporary.
//  - Both float and double vectors are supported: node state is float32 by default and float64 in the
//    float64 build (core/real.h); other callers (lgc's sums, tests) use double. Values on the wire are at most fp32.
//  - Random choices come from the injected Rng, so a given (input, seed) always encodes to the same bytes.
//  - Rule 1 of ALGORITHMS.md §3: the sender must use decodeAdd() on its own bytes to obtain the value
//    it adds to its own replica, so sender and receivers agree bit for bit.
//
// Thread-safety: a Compressor is immutable after construction; encode/decode are const and may run
// concurrently on different buffers.
//
// Malformed input: decodeAdd validates the whole buffer (header, codec, dimension, lengths, index ranges,
// non-finite values) BEFORE touching acc, and throws DecodeError. It never reads outside the buffer.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/bytes.h"
#include "core/rng.h"

namespace gossip::compress {

// Codec ids are part of the wire format: never renumber.
enum class CodecId : std::uint8_t {
  Fp32 = 1,
  Fp16 = 2,
  Bf16 = 3,
  TopK = 4,
  RandK = 5,
  Sign = 6,
  Qsgd = 7,
  LeadQuant = 8,
  Natural = 9,
  NatDither = 10,
  TopKQuant = 11,   // top-k support, values coded by C_nat or natural dithering
  SharedSupport = 12,  // CLT-k style: values on a support both ends already know
  Lgc = 13,            // learned linear code of blocks plus top-k of the residual (lgc.h)
};

// Every payload starts with this 8-byte header.
//   u8 codec, u8 version (=kCodecVersion), u16 param (codec specific), u32 dim
inline constexpr std::uint8_t kCodecVersion = 1;
inline constexpr std::size_t kCodecHeaderBytes = 8;

// Quality guarantee of a compressor on vectors of a given length (ALGORITHMS.md §3):
//  Contraction: E||C(x) - x||^2 <= (1 - delta) ||x||^2          (value = delta)
//  Variance:    E C(x) = x and E||C(x) - x||^2 <= omega ||x||^2  (value = omega)
struct Quality {
  enum class Kind { Contraction, Variance } kind;
  double value;
};

struct Encoded {
  Bytes bytes;
  // crc32c of bytes, when the encoder computed it in the pass that wrote them (fp32EncodeChecked,
  // compressors/cast.h): the engine's frame checksum then takes no pass of its own over the payload. Valid
  // only while crc_bytes == bytes.size(): a wrapper that appends a trailer after its method's encode
  // (LeaderPull, CltkRound) leaves it stale, and knownCrc() then says nothing. Every codec's encode resets it
  // (beginPayload, writeHeader), and so does the engine before each round.
  std::optional<std::uint32_t> crc;
  std::size_t crc_bytes = 0;
  std::size_t size() const { return bytes.size(); }
  std::span<const std::byte> view() const { return bytes; }
  std::optional<std::uint32_t> knownCrc() const { return crc && crc_bytes == bytes.size() ? crc : std::nullopt; }
};

class Compressor {
 public:
  virtual ~Compressor() = default;
  Compressor() = default;
  Compressor(const Compressor&) = delete;
  Compressor& operator=(const Compressor&) = delete;

  virtual std::string_view name() const = 0;  // e.g. "topk(ratio=0.01)"
  virtual CodecId codec() const = 0;
  virtual bool unbiased() const = 0;
  virtual Quality quality(std::uint32_t dim) const = 0;
  // Exact payload size in bytes for a vector of length dim (header included). For codecs whose size
  // depends on the data (none today) this is an upper bound.
  virtual std::size_t encodedBytes(std::uint32_t dim) const = 0;

  // Replaces out.bytes with the payload for x. x.size() must fit in u32.
  virtual void encode(std::span<const float> x, Rng& rng, Encoded& out) const = 0;
  virtual void encode(std::span<const double> x, Rng& rng, Encoded& out) const = 0;

  // Error feedback's round (compressors/error_feedback.h, beta = 1): m += x (each sum rounded once), out =
  // encode(m), m -= decode(out); and a check that every x_i is finite, which is the return value (false: m
  // holds the sums and out is unspecified). m.size() must equal x.size(). This default makes the add and
  // the check one pass, then encodes and subtracts the decoded message; top-k fuses the add and the check
  // into its selection's pass and zeroes the kept entries as it copies them out (m - c is exactly 0 there).
  virtual bool encodeWithFeedback(std::span<float> m, std::span<const float> x, Rng& rng, Encoded& out) const {
    return encodeWithFeedbackDefault(m, x, rng, out);
  }
  virtual bool encodeWithFeedback(std::span<double> m, std::span<const double> x, Rng& rng, Encoded& out) const {
    return encodeWithFeedbackDefault(m, x, rng, out);
  }

  // acc += scale * decode(payload). acc.size() must equal the payload's dim, else DecodeError.
  virtual void decodeAdd(std::span<const std::byte> payload, std::span<float> acc, double scale = 1.0) const = 0;
  virtual void decodeAdd(std::span<const std::byte> payload, std::span<double> acc, double scale = 1.0) const = 0;

  // Sparse codecs (top-k, rand-k, top-k with coded values): validates the payload exactly as decodeAdd does
  // for a vector of `dim` (DecodeError otherwise), appends to `out` every index at which decode(payload) may
  // be nonzero and returns true; a decodeAdd of the same payload then cannot throw. Dense codecs return
  // false and read nothing. With the support known, a mix can change its state in place and measure the
  // change on those indices alone, instead of building the next model aside (DeepSqueeze, stateless.cc).
  virtual bool sparseSupport(std::span<const std::byte> /*payload*/, std::uint32_t /*dim*/,
                       std::vector<std::uint32_t>& /*out*/) const {
    return false;
  }
  // Sparse codecs whose decode is one value per index (top-k): validates the payload exactly as decodeAdd
  // does for a vector of `dim` (DecodeError otherwise), fills idx (strictly ascending) and values, and
  // returns true; decodeAdd(payload, acc, scale) is then acc[idx[j]] += T(scale) * T(values[j]) for every j,
  // T the accumulator's type. A mix can then read each message once and merge several messages' supports in
  // one pass (DeepSqueeze, stateless.cc). Others return false and read nothing.
  virtual bool sparseEntries(std::span<const std::byte> /*payload*/, std::uint32_t /*dim*/,
                             std::vector<std::uint32_t>& /*idx*/, std::vector<float>& /*values*/) const {
    return false;
  }
  // Whether sparseSupport names a payload's support (so a mix can work in place); asked without a payload,
  // e.g. by the memory estimate (daemon/config/memory_estimate.cc).
  virtual bool sparse() const { return false; }

 protected:
  template <class T>
  bool encodeWithFeedbackDefault(std::span<T> m, std::span<const T> x, Rng& rng, Encoded& out) const {
    bool finite = true;
    for (std::size_t i = 0; i < x.size(); ++i) {
      finite &= std::isfinite(x[i]);
      m[i] += x[i];
    }
    if (!finite) return false;
    encode(std::span<const T>(m), rng, out);
    decodeAdd(out.view(), m, -1.0);
    return true;
  }
};

// User-facing description of a compressor, filled from the [compressor] config section.
struct CompressorSpec {
  std::string name = "fp32";   // fp32|identity, fp16, bf16, topk, randk, sign, qsgd, lead, natural, dither,
                               // topk_natural, topk_dither, cltk, lgc
  double ratio = 0.01;         // topk/randk/cltk: fraction of entries kept (k = max(1, round(ratio*d)))
  std::uint32_t k = 0;         // if > 0, overrides ratio
  unsigned bits = 2;           // lead: b (levels s = 2^(b-1))
  unsigned levels = 16;        // qsgd: s; dither: s
  std::uint32_t block = 0;     // sign/qsgd/lead/dither: block length, 0 = whole vector; lgc: autoencoder input
  std::uint32_t codes = 8;     // lgc: coefficients per block (the code length m)
  bool unbiased = false;       // randk: scale by d/k; qsgd: false = scaled (biased) form
  bool inf_norm = true;        // dither: p = inf (true) or p = 2 (false)
};

// Throws ConfigError naming the bad field. Names are case-sensitive lower case.
std::unique_ptr<Compressor> makeCompressor(const CompressorSpec& spec);

// All accepted names, for help texts and errors.
std::span<const std::string_view> compressorNames();

}  // namespace gossip::compress
