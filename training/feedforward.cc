#include "training/feedforward.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"

namespace gossip::training {

using detail::gatherRows;
using detail::kChunkRows;
using detail::MatMap;
using detail::RowSet;
using detail::Scratch;

namespace {
// Scratch slot plan: 0 = gathered input rows, 1..L = activations of layer l (the last one holds the
// logits, later overwritten by the output delta), the two top slots alternate as back-propagated deltas.
constexpr int kSlotInput = 0;
constexpr int kSlotDeltaA = Scratch::kSlots - 3;
constexpr int kSlotDeltaB = Scratch::kSlots - 2;
constexpr int kSlotTeacher = Scratch::kSlots - 1;  // codistillation's target probabilities

using ConstMatMap = Eigen::Map<const detail::RowMatrix>;
using ConstVecMap = Eigen::Map<const Vec>;

std::int32_t checkedLabel(const Dataset& data, std::uint32_t row, int classes) {
  const std::int32_t y = data.y[row];
  if (y < 0 || y >= classes)
    throw DataError("label " + std::to_string(y) + " of row " + std::to_string(row) + " is outside 0.." +
                    std::to_string(classes - 1));
  return y;
}
}  // namespace

FeedForwardModel::FeedForwardModel(std::size_t features, int classes, std::vector<int> hidden, double l1,
                                   double l2)
    : features_(features), classes_(classes), l1_(l1), l2_(l2) {
  if (features == 0) throw ConfigError("model: data has no features");
  if (classes < 2) throw ConfigError("model: softmax output needs at least 2 classes, data has " +
                                     std::to_string(classes));
  if (hidden.size() > kMaxHidden)
    throw ConfigError("model.hidden: at most " + std::to_string(kMaxHidden) + " hidden layers");
  Eigen::Index in = static_cast<Eigen::Index>(features);
  Eigen::Index offset = 0;
  hidden.push_back(classes);
  for (int out : hidden) {
    if (out <= 0) throw ConfigError("model.hidden: layer sizes must be positive, got " + std::to_string(out));
    layers_.push_back({in, out, offset});
    offset += in * out + out;
    in = out;
  }
  dim_ = static_cast<std::size_t>(offset);
}

void FeedForwardModel::init(Vec& x, Rng& rng) const {
  x.setZero(static_cast<Eigen::Index>(dim_));
  if (layers_.size() == 1) return;
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    const Layer& L = layers_[l];
    auto w = x.segment(L.offset, L.in * L.out);
    if (l + 1 < layers_.size()) {
      const double sd = std::sqrt(2.0 / static_cast<double>(L.in));  // He: keeps ReLU activations' scale
      for (Eigen::Index i = 0; i < w.size(); ++i) w[i] = sd * rng.normal();
    } else {
      const double lim = std::sqrt(6.0 / static_cast<double>(L.in + L.out));  // Glorot uniform
      for (Eigen::Index i = 0; i < w.size(); ++i) w[i] = lim * (2.0 * rng.uniform() - 1.0);
    }
  }
}

void FeedForwardModel::checkShape(const Vec& x, const Dataset& data) const {
  GOSSIP_CHECK(static_cast<std::size_t>(x.size()) == dim_, name(), ": x has ", x.size(), " entries, model ", dim_);
  GOSSIP_CHECK(data.features() == features_, name(), ": data has ", data.features(), " features, model ",
               features_);
  GOSSIP_CHECK(data.y.size() == data.samples(), name(), " needs one label per sample");
}

MatMap FeedForwardModel::forward(const Vec& x, const Dataset& data, const RowSet& rows, std::size_t begin,
                                 std::size_t count) const {
  const auto b = static_cast<Eigen::Index>(count);
  MatMap act = gatherRows(data, rows, begin, count, kSlotInput);
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    const Layer& L = layers_[l];
    ConstMatMap w(x.data() + L.offset, L.out, L.in);
    ConstVecMap bias(x.data() + L.offset + L.in * L.out, L.out);
    MatMap next = Scratch::matrix(static_cast<int>(l) + 1, b, L.out);
    next.noalias() = act * w.transpose();
    next.rowwise() += bias.transpose();
    if (l + 1 < layers_.size()) next = next.cwiseMax(0.0);
    new (&act) MatMap(next.data(), b, L.out);  // rebind the map (Eigen maps are not assignable)
  }
  return act;
}

