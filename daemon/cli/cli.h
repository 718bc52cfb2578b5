#pragma once
// Small argument helpers shared by the subcommands. Usage errors throw ConfigError; main() prints the
// one-line message and exits with code 2.
#include <charconv>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace gossip::cli {

struct Args {
  std::vector<std::string> items;
  std::size_t pos = 0;
  bool done() const { return pos >= items.size(); }
  std::string next(std::string_view flag) {
    if (done()) throw ConfigError(std::string(flag) + ": missing value");
    return items[pos++];
  }
};

template <class T>
T parseNumber(const std::string& s, std::string_view what) {
  T v{};
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, v);
  if (ec != std::errc() || p != end) throw ConfigError(std::string(what) + ": not a valid number: '" + s + "'");
  return v;
}

}  // namespace gossip::cli
