// gossipd health --dir D [--max-age-ms M]: is the node whose node.data_dir is D alive? For container
// health checks (docker/Dockerfile's HEALTHCHECK) and scripts; it reads the node's files, not its sockets.
// Healthy (exit 0): D/status.json parses, was rewritten within M ms (the node thread rewrites it every
// monitor.status_every_ms, so a hung or stopped process goes stale), and the node's state is joining,
// syncing or training. Unhealthy (exit 1): anything else, with one line saying why. Bad flags: exit 2.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "daemon/cli/cli.h"

namespace gossip::cmd {
namespace {
namespace fs = std::filesystem;

constexpr const char* kHealthUsage =
    "usage: gossipd health --dir D [--max-age-ms M]\n"
    "  Exit 0 when the node with node.data_dir D is up: D/status.json was rewritten within M ms\n"
    "  (default 10000) and the node is joining, syncing or training and not isolated (every other member\n"
    "  dead). Exit 1 otherwise, with the reason.\n";

// The reason the node is unhealthy, or nullopt when it is healthy; `summary` describes a healthy node.
std::optional<std::string> diagnose(const fs::path& dir, std::uint64_t maxAgeMs, std::string& summary) {
  const fs::path file = dir / "status.json";
  std::string quoted = "'";  // appended, not `"'" + path`: GCC 12 warns (-Wrestrict) on that form
  quoted += file.string();
  quoted += "'";
  std::error_code ec;
  const auto written = fs::last_write_time(file, ec);
  if (ec) return "no status file " + quoted + " (" + ec.message() + "): the node has not started";
  const auto age = std::chrono::duration_cast<std::chrono::milliseconds>(fs::file_time_type::clock::now() - written);
  std::ifstream in(file);
  const auto status = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!status.is_object() || !status.contains("state") || !status["state"].is_string())
    return quoted + " is not a node status";
  const std::string state = status["state"];
  if (state == "failed")  // it ended on an error (a full disk): say which
    return "the node failed: " + (status.contains("error") && status["error"].is_string() ? status["error"].get<std::string>()
                                                                                     : std::string("(no error recorded)"));
  if (state != "joining" && state != "syncing" && state != "training") return "the node is " + state;
  if (status.value("isolated", false))
    return "the node is isolated: every other member is dead, its rounds are held at round " +
           status.value("round", nlohmann::json(0)).dump() + " (is its network cut?)";
  if (age.count() > static_cast<std::int64_t>(maxAgeMs))
    return quoted + " is " + std::to_string(age.count()) + " ms old (limit " +
           std::to_string(maxAgeMs) + "): the node stopped writing it";
  summary = "node " + status.value("id", nlohmann::json(0)).dump() + " " + state + " at round " +
            status.value("round", nlohmann::json(0)).dump() + ", " + status.value("alive", nlohmann::json(0)).dump() +
            " members alive";
  return std::nullopt;
}

}  // namespace

int health(std::vector<std::string> argv) {
  cli::Args args{std::move(argv)};
  std::optional<std::string> dir;
  std::uint64_t maxAgeMs = 10000;
  while (!args.done()) {
    const std::string flag = args.next("health");
    if (flag == "--help" || flag == "-h") {
      std::fputs(kHealthUsage, stdout);
      return 0;
    }
    if (flag == "--dir") {
      dir = args.next(flag);
    } else if (flag == "--max-age-ms") {
      maxAgeMs = cli::parseNumber<std::uint64_t>(args.next(flag), "--max-age-ms");
    } else {
      throw ConfigError("unknown option '" + flag + "' (expected --dir, --max-age-ms)");
    }
  }
  if (!dir) throw ConfigError("--dir is required (the node's node.data_dir)");
  std::string summary;
  if (const auto problem = diagnose(*dir, maxAgeMs, summary)) {
    std::printf("unhealthy: %s\n", problem->c_str());
    return 1;
  }
  std::printf("healthy: %s\n", summary.c_str());
  return 0;
}

}  // namespace gossip::cmd
