#pragma once
// The cluster identity: what every member of one training run must agree on, as canonical text that a
// joining node sends in its Join (membership/membership.h) and a member compares byte for byte before it
// lets the node in. Issue 28: nodes whose configs disagreed were never refused: another compressor, model
// or hidden size made every model frame `bad_payload` while each node trained alone and exited 0; another
// partition or scaling averaged models of different problems in silence.
//
// The text is one `key=value` line per setting, sorted by key, values as JSON (strings quoted):
//   cluster.name, and the keys that shape the shared problem: the topology keys, the algorithm and the
//   parameters that enter its update on both ends of an edge, the whole [compressor] section, whether
//   CurveZMQ is on, the trainer's mode and its model's layout, the wire protocol's versions and the
//   model's dimension; with a built-in model also model.* and the data keys that decide who holds which
//   rows (not the file paths, which may differ from machine to machine).
// Node-local keys (node.*, ports, logging, timeouts, monitor.*, algorithm.rounds and the step size) are
// not part of it: they may differ, and algorithm.rounds is raised to continue a finished run.
#include <cstddef>
#include <string>
#include <string_view>

#include "daemon/config/config.h"

namespace gossip::daemon {

// `dim`: the model's dimension, as the node built it (a trainer's model is known only once it attached).
// `trainerLayout`: with trainer.enable, the layout's ModelLayout::identityValue() (empty: unknown, a data
// directory from before layouts); the refusal then names the first tensor that differs.
std::string clusterIdentity(const Config& config, std::size_t dim, std::string_view trainerLayout = {});

// One line naming each key whose value differs, with both values, for the refusal messages:
// `algorithm.name is "choco" here, "dpsgd" there; model.hidden ...`. Keys only one side has are shown with
// `(unset)`. Empty when the two texts are equal. Tolerates text that is not an identity (a node of an
// unknown version): then it says so.
std::string describeIdentityDifference(std::string_view ours, std::string_view theirs, std::string_view here = "here",
                                       std::string_view there = "there");

}  // namespace gossip::daemon
