#pragma once
// The address a node gives its peers (node.advertise, docs/config.md). A node may bind every interface
// (tcp://0.0.0.0:7000, as in a container) but must hand other members an address they can connect to:
// its host or service name. These helpers are pure so that validation and the runtime agree.
#include <optional>
#include <string>

#include "daemon/config/config.h"

namespace gossip::daemon {

struct TcpEndpoint {
  std::string host;  // as written: "gossip-3", "10.0.0.1", "[::1]", "0.0.0.0", "*"
  std::string port;  // digits or "*"
};

// "tcp://HOST:PORT" split at the last ':'; nullopt for any other shape (other transports, no port, empty
// host, a port that is neither digits nor "*").
std::optional<TcpEndpoint> splitTcpEndpoint(const std::string& endpoint);

// True when a tcp:// endpoint's host is a wildcard (0.0.0.0, *, [::], ::): nobody can connect to it.
bool bindsEveryInterface(const std::string& endpoint);

// node.advertise when it is a full tcp://host:port; a bare host gets the bound endpoint's port
// ("gossip-3" + "tcp://0.0.0.0:7000" -> "tcp://gossip-3:7000"); "" gives the bound endpoint itself.
// Assumes a validated config.
std::string advertisedEndpoint(const NodeConfig& node, const std::string& bound);

}  // namespace gossip::daemon
