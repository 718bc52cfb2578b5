#include "daemon/config/config_parse.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>
#include <variant>

#include "daemon/config/config_schema.h"

namespace gossip::daemon::detail {
namespace {

std::string_view typeName(const toml::node& v) {
  switch (v.type()) {
    case toml::node_type::table: return "table";
    case toml::node_type::array: return "array";
    case toml::node_type::string: return "string";
    case toml::node_type::integer: return "integer";
    case toml::node_type::floating_point: return "float";
    case toml::node_type::boolean: return "boolean";
    case toml::node_type::date: return "date";
    case toml::node_type::time: return "time";
    case toml::node_type::date_time: return "date-time";
    case toml::node_type::none: break;
  }
  return "nothing";
}

std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

// Stores one TOML value into one typed slot. A value that cannot be stored leaves the slot untouched
// (vectors are built aside and assigned only when every element is good) and records why.
class Binder {
 public:
  Binder(std::string name, const toml::node& value, const Range& range, std::vector<std::string>& problems)
      : name_(std::move(name)), value_(value), range_(range), problems_(problems) {}

  void operator()(bool* out) const {
    if (auto b = value_.as_boolean()) *out = b->get();
    else mismatch(name_, "a boolean", value_);
  }
  void operator()(std::string* out) const {
    if (auto s = value_.as_string()) *out = s->get();
    else mismatch(name_, "a string", value_);
  }
  // Range and finiteness are validate()'s job: a double can hold any value the user wrote.
  void operator()(double* out) const {
    if (auto i = value_.as_integer()) *out = static_cast<double>(i->get());
    else if (auto f = value_.as_floating_point()) *out = f->get();
    else mismatch(name_, "a number", value_);
  }
  void operator()(std::int32_t* out) const { readInteger(value_, name_, *out); }
  void operator()(std::uint32_t* out) const { readInteger(value_, name_, *out); }
  void operator()(std::uint64_t* out) const { readInteger(value_, name_, *out); }

  void operator()(std::vector<std::string>* out) const {
    const toml::array* a = value_.as_array();
    if (!a) return mismatch(name_, "an array of strings", value_);
    std::vector<std::string> items;
    for (std::size_t i = 0; i < a->size(); ++i) {
      if (auto s = (*a)[i].as_string()) items.push_back(s->get());
      else return mismatch(elementName(i), "a string", (*a)[i]);
    }
    *out = std::move(items);
  }
  void operator()(std::vector<std::uint32_t>* out) const {
    const toml::array* a = value_.as_array();
    if (!a) return mismatch(name_, "an array of integers", value_);
    std::vector<std::uint32_t> items(a->size());
    bool ok = true;
    for (std::size_t i = 0; i < a->size(); ++i) ok = readInteger((*a)[i], elementName(i), items[i]) && ok;
    if (ok) *out = std::move(items);
  }
  void operator()(std::vector<FaultEvent>* out) const {
    const toml::array* a = value_.as_array();
    if (!a) return mismatch(name_, "an array of tables {node, round}", value_);
    std::vector<FaultEvent> items(a->size());
    bool ok = true;
    for (std::size_t i = 0; i < a->size(); ++i) ok = readEvent((*a)[i], elementName(i), items[i]) && ok;
    if (ok) *out = std::move(items);
  }

 private:
  std::string elementName(std::size_t i) const { return name_ + "[" + std::to_string(i) + "]"; }

  void mismatch(const std::string& name, std::string_view expected, const toml::node& got) const {
    problems_.push_back(name + ": expected " + std::string(expected) + ", got " + std::string(typeName(got)));
  }

  template <class T>
  bool readInteger(const toml::node& v, const std::string& name, T& out) const {
    auto i = v.as_integer();
    if (!i) {
      mismatch(name, "an integer", v);
      return false;
    }
    const std::int64_t x = i->get();
    if (std::in_range<T>(x)) {
      out = static_cast<T>(x);
      return true;
    }
    // Not storable. Prefer the key's own rule ("must be >= 1") over the type's limits.
    std::string why;
    if (!range_.contains(static_cast<double>(x))) why = range_.describe();
    else if (x < 0) why = "must be >= " + std::to_string(std::numeric_limits<T>::min());
    else why = "must be <= " + std::to_string(std::numeric_limits<T>::max());
    problems_.push_back(name + " " + why + " (got " + std::to_string(x) + ")");
    return false;
  }

  bool readEvent(const toml::node& v, const std::string& name, FaultEvent& out) const {
    const toml::table* t = v.as_table();
    if (!t) {
      mismatch(name, "a table {node, round}", v);
      return false;
    }
    static constexpr std::string_view kFields[] = {"node", "round"};
    bool ok = true, has_node = false, has_round = false;
    for (auto&& [k, field] : *t) {
      if (k.str() == "node") {
        has_node = true;
        ok = readInteger(field, name + ".node", out.node) && ok;
      } else if (k.str() == "round") {
        has_round = true;
        ok = readInteger(field, name + ".round", out.round) && ok;
      } else {
        problems_.push_back(name + ": unknown key '" + std::string(k.str()) + "'" + didYouMean(k.str(), kFields));
        ok = false;
      }
    }
    for (auto [present, field] : {std::pair{has_node, "node"}, std::pair{has_round, "round"}}) {
      if (present) continue;
      problems_.push_back(name + ": missing key '" + field + "'");
      ok = false;
    }
    return ok;
  }

