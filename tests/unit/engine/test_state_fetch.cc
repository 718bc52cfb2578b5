// StateFetch, the receiving side of a state transfer as a schedule (engine/state_fetch.h): windows per
// source, round-robin over sources, silent sources' chunks handed on, duplicates harmless, resumable.
#include <doctest/doctest.h>

#include <limits>
#include <map>
#include <vector>

#include "engine/state_fetch.h"

using namespace gossip;
using namespace gossip::engine;

namespace {
std::map<PeerId, std::size_t> chunksAsked(const std::vector<StateAsk>& asks, std::size_t C) {
  std::map<PeerId, std::size_t> n;
  for (const auto& a : asks) n[a.to] += (a.count + C - 1) / C;
  return n;
}
std::vector<Real> ones(std::size_t n, Real v) { return std::vector<Real>(n, v); }
}  // namespace

TEST_CASE("state fetch: requests fill each source's window round-robin and cover the model once") {
  StateFetch f(100, {.chunk_values = 10, .request_chunks = 2, .window_chunks = 4, .silence_ms = 50}, 0);
  const std::vector<PeerId> src = {7, 9};
  f.addSources(src, 0);
  std::vector<StateAsk> asks;
  f.due(0, asks);
  const auto n = chunksAsked(asks, 10);
  CHECK(n.at(7) == 4);
  CHECK(n.at(9) == 4);
  CHECK(asks.front().to == 7);
  CHECK(asks[1].to == 9);  // round-robin, a run of request_chunks at a time
  for (const auto& a : asks) {
    CHECK(a.chunk == 10);
    CHECK(a.at % 10 == 0);
  }
  asks.clear();
  f.due(0, asks);
  CHECK(asks.empty());  // windows full
  // One chunk in from 7 makes room for... nothing yet: a request is a run of 2 chunks.
  CHECK_FALSE(f.place(7, 3, 0, ones(10, 1), 1));
  f.due(1, asks);
  CHECK(asks.empty());
  CHECK_FALSE(f.place(7, 3, 20, ones(10, 1), 1));  // chunk 2 was given to 9: taken all the same
  CHECK_FALSE(f.place(7, 3, 10, ones(10, 1), 1));
  f.due(1, asks);
  REQUIRE(asks.size() == 1);
  CHECK(asks[0].to == 7);
  CHECK(asks[0].at == 80);  // the next free run
  CHECK(asks[0].count == 20);
  CHECK(f.valuesHave() == 30);
  CHECK(f.sourcesServing() == 1);
}

TEST_CASE("state fetch: a source that served and fell silent loses its chunks to the others and is paused") {
  StateFetch f(40, {.chunk_values = 10, .request_chunks = 1, .window_chunks = 1, .silence_ms = 50, .first_silence_ms = 20}, 0);
  const std::vector<PeerId> src = {1, 2};
  f.addSources(src, 0);
  std::vector<StateAsk> asks;
  f.due(0, asks);
  REQUIRE(asks.size() == 2);  // chunk 0 to 1, chunk 1 to 2
  CHECK_FALSE(f.place(1, 4, 0, ones(10, 1), 5));
  CHECK_FALSE(f.place(2, 5, 10, ones(10, 2), 5));
  asks.clear();
  f.due(5, asks);
  REQUIRE(asks.size() == 2);  // chunk 2 to 1, chunk 3 to 2
  CHECK(asks[0].to == 1);
  CHECK(asks[0].at == 20);
  CHECK_FALSE(f.place(2, 5, 30, ones(10, 2), 10));
  asks.clear();
  f.due(54, asks);  // source 1 silent for 49 ms: keeps chunk 2
  CHECK(asks.empty());
  f.due(55, asks);  // silent for 50 ms: chunk 2 goes to 2
  REQUIRE(asks.size() == 1);
  CHECK(asks[0].to == 2);
  CHECK(asks[0].at == 20);
  CHECK_FALSE(f.complete());
  CHECK(f.lastProgressMs() == 10);
  // Source 1's late answer is taken (it is still a source); 2's copy of the same chunk is then a duplicate.
  CHECK_FALSE(f.place(1, 4, 20, ones(10, 1), 60));
  CHECK(f.complete());
  CHECK_FALSE(f.place(2, 5, 20, ones(10, 2), 61));
  CHECK(f.values()[20] == 1);
  CHECK(f.round() == 5);
}

TEST_CASE("state fetch: a source that never answered loses its chunks after first_silence_ms - named again it is not asked twice") {
  StateFetch f(20, {.chunk_values = 10, .request_chunks = 1, .window_chunks = 1, .silence_ms = 50, .first_silence_ms = 20}, 0);
  const std::vector<PeerId> src = {1, 2};
  f.addSources(src, 0);
  std::vector<StateAsk> asks;
  f.due(0, asks);
  REQUIRE(asks.size() == 2);  // chunk 0 to 1, chunk 1 to 2
  asks.clear();
  f.addSources(src, 3);  // named again while their answers are on the way: nothing is asked twice
  f.due(3, asks);
  CHECK(asks.empty());
  CHECK_FALSE(f.place(2, 5, 10, ones(10, 2), 5));
  f.due(19, asks);  // source 1 silent for 19 ms
  CHECK(asks.empty());
  f.due(20, asks);  // 20 ms: its chunk goes to source 2
  REQUIRE(asks.size() == 1);
  CHECK(asks[0].to == 2);
  CHECK(asks[0].at == 0);
  asks.clear();
  // Source 2 (it served: silence_ms) falls silent too; source 1, paused for first_silence_ms, takes the chunk.
  f.due(69, asks);
  CHECK(asks.empty());
  f.due(70, asks);
  REQUIRE(asks.size() == 1);
  CHECK(asks[0].to == 1);
  CHECK(asks[0].at == 0);
}

TEST_CASE("state fetch: strangers - chunks off the grid - non-finite values are refused") {
  StateFetch f(25, {.chunk_values = 10, .request_chunks = 1, .window_chunks = 1}, 0);
  const std::vector<PeerId> src = {1};
  f.addSources(src, 0);
  CHECK(f.place(3, 0, 0, ones(10, 1), 0) == std::optional<std::string>("unrequested_state"));
  CHECK(f.place(1, 0, 5, ones(10, 1), 0) == std::optional<std::string>("bad_state_chunk"));
  CHECK(f.place(1, 0, 20, ones(10, 1), 0) == std::optional<std::string>("bad_state_chunk"));  // the last chunk is 5
  CHECK(f.place(1, 0, 30, ones(5, 1), 0) == std::optional<std::string>("bad_state_chunk"));
  auto bad = ones(10, 1);
  bad[3] = std::numeric_limits<Real>::infinity();
  CHECK(f.place(1, 0, 0, bad, 0) == std::optional<std::string>("non_finite"));
  CHECK_FALSE(f.place(1, 0, 20, ones(5, 1), 0));
  CHECK(f.valuesHave() == 5);
}

TEST_CASE("state fetch: a model of dimension 0 is one empty chunk") {
  StateFetch f(0, {}, 0);
  const std::vector<PeerId> src = {1};
  f.addSources(src, 0);
  std::vector<StateAsk> asks;
  f.due(0, asks);
  REQUIRE(asks.size() == 1);
  CHECK(asks[0].count == 0);
  CHECK_FALSE(f.place(1, 8, 0, {}, 0));
  CHECK(f.complete());
  CHECK(f.round() == 8);
}
