#include "daemon/log/log.h"

#include <ctime>
#include <iterator>
#include <span>
#include <stdexcept>

#include <fmt/format.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

#include "core/error.h"

namespace gossip::logging {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

std::string joined(std::span<const std::string_view> names) {
  std::string out;
  for (auto n : names) out.append(out.empty() ? "" : ", ").append(n);
  return out;
}

// Built by appending: GCC 12 warns (-Wrestrict, a known false positive) on "'" + std::string(s).
std::string quoted(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out.append(1, '\'').append(s).append(1, '\'');
  return out;
}

bool knownLogger(std::string_view name) {
  for (auto n : kLoggerNames)
    if (n == name) return true;
  return false;
}

// The length of the valid UTF-8 sequence at s[i], 0 if there is none (overlong forms, surrogates and
// code points above U+10FFFF are invalid too, as RFC 3629 says).
std::size_t utf8Length(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = b(0);
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else return 0;
  if (i + n > s.size() || b(1) < lo || b(1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k)
    if (b(k) < 0x80 || b(k) > 0xBF) return 0;
  return n;
}

void appendTimestamp(std::string& out, std::chrono::system_clock::time_point time) {
  const auto ms = std::chrono::time_point_cast<std::chrono::milliseconds>(time).time_since_epoch().count();
  const std::time_t secs = static_cast<std::time_t>(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  fmt::format_to(std::back_inserter(out), "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900,
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ((ms % 1000) + 1000) % 1000);
}

}  // namespace

std::optional<Level> parseLevel(std::string_view name) {
  static constexpr Level kLevels[] = {Level::trace, Level::debug, Level::info, Level::warn, Level::err, Level::off};
  for (std::size_t i = 0; i < kLevelNames.size(); ++i)
    if (kLevelNames[i] == name) return kLevels[i];
  return std::nullopt;
}

std::string_view levelName(Level level) {
  switch (level) {
    case Level::trace: return "trace";
    case Level::debug: return "debug";
    case Level::info: return "info";
    case Level::warn: return "warn";
    case Level::err:
    case Level::critical: return "error";
    default: return "off";
  }
}

ParsedOverrides parseOverrides(std::string_view spec) {
  ParsedOverrides out;
  if (trim(spec).empty()) return out;
  while (true) {
    const auto comma = spec.find(',');
    const std::string_view part = trim(spec.substr(0, comma));
    const auto eq = part.find('=');
    const std::string_view name = trim(part.substr(0, eq));
    const std::string_view value = eq == std::string_view::npos ? std::string_view() : trim(part.substr(eq + 1));
    if (eq == std::string_view::npos) {
      out.error = quoted(part) + " is not logger=level";
    } else if (!knownLogger(name)) {
      out.error = "unknown logger '" + std::string(name) + "' (loggers: " + joined(kLoggerNames) + ")";
    } else if (auto level = parseLevel(value)) {
      out.list.push_back({std::string(name), *level});
    } else {
      out.error = quoted(std::string(name) + "=" + std::string(value)) + ": the level must be one of " + joined(kLevelNames);
    }
    if (!out.error.empty()) {
      out.list.clear();
      return out;
    }
    if (comma == std::string_view::npos) return out;
    spec.remove_prefix(comma + 1);
  }
}

std::string jsonEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 8);
  for (std::size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      const std::size_t n = utf8Length(s, i);
      if (n == 0) {
        out += "\\ufffd";
        ++i;
      } else {
        out.append(s.substr(i, n));
        i += n;
      }
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == 0x7F) fmt::format_to(std::back_inserter(out), "\\u{:04x}", c);
        else out += static_cast<char>(c);
    }
    ++i;
  }
  return out;
}

std::string formatLine(Format format, std::chrono::system_clock::time_point time, Level level,
                       std::string_view logger, std::optional<PeerId> node, std::string_view msg) {
  std::string out;
  out.reserve(msg.size() + 80);
  if (format == Format::Json) {
    out += "{\"ts\":\"";
    appendTimestamp(out, time);
    out.append("\",\"level\":\"").append(levelName(level)).append("\",\"logger\":\"").append(jsonEscape(logger));
    out += "\",\"node\":";
    out += node ? std::to_string(*node) : "null";
    out.append(",\"msg\":\"").append(jsonEscape(msg)).append("\"}\n");
    return out;
  }
  appendTimestamp(out, time);
  fmt::format_to(std::back_inserter(out), " {:<5} [{}] ", levelName(level), logger);
  if (node) fmt::format_to(std::back_inserter(out), "node {}: ", *node);
  out.append(msg).append("\n");
  return out;
}

