#include "daemon/monitor/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>

namespace gossip::daemon {

Histogram::Histogram(std::vector<double> upperBounds) : bounds_(std::move(upperBounds)), counts_(bounds_.size() + 1, 0) {
  if (!std::is_sorted(bounds_.begin(), bounds_.end()) ||
      std::adjacent_find(bounds_.begin(), bounds_.end()) != bounds_.end() ||
      std::any_of(bounds_.begin(), bounds_.end(), [](double b) { return !std::isfinite(b); }))
    throw std::invalid_argument("histogram bounds must be finite and strictly ascending");
}

void Histogram::observe(double v) {
  // The first bucket whose upper bound is >= v (Prometheus buckets are "le": less or equal).
  const auto it = std::lower_bound(bounds_.begin(), bounds_.end(), v);
  ++counts_[static_cast<std::size_t>(it - bounds_.begin())];
  sum_ += v;
  ++count_;
}

std::string escapeLabelValue(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char ch : v) {
    if (ch == '\\') out += "\\\\";
    else if (ch == '"') out += "\\\"";
    else if (ch == '\n') out += "\\n";
    else out += ch;
  }
  return out;
}

std::string formatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general);  // shortest, %g-style: 0.0005, 1e+20
  return std::string(buf, r.ptr);
}

namespace {

class Writer {
 public:
  // One metric family: HELP and TYPE once, then its samples.
  Writer& family(std::string_view name, std::string_view type, std::string_view help) {
    name_ = name;
    out_.append("# HELP ").append(name).append(1, ' ');
    for (char ch : help) {  // HELP text escapes only backslash and newline
      if (ch == '\\') out_ += "\\\\";
      else if (ch == '\n') out_ += "\\n";
      else out_ += ch;
    }
    out_.append("\n# TYPE ").append(name).append(1, ' ').append(type).append(1, '\n');
    return *this;
  }
  using Labels = std::initializer_list<std::pair<std::string_view, std::string_view>>;
  Writer& sample(double v, Labels labels = {}, std::string_view suffix = {}) {
    return line(suffix, labels, formatValue(v));
  }
  Writer& sample(std::uint64_t v, Labels labels = {}, std::string_view suffix = {}) {
    return line(suffix, labels, std::to_string(v));
  }
  std::string take() { return std::move(out_); }

 private:
  Writer& line(std::string_view suffix, Labels labels, const std::string& value) {
    out_.append(name_).append(suffix);
    if (labels.size()) {
      out_ += '{';
      bool first = true;
      for (const auto& [k, v] : labels) {
        if (!first) out_ += ',';
        first = false;
        out_.append(k).append("=\"").append(escapeLabelValue(v)).append(1, '"');
      }
      out_ += '}';
    }
    out_.append(1, ' ').append(value).append(1, '\n');
    return *this;
  }

  std::string out_;
  std::string_view name_;
};

std::uint64_t u(bool b) { return b ? 1 : 0; }

}  // namespace

