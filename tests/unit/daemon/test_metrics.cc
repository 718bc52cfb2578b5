// /metrics writer (daemon/monitor/metrics.h): the exposition format, checked line by line.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "daemon/monitor/metrics.h"

using namespace gossip::daemon;

namespace {

struct Sample {
  std::string name;    // with suffix (_bucket, _sum, _count)
  std::string labels;  // raw text between the braces
  std::string value;
};

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

Sample parse(const std::string& line) {
  Sample s;
  const auto brace = line.find('{');
  const auto space = line.rfind(' ');
  REQUIRE(space != std::string::npos);
  if (brace != std::string::npos && brace < space) {
    s.name = line.substr(0, brace);
    const auto close = line.rfind('}');
    REQUIRE(close != std::string::npos);
    s.labels = line.substr(brace + 1, close - brace - 1);
  } else {
    s.name = line.substr(0, space);
  }
  s.value = line.substr(space + 1);
  return s;
}

NodeMetrics example(const Histogram* h) {
  NodeMetrics m;
  m.id = 3;
  m.incarnation = 1;
  m.state = "training";
  m.endpoint = "tcp://127.0.0.1:7000";
  m.round = 42;
  m.rounds_configured = 100;
  m.train_loss = 0.25;
  m.test_accuracy = 0.8;
  m.alive_members = 3;
  m.neighbors = 2;
  m.links = {{"1", 100, 200}, {"2", 300, 400}, {"unknown", 5, 0}};
  m.compression_ratio = 25.5;
  m.rejected_by_reason = {{"late", 2}, {"bad_magic", 1}};
  m.joins_refused = {{"identity", 3}};
  m.members = {{"1", true, false, 0.125}, {"2", true, true, 1.5}, {"5", false, false, std::nullopt}};
  m.round_duration = h;
  m.checkpoint_age_seconds = 3.5;
  m.trainer = NodeMetrics::Trainer{"attached", 40, 0.25};
  return m;
}

}  // namespace

TEST_CASE("every sample belongs to a family announced by HELP and TYPE just before it") {
  Histogram h({0.01, 0.1, 1});
  h.observe(0.005);
  const std::string text = renderMetrics(example(&h));
  std::map<std::string, std::string> types;  // family -> type
  std::set<std::string> helped;
  std::string current;
  for (const auto& l : lines(text)) {
    REQUIRE_FALSE(l.empty());
    if (l.starts_with("# HELP ")) {
      const std::string name = l.substr(7, l.find(' ', 7) - 7);
      CHECK_MESSAGE(helped.insert(name).second, "HELP twice for " << name);
      current = name;
      continue;
    }
    if (l.starts_with("# TYPE ")) {
      const auto sp = l.find(' ', 7);
      const std::string name = l.substr(7, sp - 7);
      CHECK(name == current);  // TYPE right after its HELP
      types[name] = l.substr(sp + 1);
      continue;
    }
    const Sample s = parse(l);
    std::string family = s.name;
    for (const char* suffix : {"_bucket", "_sum", "_count"})
      if (types.count(current) && types[current] == "histogram" && family == current + suffix) family = current;
    CHECK_MESSAGE(family == current, "sample " << s.name << " outside its family " << current);
    REQUIRE(types.count(family));
    if (types[family] == "counter") CHECK_MESSAGE(family.ends_with("_total"), family << " is a counter without _total");
    CHECK(family.starts_with("gossipd_"));
  }
  for (const char* name : {"gossipd_round", "gossipd_train_loss", "gossipd_test_accuracy_ratio", "gossipd_bytes_sent_total",
                           "gossipd_bytes_received_total", "gossipd_compression_ratio", "gossipd_rejected_messages_total",
                           "gossipd_suspicions_total", "gossipd_deaths_total", "gossipd_death_verdicts_total",
                           "gossipd_state_transfers_sent_total",
                           "gossipd_state_transfers_received_total", "gossipd_peer_up", "gossipd_peer_last_heard_seconds",
                           "gossipd_round_duration_seconds", "gossipd_checkpoint_age_seconds", "gossipd_incarnation",
                           "gossipd_neighbors"})
    CHECK_MESSAGE(types.count(name), name << " missing");
  CHECK(types["gossipd_round_duration_seconds"] == "histogram");
  CHECK(text.find("gossipd_rejected_messages_total{reason=\"late\"} 2\n") != std::string::npos);
  CHECK(text.find("gossipd_joins_refused_total{reason=\"identity\"} 3\n") != std::string::npos);
  CHECK(text.find("gossipd_joins_refused_total{reason=\"duplicate_id\"} 0\n") != std::string::npos);
  CHECK(text.find("gossipd_bytes_sent_total{peer=\"2\"} 300\n") != std::string::npos);
  CHECK(text.find("gossipd_peer_up{peer=\"5\"} 0\n") != std::string::npos);
  CHECK(text.find("gossipd_state{state=\"training\"} 1\n") != std::string::npos);
  CHECK(text.find("gossipd_state{state=\"joining\"} 0\n") != std::string::npos);
  // A member never heard from has no last-heard sample.
  CHECK(text.find("gossipd_peer_last_heard_seconds{peer=\"5\"}") == std::string::npos);
  CHECK(text.find("gossipd_peer_last_heard_seconds{peer=\"1\"} 0.125\n") != std::string::npos);
}

