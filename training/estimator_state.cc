// Checkpoint state of the gradient estimators (training/estimator.h: saveState/loadState).
//
// Layout per estimator: kind tag, batch size, RNG state, permutation, work counter, then the kind's own
// memory. Each kind has its own tag so that a state from another kind fails with a clear DecodeError
// instead of being misread. Loading parses and validates everything into locals first and only then
// assigns (moves that cannot throw), so a failed load leaves the estimator exactly as it was.
#include <cstdint>

#include "core/serial.h"
#include "training/estimators.h"
#include "training/state_io.h"

namespace gossip::training {

namespace {
constexpr std::uint32_t kSgdTag = serial::fourcc("ESGD");
constexpr std::uint32_t kFullTag = serial::fourcc("EFUL");
constexpr std::uint32_t kLsvrgTag = serial::fourcc("ELSV");
constexpr std::uint32_t kSagaTableTag = serial::fourcc("ESAT");
constexpr std::uint32_t kSagaScalarTag = serial::fourcc("ESAS");

bool getFlag(ByteReader& r, const char* what) {
  const auto b = r.get<std::uint8_t>();
  if (b > 1) throw DecodeError(std::string(what) + ": flag byte " + std::to_string(b));
  return b == 1;
}
}  // namespace

// ---------------------------------------------------------------- shared part

void SampledEstimator::saveShared(ByteWriter& w, std::uint32_t tag) const {
  serial::putTag(w, tag);
  w.put<std::uint64_t>(batch_);
  for (std::uint64_t word : rng_.state()) w.put(word);
  serial::putArray(w, std::span<const std::uint32_t>(perm_));
  w.put<std::uint64_t>(evaluated_);
}

SampledEstimator::SharedState SampledEstimator::loadShared(ByteReader& r, std::uint32_t tag,
                                                           const char* kind) const {
  serial::expectTag(r, tag, kind);
  // The batch size decides how many draws each estimate consumes; another batch would continue a
  // different random stream, so it is a mismatch, not something to adopt silently.
  if (const auto batch = r.get<std::uint64_t>(); batch != batch_)
    throw DecodeError(std::string(kind) + " state: batch " + std::to_string(batch) + ", this estimator uses " +
                      std::to_string(batch_));
  SharedState s;
  for (auto& word : s.rng) word = r.get<std::uint64_t>();
  if (s.rng == Rng::State{}) throw DecodeError(std::string(kind) + " state: all-zero RNG state");
  s.perm = serial::getArray<std::uint32_t>(r);
  const std::size_t m = rows_.size();
  if (s.perm.size() != m)
    throw DecodeError(std::string(kind) + " state: permutation of " + std::to_string(s.perm.size()) +
                      " positions, this node has " + std::to_string(m) + " samples");
  // drawBatch indexes rows_ through perm_, so it must be a true permutation of 0..m-1.
  std::vector<bool> seen(m, false);
  for (std::uint32_t p : s.perm) {
    if (p >= m || seen[p]) throw DecodeError(std::string(kind) + " state: sampling order is not a permutation");
    seen[p] = true;
  }
  s.evaluated = r.get<std::uint64_t>();
  return s;
}

void SampledEstimator::commitShared(SharedState&& s) noexcept {
  rng_.setState(s.rng);
  perm_ = std::move(s.perm);
  evaluated_ = s.evaluated;
  // batch_rows_ is rewritten by every draw; keep it consistent with perm_ anyway.
  for (std::size_t k = 0; k < batch_; ++k) batch_rows_[k] = rows_[perm_[k]];
}

Vec SampledEstimator::getDimVec(ByteReader& r, const char* what) const {
  Vec v(static_cast<Eigen::Index>(model_.dim()));
  getVecInto(r, v, what);
  return v;
}

// ---------------------------------------------------------------- stateless kinds

void FullGradientEstimator::saveState(ByteWriter& w) const { saveShared(w, kFullTag); }
void FullGradientEstimator::loadState(ByteReader& r) {
  commitShared(loadShared(r, kFullTag, "a full-gradient estimator"));
}

void SgdEstimator::saveState(ByteWriter& w) const { saveShared(w, kSgdTag); }
void SgdEstimator::loadState(ByteReader& r) { commitShared(loadShared(r, kSgdTag, "an SGD estimator")); }

// ---------------------------------------------------------------- LSVRG

void LsvrgEstimator::saveState(ByteWriter& w) const {
  saveShared(w, kLsvrgTag);
  w.put<double>(p_);
  w.put<std::uint8_t>(has_ref_ ? 1 : 0);
  if (has_ref_) {
    putVec(w, w_);
    putVec(w, mu_);
  }
}

void LsvrgEstimator::loadState(ByteReader& r) {
  SharedState shared = loadShared(r, kLsvrgTag, "an LSVRG estimator");
  const double p = r.get<double>();
  if (!(p >= 0.0 && p <= 1.0)) throw DecodeError("LSVRG state: refresh probability " + std::to_string(p));
  const bool has_ref = getFlag(r, "LSVRG state");
  Vec w, mu;
  if (has_ref) {
    w = getDimVec(r, "LSVRG reference point");
    mu = getDimVec(r, "LSVRG reference gradient");
  }
  commitShared(std::move(shared));
  p_ = p;
  has_ref_ = has_ref;
  w_.swap(w);
  mu_.swap(mu);
}

// ---------------------------------------------------------------- SAGA (table)

void SagaTableEstimator::saveState(ByteWriter& w) const {
  saveShared(w, kSagaTableTag);
  w.put<std::uint8_t>(ready_ ? 1 : 0);
  if (ready_) {
    putMatrix(w, table_);
    putVec(w, avg_);
  }
}

void SagaTableEstimator::loadState(ByteReader& r) {
  SharedState shared = loadShared(r, kSagaTableTag, "a table SAGA estimator");
  const bool ready = getFlag(r, "SAGA state");
  Mat table;
  Vec avg;
  if (ready) {
    table = getMatrix(r);
    if (static_cast<std::size_t>(table.rows()) != model_.dim() ||
        static_cast<std::size_t>(table.cols()) != rows_.size())
      throw DecodeError("SAGA state: table of " + std::to_string(table.rows()) + " x " + std::to_string(table.cols()) +
                        ", expected " + std::to_string(model_.dim()) + " x " + std::to_string(rows_.size()));
    avg = getDimVec(r, "SAGA average");
  }
  commitShared(std::move(shared));
  ready_ = ready;
  table_.swap(table);
  avg_.swap(avg);
}

// ---------------------------------------------------------------- SAGA (scalar memory)

void SagaScalarEstimator::saveState(ByteWriter& w) const {
  saveShared(w, kSagaScalarTag);
  w.put<std::uint8_t>(ready_ ? 1 : 0);
  if (ready_) {
    putVec(w, phi_);
    putVec(w, avg_);
  }
}

void SagaScalarEstimator::loadState(ByteReader& r) {
  SharedState shared = loadShared(r, kSagaScalarTag, "a scalar SAGA estimator");
  const bool ready = getFlag(r, "SAGA state");
  Vec phi, avg;
  if (ready) {
    phi.resize(static_cast<Eigen::Index>(rows_.size()));
    getVecInto(r, phi, "SAGA derivative memory");
    avg = getDimVec(r, "SAGA average");
  }
  commitShared(std::move(shared));
  ready_ = ready;
  phi_.swap(phi);
  avg_.swap(avg);
}

}  // namespace gossip::training
