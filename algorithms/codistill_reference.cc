#include "algorithms/codistill_reference.h"

#include <cmath>

#include "algorithms/mixing.h"
#include "algorithms/prox.h"
#include "training/state_io.h"

namespace gossip::algo {
namespace {
constexpr std::uint32_t kTag = serial::fourcc("CODR");

void putValues(ByteWriter& w, const std::vector<double>& v) {
  w.put<std::uint64_t>(v.size());
  for (double d : v) w.put<double>(d);
}

std::vector<double> getValues(ByteReader& r, std::size_t expected, const char* what) {
  const auto n = r.get<std::uint64_t>();
  if (n != 0 && n != expected)
    throw DecodeError(std::string("codistill reference state: ") + what + " has " + std::to_string(n) +
                      " values, expected " + std::to_string(expected));
  std::vector<double> v(n);
  for (auto& d : v) {
    d = r.get<double>();
    if (!std::isfinite(d)) throw DecodeError(std::string("codistill reference state: non-finite ") + what);
  }
  return v;
}
}  // namespace

CodistillReference::CodistillReference(const AlgorithmParams& p, const compress::Compressor& c, PeerId self,
                                       Vec x0)
    : p_(p), c_(c), self_(self) {
  if (!(p.distill_weight >= 0.0 && std::isfinite(p.distill_weight)))
    throw ConfigError("algorithm.distill_weight must be >= 0 for codistill");
  if (p.distill_period < 1) throw ConfigError("algorithm.distill_period must be >= 1 for codistill");
  const auto id = c.codec();
  if (id != compress::CodecId::Fp32 && id != compress::CodecId::Fp16 && id != compress::CodecId::Bf16)
    throw ConfigError("compressor.name: codistill with a reference set sends class probabilities, in fp32, fp16 or "
                      "bf16, not " + std::string(c.name()));
  GOSSIP_CHECK(p.distill_reference_values > 0, "CodistillReference without reference values");
  x_ = std::move(x0);
}

void CodistillReference::prepare(Round t, const GradRef& g, double lr, compress::Encoded& out) {
  x_ -= lr * g;
  proxL1(x_, lr * p_.l1);
  out.bytes.clear();
  if (!refreshRound(t)) return;  // an empty message: nothing new to say this round
  GOSSIP_CHECK(predict_ != nullptr, "codistill reference: no predictor installed");
  predict_(x_, scratch_);
  GOSSIP_CHECK(scratch_.size() == p_.distill_reference_values, "codistill reference: ", scratch_.size(),
               " predictions, configured ", p_.distill_reference_values);
  Rng rng(roundSeed(p_.seed, self_, p_.incarnation, t));
  c_.encode(std::span<const double>(scratch_), rng, out);
  own_.assign(scratch_.size(), 0.0);
  c_.decodeAdd(out.view(), std::span<double>(own_), 1.0);  // what the neighbours will hold
}

void CodistillReference::apply(Round, std::span<const Incoming> msgs, const topology::MixingRow& row) {
  const std::size_t n = p_.distill_reference_values;
  // Decode every non-empty message first: a bad one throws before anything changes.
  std::vector<std::pair<PeerId, std::vector<double>>> fresh;
  for (const auto& [j, w] : row.neighbors) {
    const Incoming* m = detail::findIncoming(msgs, j);
    if (!m || m->payload.empty()) continue;
    std::vector<double> v(n, 0.0);
    try {
      c_.decodeAdd(m->payload, std::span<double>(v), 1.0);
    } catch (const DecodeError& e) {
      throw RejectedMessage(j, std::string("codistill predictions: ") + e.what());
    }
    fresh.emplace_back(j, std::move(v));
  }
  for (auto& [j, v] : fresh) heard_[j] = std::move(v);
  // The target for the next gradient: the mean of the row's neighbours that have spoken.
  target_.assign(n, 0.0);
  std::size_t k = 0;
  for (const auto& [j, w] : row.neighbors) {
    const auto it = heard_.find(j);
    if (it == heard_.end()) continue;
    for (std::size_t i = 0; i < n; ++i) target_[i] += it->second[i];
    ++k;
  }
  if (k == 0) {
    target_.clear();
  } else {
    for (auto& v : target_) v /= static_cast<double>(k);
  }
  // How far this node's predictions are from its neighbours' mean (the disagreement the runtime reports).
  if (!target_.empty() && own_.size() == n) {
    double s = 0.0;
    for (std::size_t i = 0; i < n; ++i) s += (own_[i] - target_[i]) * (own_[i] - target_[i]);
    disagreement_ = std::sqrt(s);
  }
}

// x, the last sent predictions, the target, and every neighbour's last predictions.
void CodistillReference::save(ByteWriter& w) const {
  serial::putTag(w, kTag);
  training::putVec(w, x_);
  putValues(w, own_);
  putValues(w, target_);
  w.put<std::uint64_t>(heard_.size());
  for (const auto& [j, v] : heard_) {
    w.put<std::uint32_t>(j);
    putValues(w, v);
  }
}

void CodistillReference::load(ByteReader& r) {
  serial::expectTag(r, kTag, "codistill reference state");
  const std::size_t n = p_.distill_reference_values;
  Vec x(x_.size());
  training::getVecInto(r, x, "codistill x");
  auto own = getValues(r, n, "own predictions");
  auto target = getValues(r, n, "target");
  const auto count = r.get<std::uint64_t>();
  if (count > r.remaining() / 12) throw DecodeError("codistill reference state: neighbour count exceeds the checkpoint");
  std::map<PeerId, std::vector<double>> heard;
  for (std::uint64_t k = 0; k < count; ++k) {
    const auto j = r.get<std::uint32_t>();
    auto v = getValues(r, n, "neighbour predictions");
    if (v.empty()) throw DecodeError("codistill reference state: empty neighbour predictions");
    heard[j] = std::move(v);
  }
  x_.swap(x);
  own_ = std::move(own);
  target_ = std::move(target);
  heard_ = std::move(heard);
}

}  // namespace gossip::algo
