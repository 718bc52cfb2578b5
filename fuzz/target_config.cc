#include <cstdio>
#include <exception>
#include <string_view>

#include "core/error.h"
#include "daemon/config/config.h"
#include "fuzz/targets.h"

namespace gossip::fuzz {

int config(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    (void)daemon::parseConfig(text, "fuzz.toml", {});
  } catch (const ConfigError&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "config: %s\n", e.what());
    fail("config", "a config text threw something other than ConfigError");
  }
  return 0;
}

}  // namespace gossip::fuzz
