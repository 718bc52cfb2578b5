// node.advertise: the endpoint a node hands its peers (daemon/config/advertise.h), and the validation that keeps a
// wildcard bind from being advertised (a container binds tcp://0.0.0.0:7000 and advertises its name).
#include <doctest/doctest.h>

#include "daemon/config/advertise.h"
#include "daemon/config/http_address.h"
#include "tests/unit/daemon/config_test_util.h"

namespace gossip::daemon {
namespace {

using namespace testutil;

NodeConfig withAdvertise(std::string advertise) {
  NodeConfig n;
  n.advertise = std::move(advertise);
  return n;
}

TEST_CASE("splitTcpEndpoint takes host and port apart at the last colon") {
  const auto a = splitTcpEndpoint("tcp://gossip-3:7000");
  REQUIRE(a);
  CHECK(a->host == "gossip-3");
  CHECK(a->port == "7000");
  const auto v6 = splitTcpEndpoint("tcp://[::1]:7000");
  REQUIRE(v6);
  CHECK(v6->host == "[::1]");
  CHECK(splitTcpEndpoint("tcp://*:*"));
  for (const char* bad : {"ipc:///tmp/x", "tcp://host", "tcp://:7000", "tcp://host:", "tcp://host:70x0", "gossip-3"}) {
    CAPTURE(bad);
    CHECK_FALSE(splitTcpEndpoint(bad));
  }
}

TEST_CASE("wildcard hosts bind every interface - named hosts do not") {
  for (const char* any : {"tcp://0.0.0.0:7000", "tcp://*:7000", "tcp://[::]:7000"}) {
    CAPTURE(any);
    CHECK(bindsEveryInterface(any));
  }
  for (const char* one : {"tcp://127.0.0.1:0", "tcp://gossip-3:7000", "tcp://[::1]:7000", "not an endpoint"}) {
    CAPTURE(one);
    CHECK_FALSE(bindsEveryInterface(one));
  }
}

TEST_CASE("the advertised endpoint: bound one - a full endpoint as given - or a host with the bound port") {
  CHECK(advertisedEndpoint(withAdvertise(""), "tcp://127.0.0.1:41234") == "tcp://127.0.0.1:41234");
  CHECK(advertisedEndpoint(withAdvertise("tcp://10.1.2.3:9000"), "tcp://0.0.0.0:7000") == "tcp://10.1.2.3:9000");
  CHECK(advertisedEndpoint(withAdvertise("gossip-3"), "tcp://0.0.0.0:7000") == "tcp://gossip-3:7000");
  CHECK(advertisedEndpoint(withAdvertise("10.0.0.7"), "tcp://0.0.0.0:40001") == "tcp://10.0.0.7:40001");
}

TEST_CASE("node.advertise validation: required for a wildcard bind - never a wildcard itself") {
  checkFails("[node]\nlisten = \"tcp://0.0.0.0:7000\"\n", {},
             "node.advertise is required when node.listen binds every interface (got 'tcp://0.0.0.0:7000')");
  checkFails("", {"node.listen=tcp://*:7000"}, "node.advertise is required");
  checkFails("", {"node.listen=tcp://0.0.0.0:7000", "node.advertise=0.0.0.0"},
             "node.advertise must name one reachable host and port, not a wildcard (got '0.0.0.0')");
  checkFails("", {"node.advertise=tcp://gossip-3:0"}, "not a wildcard (got 'tcp://gossip-3:0')");
  checkFails("", {"node.advertise=gossip-3:7000"}, "node.advertise must be a host name or tcp://host:port (got 'gossip-3:7000')");
  checkFails("", {"node.advertise=http://gossip-3"}, "must be a host name or tcp://host:port");
  checkFails("", {"node.advertise=tcp://gossip-3"}, "must be a host name or tcp://host:port");
  // Accepted: a name (the bound port is added), a full endpoint, and a wildcard bind with either.
  for (const auto& sets : std::vector<std::vector<std::string>>{
           {"node.listen=tcp://0.0.0.0:7000", "node.advertise=gossip-3"},
           {"node.listen=tcp://0.0.0.0:7000", "node.advertise=tcp://10.0.0.3:7000"},
           {"node.advertise=gossip-3"}}) {
    CAPTURE(sets.front());
    CHECK(validate(loadConfig(std::nullopt, sets)).empty());
  }
}

TEST_CASE("node.http: HOST:PORT with an IP address or localhost - empty for off") {
  const auto a = parseHttpAddress("127.0.0.1:9100");
  REQUIRE(a);
  CHECK(a->ip == "127.0.0.1");
  CHECK(a->port == 9100);
  CHECK(parseHttpAddress("localhost:0")->ip == "127.0.0.1");
  CHECK(parseHttpAddress("0.0.0.0:65535")->port == 65535);
  CHECK(parseHttpAddress("[::1]:80")->ip == "::1");
  for (const char* bad : {"", "9100", ":9100", "127.0.0.1", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:-1",
                          "127.0.0.1:9x", "::1:80", "gossip-3:9100", "256.0.0.1:80", "[nothost]:80"}) {
    CAPTURE(bad);
    CHECK_FALSE(parseHttpAddress(bad));
  }
  checkFails("", {"node.http=127.0.0.1"}, "node.http must be HOST:PORT with HOST an IP address or localhost");
  checkFails("", {"node.http=example.org:80"}, "(got 'example.org:80')");
  for (const char* ok : {"node.http=", "node.http=0.0.0.0:9100", "node.http=localhost:0"}) {
    CAPTURE(ok);
    CHECK(validate(loadConfig(std::nullopt, {ok})).empty());
  }
}

TEST_CASE("cluster.seeds validation: each seed a tcp://HOST:PORT that names one peer") {
  checkFails("", {"cluster.seeds=127.0.0.1:17000"}, "cluster.seeds[0] must be tcp://HOST:PORT (got '127.0.0.1:17000')");
  checkFails("", {"cluster.seeds=tcp://a:1, http://b:2"}, "cluster.seeds[1] must be tcp://HOST:PORT (got 'http://b:2')");
  checkFails("", {"cluster.seeds=tcp://gossip-1"}, "cluster.seeds[0] must be tcp://HOST:PORT");
  checkFails("", {"cluster.seeds=tcp://gossip-1:*"}, "cluster.seeds[0] must be tcp://HOST:PORT");
  checkFails("", {"cluster.seeds=tcp://0.0.0.0:7000"}, "cluster.seeds[0] must name one reachable host and port, not a wildcard");
  checkFails("", {"cluster.seeds=tcp://gossip-1:0"}, "not a wildcard (got 'tcp://gossip-1:0')");
  CHECK(validate(loadConfig(std::nullopt, {"cluster.seeds=tcp://gossip-1:7000, tcp://10.0.0.2:7000, tcp://[::1]:7000"})).empty());
}

}  // namespace
}  // namespace gossip::daemon
