#include <utility>
#include <array>

#include "algorithms/algorithm.h"
#include "algorithms/choco.h"
#include "algorithms/codistill.h"
#include "algorithms/codistill_reference.h"
#include "algorithms/cltk_round.h"
#include "algorithms/leader.h"
#include "algorithms/lgc_round.h"
#include "algorithms/primal_dual.h"
#include "algorithms/stateless.h"
#include "core/error.h"

namespace gossip::algo {
namespace {
constexpr std::array<std::string_view, 9> kNames{"dpsgd", "deepsqueeze", "choco", "nids",     "ed",
                                                 "lead",  "prox_lead",   "lsgd",  "codistill"};

// The method a CodecRound wraps (cltk, lgc), built on the wrapper's own codec; called once, inside the
// wrapper's constructor, so the references it captures outlive it.
CodecRound::MethodMaker chocoOrDeepSqueeze(const AlgorithmParams& p, PeerId self) {
  return [&p, self](const compress::Compressor& own, const Vec& x) -> std::unique_ptr<Algorithm> {
    if (p.name == "choco") return std::make_unique<Choco>(p, own, self, x);
    return std::make_unique<DeepSqueeze>(p, own, self, x);
  };
}
}  // namespace

std::span<const std::string_view> algorithmNames() { return kNames; }

std::unique_ptr<Algorithm> makeAlgorithm(const AlgorithmParams& p, const compress::Compressor& c, PeerId self,
                                         Vec x0) {
  const std::string& n = p.name;
  if (const auto* cltk = compress::cltkControl(c)) {
    // The method runs on a codec of its own (a cltk codec holds the node's support), inside CltkRound.
    if (n != "choco" && n != "deepsqueeze")
      throw ConfigError("compressor.name: cltk works with algorithm choco or deepsqueeze, not " + n +
                        " (it needs error-compensated messages, docs/cltk.md)");
    if (p.cltk_nodes == 0) throw ConfigError("cltk: the number of leaders (the initial node count) must be set");
    return std::make_unique<CltkRound>(p, cltk->fresh(), self, x0, chocoOrDeepSqueeze(p, self));
  }
  if (const auto* lgc = compress::lgcControl(c)) {
    // The method runs on a codec of its own (an lgc codec holds the node's basis), inside LgcRound.
    if (n != "choco" && n != "deepsqueeze")
      throw ConfigError("compressor.name: lgc works with algorithm choco or deepsqueeze, not " + n +
                        " (it needs error-compensated messages, docs/lgc.md)");
    if (p.lgc_window == 0) throw ConfigError("compressor.lgc_window must be at least 1");
    return std::make_unique<LgcRound>(p, lgc->fresh(), self, x0, chocoOrDeepSqueeze(p, self));
  }
  if (n == "dpsgd") return std::make_unique<Dpsgd>(p, c, self, std::move(x0));
  if (n == "deepsqueeze") return std::make_unique<DeepSqueeze>(p, c, self, std::move(x0));
  if (n == "choco") return std::make_unique<Choco>(p, c, self, std::move(x0));
  if (n == "lsgd") {
    if (p.leader_base == "dpsgd") return std::make_unique<Lsgd>(p, c, self, std::move(x0));
    if (p.leader_base == "deepsqueeze") return std::make_unique<LsgdDeepSqueeze>(p, c, self, std::move(x0));
    throw ConfigError("algorithm.leader_base must be dpsgd or deepsqueeze (got " + p.leader_base + ")");
  }
  if (n == "codistill") {
    if (p.distill_reference_values > 0) return std::make_unique<CodistillReference>(p, c, self, std::move(x0));
    return std::make_unique<Codistill>(p, c, self, std::move(x0));
  }
  if (n == "lead" || n == "prox_lead") {
    if (!c.unbiased())
      throw ConfigError("algorithm " + n + " needs an unbiased compressor (LEAD diverges with biased ones such as " +
                        std::string(c.name()) + ")");
    return std::make_unique<PrimalDual>(n, p, c, self, std::move(x0));
  }
  if (n == "nids" || n == "ed") {
    // Exact messages: the fp32 difference to the tracked reference (alpha = 1), gamma = 1.
    AlgorithmParams q = p;
    q.alpha = 1.0;
    q.gamma = 1.0;
    auto fp32 = compress::makeCompressor({.name = "fp32"});
    return std::make_unique<PrimalDual>(n, q, c, self, std::move(x0), std::move(fp32));
  }
  std::string all;
  for (auto a : kNames) all += (all.empty() ? "" : ", ") + std::string(a);
  throw ConfigError("algorithm.name: unknown algorithm '" + n + "' (one of: " + all + ")");
}

}  // namespace gossip::algo
