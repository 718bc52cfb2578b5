#pragma once
// Eigen vectors and matrices in checkpoint state, as Real (core/real.h; the checkpoint header says which), on top of core/serial.h (counts checked before
// allocation; a vector read "into" a known dimension must match it exactly).
#include "core/serial.h"
#include "training/dataset.h"

namespace gossip::training {

inline void putVec(ByteWriter& w, const Vec& v) {
  serial::putArray(w, std::span<const Real>(v.data(), static_cast<std::size_t>(v.size())));
}
// Reads a vector of any length.
inline Vec getVec(ByteReader& r) {
  const auto v = serial::getArray<Real>(r);
  return Eigen::Map<const Vec>(v.data(), static_cast<Eigen::Index>(v.size()));
}
// Reads into v, whose size is the expected dimension.
inline void getVecInto(ByteReader& r, Vec& v, const char* what) {
  serial::getArrayInto(r, std::span<Real>(v.data(), static_cast<std::size_t>(v.size())), what);
}

inline void putMatrix(ByteWriter& w, const Mat& m) {
  w.put<std::uint64_t>(static_cast<std::uint64_t>(m.rows()));
  putVec(w, Eigen::Map<const Vec>(m.data(), m.size()));
}
inline Mat getMatrix(ByteReader& r) {
  const auto rows = r.get<std::uint64_t>();
  Vec flat = getVec(r);
  if (rows == 0 ? flat.size() != 0 : static_cast<std::uint64_t>(flat.size()) % rows != 0)
    throw DecodeError("matrix state: " + std::to_string(flat.size()) + " entries do not fill " +
                      std::to_string(rows) + " rows");
  const auto cols = rows ? flat.size() / static_cast<Eigen::Index>(rows) : 0;
  return Eigen::Map<const Mat>(flat.data(), static_cast<Eigen::Index>(rows), cols);
}

}  // namespace gossip::training
