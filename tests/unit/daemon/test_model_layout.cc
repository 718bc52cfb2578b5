// ModelLayout (daemon/bridge/model_layout.h): the attach's layout parsed and checked against dim, the first
// difference named, the identity value short enough for the membership's limit, the file round trip.
#include <string>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "daemon/bridge/model_layout.h"

using namespace gossip::daemon;
using json = nlohmann::json;

namespace {
ModelLayout parsed(const json& field, std::uint64_t dim) {
  ModelLayout l;
  const auto bad = ModelLayout::parse(&field, dim, l);
  REQUIRE_MESSAGE(!bad, *bad);
  return l;
}
std::string refusal(const json& field, std::uint64_t dim) {
  ModelLayout l;
  const auto bad = ModelLayout::parse(&field, dim, l);
  REQUIRE(bad);
  return *bad;
}
const json kMlp = json::parse(R"([["fc1.weight",[4,3],"float32"],["fc1.bias",[4],"float32"],["fc2.weight",[2,4],"float32"]])");
}  // namespace

TEST_CASE("a layout is parsed - its sizes must add up to dim - malformed entries are named") {
  const ModelLayout l = parsed(kMlp, 24);
  REQUIRE(l.tensors.size() == 3);
  CHECK(l.tensors[1].name == "fc1.bias");
  CHECK(l.tensors[0].size() == 12);
  CHECK(l.toJson() == kMlp);
  CHECK(refusal(kMlp, 25) == "the layout's tensors hold 24 values, not dim = 25");
  CHECK(refusal(kMlp, 20) == "the layout's tensors hold more values than dim = 20");
  // A shape whose product wraps around 2^64 is not taken for a small one.
  CHECK(refusal(json::parse(R"([["w",[4294967296,4294967296,2],"float32"]])"), 8) ==
        "the layout's tensors hold more values than dim = 8");
  CHECK(refusal(json::parse(R"([["w",[2,-1],"float32"]])"), 2).rfind("layout entry 0 is not [name, [shape...], dtype]", 0) == 0);
  CHECK(refusal(json::parse(R"([["",[2],"float32"]])"), 2).rfind("layout entry 0", 0) == 0);  // unnamed tensor
  CHECK(refusal(json::parse(R"({"w":[2]})"), 2) == "layout must be a non-empty list of [name, shape, dtype]");
  // A scalar parameter (shape []) holds one value.
  CHECK(parsed(json::parse(R"([["scale",[],"float32"],["w",[3],"float32"]])"), 4).tensors[0].size() == 1);
  // No layout field: the unnamed layout of dim values.
  ModelLayout none;
  REQUIRE(!ModelLayout::parse(nullptr, 7, none));
  CHECK(none.tensors.empty());
  CHECK(none.dim == 7);
}

TEST_CASE("the first difference between two layouts is named - not just that they differ") {
  const ModelLayout a = parsed(kMlp, 24);
  CHECK(describeLayoutDifference(a, a, "here", "there").empty());
  json swapped = kMlp;
  std::swap(swapped[0], swapped[2]);  // same count, another order: what was averaged silently before
  swapped[0][1] = json::array({2, 4});
  CHECK(describeLayoutDifference(a, parsed(swapped, 24), "here", "there") ==
        R"(tensor 0 is "fc1.weight" [4, 3] float32 here, "fc2.weight" [2, 4] float32 there)");
  json reshaped = kMlp;
  reshaped[0][1] = json::array({3, 4});
  CHECK(describeLayoutDifference(a, parsed(reshaped, 24), "here", "there") ==
        R"(tensor 0 is "fc1.weight" [4, 3] float32 here, "fc1.weight" [3, 4] float32 there)");
  ModelLayout unnamed;
  REQUIRE(!ModelLayout::parse(nullptr, 24, unnamed));
  CHECK(describeLayoutDifference(a, unnamed, "here", "there") ==
        "the model is 3 named tensors here, an unnamed vector of 24 values (bind_array) there");
}

TEST_CASE("the identity value: the layout itself while short - a hash when long - differences named from either") {
  const ModelLayout a = parsed(kMlp, 24);
  CHECK(a.identityValue() == kMlp.dump());
  json reshaped = kMlp;
  reshaped[2][2] = "bfloat16";
  const ModelLayout b = parsed(reshaped, 24);
  CHECK(describeLayoutIdentityDifference(a.identityValue(), b.identityValue(), "here", "there") ==
        R"(tensor 2 is "fc2.weight" [2, 4] float32 here, "fc2.weight" [2, 4] bfloat16 there)");
  // 400 tensors: far past what the 8 KiB identity can hold inline.
  json big = json::array();
  for (int k = 0; k < 400; ++k) big.push_back(json::array({"layers." + std::to_string(k) + ".weight", {16}, "float32"}));
  const ModelLayout l = parsed(big, 6400);
  const std::string v = l.identityValue();
  CHECK(v.size() < 40);
  CHECK(v.rfind("\"fnv1a64:", 0) == 0);
  big[399][0] = "layers.399.bias";
  const std::string w = parsed(big, 6400).identityValue();
  CHECK(w != v);
  CHECK(describeLayoutIdentityDifference(a.identityValue(), v, "here", "there") ==
        "the trainer's model is 3 named tensors here, the layout with hash " + v.substr(1, v.size() - 2) + " there");
  ModelLayout unnamed;
  REQUIRE(!ModelLayout::parse(nullptr, 24, unnamed));
  CHECK(describeLayoutIdentityDifference(unnamed.identityValue(), a.identityValue(), "here", "there") ==
        "the trainer's model is an unnamed vector (bind_array) here, 3 named tensors there");
}

TEST_CASE("the layout file round-trips - with each tensor's offset into model.npy - and a damaged one is refused") {
  const ModelLayout a = parsed(kMlp, 24);
  const std::string text = layoutFileText(a);
  const json j = json::parse(text);
  CHECK(j["dim"] == 24);
  CHECK(j["tensors"][2]["offset"] == 16);
  ModelLayout back;
  REQUIRE(!parseLayoutFile(text, back));
  CHECK(back == a);
  ModelLayout unnamed;
  REQUIRE(!ModelLayout::parse(nullptr, 5, unnamed));
  REQUIRE(!parseLayoutFile(layoutFileText(unnamed), back));
  CHECK(back == unnamed);
  CHECK(parseLayoutFile("{\"dim\": 24}", back));
  CHECK(parseLayoutFile(text.substr(0, text.size() / 2), back));
}
