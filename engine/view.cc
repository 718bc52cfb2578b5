#include "engine/view.h"

#include <algorithm>

#include "core/error.h"

namespace gossip::engine {

topology::Graph buildAliveGraph(const std::vector<PeerId>& ids, const topology::TopologyParams& params, bool* fellBack) {
  if (fellBack) *fellBack = false;
  try {
    return topology::buildGraph(ids, params);
  } catch (const ConfigError&) {
    if (fellBack) *fellBack = true;
  }
  const std::size_t n = ids.size();
  if (params.kind == topology::Kind::RandomRegular) {
    for (std::size_t d = std::min<std::size_t>(params.degree, n - 1); d >= 2; --d) {
      if ((n * d) % 2 != 0) continue;
      topology::TopologyParams p = params;
      p.degree = static_cast<unsigned>(d);
      try {
        return topology::buildGraph(ids, p);
      } catch (const ConfigError&) {
      }
    }
  }
  topology::TopologyParams ring;
  ring.kind = topology::Kind::Ring;
  ring.seed = params.seed;
  return topology::buildGraph(ids, ring);
}

std::shared_ptr<const ViewGraph> buildViewGraph(View view, const topology::TopologyParams& params,
                                                topology::WeightRule weights, bool stateless, std::uint64_t epoch) {
  GOSSIP_CHECK(std::is_sorted(view.begin(), view.end()), "view must be sorted by id");
  auto vg = std::make_shared<ViewGraph>();
  std::vector<PeerId> ids;
  ids.reserve(view.size());
  for (const auto& m : view) ids.push_back(m.id);
  if (!ids.empty()) {
    vg->graph = topology::buildGraph(ids, params);
    if (vg->graph.directed && (!stateless || weights != topology::WeightRule::Uniform))
      vg->graph = topology::symmetrize(vg->graph);
  }
  vg->view = std::move(view);
  vg->weights = weights;
  vg->epoch = epoch;
  return vg;
}

}  // namespace gossip::engine