void FeedForwardModel::backward(const Vec& x, std::size_t count, Vec& grad) const {
  const auto b = static_cast<Eigen::Index>(count);
  const std::size_t nl = layers_.size();
  MatMap delta = Scratch::matrix(static_cast<int>(nl), b, layers_.back().out);  // holds P - Y
  int spare = kSlotDeltaA;
  for (std::size_t l = nl; l-- > 0;) {
    const Layer& L = layers_[l];
    const int inSlot = l == 0 ? kSlotInput : static_cast<int>(l);
    MatMap input = Scratch::matrix(inSlot, b, L.in);
    Eigen::Map<detail::RowMatrix> gw(grad.data() + L.offset, L.out, L.in);
    gw.noalias() += delta.transpose() * input;
    grad.segment(L.offset + L.in * L.out, L.out) += delta.colwise().sum().transpose();
    if (l == 0) break;
    ConstMatMap w(x.data() + L.offset, L.out, L.in);
    MatMap prev = Scratch::matrix(spare, b, L.in);
    prev.noalias() = delta * w;
    prev = (input.array() > 0.0).select(prev, 0.0);  // ReLU derivative, from the stored activation
    new (&delta) MatMap(prev.data(), b, L.in);
    spare = spare == kSlotDeltaA ? kSlotDeltaB : kSlotDeltaA;
  }
}

double FeedForwardModel::sumLoss(const Vec& x, const Dataset& data, const RowSet& rows, Vec* grad) const {
  checkShape(x, data);
  double total = 0.0;
  for (std::size_t begin = 0; begin < rows.size(); begin += kChunkRows) {
    const std::size_t count = std::min(kChunkRows, rows.size() - begin);
    MatMap z = forward(x, data, rows, begin, count);
    for (Eigen::Index k = 0; k < z.rows(); ++k) {
      const std::int32_t y = checkedLabel(data, rows[begin + static_cast<std::size_t>(k)], classes_);
      auto row = z.row(k);
      const double m = row.maxCoeff();
      const double zy = row[y];
      row = (row.array() - m).exp();
      const double s = row.sum();
      total += std::log(s) + m - zy;  // -log softmax_y, stable
      if (grad != nullptr) {
        row /= s;
        row[y] -= 1.0;
      }
    }
    if (grad != nullptr) backward(x, count, *grad);
  }
  return total;
}

double FeedForwardModel::lossAndGrad(const Vec& x, const Dataset& data, std::span<const std::uint32_t> rows,
                                     Vec& grad) const {
  grad.setZero(static_cast<Eigen::Index>(dim_));
  double data_loss = sumLoss(x, data, RowSet(rows), &grad);
  if (!rows.empty()) {
    const double n = static_cast<double>(rows.size());
    grad /= n;
    data_loss /= n;
  }
  grad += l2_ * x;
  return data_loss + 0.5 * l2_ * x.squaredNorm();
}

MatMap FeedForwardModel::teacherMean(std::span<const Vec* const> teachers, const Dataset& data, const RowSet& rows,
                                     std::size_t begin, std::size_t count) const {
  MatMap q = Scratch::matrix(kSlotTeacher, static_cast<Eigen::Index>(count), classes_);
  q.setZero();
  const double share = 1.0 / static_cast<double>(teachers.size());
  for (const Vec* t : teachers) {
    MatMap z = forward(*t, data, rows, begin, count);
    for (Eigen::Index k = 0; k < z.rows(); ++k) {
      auto row = z.row(k);
      row = (row.array() - row.maxCoeff()).exp();
      q.row(k) += (share / row.sum()) * row;
    }
  }
  return q;
}

double FeedForwardModel::distillLossAndGrad(const Vec& x, const Dataset& data, std::span<const std::uint32_t> rows,
                                            std::span<const Vec* const> teachers, double weight, Vec& grad) const {
  if (teachers.empty() || weight == 0.0) return lossAndGrad(x, data, rows, grad);
  checkShape(x, data);
  for (const Vec* t : teachers)
    GOSSIP_CHECK(static_cast<std::size_t>(t->size()) == dim_, name(), ": a teacher has ", t->size(), " entries, model ", dim_);
  grad.setZero(static_cast<Eigen::Index>(dim_));
  const RowSet set(rows);
  double total = 0.0;
  for (std::size_t begin = 0; begin < set.size(); begin += kChunkRows) {
    const std::size_t count = std::min(kChunkRows, set.size() - begin);
    MatMap q = teacherMean(teachers, data, set, begin, count);
    MatMap z = forward(x, data, set, begin, count);  // after the teachers: forward reuses their scratch
    for (Eigen::Index k = 0; k < z.rows(); ++k) {
      const std::int32_t y = checkedLabel(data, set[begin + static_cast<std::size_t>(k)], classes_);
      auto row = z.row(k);
      const double m = row.maxCoeff();
      const double lse = m + std::log((row.array() - m).exp().sum());  // log sum_c exp z_c
      double kl = 0.0;  // sum_c q_c (log q_c - log p_c), with 0 log 0 = 0
      for (Eigen::Index c = 0; c < row.size(); ++c)
        if (q(k, c) > 0.0) kl += q(k, c) * (std::log(q(k, c)) - (row[c] - lse));
      total += lse - row[y] + weight * kl;
      // d/dz [CE + weight KL] = (p - e_y) + weight (p - q)
      row = (row.array() - lse).exp();
      row = (1.0 + weight) * row - weight * q.row(k);
      row[y] -= 1.0;
    }
    backward(x, count, grad);
  }
  if (!rows.empty()) {
    const double n = static_cast<double>(rows.size());
    grad /= n;
    total /= n;
  }
  grad += l2_ * x;
  return total + 0.5 * l2_ * x.squaredNorm();
}

