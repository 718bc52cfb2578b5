// gossipd run --config F [--set section.key=value]...: one node of a cluster (DESIGN.md §1, §2).
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "daemon/cli/cli.h"
#include "daemon/config/config.h"
#include "daemon/node/node_runtime.h"

namespace gossip::cmd {
namespace {

constexpr const char* kRunUsage =
    "usage: gossipd run [--config F] [--set section.key=value]... [--fresh]\n"
    "  One node: joins the cluster through cluster.seeds (none: it is the first node), trains with its\n"
    "  graph neighbours and writes checkpoints, model.npy/model.json and status.json to node.data_dir.\n"
    "  A node restarted on the same data_dir resumes from its newest valid checkpoint as a new\n"
    "  incarnation. SIGTERM/Ctrl-C/SIGHUP: checkpoint, announce the leave, exit 0.\n"
    "  --config F     TOML configuration (docs/config.md lists every key)\n"
    "  --set S.K=V    override one key after the file; repeatable\n"
    "  --fresh        start a new run: the run in node.data_dir (checkpoints, models, its cluster file) is\n"
    "                 moved to node.data_dir/previous/<UTC time>/ first, never deleted\n";

}  // namespace

int run(std::vector<std::string> argv) {
  cli::Args args{std::move(argv)};
  std::optional<std::string> configFile;
  std::vector<std::string> sets;
  auto start = daemon::StartMode::Resume;
  while (!args.done()) {
    const std::string flag = args.next("run");
    if (flag == "--help" || flag == "-h") {
      std::fputs(kRunUsage, stdout);
      return 0;
    }
    if (flag == "--config") {
      if (configFile) throw ConfigError("--config given twice ('" + *configFile + "' and '" + args.next(flag) + "')");
      configFile = args.next(flag);
    } else if (flag == "--set") {
      sets.push_back(args.next(flag));
    } else if (flag == "--fresh") {
      start = daemon::StartMode::Fresh;
    } else {
      throw ConfigError("unknown option '" + flag + "' (expected --config, --set, --fresh)");
    }
  }
  const daemon::Config config = daemon::loadConfig(configFile, sets);
  // The schema takes the simulator's range; a daemon's cluster is at most one membership table.
  if (config.cluster.nodes > daemon::kMaxNodes)
    throw ConfigError("cluster.nodes must be in [1," + std::to_string(daemon::kMaxNodes) +
                      "] for gossipd run, the most one membership holds (got " + std::to_string(config.cluster.nodes) +
                      "); only gossipd sim takes up to " + std::to_string(daemon::kMaxSimNodes));
  // Before the node is built: building waits for a trainer and loads the data, and a SIGTERM or Ctrl-C
  // there killed the process outright (issue 28). The waits see the request; loading finishes first.
  daemon::installStopSignals();
  std::unique_ptr<daemon::NodeRuntime> node;
  try {
    node = std::make_unique<daemon::NodeRuntime>(config, nullptr, start);
  } catch (const ConfigError& e) {
    throw ConfigError(daemon::withConfigKey(e.what()));
  } catch (const IoError& e) {
    // A port in use or an unwritable data directory is the user's to fix: one line, exit 2.
    throw ConfigError(e.what());
  }
  return node->run();
}

}  // namespace gossip::cmd
