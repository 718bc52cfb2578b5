// The cluster identity (daemon/node/cluster_identity.h): which keys it holds, and the refusal line.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "daemon/node/cluster_identity.h"

using namespace gossip::daemon;

namespace {
Config withSets(const std::vector<std::string>& sets) { return parseConfig("", "<test>", sets); }
}  // namespace

TEST_CASE("cluster identity: the shared problem's keys are in it - node-local keys are not") {
  const Config base = withSets({});
  const std::string id = clusterIdentity(base, 7850);
  CHECK(id.find("cluster.name=\"gossipd\"\n") != std::string::npos);
  CHECK(id.find("algorithm.name=\"dpsgd\"\n") != std::string::npos);
  CHECK(id.find("compressor.name=") != std::string::npos);
  CHECK(id.find("model.dimension=7850\n") != std::string::npos);
  CHECK(id.find("protocol.membership_version=3\n") != std::string::npos);
  // Keys that legitimately differ between the members of one run change nothing.
  for (const char* set : {"node.id=3", "node.listen=tcp://127.0.0.1:7001", "node.data_dir=/x", "algorithm.lr=0.5",
                          "algorithm.rounds=99999", "cluster.probe_interval_ms=500", "monitor.eval_every=7",
                          "data.train=/elsewhere/train.idx", "cluster.seeds=[\"tcp://10.0.0.1:7000\"]"})
    CHECK_MESSAGE(clusterIdentity(withSets({set}), 7850) == id, set);
  // Keys of the shared problem do.
  for (const char* set : {"cluster.name=other", "cluster.topology=torus", "cluster.nodes=9", "algorithm.name=choco",
                          "compressor.name=topk", "model.kind=logistic", "data.partition=label_sorted",
                          "data.scaling=minmax", "trainer.enable=true"})
    CHECK_MESSAGE(clusterIdentity(withSets({set}), 7850) != id, set);
  CHECK(clusterIdentity(base, 7851) != id);
  CHECK(clusterIdentity(withSets({"security.enable=true", "security.keys_dir=/k"}), 7850) != id);
  // model.hidden only for an MLP; in trainer mode the trainer's model replaces model.* and data.*.
  CHECK(clusterIdentity(withSets({"model.hidden=[64]"}), 7850) == id);
  CHECK(clusterIdentity(withSets({"model.kind=mlp"}), 7850) != clusterIdentity(withSets({"model.kind=mlp", "model.hidden=[64]"}), 7850));
  CHECK(clusterIdentity(withSets({"trainer.enable=true"}), 7850) ==
        clusterIdentity(withSets({"trainer.enable=true", "data.partition=label_sorted", "model.kind=logistic"}), 7850));
}

TEST_CASE("cluster identity: the difference names each key with both values") {
  const std::string a = clusterIdentity(withSets({}), 100);
  const std::string b = clusterIdentity(withSets({"algorithm.name=choco", "compressor.name=topk"}), 100);
  CHECK(describeIdentityDifference(a, a).empty());
  const std::string d = describeIdentityDifference(a, b, "here", "at node 3");
  CHECK(d.find("algorithm.name is \"dpsgd\" here, \"choco\" at node 3") != std::string::npos);
  CHECK(d.find("compressor.name is") != std::string::npos);
  CHECK(d.find("cluster.name") == std::string::npos);
  // A key only one side has, and text that is no identity at all.
  CHECK(describeIdentityDifference("a=1\n", "a=1\nb=2\n") == "b is (unset) here, 2 there");
  CHECK(describeIdentityDifference(a, "garbage").find("not one this version reads") != std::string::npos);
}

TEST_CASE("cluster identity: a trainer's layout is in it - the refusal names the first tensor that differs") {
  const Config t = withSets({"trainer.enable=true"});
  const std::string a = R"([["fc1.weight",[4,3],"float32"],["fc1.bias",[4],"float32"]])";
  const std::string b = R"([["fc1.bias",[4],"float32"],["fc1.weight",[4,3],"float32"]])";
  const std::string ia = clusterIdentity(t, 16, a);
  CHECK(ia.find("model.layout=" + a + "\n") != std::string::npos);
  CHECK(clusterIdentity(t, 16).find("model.layout=\"unknown\"\n") != std::string::npos);
  CHECK(clusterIdentity(withSets({}), 16, a).find("model.layout") == std::string::npos);  // built-in models: model.*
  const std::string d = describeIdentityDifference(ia, clusterIdentity(t, 16, b), "here", "at node 2");
  CHECK(d == R"(model.layout: tensor 0 is "fc1.weight" [4, 3] float32 here, "fc1.bias" [4] float32 at node 2)");
}