  std::string name_;
  const toml::node& value_;
  const Range& range_;
  std::vector<std::string>& problems_;
};

void bindKey(const KeySpec& key, const toml::node& value, Config& config, std::vector<std::string>& problems) {
  std::visit(Binder(key.fullName(), value, key.range, problems), key.slot(config));
}

bool isSection(std::string_view s) {
  const auto names = sectionNames();
  return std::find(names.begin(), names.end(), s) != names.end();
}

// Suggests a close key of the same section, else the same key name in another section
// ("algorithm.bits" -> "compressor.bits").
std::string unknownKey(std::string_view section, std::string_view name) {
  std::string msg = "unknown key '" + std::string(section) + "." + std::string(name) + "'";
  std::vector<std::string_view> names;
  for (const auto& k : schema())
    if (k.section == section) names.push_back(k.name);
  std::string hint = didYouMean(name, names, std::string(section) + ".");
  if (hint.empty()) {
    for (const auto& k : schema()) {
      if (k.name != name) continue;
      hint = " (did you mean '" + k.fullName() + "'?)";
      break;
    }
  }
  if (hint.empty() && names.empty()) hint = " ([" + std::string(section) + "] is reserved and has no keys yet)";
  return msg + hint;
}

std::string unknownSection(std::string_view section) {
  return "unknown section '" + std::string(section) + "'" + didYouMean(section, sectionNames());
}

// A top-level key that is not a section: most likely a key written outside its [section].
std::string strayKey(std::string_view name) {
  for (const auto& k : schema())
    if (k.name == name) return "unknown key '" + std::string(name) + "' (did you mean '" + k.fullName() + "'?)";
  return unknownSection(name);
}

// The override value as a TOML value, or nullopt when it is not one (then it is a bare string).
// Parsing "v = <text>" as a document and requiring exactly one key keeps a value with an embedded
// newline from smuggling in other keys.
std::optional<toml::table> parseValue(std::string_view text) {
  try {
    const std::string doc = "v = " + std::string(text);
    toml::table t = toml::parse(std::string_view(doc), std::string_view("--set"));
    if (t.size() == 1 && t.contains("v")) return t;
  } catch (const toml::parse_error&) {
  }
  return std::nullopt;
}

std::vector<std::string> splitList(std::string_view text) {
  std::vector<std::string> items;
  if (trim(text).empty()) return items;
  std::size_t start = 0;
  while (true) {
    const auto comma = text.find(',', start);
    items.emplace_back(trim(text.substr(start, comma == std::string_view::npos ? comma : comma - start)));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return items;
}

}  // namespace

void applyTable(const toml::table& doc, Config& config, std::vector<std::string>& problems) {
  for (auto&& [section_key, section_value] : doc) {
    const std::string_view section = section_key.str();
    const toml::table* table = section_value.as_table();
    if (!isSection(section)) {
      problems.push_back(table ? unknownSection(section) : strayKey(section));
      continue;
    }
    if (!table) {
      problems.push_back(std::string(section) + ": expected a table, got " + std::string(typeName(section_value)));
      continue;
    }
    for (auto&& [key, value] : *table) {
      if (const KeySpec* spec = findKey(section, key.str())) bindKey(*spec, value, config, problems);
      else problems.push_back(unknownKey(section, key.str()));
    }
  }
}

void applySet(std::string_view set, Config& config, std::vector<std::string>& problems) {
  const auto eq = set.find('=');
  const std::string_view path = trim(set.substr(0, eq));
  const auto dot = path.find('.');
  if (eq == std::string_view::npos || dot == std::string_view::npos || dot == 0 || dot + 1 == path.size()) {
    problems.push_back("--set expects section.key=value (got '" + std::string(set) + "')");
    return;
  }
  const std::string_view section = path.substr(0, dot), name = path.substr(dot + 1);
  const std::string_view text = trim(set.substr(eq + 1));
  if (!isSection(section)) return problems.push_back(unknownSection(section));
  const KeySpec* spec = findKey(section, name);
  if (!spec) return problems.push_back(unknownKey(section, name));

  const Slot slot = spec->slot(config);
  const auto parsed = parseValue(text);
  const toml::node* value = parsed ? parsed->get("v") : nullptr;
  // Unquoted text for a string key is the string itself, even if it happens to parse as TOML
  // (`--set data.train=2024-01-01` is a file name, not a date).
  if (auto* s = std::get_if<std::string*>(&slot); s && !(value && value->is_string())) {
    **s = std::string(text);
  } else if (auto* list = std::get_if<std::vector<std::string>*>(&slot); list && !(value && value->is_array())) {
    **list = splitList(text);
  } else if (value) {
    bindKey(*spec, *value, config, problems);
  } else {
    bindKey(*spec, toml::value<std::string>(std::string(text)), config, problems);
  }
}

}  // namespace gossip::daemon::detail
