#pragma once
// Internal helpers shared by the model implementations: walking a row subset in fixed-size chunks and
// gathering a chunk of float feature rows into a Real matrix (core/real.h), using per-thread scratch buffers.
//
// Why per-thread scratch: one Model instance is shared by every virtual node of the simulator and its
// methods are const, so a member buffer would race as soon as two threads evaluate nodes. A thread_local
// arena keeps calls allocation-free after warm-up and is safe for any number of threads. The buffers are
// only valid inside a single model call (not re-entrant: a model method must not call another model's
// method while it holds a Buffer view; none does).
#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include <Eigen/Dense>

#include "core/error.h"
#include "training/dataset.h"

namespace gossip::training::detail {

using RowMatrix = Eigen::Matrix<Real, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MatMap = Eigen::Map<RowMatrix>;
using VecMap = Eigen::Map<Vec>;

// Rows per chunk: bounds scratch memory (chunk x features values) for full-data passes while keeping
// the matrix products large enough to be efficient.
inline constexpr std::size_t kChunkRows = 256;

// Growable per-thread buffers; `slot` picks one of several independent arrays.
class Scratch {
 public:
  static constexpr int kSlots = 9;
  static Real* get(int slot, std::size_t n) {
    thread_local std::vector<Real> buffers[kSlots];
    auto& b = buffers[slot];
    if (b.size() < n) b.resize(std::max(n, b.size() * 2));
    return b.data();
  }
  static MatMap matrix(int slot, Eigen::Index rows, Eigen::Index cols) {
    return MatMap(get(slot, static_cast<std::size_t>(rows * cols)), rows, cols);
  }
  static VecMap vector(int slot, Eigen::Index n) { return VecMap(get(slot, static_cast<std::size_t>(n)), n); }
};

// A subset of rows: either an explicit index list or all rows of the data set.
class RowSet {
 public:
  RowSet(std::span<const std::uint32_t> rows) : rows_(rows), n_(rows.size()), all_(false) {}  // NOLINT
  static RowSet all(const Dataset& d) { return RowSet(d.samples()); }
  std::size_t size() const { return n_; }
  std::uint32_t operator[](std::size_t i) const { return all_ ? static_cast<std::uint32_t>(i) : rows_[i]; }

 private:
  explicit RowSet(std::size_t n) : n_(n), all_(true) {}
  std::span<const std::uint32_t> rows_;
  std::size_t n_;
  bool all_;
};

// Copies rows [begin, begin+count) of the set into a count x features Real matrix in `slot`.
inline MatMap gatherRows(const Dataset& d, const RowSet& rows, std::size_t begin, std::size_t count, int slot) {
  const auto f = static_cast<Eigen::Index>(d.features());
  MatMap a = Scratch::matrix(slot, static_cast<Eigen::Index>(count), f);
  for (std::size_t k = 0; k < count; ++k) {
    const std::uint32_t r = rows[begin + k];
    GOSSIP_CHECK(r < d.samples(), "row ", r, " out of range for ", d.samples(), " samples");
    a.row(static_cast<Eigen::Index>(k)) = d.X.row(r).cast<Real>();
  }
  return a;
}

}  // namespace gossip::training::detail
