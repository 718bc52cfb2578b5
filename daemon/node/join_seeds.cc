#include "daemon/node/join_seeds.h"

#include <algorithm>

namespace gossip::daemon {

std::vector<std::string> knownEndpoints(const std::vector<peer::MemberInfo>& members, PeerId self) {
  std::vector<std::string> out;
  for (const auto& m : members)
    if (m.id != self && m.state != peer::MemberState::Left) out.push_back(m.endpoint);
  return out;
}

std::vector<std::string> joinSeeds(const std::string& rejoinVia, const std::vector<std::string>& configured,
                                   const std::vector<std::string>& own, const std::vector<std::string>& known) {
  std::vector<std::string> seeds;
  const auto add = [&](const std::string& s) {
    if (!s.empty() && std::find(own.begin(), own.end(), s) == own.end() &&
        std::find(seeds.begin(), seeds.end(), s) == seeds.end())
      seeds.push_back(s);
  };
  add(rejoinVia);
  for (const auto& s : configured) add(s);  // may name this node
  for (const auto& s : known) add(s);
  return seeds;
}

}  // namespace gossip::daemon
