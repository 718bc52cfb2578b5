#include "daemon/bridge/model_layout.h"

#include <cstdio>
#include <limits>

#include <nlohmann/json.hpp>

#include "core/fnv1a.h"

namespace gossip::daemon {
namespace {
using json = nlohmann::json;

// Identity values longer than this are hashed: the whole identity must stay within the membership's
// 8 KiB (membership.h, kMaxIdentity) beside ~1.5 KB of settings.
constexpr std::size_t kMaxInlineLayout = 3072;

std::string shapeText(const std::vector<std::uint64_t>& shape) {
  std::string s = "[";
  for (std::size_t k = 0; k < shape.size(); ++k) s += (k ? ", " : "") + std::to_string(shape[k]);
  return s + "]";
}

std::string tensorText(const TensorLayout& t) { return json(t.name).dump() + " " + shapeText(t.shape) + " " + t.dtype; }

std::string unnamedText(std::uint64_t dim) { return "an unnamed vector of " + std::to_string(dim) + " values (bind_array)"; }

// One tensor from [name, [shape...], dtype]; false if the entry has another form.
bool parseTensor(const json& e, TensorLayout& t) {
  if (!e.is_array() || e.size() != 3 || !e[0].is_string() || !e[1].is_array() || !e[2].is_string()) return false;
  t.name = e[0].get<std::string>();
  t.dtype = e[2].get<std::string>();
  t.shape.clear();
  for (const auto& d : e[1]) {
    // Non-negative integers (a JSON parser makes them unsigned; json built in C++ from an int, signed).
    if (!d.is_number_integer() || (!d.is_number_unsigned() && d.get<std::int64_t>() < 0)) return false;
    t.shape.push_back(d.get<std::uint64_t>());
  }
  return !t.name.empty() && !t.dtype.empty();
}

// prod(shape), or nullopt once it passes `limit`: a hostile shape cannot wrap the count around.
std::optional<std::uint64_t> sizeUpTo(const std::vector<std::uint64_t>& shape, std::uint64_t limit) {
  std::uint64_t n = 1;
  for (const auto d : shape) {
    if (d == 0) return 0;
    if (n > limit / d) return std::nullopt;
    n *= d;
  }
  return n;
}

// The entries of a layout list into `out`, their values counted into `total` (at most `limit`). Returns
// the reason when an entry is malformed or the values pass the limit.
std::optional<std::string> parseTensors(const json& list, std::uint64_t limit, std::vector<TensorLayout>& out,
                                        std::uint64_t& total) {
  total = 0;
  for (std::size_t k = 0; k < list.size(); ++k) {
    TensorLayout t;
    if (!parseTensor(list[k], t))
      return "layout entry " + std::to_string(k) + " is not [name, [shape...], dtype]: " + list[k].dump().substr(0, 120);
    const auto n = sizeUpTo(t.shape, limit - total);
    if (!n) return "the layout's tensors hold more values than dim = " + std::to_string(limit);
    total += *n;
    out.push_back(std::move(t));
  }
  return std::nullopt;
}

}  // namespace

std::uint64_t TensorLayout::size() const {
  std::uint64_t n = 1;
  for (const auto d : shape) n *= d;
  return n;
}

std::optional<std::string> ModelLayout::parse(const json* field, std::uint64_t dim, ModelLayout& out) {
  ModelLayout l;
  l.dim = dim;
  if (field && !field->is_null()) {
    if (!field->is_array() || field->empty()) return "layout must be a non-empty list of [name, shape, dtype]";
    std::uint64_t total = 0;
    if (auto bad = parseTensors(*field, dim, l.tensors, total)) return bad;
    if (total != dim) return "the layout's tensors hold " + std::to_string(total) + " values, not dim = " + std::to_string(dim);
  }
  out = std::move(l);
  return std::nullopt;
}

json ModelLayout::toJson() const {
  json a = json::array();
  for (const auto& t : tensors) a.push_back(json::array({t.name, t.shape, t.dtype}));
  return a;
}

std::string ModelLayout::identityValue() const {
  if (tensors.empty()) return json("unnamed").dump();
  const std::string text = toJson().dump();
  if (text.size() <= kMaxInlineLayout) return text;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a64(text)));
  return json("fnv1a64:" + std::string(hex)).dump();
}

