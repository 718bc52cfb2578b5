#pragma once
// The concrete gradient estimators of one node and their factory (ALGORITHMS.md §4.6, Appendix B.3).
// f_i(x) = (1/m) sum_{j in rows} f_ij(x) with f_ij including the l2 term; every estimator returns an
// unbiased estimate of grad f_i(x) (SGD, LSVRG, SAGA) or the exact gradient (full).
//
// Ownership: an estimator keeps references to the Model and the Dataset (both must outlive it, and both
// are typically shared by all nodes) and owns a copy of its row list, its RNG and its memory. Not
// thread-safe; one estimator per node, used by one thread at a time.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/rng.h"
#include "training/estimator.h"
#include "training/linear_models.h"

namespace gossip::training {

struct EstimatorSpec {
  // sgd | full | lsvrg | saga (scalar memory for linear models, table otherwise) | saga_table |
  // saga_scalar (ConfigError unless the model is linear)
  std::string kind = "sgd";
  std::size_t batch = 32;  // distinct samples per estimate (capped at the node's sample count)
  double lsvrg_p = 0.0;    // reference refresh probability; 0 = batch / m (= 1/m for batch 1)
  // sgd: codistillation's reference rows (algorithm.distill_reference), owned by the caller; null = none.
  const Dataset* reference = nullptr;
};

// ConfigError naming estimator.<field> for bad values or an empty row list.
std::unique_ptr<GradientEstimator> makeEstimator(const EstimatorSpec& spec, const Model& model,
                                                 const Dataset& data, std::vector<std::uint32_t> rows,
                                                 std::uint64_t seed);

// Shared state: the node's rows, the RNG and a without-replacement minibatch sampler.
class SampledEstimator : public GradientEstimator {
 public:
  SampledEstimator(const Model& model, const Dataset& data, std::vector<std::uint32_t> rows, std::size_t batch,
                   std::uint64_t seed);
  std::uint64_t sampleGradients() const override { return evaluated_; }
  std::size_t localSamples() const { return rows_.size(); }

 protected:
  // Draws min(batch, m) distinct positions into positions() and their rows into batchRows(); the
  // returned spans stay valid until the next draw. Partial Fisher-Yates on a persistent permutation:
  // O(batch) per draw, no allocation.
  void drawBatch();
  std::span<const std::uint32_t> positions() const { return {perm_.data(), batch_}; }
  std::span<const std::uint32_t> batchRows() const { return {batch_rows_.data(), batch_}; }
  // Exact local gradient over all rows.
  double fullGradient(const Vec& x, Vec& g);

  // Checkpoint state shared by every estimator: the kind tag, RNG, permutation and work counter.
  // Subclasses call saveShared first; loadShared parses and validates into a SharedState without
  // touching the estimator, and commitShared installs it once the subclass has parsed its own part too.
  struct SharedState {
    Rng::State rng{};
    std::vector<std::uint32_t> perm;
    std::uint64_t evaluated = 0;
  };
  void saveShared(ByteWriter& w, std::uint32_t tag) const;
  SharedState loadShared(ByteReader& r, std::uint32_t tag, const char* kind) const;
  void commitShared(SharedState&& s) noexcept;
  // A state vector of this model's dimension.
  Vec getDimVec(ByteReader& r, const char* what) const;

  const Model& model_;
  const Dataset& data_;
  std::vector<std::uint32_t> rows_;
  std::size_t batch_;
  Rng rng_;
  std::uint64_t evaluated_ = 0;

 private:
  std::vector<std::uint32_t> perm_;  // positions into rows_, a permutation of 0..m-1
  std::vector<std::uint32_t> batch_rows_;
};

class FullGradientEstimator final : public SampledEstimator {
 public:
  using SampledEstimator::SampledEstimator;
  double estimate(const Vec& x, Vec& g) override { return fullGradient(x, g); }
  void saveState(ByteWriter& w) const override;
  void loadState(ByteReader& r) override;
};

class SgdEstimator final : public SampledEstimator {
 public:
  using SampledEstimator::SampledEstimator;
  double estimate(const Vec& x, Vec& g) override;
  double estimateDistilled(const Vec& x, std::span<const Vec* const> teachers, double weight, Vec& g) override;
  double estimateWithReference(const Vec& x, std::span<const double> q, double weight, Vec& g) override;
  void predictReference(const Vec& x, std::vector<double>& probs) override;
  void setReference(const Dataset* reference) { reference_ = reference; }
  void saveState(ByteWriter& w) const override;
  void loadState(ByteReader& r) override;

 private:
  const Dataset* reference_ = nullptr;
};

// g = grad f_B(x) - grad f_B(w) + mu with mu = grad f_i(w); after use, w <- x with probability p.
class LsvrgEstimator final : public SampledEstimator {
 public:
  LsvrgEstimator(const Model& model, const Dataset& data, std::vector<std::uint32_t> rows, std::size_t batch,
                 double p, std::uint64_t seed);
  double estimate(const Vec& x, Vec& g) override;
  void reset() override { has_ref_ = false; }
  void saveState(ByteWriter& w) const override;
  void loadState(ByteReader& r) override;

 private:
  double p_;
  bool has_ref_ = false;
  Vec w_, mu_, tmp_;
};

// Table SAGA: phi_j = data part of the last gradient of sample j (dim x m doubles), avg = mean_j phi_j.
// g = avg + (1/B) sum_{j in B} (grad l_j(x) - phi_j) + l2 x, then avg and phi_j are updated. The l2 term
// is known exactly (Model::l2), so it is not stored: less variance than tabulating grad f_ij, and the
// same estimates as the scalar form below for linear models.
class SagaTableEstimator final : public SampledEstimator {
 public:
  using SampledEstimator::SampledEstimator;
  double estimate(const Vec& x, Vec& g) override;
  void reset() override { ready_ = false; }
  void saveState(ByteWriter& w) const override;
  void loadState(ByteReader& r) override;

 private:
  void initialize(const Vec& x);
  bool ready_ = false;
  Mat table_;  // column j = phi of position j
  Vec avg_, tmp_, acc_;
};

// Scalar-memory SAGA for linear models: grad f_ij(x) = l'(z_j) [a_j; 1] + l2 x, so the table only
// needs phi_j = l'(z_j) at the last visit (m doubles) and avg = (1/m) sum_j phi_j [a_j; 1].
class SagaScalarEstimator final : public SampledEstimator {
 public:
  SagaScalarEstimator(const LinearModel& model, const Dataset& data, std::vector<std::uint32_t> rows,
                      std::size_t batch, std::uint64_t seed);
  double estimate(const Vec& x, Vec& g) override;
  void reset() override { ready_ = false; }
  void saveState(ByteWriter& w) const override;
  void loadState(ByteReader& r) override;

 private:
  const LinearModel& linear_;
  bool ready_ = false;
  Vec phi_, avg_, deriv_, diff_;
};

}  // namespace gossip::training
