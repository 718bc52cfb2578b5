#include "daemon/config/config_schema.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <type_traits>

namespace gossip::daemon::detail {

// The schema's integer alternatives must be the exact types CompressorSpec uses (unsigned), so that
// &c.compressor.bits converts to a Slot.
static_assert(std::is_same_v<unsigned, std::uint32_t>, "gossipd assumes a 32-bit unsigned int");

namespace {

template <auto& names>
std::span<const std::string_view> choicesOf() {
  return names;
}

// K(section, field, range, choices): a key whose name is the struct field's name.
#define K(sec, field, ...) \
  KeySpec { #sec, #field, [](Config& c) -> Slot { return &c.sec.field; } __VA_OPT__(, ) __VA_ARGS__ }

const KeySpec kSchema[] = {
    K(node, id),
    K(node, listen),
    K(node, advertise),
    K(node, http),
    K(node, data_dir),
    K(node, checkpoint_every, Range::atLeast(0)),
    K(node, keep_checkpoints, Range::atLeast(1)),
    K(node, log_level, {}, choicesOf<kLogLevels>),
    K(node, log_levels),  // checked with logging::parseOverrides in validate()
    K(node, log_format, {}, choicesOf<kLogFormats>),

    K(cluster, name),  // checked in validate()
    K(cluster, nodes, Range::closed(1, kMaxSimNodes)),  // gossipd run: kMaxNodes (cmd_run.cc)
    K(cluster, topology),  // checked with topology::parseKind in validate()
    K(cluster, degree, Range::atLeast(1)),
    K(cluster, extra, Range::atLeast(0)),
    K(cluster, rows, Range::atLeast(0)),
    K(cluster, edge_prob, Range::closed(0, 1)),
    K(cluster, edges),
    K(cluster, weights),  // checked with topology::parseWeightRule in validate(), as `gossipd topo` does
    K(cluster, seed),
    K(cluster, seeds),
    K(cluster, probe_interval_ms, Range::atLeast(10)),
    K(cluster, probe_timeout_ms, Range::atLeast(1)),
    K(cluster, indirect_probes, Range::atLeast(0)),
    K(cluster, suspicion_mult, Range::atLeast(1)),
    K(cluster, recontact_interval_ms, Range::atLeast(0)),
    K(cluster, start_timeout_ms, Range::atLeast(0)),
    K(cluster, link_timeout_ms, Range::atLeast(10)),

    K(algorithm, name, {}, choicesOf<kAlgorithmNames>),
    K(algorithm, lr, Range::above(0)),
    K(algorithm, lr_auto),
    K(algorithm, lr_schedule, {}, choicesOf<kLrSchedules>),
    K(algorithm, lr_decay, Range::atLeast(0)),
    K(algorithm, lr_decay_every, Range::atLeast(0)),
    K(algorithm, eta, Range::leftOpen(0, 1)),
    K(algorithm, gamma, Range::atLeast(0)),
    K(algorithm, gamma_adapt),
    K(algorithm, alpha, Range::leftOpen(0, 1)),
    K(algorithm, local_steps, Range::atLeast(1)),
    K(algorithm, local_schedule, {}, choicesOf<kLocalSchedules>),
    K(algorithm, local_steps_max, Range::atLeast(1)),
    K(algorithm, rounds, Range::atLeast(1)),
    K(algorithm, leader_pull, Range::atLeast(0)),
    K(algorithm, leader_period, Range::atLeast(1)),
    K(algorithm, leader_base, {}, choicesOf<kLeaderBases>),
    K(algorithm, leader_global_pull, Range::closed(0, 1)),
    K(algorithm, leader_global_period, Range::atLeast(1)),
    K(algorithm, distill_weight, Range::atLeast(0)),
    K(algorithm, distill_period, Range::atLeast(1)),
    K(algorithm, distill_reference),
    K(algorithm, distill_reference_rows, Range::atLeast(1)),
    K(algorithm, final_consensus_rounds, Range::atLeast(0)),
    K(algorithm, final_consensus_codec, {}, choicesOf<kConsensusCodecs>),
    K(algorithm, round_timeout_ms, Range::atLeast(1)),
    K(algorithm, estimator, {}, choicesOf<kEstimators>),
    K(algorithm, batch, Range::atLeast(1)),
    K(algorithm, lsvrg_p, Range::closed(0, 1)),

    K(compressor, name, {}, compress::compressorNames),
    K(compressor, ratio, Range::leftOpen(0, 1)),
    K(compressor, k, Range::atLeast(0)),
    // bits and levels travel in the codec header's u16 parameter.
    K(compressor, bits, Range::closed(1, 16)),
    K(compressor, levels, Range::closed(1, 65535)),
    K(compressor, block, Range::atLeast(0)),
    K(compressor, codes, Range::closed(1, 65535)),
    K(compressor, unbiased),
    K(compressor, inf_norm),
    KeySpec{"compressor", "beta", [](Config& c) -> Slot { return &c.compressor_beta; }, Range::leftOpen(0, 1)},
    KeySpec{"compressor", "cltk_delay", [](Config& c) -> Slot { return &c.compressor_cltk_delay; }, Range::atLeast(0)},
    KeySpec{"compressor", "cltk_period", [](Config& c) -> Slot { return &c.compressor_cltk_period; }, Range::atLeast(1)},
    KeySpec{"compressor", "lgc_warmup", [](Config& c) -> Slot { return &c.compressor_lgc_warmup; }, Range::atLeast(0)},
    KeySpec{"compressor", "lgc_window", [](Config& c) -> Slot { return &c.compressor_lgc_window; }, Range::atLeast(1)},
    KeySpec{"compressor", "lgc_delay", [](Config& c) -> Slot { return &c.compressor_lgc_delay; }, Range::atLeast(0)},

    K(model, kind, {}, choicesOf<kModelKinds>),
    K(model, hidden, Range::atLeast(1)),
    K(model, l1, Range::atLeast(0)),
    K(model, l2, Range::atLeast(0)),

    K(data, format, {}, choicesOf<kDataFormats>),
    K(data, train),
    K(data, test),
    K(data, train_labels),
    K(data, test_labels),
    K(data, label_column),
    K(data, header),
    K(data, regression),
    K(data, scaling, {}, choicesOf<kScalings>),
    K(data, partition, {}, choicesOf<kPartitions>),
    K(data, dirichlet_alpha, Range::above(0)),
    K(data, max_train, Range::atLeast(0)),
    K(data, max_test, Range::atLeast(0)),
    K(data, synthetic_samples, Range::atLeast(1)),
    K(data, synthetic_dim, Range::atLeast(1)),
    K(data, synthetic_heterogeneity, Range::atLeast(0)),
    K(data, shards, Range::atLeast(0)),
    K(data, seed),

    K(faults, drop, Range::rightOpen(0, 1)),
    K(faults, link_mbit, Range::atLeast(0)),
    K(faults, crash),
    K(faults, join),

    K(sim, eval_every, Range::atLeast(1)),
    K(sim, eval_test_max, Range::atLeast(0)),
    K(sim, threads, Range::atLeast(1)),

    K(monitor, eval_every, Range::atLeast(0)),
    K(monitor, eval_test_max, Range::atLeast(0)),
    K(monitor, status_every_ms, Range::atLeast(50)),
    K(monitor, progress_every_ms, Range::atLeast(100)),

    K(security, enable),
    K(security, keys_dir),

    K(trainer, enable),
    K(trainer, mode, {}, choicesOf<kTrainerModes>),
    K(trainer, idle_timeout_ms, Range::atLeast(100)),
    K(trainer, copy_threads, Range::closed(0, 64)),
};
#undef K

constexpr std::array<std::string_view, 11> kSections{"node",   "cluster", "algorithm", "compressor", "model",   "data",
                                                     "faults", "sim",     "monitor",   "security",   "trainer"};

// Levenshtein distance with adjacent transpositions counted as one edit ("ratoi" -> "ratio").
std::size_t editDistance(std::string_view a, std::string_view b) {
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::size_t> prev2(m + 1), prev(m + 1), cur(m + 1);
  for (std::size_t j = 0; j <= m; ++j) prev[j] = j;
  for (std::size_t i = 1; i <= n; ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= m; ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) cur[j] = std::min(cur[j], prev2[j - 2] + 1);
    }
    std::swap(prev2, prev);
    std::swap(prev, cur);
  }
  return prev[m];
}

}  // namespace

