// gossipd: one binary, several subcommands. Every failure the user can cause (bad flags, bad config,
// unreadable files) ends as one line on stderr and exit code 2; a refusal (the cluster, the data directory)
// 3; no seed answering 4; internal errors exit 1 (docs/daemon.md, exit codes).
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/real.h"
#include "engine/frame.h"
#include "membership/membership.h"

namespace gossip::cmd {
int topo(std::vector<std::string> args);
int sim(std::vector<std::string> args);
int run(std::vector<std::string> args);
int cluster(std::vector<std::string> args);
int keygen(std::vector<std::string> args);
int health(std::vector<std::string> args);
int inspect(std::vector<std::string> args);
}

namespace {

constexpr const char* kUsage =
    "usage: gossipd <command> [options]\n"
    "commands:\n"
    "  topo --topology T --nodes N [--degree D] [--extra E] [--rows R] [--prob P] [--seed S]\n"
    "       [--round R] [--weights metropolis|maxdegree|uniform] [--lazy] [--edges FILE] [--json]\n"
    "       print a topology's edges, mixing weights and spectral gap (docs/topologies.md)\n"
    "  run [--config F] [--set section.key=value]...\n"
    "       one node of a cluster, over ZeroMQ (gossipd run --help)\n"
    "  cluster --nodes N [--config F] [--set section.key=value]... [--dir D]\n"
    "       N local nodes, supervised, one progress display (gossipd cluster --help)\n"
    "  keygen --out DIR [--nodes N]\n"
    "       CurveZMQ keys and the allow-list of a cluster (docs/security.md)\n"
    "  sim --config F [--set section.key=value]... [--out results.json]\n"
    "       N virtual nodes in one process (see docs/config.md for every key)\n"
    "  health --dir D [--max-age-ms M]\n"
    "       exit 0 when the node with data directory D is up (container health checks)\n"
    "  inspect DIR [--json]\n"
    "       what a node's data directory holds: its cluster, checkpoints, the round a restart resumes at\n"
    "  version  the version and its wire protocols (also --version)\n"
    "  help   this text\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fputs("gossipd: missing command (try 'gossipd help')\n", stderr);
    return 2;
  }
  const std::string_view command = argv[1];
  std::vector<std::string> rest(argv + 2, argv + argc);
  try {
    if (command == "topo") return gossip::cmd::topo(std::move(rest));
    if (command == "sim") return gossip::cmd::sim(std::move(rest));
    if (command == "run") return gossip::cmd::run(std::move(rest));
    if (command == "cluster") return gossip::cmd::cluster(std::move(rest));
    if (command == "keygen") return gossip::cmd::keygen(std::move(rest));
    if (command == "health") return gossip::cmd::health(std::move(rest));
    if (command == "inspect") return gossip::cmd::inspect(std::move(rest));
    if (command == "version" || command == "--version") {
      // The wire versions decide who can talk to whom (they are part of the cluster identity).
      // The state's precision too (core/real.h): it is on the wire (replicas, state transfer) and in checkpoints.
      std::printf("gossipd %s (frame protocol %u, membership protocol %u, state %s)\n", GOSSIPD_VERSION,
                  unsigned{gossip::engine::kFrameVersion}, unsigned{gossip::peer::Membership::kWireVersion},
                  gossip::kRealName);
      return 0;
    }
    if (command == "help" || command == "--help" || command == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    std::fprintf(stderr, "gossipd: unknown command '%s' (try 'gossipd help')\n", argv[1]);
    return 2;
  } catch (const gossip::ConfigError& e) {
    std::fprintf(stderr, "gossipd %s: %s\n", argv[1], e.what());
    return 2;
  } catch (const gossip::DataError& e) {
    std::fprintf(stderr, "gossipd %s: %s\n", argv[1], e.what());
    return 2;
  } catch (const gossip::RefusedError& e) {
    std::fprintf(stderr, "gossipd %s: %s\n", argv[1], e.what());
    return 3;
  } catch (const gossip::UnreachableError& e) {
    std::fprintf(stderr, "gossipd %s: %s\n", argv[1], e.what());
    return 4;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gossipd %s: internal error: %s\n", argv[1], e.what());
    return 1;
  }
}
