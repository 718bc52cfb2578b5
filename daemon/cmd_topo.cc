// gossipd topo: placeholder until the topology work lands.
#include <string>
#include <vector>

#include "core/error.h"

namespace gossip::cmd {
int topo(std::vector<std::string>) { throw ConfigError("topo: not implemented yet"); }
}  // namespace gossip::cmd
