#pragma once
// The daemon's logging (docs/daemon.md#logging): one spdlog logger per subsystem, all writing to one sink
// (stdout by default), in one of two line formats chosen by node.log_format:
//
//   text  2026-11-26T17:03:00.123Z info  [membership] node 3: member 2 (incarnation 0) declared dead [t=...]
//   json  {"ts":"2026-11-26T17:03:00.123Z","level":"info","logger":"membership","node":3,"msg":"member 2 ..."}
//
// The text line is today's message behind a UTC timestamp, the level and the logger's name; "node N: " is
// written by the formatter (the process's node id, Options::node), not by each call site, so that a JSON
// line carries the id as a field and its msg is the message alone. Without a node id (a process that is
// not a node) the text line has no "node N: " and the JSON line has "node":null.
//
// Levels: node.log_level sets every logger, node.log_levels ("membership=debug,engine=warn") overrides
// single loggers, and Loggers::setLevel changes one or all of them on a running node (the HTTP endpoint
// PUT /loglevel, daemon/node/node_runtime.cc).
//
// Why daemon/ and not core/: only the daemon decides where lines go and in which format. A layer below
// that wants to log gets a std::shared_ptr<spdlog::logger> injected (STYLE.md §4) and depends on spdlog,
// never on this module; today none of them logs.
//
// Threading: spdlog loggers are thread-safe (the sink is an _mt sink: one mutex around each write, so
// lines from different threads never interleave), and a logger's level is an atomic, so setLevel may be
// called from any thread (the HTTP server's) while others log. A Loggers object is immutable after
// construction apart from those levels.
#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <spdlog/formatter.h>
#include <spdlog/logger.h>

#include "core/types.h"

namespace gossip::logging {

using Logger = std::shared_ptr<spdlog::logger>;
using Level = spdlog::level::level_enum;

enum class Format { Text, Json };

// The subsystems, each with its own logger. node: the node's lifecycle and rounds; membership: members
// joining, leaving and declared dead; engine, transport: reserved for the layers below (nothing logs to
// them yet); bridge: the trainer bridge; http: the HTTP server. `gossipd cluster`'s supervisor prints its
// progress line and summary table as the command's output, not as log lines (docs/daemon.md#logging).
inline constexpr std::array<std::string_view, 6> kLoggerNames{"node", "engine", "membership", "transport",
                                                              "bridge", "http"};
// Level names as node.log_level and the endpoint accept them (spdlog's own say "warning" and "critical").
inline constexpr std::array<std::string_view, 6> kLevelNames{"trace", "debug", "info", "warn", "error", "off"};

std::optional<Level> parseLevel(std::string_view name);  // one of kLevelNames, exactly
std::string_view levelName(Level level);                 // "critical" is reported as "error"

struct LevelOverride {
  std::string logger;
  Level level;
};
// node.log_levels: "logger=level[,logger=level]..." (spaces around names allowed, "" = none). On a bad
// spec, error names the offending part and the accepted names; list is then empty.
struct ParsedOverrides {
  std::vector<LevelOverride> list;
  std::string error;
};
ParsedOverrides parseOverrides(std::string_view spec);

// A JSON string's contents for s: quotes, backslashes and control characters escaped, valid UTF-8 kept
// as is, each byte of an invalid UTF-8 sequence replaced by U+FFFD (so a shipper's parser never chokes).
std::string jsonEscape(std::string_view s);

// One formatted line with its '\n'. Pure: the formatter below and the tests call it.
std::string formatLine(Format format, std::chrono::system_clock::time_point time, Level level,
                       std::string_view logger, std::optional<PeerId> node, std::string_view msg);

// spdlog's formatter for both formats (set on the sink).
class LineFormatter final : public spdlog::formatter {
 public:
  LineFormatter(Format format, std::optional<PeerId> node) : format_(format), node_(node) {}
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override;
  std::unique_ptr<spdlog::formatter> clone() const override;

 private:
  Format format_;
  std::optional<PeerId> node_;
};

struct Options {
  std::string level = "info";  // node.log_level
  std::string levels;          // node.log_levels
  Format format = Format::Text;
  std::optional<PeerId> node;
};

// The process's loggers (one per kLoggerNames entry) sharing one sink. Throws ConfigError on a bad
// level or override (config validation reports them first, with the key's name).
class Loggers {
 public:
  explicit Loggers(const Options& options);                          // sink: stdout
  Loggers(const Options& options, spdlog::sink_ptr sink);            // tests: any sink
  Loggers(const Loggers&) = delete;
  Loggers& operator=(const Loggers&) = delete;

  Logger get(std::string_view name) const;  // one of kLoggerNames; throws std::out_of_range otherwise

  // Sets one logger's level, or every logger's for name "" or "*". False for an unknown name.
  bool setLevel(std::string_view name, Level level);
  std::string levelsJson() const;  // {"node":"info","engine":"info",...}

 private:
  std::vector<Logger> loggers_;  // in kLoggerNames order
};

// The run-time change behind PUT /loglevel: query "level=L" or "level=L&logger=NAME" (no logger, or
// "*", = every logger). 200 with levelsJson() and a newline, or 400 with a one-line reason.
struct LevelAnswer {
  int status;
  std::string body;
};
LevelAnswer applyLevelRequest(Loggers& loggers, std::string_view query);

// A logger that drops everything (tests, and code run without a Loggers).
Logger nullLogger(std::string name = "null");

// Options from the config's node section (the caller passes the strings; this module knows no Config).
Format parseFormat(std::string_view name);  // "text" | "json"; throws ConfigError otherwise

}  // namespace gossip::logging