std::string describeLayoutDifference(const ModelLayout& a, const ModelLayout& b, std::string_view here,
                                     std::string_view there) {
  if (a == b) return {};
  const auto side = [](const ModelLayout& l) { return l.tensors.empty() ? unnamedText(l.dim) : std::to_string(l.tensors.size()) + " named tensors"; };
  if (a.tensors.empty() != b.tensors.empty())
    return "the model is " + side(a) + " " + std::string(here) + ", " + side(b) + " " + std::string(there);
  const std::size_t n = std::min(a.tensors.size(), b.tensors.size());
  for (std::size_t k = 0; k < n; ++k)
    if (!(a.tensors[k] == b.tensors[k]))
      return "tensor " + std::to_string(k) + " is " + tensorText(a.tensors[k]) + " " + std::string(here) + ", " +
             tensorText(b.tensors[k]) + " " + std::string(there);
  if (a.tensors.size() != b.tensors.size())
    return "the model has " + std::to_string(a.tensors.size()) + " tensors " + std::string(here) + ", " +
           std::to_string(b.tensors.size()) + " " + std::string(there);
  return "the model has " + std::to_string(a.dim) + " values " + std::string(here) + ", " + std::to_string(b.dim) +
         " " + std::string(there);
}

std::string describeLayoutIdentityDifference(std::string_view ours, std::string_view theirs, std::string_view here,
                                             std::string_view there) {
  if (ours == theirs) return {};
  // Inline layouts are JSON lists; the dimension is compared by its own identity key, so any will do here.
  const auto parsed = [](std::string_view v, ModelLayout& out) {
    const json j = json::parse(v, nullptr, /*allow_exceptions=*/false);
    return j.is_array() && !parseTensors(j, std::numeric_limits<std::uint64_t>::max(), out.tensors, out.dim);
  };
  const auto plain = [](std::string_view v) {
    const json j = json::parse(v, nullptr, false);
    return j.is_string() ? j.get<std::string>() : std::string(v);
  };
  ModelLayout a, b;
  const bool pa = parsed(ours, a), pb = parsed(theirs, b);
  if (pa && pb) return describeLayoutDifference(a, b, here, there);
  const auto text = [&](bool p, const ModelLayout& l, std::string_view v) {
    if (p) return std::to_string(l.tensors.size()) + " named tensors";
    const std::string s = plain(v);
    return s == "unnamed" ? std::string("an unnamed vector (bind_array)") : "the layout with hash " + s;
  };
  return "the trainer's model is " + text(pa, a, ours) + " " + std::string(here) + ", " + text(pb, b, theirs) + " " +
         std::string(there);
}

std::string layoutFileText(const ModelLayout& l) {
  json tensors = json::array();
  std::uint64_t offset = 0;
  for (const auto& t : l.tensors) {
    tensors.push_back({{"name", t.name}, {"shape", t.shape}, {"dtype", t.dtype}, {"offset", offset}});
    offset += t.size();
  }
  return json{{"dim", l.dim}, {"tensors", tensors}}.dump(1) + "\n";
}

std::optional<std::string> parseLayoutFile(std::string_view text, ModelLayout& out) {
  const json j = json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("dim") || !j["dim"].is_number_unsigned() || !j.contains("tensors") ||
      !j["tensors"].is_array())
    return "not a layout file ({\"dim\", \"tensors\"})";
  json entries = json::array();
  for (const auto& t : j["tensors"]) {
    if (!t.is_object() || !t.contains("name") || !t.contains("shape") || !t.contains("dtype"))
      return "a tensor without name, shape or dtype";
    entries.push_back(json::array({t["name"], t["shape"], t["dtype"]}));
  }
  return ModelLayout::parse(entries.empty() ? nullptr : &entries, j["dim"].get<std::uint64_t>(), out);
}

}  // namespace gossip::daemon