void LineFormatter::format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) {
  const std::string line = formatLine(format_, msg.time, msg.level,
                                      std::string_view(msg.logger_name.data(), msg.logger_name.size()), node_,
                                      std::string_view(msg.payload.data(), msg.payload.size()));
  dest.append(line.data(), line.data() + line.size());
}

std::unique_ptr<spdlog::formatter> LineFormatter::clone() const {
  return std::make_unique<LineFormatter>(format_, node_);
}

Loggers::Loggers(const Options& options) : Loggers(options, std::make_shared<spdlog::sinks::stdout_sink_mt>()) {}

Loggers::Loggers(const Options& options, spdlog::sink_ptr sink) {
  const auto level = parseLevel(options.level);
  if (!level) throw ConfigError("node.log_level must be one of " + joined(kLevelNames) + " (got '" + options.level + "')");
  const ParsedOverrides overrides = parseOverrides(options.levels);
  if (!overrides.error.empty()) throw ConfigError("node.log_levels: " + overrides.error);
  sink->set_formatter(std::make_unique<LineFormatter>(options.format, options.node));
  for (auto name : kLoggerNames) {
    auto logger = std::make_shared<spdlog::logger>(std::string(name), sink);
    logger->set_level(*level);
    logger->flush_on(Level::trace);  // the stdout sink flushes each line anyway; a file sink should too
    loggers_.push_back(std::move(logger));
  }
  for (const auto& o : overrides.list) setLevel(o.logger, o.level);
}

Logger Loggers::get(std::string_view name) const {
  for (const auto& l : loggers_)
    if (l->name() == name) return l;
  throw std::out_of_range("no logger named '" + std::string(name) + "'");
}

bool Loggers::setLevel(std::string_view name, Level level) {
  const bool all = name.empty() || name == "*";
  bool found = false;
  for (const auto& l : loggers_) {
    if (!all && l->name() != name) continue;
    l->set_level(level);
    found = true;
  }
  return found;
}

std::string Loggers::levelsJson() const {
  std::string out = "{";
  for (const auto& l : loggers_)
    out.append(out.size() > 1 ? "," : "").append("\"").append(l->name()).append("\":\"").append(levelName(l->level())).append("\"");
  return out + "}";
}

LevelAnswer applyLevelRequest(Loggers& loggers, std::string_view query) {
  std::optional<std::string_view> level, logger;
  while (!query.empty()) {
    const auto amp = query.find('&');
    const std::string_view param = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (param.empty()) continue;
    const auto eq = param.find('=');
    const std::string_view key = param.substr(0, eq);
    const std::string_view value = eq == std::string_view::npos ? std::string_view() : param.substr(eq + 1);
    if (key == "level") level = value;
    else if (key == "logger") logger = value;
    else return {400, "unknown parameter '" + std::string(key) + "' (expected level and, optionally, logger)\n"};
  }
  if (!level) return {400, "missing level=(" + joined(kLevelNames) + ")\n"};
  const auto parsed = parseLevel(*level);
  if (!parsed) return {400, "level must be one of " + joined(kLevelNames) + " (got '" + std::string(*level) + "')\n"};
  if (!loggers.setLevel(logger.value_or("*"), *parsed))
    return {400, "unknown logger '" + std::string(*logger) + "' (loggers: " + joined(kLoggerNames) + ")\n"};
  return {200, loggers.levelsJson() + "\n"};
}

Logger nullLogger(std::string name) {
  auto logger = std::make_shared<spdlog::logger>(std::move(name), std::make_shared<spdlog::sinks::null_sink_mt>());
  logger->set_level(Level::off);
  return logger;
}

Format parseFormat(std::string_view name) {
  if (name == "text") return Format::Text;
  if (name == "json") return Format::Json;
  throw ConfigError("node.log_format must be one of text, json (got '" + std::string(name) + "')");
}

}  // namespace gossip::logging
