// The seeds of a membership life (daemon/node/join_seeds.h).
#include <doctest/doctest.h>

#include "daemon/node/join_seeds.h"

using namespace gossip;
using namespace gossip::daemon;

TEST_CASE("join seeds: the winning accuser first - then the configured seeds but our own - then those we knew - each once") {
  CHECK(joinSeeds("", {"tcp://a:1", "tcp://me:1"}, {"tcp://me:1"}, {}) == std::vector<std::string>{"tcp://a:1"});
  CHECK(joinSeeds("tcp://b:1", {"tcp://a:1", "tcp://b:1", "tcp://me:1"}, {"tcp://me:1", "tcp://me:2"},
                  {"tcp://c:1", "tcp://a:1", "tcp://me:2"}) ==
        std::vector<std::string>{"tcp://b:1", "tcp://a:1", "tcp://c:1"});
}

TEST_CASE("join seeds: a rejoin knows every member but itself and those who left") {
  using peer::MemberState;
  const std::vector<peer::MemberInfo> members{{.id = 0, .endpoint = "tcp://a:1", .state = MemberState::Alive},
                                              {.id = 1, .endpoint = "tcp://me:1", .state = MemberState::Alive},
                                              {.id = 2, .endpoint = "tcp://c:1", .state = MemberState::Dead},
                                              {.id = 3, .endpoint = "tcp://d:1", .state = MemberState::Left},
                                              {.id = 4, .endpoint = "tcp://e:1", .state = MemberState::Suspect}};
  CHECK(knownEndpoints(members, 1) == std::vector<std::string>{"tcp://a:1", "tcp://c:1", "tcp://e:1"});
}
