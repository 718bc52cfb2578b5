#include "daemon/config/advertise.h"

#include <algorithm>
#include <cctype>

namespace gossip::daemon {

std::optional<TcpEndpoint> splitTcpEndpoint(const std::string& endpoint) {
  constexpr std::string_view kScheme = "tcp://";
  if (!endpoint.starts_with(kScheme)) return std::nullopt;
  const std::string rest = endpoint.substr(kScheme.size());
  const auto colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == rest.size()) return std::nullopt;
  TcpEndpoint e{rest.substr(0, colon), rest.substr(colon + 1)};
  const bool digits = std::all_of(e.port.begin(), e.port.end(), [](unsigned char ch) { return std::isdigit(ch); });
  if (!digits && e.port != "*") return std::nullopt;
  if (e.host.find_first_of("/ ") != std::string::npos) return std::nullopt;
  return e;
}

bool bindsEveryInterface(const std::string& endpoint) {
  const auto e = splitTcpEndpoint(endpoint);
  return e && (e->host == "0.0.0.0" || e->host == "*" || e->host == "[::]" || e->host == "::");
}

std::string advertisedEndpoint(const NodeConfig& node, const std::string& bound) {
  if (node.advertise.empty() || node.advertise.starts_with("tcp://")) return node.advertise.empty() ? bound : node.advertise;
  const auto b = splitTcpEndpoint(bound);
  return "tcp://" + node.advertise + ":" + (b ? b->port : std::string("0"));
}

}  // namespace gossip::daemon