std::string renderMetrics(const NodeMetrics& m) {
  Writer w;
  const std::string id = std::to_string(m.id);
  w.family("gossipd_node_info", "gauge", "Identity of this node (always 1): its id and advertised endpoint.")
      .sample(std::uint64_t{1}, {{"node_id", id}, {"endpoint", m.endpoint}});
  w.family("gossipd_state", "gauge", "1 for the node's current life-cycle state, 0 for the others.");
  for (auto s : kNodeStates) w.sample(u(m.state == s), {{"state", s}});
  w.family("gossipd_incarnation", "gauge", "The node's life counter: 0 on its first start, +1 on every restart or rejoin.")
      .sample(m.incarnation);
  w.family("gossipd_uptime_seconds", "gauge", "Seconds since this process started.").sample(m.uptime_seconds);
  w.family("gossipd_round", "gauge", "The next training round this node runs (rounds completed, counting from 0).")
      .sample(m.round);
  w.family("gossipd_rounds_configured", "gauge", "algorithm.rounds: the round at which the node finishes.")
      .sample(m.rounds_configured);
  w.family("gossipd_train_loss", "gauge", "Training loss of the node's last local step.").sample(m.train_loss);
  if (m.test_accuracy)
    w.family("gossipd_test_accuracy_ratio", "gauge",
             "Accuracy (0..1) of the node's model on its test rows at the last evaluation (monitor.eval_every).")
        .sample(*m.test_accuracy);
  if (m.disagreement)
    w.family("gossipd_disagreement", "gauge",
             "|| y_i - sum_j w_ij y_j ||_2 in the last mixed round, over the values the algorithm mixes (the model for "
             "D-PSGD; compressed sketches or public replicas for the others: docs/monitoring.md).")
        .sample(*m.disagreement);
  w.family("gossipd_drift_warning", "gauge",
           "1 once the node warned that its training looks unstable (drift_warning in status.json), else 0.")
      .sample(u(m.drift_warning));
  if (m.trainer) {
    w.family("gossipd_trainer_state", "gauge", "trainer.enable: 1 for the trainer bridge's current state, 0 for the others.");
    for (auto s : kTrainerStates) w.sample(u(m.trainer->state == s), {{"state", s}});
    w.family("gossipd_trainer_rounds_total", "counter", "Rounds begun from the trainer's requests.").sample(m.trainer->rounds);
    w.family("gossipd_trainer_copy_seconds_total", "counter",
             "Seconds in the trainer bridge's shared-memory reads and writes, conversions included.")
        .sample(m.trainer->copy_seconds);
  }
  w.family("gossipd_isolated", "gauge", "1 while every other member is dead to this node and its rounds are held, else 0.")
      .sample(u(m.isolated));
  w.family("gossipd_alive_members", "gauge", "Members in this node's alive view (alive or suspect), itself included.")
      .sample(m.alive_members);
  w.family("gossipd_neighbors", "gauge", "Edges of this node in the current graph (agreed or being agreed).")
      .sample(m.neighbors);

  w.family("gossipd_bytes_sent_total", "counter",
           "Bytes of frames (header and payload) this node handed to the transport, by destination peer id.");
  for (const auto& l : m.links) w.sample(l.bytes_sent, {{"peer", l.peer}});
  w.family("gossipd_bytes_received_total", "counter", "Bytes of frames (header and payload) received, by sender peer id.");
  for (const auto& l : m.links) w.sample(l.bytes_received, {{"peer", l.peer}});
  w.family("gossipd_model_bytes_sent_total", "counter", "Bytes of model frames sent (headers included), all peers.")
      .sample(m.model_bytes_sent);
  if (m.compression_ratio)
    w.family("gossipd_compression_ratio", "gauge",
             "Uncompressed size of the model (4 bytes per parameter) divided by the mean payload size of the model "
             "frames sent so far.")
        .sample(*m.compression_ratio);
  w.family("gossipd_retransmitted_frames_total", "counter", "Frames sent again for lack of an acknowledgement.")
      .sample(m.retransmitted);
  w.family("gossipd_missing_messages_total", "counter",
           "Stateless rounds that mixed a neighbour's substitute because its message did not arrive in time.")
      .sample(m.messages_missing);
  w.family("gossipd_rejected_messages_total", "counter", "Frames and messages this node refused, by reason.");
  for (const auto& [reason, n] : m.rejected_by_reason) w.sample(n, {{"reason", reason}});
  w.family("gossipd_joins_refused_total", "counter",
           "Joins this node refused, by reason: identity (another cluster's configuration), duplicate_id (a live "
           "member's node.id from another data directory).");
  for (const char* reason : {"identity", "duplicate_id"}) {
    const auto it = m.joins_refused.find(reason);
    w.sample(it == m.joins_refused.end() ? 0 : it->second, {{"reason", reason}});
  }
  w.family("gossipd_suspicions_total", "counter", "Members this node learned were suspected of having failed.")
      .sample(m.suspicions);
  w.family("gossipd_refutations_total", "counter",
           "Suspicions this node learned were refuted (the suspected member proved alive).")
      .sample(m.refutations);
  w.family("gossipd_deaths_total", "counter", "Members this node learned were declared dead.").sample(m.deaths);
  w.family("gossipd_death_verdicts_total", "counter",
           "Dead verdicts on this node's own life, by outcome: contested (a Join sent to the accuser), refused (this "
           "node's camp outnumbered the accuser's side) and returned (the accuser declared dead by this node, so "
           "that it rejoins).");
  for (const char* outcome : {"contested", "refused", "returned"}) {
    const auto it = m.death_verdicts.find(outcome);
    w.sample(it == m.death_verdicts.end() ? 0 : it->second, {{"outcome", outcome}});
  }
  w.family("gossipd_disconnects_total", "counter", "Peer connections the transport saw break (each one a probe hint).")
      .sample(m.disconnects);
  w.family("gossipd_state_transfers_sent_total", "counter", "Models sent to joining or restarted peers.")
      .sample(m.state_transfers_sent);
  w.family("gossipd_state_transfers_received_total", "counter", "Models received by state transfer and installed.")
      .sample(m.state_transfers_received);

  w.family("gossipd_peer_up", "gauge", "1 when the member is in this node's alive view (alive or suspect), else 0.");
  for (const auto& p : m.members) w.sample(u(p.up), {{"peer", p.peer}});
  w.family("gossipd_peer_suspect", "gauge", "1 while the member is suspected of having failed.");
  for (const auto& p : m.members) w.sample(u(p.suspect), {{"peer", p.peer}});
  w.family("gossipd_peer_last_heard_seconds", "gauge", "Seconds since the last frame from the member.");
  for (const auto& p : m.members)
    if (p.last_heard_seconds) w.sample(*p.last_heard_seconds, {{"peer", p.peer}});

  if (m.self_weight) {
    w.family("gossipd_mixing_weight", "gauge",
             "This node's row of the mixing matrix W in its current view: w_ij by neighbour, w_ii as peer=\"self\".");
    w.sample(*m.self_weight, {{"peer", "self"}});
    for (const auto& [peer, weight] : m.mixing_weights) w.sample(weight, {{"peer", peer}});
  }
  if (m.spectral_gap)
    w.family("gossipd_spectral_gap", "gauge", "1 - ||W - 11^T/n||_2 of the mixing matrix of this node's view graph.")
        .sample(*m.spectral_gap);

  if (m.round_duration) {
    const Histogram& h = *m.round_duration;
    w.family("gossipd_round_duration_seconds", "histogram",
             "Wall time of a round, from its local step to the end of its mixing.");
    std::uint64_t cum = 0;
    for (std::size_t i = 0; i < h.bounds().size(); ++i) {
      cum += h.perBucket()[i];
      const std::string le = formatValue(h.bounds()[i]);
      w.sample(cum, {{"le", le}}, "_bucket");
    }
    w.sample(h.count(), {{"le", "+Inf"}}, "_bucket");
    w.sample(h.sum(), {}, "_sum");
    w.sample(h.count(), {}, "_count");
  }
  w.family("gossipd_compute_seconds_total", "counter",
           "Wall time spent inside the algorithm (local steps, encoding, decoding, mixing).")
      .sample(m.compute_seconds);
  if (m.checkpoint_age_seconds)
    w.family("gossipd_checkpoint_age_seconds", "gauge", "Seconds since this process last wrote a checkpoint.")
        .sample(*m.checkpoint_age_seconds);
  w.family("gossipd_last_checkpoint_round", "gauge", "The round the newest checkpoint continues at (0: none yet).")
      .sample(m.last_checkpoint_round);
  return w.take();
}

}  // namespace gossip::daemon
