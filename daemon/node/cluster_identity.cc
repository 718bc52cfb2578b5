#include "daemon/node/cluster_identity.h"

#include <map>
#include <vector>

#include "core/real.h"
#include "daemon/bridge/model_layout.h"
#include "engine/frame.h"
#include "membership/membership.h"

namespace gossip::daemon {

namespace {

// key -> value lines of an identity text; false if a line is not `key=value`.
bool parseIdentity(std::string_view text, std::map<std::string, std::string, std::less<>>& out) {
  while (!text.empty()) {
    const auto nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    const auto eq = line.find('=');
    if (eq == std::string_view::npos || eq == 0) return false;
    out.emplace(std::string(line.substr(0, eq)), std::string(line.substr(eq + 1)));
  }
  return true;
}

}  // namespace

std::string clusterIdentity(const Config& c, std::size_t dim, std::string_view trainerLayout) {
  const nlohmann::json all = toJson(c);
  std::map<std::string, std::string> kv;
  const auto take = [&](const char* section, const char* key) {
    kv[std::string(section) + "." + key] = all.at(section).at(key).dump();
  };
  take("cluster", "name");
  for (const char* k : {"nodes", "topology", "degree", "extra", "rows", "edge_prob", "weights", "seed"}) take("cluster", k);
  // The parameters of the update that both ends of an edge must share (a node's own step size may differ).
  for (const char* k : {"name", "eta", "gamma", "alpha", "leader_base", "final_consensus_codec"}) take("algorithm", k);
  for (const auto& [k, v] : all.at("compressor").items()) kv["compressor." + k] = v.dump();
  take("security", "enable");
  take("trainer", "enable");
  if (c.trainer.enable) {
    take("trainer", "mode");
    // The tensors the trainers bound (daemon/bridge/model_layout.h): same count, another module is refused.
    kv["model.layout"] = trainerLayout.empty() ? nlohmann::json("unknown").dump() : std::string(trainerLayout);
  } else {
    for (const char* k : {"kind", "l1", "l2"}) take("model", k);
    if (c.model.kind == "mlp") take("model", "hidden");
    for (const char* k : {"format", "scaling", "partition", "seed", "max_train", "regression"}) take("data", k);
    if (c.data.partition == "dirichlet") take("data", "dirichlet_alpha");
    // Only when set: a directory made before the key existed holds an identity without it.
    if (c.data.shards != 0) take("data", "shards");
    if (c.data.format == "synthetic")
      for (const char* k : {"synthetic_samples", "synthetic_dim", "synthetic_heterogeneity"}) take("data", k);
  }
  kv["protocol.frame_version"] = std::to_string(engine::kFrameVersion);
  kv["protocol.membership_version"] = std::to_string(peer::Membership::kWireVersion);
  kv["model.dimension"] = std::to_string(dim);
  // Replicas, public states and state transfers carry the state's values at its precision (core/real.h).
  kv["protocol.state"] = kRealName;
  std::string out;
  for (const auto& [k, v] : kv) out += k + "=" + v + "\n";  // std::map: sorted by key
  return out;
}

std::string describeIdentityDifference(std::string_view ours, std::string_view theirs, std::string_view here,
                                       std::string_view there) {
  if (ours == theirs) return {};
  std::map<std::string, std::string, std::less<>> a, b;
  if (!parseIdentity(ours, a) || !parseIdentity(theirs, b))
    return "its cluster identity is not one this version reads (another gossipd version?)";
  std::map<std::string, std::pair<std::string, std::string>> diff;
  for (const auto& [k, v] : a) {
    const auto it = b.find(k);
    const std::string other = it == b.end() ? "(unset)" : it->second;
    if (other != v) diff[k] = {v, other};
  }
  for (const auto& [k, v] : b)
    if (!a.count(k)) diff[k] = {"(unset)", v};
  std::string out;
  for (const auto& [k, v] : diff) {
    if (!out.empty()) out += "; ";
    if (k == "model.layout" && v.first != "(unset)" && v.second != "(unset)")  // a long list: its first difference
      out += "model.layout: " + describeLayoutIdentityDifference(v.first, v.second, here, there);
    else
      out += k + " is " + v.first + " " + std::string(here) + ", " + v.second + " " + std::string(there);
  }
  return out;
}

}  // namespace gossip::daemon
