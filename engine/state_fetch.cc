#include "engine/state_fetch.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"

namespace gossip::engine {

StateFetch::StateFetch(std::size_t dim, StateFetchOptions options, std::uint64_t nowMs)
    : opt_(options), values_(static_cast<Eigen::Index>(dim)), lastProgressMs_(nowMs) {
  GOSSIP_CHECK(opt_.chunk_values > 0 && opt_.request_chunks > 0 && opt_.window_chunks >= opt_.request_chunks,
               "state fetch options");
  // A model of dimension 0 still has one (empty) chunk: its answer tells the round.
  const std::size_t chunks = std::max<std::size_t>(1, (dim + opt_.chunk_values - 1) / opt_.chunk_values);
  have_.assign(chunks, false);
  owner_.assign(chunks, kNone);
  missing_ = chunks;
}

std::size_t StateFetch::chunkLength(std::size_t k) const {
  const std::size_t at = k * opt_.chunk_values;
  return at >= dim() ? 0 : std::min(opt_.chunk_values, dim() - at);
}

StateFetch::Source* StateFetch::source(PeerId id) {
  for (auto& s : sources_)
    if (s.id == id) return &s;
  return nullptr;
}

bool StateFetch::isSource(PeerId id) const {
  return std::any_of(sources_.begin(), sources_.end(), [&](const Source& s) { return s.id == id; });
}

void StateFetch::addSources(std::span<const PeerId> sources, std::uint64_t nowMs) {
  for (PeerId id : sources) {
    // One already known keeps its requests in flight: asked again while its answer is on the way, it would
    // send the same chunks twice (silences are the timers' business, in due()).
    if (source(id)) continue;
    sources_.push_back(Source{.id = id, .heardMs = nowMs});
  }
}

std::optional<std::string> StateFetch::place(PeerId from, Round round, std::uint64_t at,
                                             std::span<const Real> values, std::uint64_t nowMs) {
  Source* s = source(from);
  if (!s) return "unrequested_state";
  // Chunks lie on this node's grid: a chunk that starts elsewhere or has another length was not asked for.
  if (at % opt_.chunk_values != 0 || (at >= dim() && !(at == 0 && dim() == 0)))
    return "bad_state_chunk";
  const std::size_t k = chunkOf(at);
  if (values.size() != chunkLength(k)) return "bad_state_chunk";
  for (Real v : values)
    if (!std::isfinite(v)) return "non_finite";
  s->heardMs = nowMs;
  s->served = true;
  if (owner_[k] != kNone) {
    --sources_[owner_[k]].inFlight;
    owner_[k] = kNone;
  }
  if (have_[k]) return std::nullopt;  // a late answer of a request given to another source too
  if (!values.empty()) std::memcpy(values_.data() + at, values.data(), values.size_bytes());
  have_[k] = true;
  --missing_;
  valuesHave_ += values.size();
  round_ = std::max(round_, round);
  lastProgressMs_ = nowMs;
  return std::nullopt;
}

void StateFetch::due(std::uint64_t nowMs, std::vector<StateAsk>& out) {
  // Silent sources hand their chunks back to the others and get none for as long as they were silent:
  // first_silence_ms for one that never answered (our first requests may have come before it knew us),
  // silence_ms for one that served and stopped.
  for (std::size_t i = 0; i < sources_.size(); ++i) {
    Source& s = sources_[i];
    const std::uint64_t silence = s.served ? opt_.silence_ms : opt_.first_silence_ms;
    if (s.inFlight > 0 && nowMs >= s.heardMs + silence) release(i, nowMs, silence);
  }
  // Free chunks to sources with room, a run of up to request_chunks at a time, round-robin over the sources.
  bool gave = true;
  while (gave && missing_ > 0) {
    gave = false;
    for (std::size_t i = 0; i < sources_.size(); ++i) {
      Source& s = sources_[i];
      if (nowMs < s.pausedUntil || s.inFlight + opt_.request_chunks > opt_.window_chunks) continue;
      while (cursor_ < have_.size() && (have_[cursor_] || owner_[cursor_] != kNone)) ++cursor_;
      if (cursor_ == have_.size()) return;
      std::size_t end = cursor_;
      while (end < have_.size() && end - cursor_ < opt_.request_chunks && !have_[end] && owner_[end] == kNone) {
        owner_[end] = static_cast<std::uint32_t>(i);
        ++end;
      }
      if (s.inFlight == 0) s.heardMs = nowMs;  // its silence counts from now, not from its last answer
      s.inFlight += end - cursor_;
      const std::uint64_t at = cursor_ * opt_.chunk_values;
      const std::uint64_t stop = std::min<std::uint64_t>(end * opt_.chunk_values, dim());
      out.push_back(StateAsk{.to = s.id, .at = at, .count = stop - std::min(at, stop), .chunk = opt_.chunk_values});
      cursor_ = end;
      gave = true;
    }
  }
}

void StateFetch::release(std::size_t i, std::uint64_t nowMs, std::uint64_t pauseMs) {
  for (std::size_t k = 0; k < owner_.size(); ++k)
    if (owner_[k] == i) owner_[k] = kNone;
  sources_[i].inFlight = 0;
  sources_[i].pausedUntil = nowMs + pauseMs;
  cursor_ = 0;
}

std::size_t StateFetch::sourcesServing() const {
  return static_cast<std::size_t>(std::count_if(sources_.begin(), sources_.end(), [](const Source& s) { return s.served; }));
}

}  // namespace gossip::engine
