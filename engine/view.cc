#include "engine/view.h"

#include <algorithm>

#include "core/error.h"

namespace gossip::engine {

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