TEST_CASE("metrics that do not exist yet are left out - not written as zero") {
  NodeMetrics m = example(nullptr);
  m.test_accuracy.reset();
  m.compression_ratio.reset();
  m.checkpoint_age_seconds.reset();
  m.trainer.reset();
  const std::string text = renderMetrics(m);
  CHECK(text.find("gossipd_test_accuracy_ratio") == std::string::npos);
  CHECK(text.find("gossipd_compression_ratio") == std::string::npos);
  CHECK(text.find("gossipd_checkpoint_age_seconds") == std::string::npos);
  CHECK(text.find("gossipd_round_duration_seconds") == std::string::npos);
  CHECK(text.find("gossipd_trainer_") == std::string::npos);  // no trainer.enable: no trainer families
  CHECK(text.find("gossipd_drift_warning 0\n") != std::string::npos);
  CHECK(text.find("gossipd_isolated 0\n") != std::string::npos);
}

TEST_CASE("the trainer bridge's state - rounds and copy time - and the drift warning") {
  NodeMetrics m = example(nullptr);
  m.drift_warning = true;
  m.trainer = NodeMetrics::Trainer{"detached", 17, 0.5};
  const std::string text = renderMetrics(m);
  CHECK(text.find("gossipd_drift_warning 1\n") != std::string::npos);
  CHECK(text.find("gossipd_trainer_state{state=\"attached\"} 0\n") != std::string::npos);
  CHECK(text.find("gossipd_trainer_state{state=\"detached\"} 1\n") != std::string::npos);
  CHECK(text.find("gossipd_trainer_state{state=\"none\"} 0\n") != std::string::npos);
  CHECK(text.find("gossipd_trainer_rounds_total 17\n") != std::string::npos);
  CHECK(text.find("gossipd_trainer_copy_seconds_total 0.5\n") != std::string::npos);
}

TEST_CASE("histogram buckets are cumulative - end in +Inf and agree with _count and _sum") {
  Histogram h(std::vector<double>(std::begin(kRoundDurationBuckets), std::end(kRoundDurationBuckets)));
  const double obs[] = {0.0001, 0.0005, 0.003, 0.003, 0.2, 0.7, 3, 50, 1e9};
  double sum = 0;
  for (double v : obs) {
    h.observe(v);
    sum += v;
  }
  const std::string text = renderMetrics(example(&h));
  std::vector<std::pair<std::string, std::uint64_t>> buckets;
  std::string sumText, countText;
  for (const auto& l : lines(text)) {
    if (l.starts_with("#")) continue;
    const Sample s = parse(l);
    if (s.name == "gossipd_round_duration_seconds_bucket") {
      REQUIRE(s.labels.starts_with("le=\""));
      buckets.emplace_back(s.labels.substr(4, s.labels.size() - 5), std::stoull(s.value));
    } else if (s.name == "gossipd_round_duration_seconds_sum") {
      sumText = s.value;
    } else if (s.name == "gossipd_round_duration_seconds_count") {
      countText = s.value;
    }
  }
  REQUIRE(buckets.size() == std::size(kRoundDurationBuckets) + 1);
  CHECK(buckets.back().first == "+Inf");
  CHECK(buckets.back().second == std::size(obs));
  for (std::size_t i = 1; i < buckets.size(); ++i) CHECK(buckets[i].second >= buckets[i - 1].second);
  for (std::size_t i = 0; i + 1 < buckets.size(); ++i) {
    const double le = std::stod(buckets[i].first);
    CHECK(le == kRoundDurationBuckets[i]);
    std::uint64_t want = 0;
    for (double v : obs) want += v <= le;  // "le" is inclusive: 0.0005 falls into le="0.0005"
    CHECK_MESSAGE(buckets[i].second == want, "bucket le=" << buckets[i].first);
  }
  CHECK(countText == std::to_string(std::size(obs)));
  CHECK(std::stod(sumText) == doctest::Approx(sum));
}

TEST_CASE("label values are escaped") {
  CHECK(escapeLabelValue("plain") == "plain");
  CHECK(escapeLabelValue("a\\b") == "a\\\\b");
  CHECK(escapeLabelValue("say \"hi\"") == "say \\\"hi\\\"");
  CHECK(escapeLabelValue("two\nlines") == "two\\nlines");
  NodeMetrics m = example(nullptr);
  m.rejected_by_reason = {{"we\"ird\\re\nason", 7}};
  m.endpoint = "tcp://\"x\"";
  const std::string text = renderMetrics(m);
  CHECK(text.find("gossipd_rejected_messages_total{reason=\"we\\\"ird\\\\re\\nason\"} 7\n") != std::string::npos);
  CHECK(text.find("endpoint=\"tcp://\\\"x\\\"\"") != std::string::npos);
  for (const auto& l : lines(text)) CHECK(!l.empty());  // no raw newline broke a sample in two
}

TEST_CASE("values: shortest round-trip numbers and the special values") {
  CHECK(formatValue(0.25) == "0.25");
  CHECK(formatValue(42) == "42");
  CHECK(formatValue(0.1) == "0.1");
  CHECK(formatValue(0.0005) == "0.0005");
  CHECK(std::stod(formatValue(1.0 / 3)) == 1.0 / 3);
  CHECK(formatValue(std::numeric_limits<double>::quiet_NaN()) == "NaN");
  CHECK(formatValue(std::numeric_limits<double>::infinity()) == "+Inf");
  CHECK(formatValue(-std::numeric_limits<double>::infinity()) == "-Inf");
  CHECK_THROWS(Histogram({1, 0.5}));
  CHECK_THROWS(Histogram({0.5, 0.5}));
}
