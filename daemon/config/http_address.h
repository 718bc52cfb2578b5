#pragma once
// node.http (docs/config.md): "HOST:PORT" of the daemon's HTTP server (docs/monitoring.md). Pure, so
// that config validation and the server agree on what is accepted.
#include <cstdint>
#include <optional>
#include <string>

namespace gossip::daemon {

struct HttpAddress {
  std::string ip;           // numeric: "127.0.0.1", "0.0.0.0", "::1" (no brackets)
  std::uint16_t port = 0;   // 0 = an ephemeral port chosen at bind time
};

// "127.0.0.1:9100", "0.0.0.0:0", "[::1]:9100", "localhost:9100" (= 127.0.0.1). nullopt for anything
// else: a missing or non-numeric port, a port above 65535, a host that is neither an IP address nor
// "localhost". The empty string (HTTP off) is the caller's case, not parsed here.
std::optional<HttpAddress> parseHttpAddress(const std::string& text);

}  // namespace gossip::daemon
