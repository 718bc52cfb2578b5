#include "daemon/cli/cluster_progress.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>

namespace gossip::cmd {
void readStatus(Child& c) {
  std::ifstream in(c.dir / "status.json");
  if (!in) return;
  try {
    c.last = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception&) {
    // A file being replaced (rename is atomic, so this is rare): keep the last good one.
  }
}

std::string progressLine(const std::vector<Child>& children, Round rounds) {
  Round lo = ~Round{0}, hi = 0;
  double loss = 0, acc = 0;
  std::size_t withLoss = 0, withAcc = 0, running = 0;
  std::uint64_t bytes = 0, aliveMax = 0;
  std::map<std::string, int> states;
  for (const auto& c : children) {
    if (c.last.is_null()) {
      ++states[c.status ? "exited" : "starting"];
      continue;
    }
    const Round r = field<Round>(c.last, "round", 0);
    lo = std::min(lo, r);
    hi = std::max(hi, r);
    if (field<std::string>(c.last, "state", "") == "training") {
      loss += field<double>(c.last, "loss", 0);
      ++withLoss;
    }
    const double a = field<double>(c.last, "accuracy", -1);
    if (a >= 0) acc += a, ++withAcc;
    bytes += field<std::uint64_t>(c.last, "bytes_sent", 0);
    // Only the running nodes' views: a killed node's last status.json still counts itself and everyone
    // (issue 28: "alive 6/6" for the rest of a run after a kill -9).
    if (!c.status) aliveMax = std::max<std::uint64_t>(aliveMax, field<std::uint64_t>(c.last, "alive", 0));
    ++states[c.status ? "exited" : field<std::string>(c.last, "state", "?")];
    if (!c.status) ++running;
  }
  char buf[256];
  std::string s;
  if (hi > 0 || lo != ~Round{0}) {
    std::snprintf(buf, sizeof buf, "round %llu-%llu/%llu", static_cast<unsigned long long>(lo == ~Round{0} ? 0 : lo),
                  static_cast<unsigned long long>(hi), static_cast<unsigned long long>(rounds));
    s += buf;
  }
  if (withLoss) std::snprintf(buf, sizeof buf, "  loss %.4f", loss / double(withLoss)), s += buf;
  if (withAcc) std::snprintf(buf, sizeof buf, "  acc %.1f%%", 100 * acc / double(withAcc)), s += buf;
  std::snprintf(buf, sizeof buf, "  alive %llu/%zu  sent %.2f MB  [", static_cast<unsigned long long>(aliveMax),
                children.size(), static_cast<double>(bytes) / 1e6);
  s += buf;
  bool first = true;
  for (const auto& [state, n] : states) {
    s += (first ? "" : ", ") + std::to_string(n) + " " + state;
    first = false;
  }
  return s + "]";
}

}  // namespace gossip::cmd
