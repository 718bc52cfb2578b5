// gossipd keygen: the CurveZMQ keys of a cluster (docs/security.md).
#include <cstdio>
#include <string>
#include <vector>

#include "daemon/cli/cli.h"
#include "transport/zmq/curve_keys.h"

namespace gossip::cmd {

namespace {
constexpr const char* kHelp =
    "usage: gossipd keygen --out DIR [--nodes N]\n"
    "  Writes the CurveZMQ keys of a cluster of N nodes (default 1) into DIR: cluster.key (shared by all\n"
    "  nodes), node-<id>.key for ids 0..N-1 (each only on its own node) and allow.txt (every node's\n"
    "  public key, on every node). Keys already in DIR are kept: run it again with a larger N to add\n"
    "  nodes, then copy the new allow.txt to every node. Secret files are created with mode 0600.\n"
    "  Turn security on with security.enable = true and security.keys_dir = DIR (docs/security.md).\n";
}  // namespace

int keygen(std::vector<std::string> rest) {
  cli::Args a{std::move(rest)};
  std::string out;
  std::size_t nodes = 1;
  while (!a.done()) {
    const std::string flag = a.next("keygen");
    if (flag == "--help" || flag == "-h") {
      std::fputs(kHelp, stdout);
      return 0;
    }
    if (flag == "--out") out = a.next(flag);
    else if (flag == "--nodes") nodes = cli::parseNumber<std::size_t>(a.next(flag), "--nodes");
    else throw ConfigError("unknown option '" + flag + "' (try 'gossipd keygen --help')");
  }
  if (out.empty()) throw ConfigError("--out DIR is required (try 'gossipd keygen --help')");
  if (nodes < 1 || nodes > 65536) throw ConfigError("--nodes must be in [1,65536] (got " + std::to_string(nodes) + ")");
  const auto created = peer::writeClusterKeys(out, nodes);
  std::printf("keygen: %zu new node keys in %s (allow.txt lists %zu or more nodes)\n", created, out.c_str(), nodes);
  return 0;
}

}  // namespace gossip::cmd
