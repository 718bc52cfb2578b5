// gossipd sim --config F [--set section.key=value]... [--out results.json]
// N virtual nodes in one process; progress on stderr, results as JSON (DESIGN.md §2).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "daemon/cli/cli.h"
#include "daemon/config/config.h"
#include "daemon/node/model_meta.h"
#include "daemon/node/model_out.h"
#include "daemon/node/sim_setup.h"
#include "core/consensus_watch.h"
#include "sim/simulator.h"

namespace gossip::cmd {
namespace {

nlohmann::json toJson(const sim::EvalRecord& r) {
  nlohmann::json j{{"round", r.round},
                   {"loss", r.loss},
                   {"consensus_distance", r.consensus_distance},
                   {"relative_consensus", r.relative_consensus},
                   {"bytes_sent", r.bytes_sent},
                   {"control_bytes_sent", r.control_bytes_sent},
                   {"messages_dropped", r.messages_dropped},
                   {"messages_rejected", r.messages_rejected},
                   {"alive", r.alive},
                   {"seconds", r.seconds}};
  if (r.node_accuracy_max > 0) {
    j["accuracy"] = r.accuracy;
    j["node_accuracy_min"] = r.node_accuracy_min;
    j["node_accuracy_max"] = r.node_accuracy_max;
    j["node_accuracy_mean"] = r.node_accuracy_mean;
    j["node_eval_nodes"] = r.node_eval_nodes;
    j["node_eval_samples"] = r.node_eval_samples;
  }
  if (std::isfinite(r.gamma_min)) {
    j["gamma_min"] = r.gamma_min;
    j["gamma_max"] = r.gamma_max;
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

constexpr const char* kSimUsage =
    "usage: gossipd sim [--config F] [--set section.key=value]... [--out results.json]\n"
    "                   [--save-after R --checkpoint-dir DIR] [--resume DIR]\n"
    "  N virtual nodes in one process; progress on stderr, results as JSON with --out.\n"
    "  --config F     TOML configuration (docs/config.md lists every key)\n"
    "  --set S.K=V    override one key after the file; repeatable\n"
    "  --out FILE     write the results JSON here when the run completes\n"
    "  --save-after R --checkpoint-dir DIR\n"
    "                 after round R, write every node's checkpoint and the simulator's state to DIR\n"
    "  --resume DIR   continue a run saved in DIR (same configuration); ends bit-identical to a run\n"
    "                 that was never interrupted\n"
    "  --save-models DIR\n"
    "                 at the end, write each node's model as DIR/node-<id>/model.npy (+ model.json),\n"
    "                 the files `gossipd run` writes\n";

// Fails before the run if `out` cannot be written: a directory, a missing parent, or a parent that does
// not accept a new file (probed by creating and removing a temporary file next to it).
void checkOutPath(const std::string& out) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (out.empty()) throw ConfigError("--out: empty file name");
  if (fs::is_directory(out, ec)) throw ConfigError("--out: '" + out + "' is a directory");
  fs::path parent = fs::path(out).parent_path();
  if (parent.empty()) parent = ".";
  if (!fs::is_directory(parent, ec))
    throw ConfigError("--out: directory '" + parent.string() + "' of '" + out + "' does not exist");
  const fs::path probe = parent / (".gossipd-probe-" + std::to_string(::getpid()));
  {
    std::ofstream f(probe);
    if (!f) throw ConfigError("--out: cannot write in directory '" + parent.string() + "' (for '" + out + "')");
  }
  fs::remove(probe, ec);
}

// The process's peak resident memory (VmHWM of /proc/self/status), for the output beside the estimate;
// nullopt where there is no /proc.
std::optional<double> peakRssBytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.starts_with("VmHWM:")) return std::strtod(line.c_str() + 6, nullptr) * 1024.0;  // "VmHWM:  123 kB"
  return std::nullopt;
}

}  // namespace

