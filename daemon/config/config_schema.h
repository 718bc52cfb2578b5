#pragma once
// Internal to the config library: the table of every key (section, name, where it lives in Config,
// its numeric range and its allowed names). The parser, the validator and toJson all walk this one
// table, so adding a key is one line here plus its field in config.h and its row in docs/config.md.
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "daemon/config/config.h"

namespace gossip::daemon::detail {

// Closed or open interval a numeric key (or every element of a numeric array key) must lie in.
struct Range {
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
  bool lo_open = false;
  bool hi_open = false;

  static constexpr Range atLeast(double v) { return {v, std::numeric_limits<double>::infinity(), false, false}; }
  static constexpr Range above(double v) { return {v, std::numeric_limits<double>::infinity(), true, false}; }
  static constexpr Range closed(double a, double b) { return {a, b, false, false}; }
  static constexpr Range leftOpen(double a, double b) { return {a, b, true, false}; }   // (a, b]
  static constexpr Range rightOpen(double a, double b) { return {a, b, false, true}; }  // [a, b)

  // False for NaN.
  bool contains(double v) const;
  // "must be > 0", "must be in [0,1)", ...
  std::string describe() const;
};

// Where a key's value lives. The alternative decides the TOML type the key accepts.
using Slot = std::variant<bool*, std::string*, double*, std::int32_t*, std::uint32_t*, std::uint64_t*,
                          std::vector<std::string>*, std::vector<std::uint32_t>*, std::vector<FaultEvent>*>;
using ChoiceList = std::span<const std::string_view> (*)();

struct KeySpec {
  std::string_view section;
  std::string_view name;
  Slot (*slot)(Config&);
  Range range{};                 // numeric keys only
  ChoiceList choices = nullptr;  // string keys with a fixed set of names

  std::string fullName() const { return std::string(section) + "." + std::string(name); }
};

std::span<const KeySpec> schema();
// Every section, including reserved ones without keys ([monitor]).
std::span<const std::string_view> sectionNames();
const KeySpec* findKey(std::string_view section, std::string_view name);

// Read-only view of a key's slot. The slot functions only take addresses, they never write, so
// casting away const here does not modify a const Config.
inline Slot constSlot(const KeySpec& key, const Config& config) { return key.slot(const_cast<Config&>(config)); }

// The closest candidate to `word` if it is plausibly a typo of it (small edit distance), else "".
std::string_view closestMatch(std::string_view word, std::span<const std::string_view> candidates);
// " (did you mean 'x'?)" or "".
std::string didYouMean(std::string_view word, std::span<const std::string_view> candidates,
                       std::string_view prefix = "");
// Shortest decimal text that reads back as v ("0.1", "1", "1e-06").
std::string formatNumber(double v);

}  // namespace gossip::daemon::detail
