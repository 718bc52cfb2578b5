#pragma once
// What a user needs to load a node's model.npy: the model kind and its shape (model.json beside it).
#include <nlohmann/json.hpp>

#include "daemon/config/config.h"
#include "training/dataset.h"
#include "training/model.h"

namespace gossip::daemon {

inline nlohmann::json modelMeta(const Config& c, const training::Model& model, const training::Dataset& train,
                                Round round, PeerId node, Incarnation incarnation) {
  return {{"model", c.model.kind},
          {"features", train.features()},
          {"classes", train.classes},
          {"hidden", c.model.kind == "mlp" ? nlohmann::json(c.model.hidden) : nlohmann::json::array()},
          {"dim", model.dim()},
          {"layout", c.model.kind == "softmax" || c.model.kind == "mlp"
                         ? "per layer (input -> hidden... -> classes): W (out x in, row-major), then b (out)"
                         : "w (features), then the bias b"},
          {"round", round},
          {"node", node},
          {"incarnation", incarnation}};
}

}  // namespace gossip::daemon
