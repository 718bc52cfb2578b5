// gossipd sim --config F [--set section.key=value]... [--out results.json]
// N virtual nodes in one process; progress on stderr, results as JSON (DESIGN.md §2).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "daemon/cli.h"
#include "daemon/config.h"
#include "daemon/sim_setup.h"
#include "sim/simulator.h"

namespace gossip::cmd {
namespace {

nlohmann::json toJson(const sim::EvalRecord& r) {
  nlohmann::json j{{"round", r.round},
                   {"loss", r.loss},
                   {"consensus_distance", r.consensus_distance},
                   {"bytes_sent", r.bytes_sent},
                   {"messages_dropped", r.messages_dropped},
                   {"alive", r.alive},
                   {"seconds", r.seconds}};
  if (r.node_accuracy_max > 0) {
    j["accuracy"] = r.accuracy;
    j["node_accuracy_min"] = r.node_accuracy_min;
    j["node_accuracy_max"] = r.node_accuracy_max;
  }
  if (r.suboptimality) j["suboptimality"] = *r.suboptimality;
  if (r.rel_error) j["rel_error"] = *r.rel_error;
  return j;
}

void printProgress(const sim::EvalRecord& r, Round total) {
  std::fprintf(stderr, "round %6llu/%llu  loss %.5f  acc %5.1f%%  consensus %.2e  sent %9.2f MB  alive %u",
               static_cast<unsigned long long>(r.round), static_cast<unsigned long long>(total), r.loss,
               100.0 * r.accuracy, r.consensus_distance, static_cast<double>(r.bytes_sent) / 1e6, r.alive);
  if (r.rel_error) std::fprintf(stderr, "  rel.err %.2e", *r.rel_error);
  std::fprintf(stderr, "  [%.1fs]\n", r.seconds);
}

}  // namespace

int sim(std::vector<std::string> argv) {
  cli::Args args{std::move(argv)};
  std::optional<std::string> configFile, out;
  std::vector<std::string> sets;
  while (!args.done()) {
    const std::string flag = args.next("sim");
    if (flag == "--config") configFile = args.next(flag);
    else if (flag == "--set") sets.push_back(args.next(flag));
    else if (flag == "--out") out = args.next(flag);
    else throw ConfigError("unknown option '" + flag + "' (expected --config, --set, --out)");
  }
  const daemon::Config config = daemon::loadConfig(configFile, sets);
  // Results go to <out>.partial first and are renamed over <out> only when complete: an unwritable path
  // fails before the run, and an interrupted run never leaves a truncated results file behind.
  std::ofstream outFile;
  const std::string partial = out ? *out + ".partial" : "";
  if (out) {
    outFile.open(partial);
    if (!outFile) throw ConfigError("--out: cannot write '" + *out + "'");
  }
  auto problem = daemon::buildSimProblem(config);
  sim::Simulator simulator(problem->setup);
  std::fprintf(stderr, "gossipd sim: %u nodes, %s, %s + %s, %llu rounds, %zu parameters\n", config.cluster.nodes,
               config.cluster.topology.c_str(), config.algorithm.name.c_str(), config.compressor.name.c_str(),
               static_cast<unsigned long long>(config.algorithm.rounds), problem->model->dim());
  const Round total = config.algorithm.rounds;
  const auto records = simulator.run([total](const sim::EvalRecord& r) { printProgress(r, total); });

  if (out) {
    nlohmann::json j;
    j["config"] = daemon::toJson(config);
    j["records"] = nlohmann::json::array();
    for (const auto& r : records) j["records"].push_back(toJson(r));
    outFile << j.dump(1) << "\n";
    outFile.close();
    std::error_code ec;
    if (!outFile || (std::filesystem::rename(partial, *out, ec), ec))
      throw ConfigError("--out: write to '" + *out + "' failed");
    std::fprintf(stderr, "wrote %s\n", out->c_str());
  }
  return 0;
}

}  // namespace gossip::cmd
