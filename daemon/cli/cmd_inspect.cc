// gossipd inspect DIR [--json]: what a node.data_dir holds (daemon/node/data_dir_report.h), without starting
// anything or changing a byte there. Exit 0 with the report; 2 when DIR is not a node's data directory.
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "daemon/cli/cli.h"
#include "daemon/node/data_dir_report.h"

namespace gossip::cmd {
namespace {

constexpr const char* kInspectUsage =
    "usage: gossipd inspect DIR [--json]\n"
    "  What the node.data_dir DIR holds, read-only: the cluster and node.id it belongs to, each checkpoint\n"
    "  and whether it verifies, the round a restart would resume at (or that the run is finished), the\n"
    "  model files, the last status, and whether a daemon holds the directory now. --json: the same as one\n"
    "  JSON object (docs/daemon.md, \"gossipd inspect\").\n";

}  // namespace

int inspect(std::vector<std::string> argv) {
  cli::Args args{std::move(argv)};
  std::optional<std::string> dir;
  bool asJson = false;
  while (!args.done()) {
    const std::string a = args.next("inspect");
    if (a == "--help" || a == "-h") {
      std::fputs(kInspectUsage, stdout);
      return 0;
    }
    if (a == "--json") {
      asJson = true;
    } else if (a.starts_with("-")) {
      throw ConfigError("unknown option '" + a + "' (expected DIR, --json)");
    } else if (dir) {
      throw ConfigError("one DIR at a time (got '" + *dir + "' and '" + a + "')");
    } else {
      dir = a;
    }
  }
  if (!dir) throw ConfigError("missing DIR, a node's node.data_dir (gossipd inspect --help)");
  const auto report = daemon::inspectDataDir(*dir);
  const std::string text = asJson ? report.dump(1) + "\n" : daemon::describeDataDir(report);
  std::fputs(text.c_str(), stdout);
  return 0;
}

}  // namespace gossip::cmd
