#pragma once
// Pieces shared by the sparse codecs (topk, randk, cltk): how k follows from the configuration, and the
// f32 value block that follows an index set (write, validate, scatter-add). Internal to compressors/.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "compressors/compressor.h"
#include "core/bytes.h"
#include "core/error.h"

namespace gossip::compress::detail {

// k = spec.k (capped at dim) if set, else max(1, round(ratio * dim)) capped at dim; 0 for dim 0.
class SparseCount {
 public:
  SparseCount(const CompressorSpec& spec, const char* codecName) : fixed_(spec.k), ratio_(spec.ratio) {
    char buf[64];
    if (fixed_ > 0) {
      std::snprintf(buf, sizeof buf, "%s(k=%u)", codecName, static_cast<unsigned>(fixed_));
    } else {
      if (!(std::isfinite(ratio_) && ratio_ > 0.0 && ratio_ <= 1.0))
        throw ConfigError("compressor.ratio must be in (0, 1] for " + std::string(codecName) + ", got " +
                          std::to_string(ratio_));
      std::snprintf(buf, sizeof buf, "%s(ratio=%g)", codecName, ratio_);
    }
    name_ = buf;
  }

  std::uint32_t k(std::uint32_t dim) const {
    if (dim == 0) return 0;
    if (fixed_ > 0) return fixed_ < dim ? fixed_ : dim;
    const double r = std::round(ratio_ * static_cast<double>(dim));
    if (r < 1.0) return 1;
    return r >= static_cast<double>(dim) ? dim : static_cast<std::uint32_t>(r);
  }
  const std::string& name() const { return name_; }

 private:
  std::uint32_t fixed_;
  double ratio_;
  std::string name_;
};

// Per-thread index buffer: codec methods are const and may run concurrently, and a round should not
// allocate once the buffer has grown to k.
inline std::vector<std::uint32_t>& indexScratch() {
  thread_local std::vector<std::uint32_t> idx;
  return idx;
}

// Appends x[idx[j]] as little-endian f32, j = 0..k-1 (double input is rounded to f32 here, once).
template <class T>
void writeValues(std::span<const T> x, std::span<const std::uint32_t> idx, ByteWriter& w) {
  std::byte* dst = w.reserveTail(4 * idx.size());
  for (std::size_t j = 0; j < idx.size(); ++j) {
    const float f = static_cast<float>(x[idx[j]]);
    std::memcpy(dst + 4 * j, &f, 4);
  }
}

inline void checkFiniteValues(std::span<const std::byte> values, const char* codecName) {
  bool finite = true;
  for (std::size_t j = 0; j + 4 <= values.size(); j += 4) {
    float f;
    std::memcpy(&f, values.data() + j, 4);
    finite &= std::isfinite(f);
  }
  if (!finite) throw DecodeError(std::string("non-finite value in ") + codecName + " payload");
}

// acc[idx[j]] += scale * value_j. Callers have validated idx (< acc.size()) and the value count.
template <class T>
void scatterAdd(std::span<const std::byte> values, std::span<const std::uint32_t> idx, double scale,
                std::span<T> acc) {
  const T s = static_cast<T>(scale);
  for (std::size_t j = 0; j < idx.size(); ++j) {
    float f;
    std::memcpy(&f, values.data() + 4 * j, 4);
    acc[idx[j]] += s * static_cast<T>(f);
  }
}

}  // namespace gossip::compress::detail
