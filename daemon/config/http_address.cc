#include "daemon/config/http_address.h"

#include <arpa/inet.h>

namespace gossip::daemon {

std::optional<HttpAddress> parseHttpAddress(const std::string& text) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) return std::nullopt;
  std::string host = text.substr(0, colon);
  const std::string port = text.substr(colon + 1);
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  const unsigned long p = std::stoul(port);
  if (p > 65535) return std::nullopt;
  bool v6 = false;
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
    v6 = true;
  } else if (host.find(':') != std::string::npos) {
    return std::nullopt;  // an IPv6 address needs brackets: "[::1]:9100"
  }
  if (host == "localhost" && !v6) host = "127.0.0.1";
  unsigned char buf[16];
  if (inet_pton(v6 ? AF_INET6 : AF_INET, host.c_str(), buf) != 1) return std::nullopt;
  return HttpAddress{host, static_cast<std::uint16_t>(p)};
}

}  // namespace gossip::daemon