int sim(std::vector<std::string> argv) {
  cli::Args args{std::move(argv)};
  std::optional<std::string> configFile, out, checkpointDir, resumeDir, modelsDir;
  std::optional<Round> saveAfter;
  std::vector<std::string> sets;
  while (!args.done()) {
    const std::string flag = args.next("sim");
    if (flag == "--help" || flag == "-h") {
      std::fputs(kSimUsage, stdout);
      return 0;
    }
    if (flag == "--config") {
      if (configFile) throw ConfigError("--config given twice ('" + *configFile + "' and '" + args.next(flag) + "')");
      configFile = args.next(flag);
    }
    else if (flag == "--set") sets.push_back(args.next(flag));
    else if (flag == "--out") out = args.next(flag);
    else if (flag == "--checkpoint-dir") checkpointDir = args.next(flag);
    else if (flag == "--resume") resumeDir = args.next(flag);
    else if (flag == "--save-models") modelsDir = args.next(flag);
    else if (flag == "--save-after") {
      const std::string v = args.next(flag);
      char* end = nullptr;
      const unsigned long long r = std::strtoull(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || r == 0 || v[0] == '-')
        throw ConfigError("--save-after: expected a round number >= 1, got '" + v + "'");
      saveAfter = r;
    } else
      throw ConfigError("unknown option '" + flag +
                        "' (expected --config, --set, --out, --save-after, --checkpoint-dir, --resume, --save-models)");
  }
  if (saveAfter.has_value() != checkpointDir.has_value())
    throw ConfigError("--save-after and --checkpoint-dir go together");
  const daemon::Config config = daemon::loadConfig(configFile, sets);
  if (saveAfter && *saveAfter >= config.algorithm.rounds)
    throw ConfigError("--save-after " + std::to_string(*saveAfter) + ": the run has only " +
                      std::to_string(config.algorithm.rounds) + " rounds (algorithm.rounds)");
  if (resumeDir && !std::filesystem::is_directory(*resumeDir))
    throw ConfigError("--resume: '" + *resumeDir + "' is not a directory");
  // An unwritable --out fails before the run. The results are written only when the run is complete, to
  // <out>.partial renamed over <out>: an interrupted run leaves no file at all, never a truncated one.
  if (out) checkOutPath(*out);
  std::vector<sim::EvalRecord> records;
  std::vector<std::string> warnings;
  std::unique_ptr<daemon::SimProblem> problem;
  try {
    problem = daemon::buildSimProblem(config);
    if (saveAfter) {
      problem->setup.save_after = *saveAfter;
      problem->setup.save_dir = *checkpointDir;
    }
    if (resumeDir) problem->setup.resume_dir = *resumeDir;
    sim::Simulator simulator(problem->setup);
    std::fprintf(stderr, "gossipd sim: %u nodes, %s, %s + %s, %llu rounds, %zu parameters\n", config.cluster.nodes,
                 config.cluster.topology.c_str(), config.algorithm.name.c_str(), config.compressor.name.c_str(),
                 static_cast<unsigned long long>(config.algorithm.rounds), problem->model->dim());
    const auto& mem = problem->memory;
    std::fprintf(stderr, "gossipd sim: memory estimate %s (%s per node: %.0f model-sized vectors + messages; %s data)\n",
                 daemon::formatBytes(mem.bytes).c_str(), daemon::formatBytes(mem.per_node_bytes).c_str(),
                 mem.vectors_per_node, daemon::formatBytes(mem.data_bytes).c_str());
    if (const auto& a = problem->auto_step)
      std::fprintf(stderr,
                   "gossipd sim: automatic step lr = %.6g (%s; the largest L over %zu nodes: %.6g for the whole local "
                   "objective, %.6g per sample; agreed by max-gossip in %u rounds)\n",
                   a->lr, training::autoStepRule(config.algorithm.estimator), a->nodes, a->agreed.full,
                   a->agreed.sample, a->gossip_rounds);
    const Round total = config.algorithm.rounds;
    ConsensusWatch watch;
    records = simulator.run([&](const sim::EvalRecord& r) {
      printProgress(r, total);
      if (r.relative_consensus < kRoundOffConsensus) return;  // agreement to round-off: nothing to watch
      if (auto w = watch.observe(r.round, r.relative_consensus)) {
        std::fprintf(stderr, "warning: %s\n", w->c_str());
        warnings.push_back(std::move(*w));
      }
    });
    if (modelsDir)
      for (const auto& [id, x] : simulator.models()) {
        const auto dir = std::filesystem::path(*modelsDir) / ("node-" + std::to_string(id));
        std::filesystem::create_directories(dir);
        daemon::writeModel(dir, std::span<const Real>(x.data(), static_cast<std::size_t>(x.size())),
                           daemon::modelMeta(config, *problem->model, problem->train, config.algorithm.rounds, id, 0));
      }
  } catch (const ConfigError& e) {
    // The topology, data and algorithm modules name their own parameter ("degree: ..."); name the key.
    throw ConfigError(daemon::withConfigKey(e.what()));
  }

  if (out) {
    const std::string partial = *out + ".partial";
    std::ofstream outFile(partial);
    if (!outFile) throw ConfigError("--out: cannot write '" + partial + "'");
    nlohmann::json j;
    j["config"] = daemon::toJson(config);
    j["records"] = nlohmann::json::array();
    for (const auto& r : records) j["records"].push_back(toJson(r));
    j["warnings"] = warnings;
    // The estimate the run was checked against, beside the peak it reached (the kernel's high-water mark).
    const auto& mem = problem->memory;
    j["memory"] = {{"estimate_bytes", mem.bytes},
                   {"estimate_state_bytes", mem.state_bytes},
                   {"estimate_data_bytes", mem.data_bytes},
                   {"estimate_per_node_bytes", mem.per_node_bytes},
                   {"vectors_per_node", mem.vectors_per_node}};
    if (const auto peak = peakRssBytes()) j["memory"]["peak_rss_bytes"] = *peak;
    if (const auto& a = problem->auto_step)
      j["lr_auto"] = {{"lr", a->lr},
                      {"L_full", a->agreed.full},
                      {"L_sample", a->agreed.sample},
                      {"nodes", a->nodes},
                      {"gossip_rounds", a->gossip_rounds}};
    outFile << j.dump(1) << "\n";
    outFile.close();
    std::error_code ec;
    if (!outFile || (std::filesystem::rename(partial, *out, ec), ec)) {
      std::filesystem::remove(partial, ec);
      throw ConfigError("--out: write to '" + *out + "' failed");
    }
    std::fprintf(stderr, "wrote %s\n", out->c_str());
  }
  return 0;
}

}  // namespace gossip::cmd
