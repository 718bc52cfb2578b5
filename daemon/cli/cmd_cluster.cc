// gossipd cluster --nodes N [--config F] [--set section.key=value]... [--dir D] [--bin PATH] [--trainer CMD]
// N `gossipd run` children on loopback with ephemeral ports and one data directory each, one progress
// display for all of them, a clean stop on Ctrl-C, and a line for every child that dies (DESIGN.md §1).
#include <algorithm>
#include <chrono>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "daemon/cli/cli.h"
#include "daemon/config/config.h"
#include "daemon/config/http_address.h"
#include "daemon/cli/cluster_progress.h"
#include "daemon/cli/process.h"

namespace gossip::cmd {
namespace {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Set by the signal handler, read by the supervisor loop: a lock-free atomic (async-signal-safe).
std::atomic<bool> gInterrupted{false};
static_assert(std::atomic<bool>::is_always_lock_free, "written from a signal handler");
extern "C" void onClusterSignal(int) { gInterrupted.store(true, std::memory_order_relaxed); }

constexpr const char* kClusterUsage =
    "usage: gossipd cluster --nodes N [--config F] [--set section.key=value]... [--dir D] [--bin PATH]\n"
    "                       [--trainer CMD] [--no-restart] [--fresh]\n"
    "  Starts N `gossipd run` nodes on this machine (loopback, ephemeral ports), node i with its data\n"
    "  directory D/node-i (checkpoints, model.npy, status.json, log, http_port: each node serves\n"
    "  /metrics and /status on node.http's host with a port of its own), and shows one progress line for\n"
    "  all of them. Ctrl-C stops them cleanly (each writes a checkpoint and leaves). A second run on the\n"
    "  same D resumes every node from its newest checkpoint; a finished run is refused (its models stay\n"
    "  as they are; raise algorithm.rounds to train on). A node that dies (a signal, an internal error)\n"
    "  is started again from its data directory, up to 3 times; not after exit 2 (configuration) or 3\n"
    "  (refused by the cluster); after 1, 2, then 4 s. --no-restart turns this off. --fresh starts a new\n"
    "  run on a D that holds one: each node's first start moves its earlier run to node-i/previous/<time>/\n"
    "  (gossipd run --fresh); a node restarted after a crash resumes the new run.\n"
    "  --nodes N      number of nodes, 1..1024 (sets cluster.nodes)\n"
    "  --config F     TOML configuration shared by all nodes (docs/config.md)\n"
    "  --set S.K=V    override one key for all nodes; repeatable (not node.id, node.data_dir,\n"
    "                 node.listen, cluster.nodes, cluster.seeds: set per node by the supervisor)\n"
    "  --dir D        data directories go here (default ./gossipd-cluster)\n"
    "  --bin PATH     the gossipd binary to start (default: this one)\n"
    "  --http-port P  node 0's HTTP port (default 8080; another free port when 8080 is taken, 0 = any):\n"
    "                 its dashboard at / shows the whole cluster (members gossip their progress); the\n"
    "                 URL is printed once node 0 serves it\n"
    "  --trainer CMD  beside each node, run CMD with /bin/sh (its output in D/node-i/trainer.log), with\n"
    "                 GOSSIPD_DATA_DIR, GOSSIPD_NODE and GOSSIPD_NODES set; sets trainer.enable = true\n"
    "                 (docs/trainer.md). Trainers still running 30 s after the last node ended are stopped.\n";

}  // namespace

int cluster(std::vector<std::string> argv) {
  cli::Args args{std::move(argv)};
  std::optional<std::uint32_t> nodes;
  std::optional<std::string> configFile;
  std::vector<std::string> sets;
  std::string dir = "./gossipd-cluster", bin, trainer;
  bool restart = true;
  bool fresh = false;
  long long httpPort = 8080;
  while (!args.done()) {
    const std::string flag = args.next("cluster");
    if (flag == "--help" || flag == "-h") {
      std::fputs(kClusterUsage, stdout);
      return 0;
    }
    if (flag == "--nodes") {
      const auto n = cli::parseNumber<long long>(args.next(flag), "--nodes");
      if (n < 1 || n > 1024) throw ConfigError("--nodes: expected 1..1024, got " + std::to_string(n));
      nodes = static_cast<std::uint32_t>(n);
    } else if (flag == "--config") {
      if (configFile) throw ConfigError("--config given twice");
      configFile = args.next(flag);
    } else if (flag == "--set") {
      sets.push_back(args.next(flag));
    } else if (flag == "--dir") {
      dir = args.next(flag);
    } else if (flag == "--bin") {
      bin = args.next(flag);
    } else if (flag == "--no-restart") {
      restart = false;
    } else if (flag == "--fresh") {
      fresh = true;
    } else if (flag == "--trainer") {
      trainer = args.next(flag);
      if (trainer.empty()) throw ConfigError("--trainer: expected a command");
    } else if (flag == "--http-port") {
      httpPort = cli::parseNumber<long long>(args.next(flag), "--http-port");
      if (httpPort < 0 || httpPort > 65535) throw ConfigError("--http-port: expected 0..65535, got " + std::to_string(httpPort));
    } else {
      throw ConfigError("unknown option '" + flag +
                        "' (expected --nodes, --config, --set, --dir, --bin, --http-port, --trainer, --no-restart, --fresh)");
    }
  }
  if (!nodes) throw ConfigError("--nodes N is required");
  // The supervisor sets these for each node itself: a --set of one was silently overridden (issue 28).
  for (const auto& s : sets)
    for (const char* key : {"node.id", "node.data_dir", "node.listen", "cluster.nodes", "cluster.seeds"})
      if (s.starts_with(std::string(key) + "="))
        throw ConfigError("--set " + s + ": gossipd cluster sets " + key +
                          " for each node itself (node i runs in --dir/node-i; use --nodes and --dir)");
  // The whole configuration is checked here, once, so a bad key is one line before any child starts.
  if (!trainer.empty()) sets.push_back("trainer.enable=true");
  std::vector<std::string> all = sets;
  all.push_back("cluster.nodes=" + std::to_string(*nodes));
  const daemon::Config config = daemon::loadConfig(configFile, all);
  if (bin.empty()) bin = fs::read_symlink("/proc/self/exe").string();
  // Every local node serves HTTP on node.http's host with a port of its own (in <dir>/node-i/http_port):
  // one fixed port for all of them could not work. Node 0 takes --http-port, so that the dashboard of the
  // whole cluster has a URL one can remember; when that port is taken (a second local cluster), any.
  std::string http, http0;
  if (!config.node.http.empty()) {
    const auto addr = daemon::parseHttpAddress(config.node.http);  // validated by loadConfig
    const std::string host = addr->ip.find(':') != std::string::npos ? "[" + addr->ip + "]" : addr->ip;
    http = host + ":0";
    http0 = http;
    if (httpPort != 0 && portFree(addr->ip, static_cast<std::uint16_t>(httpPort)))
      http0 = host + ":" + std::to_string(httpPort);
    else if (httpPort != 0)
      std::printf("gossipd cluster: port %lld is taken; node 0 serves HTTP on another port\n", httpPort);
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw ConfigError("--dir: cannot create '" + dir + "': " + ec.message());

  struct sigaction sa {};
  sa.sa_handler = onClusterSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);

  const auto t0 = Clock::now();
  std::vector<Child> children(*nodes);
  auto startNode = [&](PeerId i, const std::string& seed) {
    Child& c = children[i];
    c.id = i;
    c.dir = fs::absolute(fs::path(dir) / ("node-" + std::to_string(i)));
    fs::create_directories(c.dir);
    fs::remove(c.dir / "endpoint", ec);
    fs::remove(c.dir / "status.json", ec);
    fs::remove(c.dir / "http_port", ec);
    std::vector<std::string> a{"run"};
    if (configFile) a.insert(a.end(), {"--config", *configFile});
    for (const auto& s : sets) a.insert(a.end(), {"--set", s});
    a.insert(a.end(), {"--set", "node.id=" + std::to_string(i), "--set", "node.data_dir=" + c.dir.string(), "--set",
                       "node.listen=tcp://127.0.0.1:0", "--set", "cluster.nodes=" + std::to_string(*nodes),
                       "--set", "node.http=" + (i == 0 ? http0 : http)});
    if (!seed.empty()) a.insert(a.end(), {"--set", "cluster.seeds=[\"" + seed + "\"]"});
    if (fresh && c.restarts == 0) a.push_back("--fresh");  // a restart after a crash resumes the new run
    c.pid = spawn(bin, a, c.dir / "log");
    c.status.reset();
    // The trainer may start before its node binds the socket: the client retries its attach. A node
    // started again keeps the trainer it had while that one runs (the client re-attaches).
    if (!trainer.empty() && (c.trainerPid <= 0 || c.trainerStatus))
      c.trainerPid = spawn("/bin/sh", {"-c", trainer}, c.dir / "trainer.log",
                           {{"GOSSIPD_DATA_DIR", c.dir.string()}, {"GOSSIPD_NODE", std::to_string(i)},
                            {"GOSSIPD_NODES", std::to_string(*nodes)}},
                           /*ownGroup=*/true);
  };
  auto stopAll = [&](int sig) {
    for (auto& c : children) {
      if (c.pid > 0 && !c.status) ::kill(c.pid, sig);
      if (c.trainerPid > 0 && !c.trainerStatus) ::kill(-c.trainerPid, sig);  // the shell and its command
    }
  };
  auto reap = [&](bool report) {
    for (auto& c : children) {
      int ts = 0;
      if (c.trainerPid > 0 && !c.trainerStatus && ::waitpid(c.trainerPid, &ts, WNOHANG) == c.trainerPid) {
        c.trainerStatus = ts;
        if (report && !(WIFEXITED(ts) && WEXITSTATUS(ts) == 0))
          std::printf("\ntrainer of node %u %s (see %s: %s)\n", c.id, describeExit(ts).c_str(),
                      (c.dir / "trainer.log").c_str(), lastLine(c.dir / "trainer.log").c_str());
      }
      if (c.pid <= 0 || c.status) continue;
      int st = 0;
      if (::waitpid(c.pid, &st, WNOHANG) == c.pid) {
        c.status = st;
        readStatus(c);
        if (report && !(WIFEXITED(st) && WEXITSTATUS(st) == 0))
          std::printf("\nnode %u %s (see %s: %s)\n", c.id, describeExit(st).c_str(), (c.dir / "log").c_str(),
                      lastLine(c.dir / "log").c_str());
      }
    }
  };

  std::printf("gossipd cluster: %u nodes, %s, %s + %s, %llu rounds; data in %s\n", *nodes, config.cluster.topology.c_str(),
              config.algorithm.name.c_str(), config.compressor.name.c_str(),
              static_cast<unsigned long long>(config.algorithm.rounds), fs::absolute(dir).c_str());
  startNode(0, "");
  // Node 0 publishes its address right after binding; everyone else joins through it.
  std::string seed;
  for (const auto deadline = Clock::now() + std::chrono::seconds(20); seed.empty();) {
    std::ifstream in(children[0].dir / "endpoint");
    std::getline(in, seed);
    reap(false);
    if (!seed.empty()) break;
    if (children[0].status || Clock::now() > deadline || gInterrupted) {
      stopAll(SIGKILL);
      reap(false);
      throw ConfigError("node 0 did not start: " + lastLine(children[0].dir / "log"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (PeerId i = 1; i < *nodes; ++i) startNode(i, seed);

  const bool tty = ::isatty(1);
  // Supervision (unless --no-restart): a node that died (a signal, an internal error, no seed answered) is
  // started again from its data directory, through a running node, after 1, 2, then 4 s, at most
  // kMaxRestarts times; it resumes from its newest checkpoint as a new incarnation. Not after a clean exit,
  // a configuration error (2) or a refusal (3): those would fail the same way again; nor while the cluster
  // stops.
  constexpr unsigned kMaxRestarts = 3;
  auto restartDead = [&] {
    if (gInterrupted || !restart) return;
    for (auto& c : children) {
      if (!c.status) continue;
      const int st = *c.status;
      const bool again = WIFSIGNALED(st) || (WIFEXITED(st) && WEXITSTATUS(st) != 0 && WEXITSTATUS(st) != 2 &&
                                             WEXITSTATUS(st) != 3);
      if (!again || c.restarts >= kMaxRestarts) continue;
      if (!c.restartAt) {
        c.restartAt = Clock::now() + std::chrono::seconds(1u << c.restarts);
        std::printf("%snode %u %s: starting it again in %u s (restart %u of %u)\n", tty ? "\n" : "", c.id,
                    describeExit(st).c_str(), 1u << c.restarts, c.restarts + 1, kMaxRestarts);
        std::fflush(stdout);
      }
      if (Clock::now() < *c.restartAt) continue;
      std::string via;
      for (const auto& o : children)
        if (o.id != c.id && !o.status) {
          std::ifstream in(o.dir / "endpoint");
          if (std::getline(in, via) && !via.empty()) break;
          via.clear();
        }
      if (via.empty()) continue;  // nobody to join through yet: try at the next pass
      ++c.restarts;
      c.restartAt.reset();
      c.last = nlohmann::json();
      startNode(c.id, via);
    }
  };

  bool urlShown = http0.empty();
  auto nextLine = Clock::now();
  std::optional<Clock::time_point> stopDeadline, trainerDeadline;
  for (;;) {
    reap(true);
    restartDead();
    const bool allDone = std::all_of(children.begin(), children.end(), [](const Child& c) { return c.status.has_value(); });
    const bool trainersDone = std::all_of(children.begin(), children.end(),
                                          [](const Child& c) { return c.trainerPid <= 0 || c.trainerStatus.has_value(); });
    if (allDone && trainersDone) break;
    if (allDone) {  // trainers get the daemons' last reply, then a grace period to save their models
      if (!trainerDeadline) trainerDeadline = Clock::now() + std::chrono::seconds(30);
      if (Clock::now() > *trainerDeadline) {
        std::printf("\ntrainers still running 30 s after the last node ended: stopping them\n");
        for (auto& c : children)
          if (c.trainerPid > 0 && !c.trainerStatus) ::kill(-c.trainerPid, SIGTERM);
        trainerDeadline = Clock::now() + std::chrono::hours(1);
      }
    }
    if (gInterrupted && !stopDeadline) {
      std::printf("\nstopping %u nodes (SIGTERM: checkpoint, leave)...\n", *nodes);
      stopAll(SIGTERM);
      stopDeadline = Clock::now() + std::chrono::seconds(15);
    }
    if (stopDeadline && Clock::now() > *stopDeadline) {
      std::printf("nodes still running after 15 s: killing them\n");
      stopAll(SIGKILL);
      stopDeadline = Clock::now() + std::chrono::hours(1);
    }
    for (auto& c : children)
      if (!c.status) readStatus(c);
    if (!urlShown) {  // node 0 writes http_port once it serves (after loading its data)
      std::ifstream in(children[0].dir / "http_port");
      std::string port;
      if (std::getline(in, port) && !port.empty()) {
        const std::string host = http0.substr(0, http0.rfind(':'));
        std::printf("%sdashboard: http://%s:%s/  (node 0; /metrics /status /cluster beside it)\n", tty ? "\r" : "",
                    host == "0.0.0.0" ? "127.0.0.1" : host == "[::]" ? "[::1]" : host.c_str(), port.c_str());
        std::fflush(stdout);
        urlShown = true;
      }
    }
    if (Clock::now() >= nextLine) {
      const std::string line = progressLine(children, config.algorithm.rounds);
      if (tty) {
        std::printf("\r%-110s", line.c_str());
        nextLine = Clock::now() + std::chrono::milliseconds(500);
      } else {
        std::printf("%s\n", line.c_str());
        nextLine = Clock::now() + std::chrono::seconds(5);
      }
      std::fflush(stdout);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }

  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf("%s\n\nnode  state      round       loss   accuracy   sent MB   exit\n", tty ? "" : "");
  bool ok = true;
  std::uint64_t total = 0;
  for (const auto& c : children) {
    const double a = field<double>(c.last, "accuracy", -1);
    const auto bytes = field<std::uint64_t>(c.last, "bytes_sent", 0);
    total += bytes;
    const bool good = c.status && WIFEXITED(*c.status) && WEXITSTATUS(*c.status) == 0;
    ok = ok && good;
    if (c.trainerStatus && !(WIFEXITED(*c.trainerStatus) && WEXITSTATUS(*c.trainerStatus) == 0)) {
      ok = false;
      std::printf("trainer of node %u %s (see %s)\n", c.id, describeExit(*c.trainerStatus).c_str(), (c.dir / "trainer.log").c_str());
    }
    std::printf("%4u  %-9s %6llu  %9.4f  %8s  %8.2f   %s\n", c.id, field<std::string>(c.last, "state", "?").c_str(),
                static_cast<unsigned long long>(field<Round>(c.last, "round", 0)), field<double>(c.last, "loss", 0),
                a >= 0 ? (std::to_string(100 * a).substr(0, 5) + "%").c_str() : "-", static_cast<double>(bytes) / 1e6,
                good ? "0" : describeExit(*c.status).c_str());
  }
  std::printf("total sent %.2f MB in %.1f s; models in %s/node-*/model.npy\n", static_cast<double>(total) / 1e6, seconds,
              fs::absolute(dir).c_str());
  return ok ? 0 : 1;
}

}  // namespace gossip::cmd