std::span<const KeySpec> schema() { return kSchema; }

std::span<const std::string_view> sectionNames() { return kSections; }

const KeySpec* findKey(std::string_view section, std::string_view name) {
  for (const auto& k : kSchema)
    if (k.section == section && k.name == name) return &k;
  return nullptr;
}

bool Range::contains(double v) const {
  const bool lo_ok = lo_open ? v > lo : v >= lo;
  const bool hi_ok = hi_open ? v < hi : v <= hi;
  return lo_ok && hi_ok;
}

std::string Range::describe() const {
  const bool has_lo = std::isfinite(lo), has_hi = std::isfinite(hi);
  if (has_lo && has_hi)
    return "must be in " + std::string(lo_open ? "(" : "[") + formatNumber(lo) + "," + formatNumber(hi) +
           (hi_open ? ")" : "]");
  if (has_lo) return std::string(lo_open ? "must be > " : "must be >= ") + formatNumber(lo);
  if (has_hi) return std::string(hi_open ? "must be < " : "must be <= ") + formatNumber(hi);
  return "must be a finite number";
}

std::string_view closestMatch(std::string_view word, std::span<const std::string_view> candidates) {
  std::string_view best;
  std::size_t best_d = 3;  // more than two edits is not a typo
  for (auto c : candidates) {
    const std::size_t d = editDistance(word, c);
    if (d < best_d && d < word.size()) {
      best = c;
      best_d = d;
    }
  }
  return best;
}

std::string didYouMean(std::string_view word, std::span<const std::string_view> candidates, std::string_view prefix) {
  const auto m = closestMatch(word, candidates);
  if (m.empty()) return "";
  return " (did you mean '" + std::string(prefix) + std::string(m) + "'?)";
}

std::string formatNumber(double v) {
  // Whole numbers as integers: the shortest form of 100000.0 is "1e+05", which read oddly for an integer
  // key ("cluster.nodes must be in [1,65536] (got 1e+05)", issue 28).
  if (std::isfinite(v) && v == std::trunc(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<long long>(v));
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::string("?");
}

}  // namespace gossip::daemon::detail