void FeedForwardModel::predictProbs(const Vec& x, const Dataset& ref, std::vector<double>& probs) const {
  GOSSIP_CHECK(static_cast<std::size_t>(x.size()) == dim_ && ref.features() == features_, name(),
               ": reference rows of ", ref.features(), " features for a model of ", features_);
  const RowSet rows = RowSet::all(ref);
  probs.resize(rows.size() * static_cast<std::size_t>(classes_));
  for (std::size_t begin = 0; begin < rows.size(); begin += kChunkRows) {
    const std::size_t count = std::min(kChunkRows, rows.size() - begin);
    MatMap z = forward(x, ref, rows, begin, count);
    for (Eigen::Index k = 0; k < z.rows(); ++k) {
      auto row = z.row(k);
      row = (row.array() - row.maxCoeff()).exp();
      row /= row.sum();
      double* out = probs.data() + (begin + static_cast<std::size_t>(k)) * static_cast<std::size_t>(classes_);
      for (Eigen::Index c = 0; c < row.size(); ++c) out[c] = row[c];
    }
  }
}

double FeedForwardModel::addReferenceTerm(const Vec& x, const Dataset& ref, std::span<const double> q, double weight,
                                          Vec& grad) const {
  const RowSet rows = RowSet::all(ref);
  GOSSIP_CHECK(static_cast<std::size_t>(x.size()) == dim_ && ref.features() == features_ &&
                   q.size() == rows.size() * static_cast<std::size_t>(classes_) &&
                   static_cast<std::size_t>(grad.size()) == dim_,
               name(), ": reference term with ", q.size(), " target values for ", rows.size(), " rows");
  if (rows.size() == 0 || weight == 0.0) return 0.0;
  // d/dz [weight/R KL(q || softmax z)] = weight/R (p - q); backward adds its gradient to grad directly.
  const double scale = weight / static_cast<double>(rows.size());
  double total = 0.0;
  for (std::size_t begin = 0; begin < rows.size(); begin += kChunkRows) {
    const std::size_t count = std::min(kChunkRows, rows.size() - begin);
    MatMap z = forward(x, ref, rows, begin, count);
    for (Eigen::Index k = 0; k < z.rows(); ++k) {
      const double* qk = q.data() + (begin + static_cast<std::size_t>(k)) * static_cast<std::size_t>(classes_);
      auto row = z.row(k);
      const double m = row.maxCoeff();
      const double lse = m + std::log((row.array() - m).exp().sum());
      for (Eigen::Index c = 0; c < row.size(); ++c)
        if (qk[c] > 0.0) total += qk[c] * (std::log(qk[c]) - (row[c] - lse));  // 0 log 0 = 0
      row = (row.array() - lse).exp();
      for (Eigen::Index c = 0; c < row.size(); ++c) row[c] = scale * (row[c] - qk[c]);
    }
    backward(x, count, grad);
  }
  return weight * total / static_cast<double>(rows.size());
}

double FeedForwardModel::loss(const Vec& x, const Dataset& data) const {
  const double total = sumLoss(x, data, RowSet::all(data), nullptr);
  const double n = static_cast<double>(data.samples());
  return (n > 0 ? total / n : 0.0) + 0.5 * l2_ * x.squaredNorm();
}

double FeedForwardModel::accuracy(const Vec& x, const Dataset& data) const {
  checkShape(x, data);
  const RowSet rows = RowSet::all(data);
  std::size_t correct = 0;
  for (std::size_t begin = 0; begin < rows.size(); begin += kChunkRows) {
    const std::size_t count = std::min(kChunkRows, rows.size() - begin);
    MatMap z = forward(x, data, rows, begin, count);
    for (Eigen::Index k = 0; k < z.rows(); ++k) {
      Eigen::Index best = 0;
      z.row(k).maxCoeff(&best);
      correct += best == data.y[rows[begin + static_cast<std::size_t>(k)]];
    }
  }
  return rows.size() == 0 ? 0.0 : static_cast<double>(correct) / static_cast<double>(rows.size());
}

}  // namespace gossip::training
