#pragma once
// The error codes of the trainer protocol (docs/trainer.md, "Errors"). Every {"op":"error"} reply carries one
// as "code" beside the English "error" a person reads: {"op":"error","code":"dim_mismatch","error":"..."}.
// Clients decide on the code (python/gossipd/client.py re-attaches on not_attached); the text may be
// reworded at any time, a code may not. Adding a code is backward compatible (a client treats an unknown
// one as a plain error); renaming or removing one breaks clients and needs a new protocol version.
// A new code: one enumerator here, one case in bridgeErrorCode, one row in docs/trainer.md's table
// (test_trainer_bridge checks that the table and this list agree).
#include <string_view>

namespace gossip::daemon {

enum class BridgeError {  // Replaced stays last (test_trainer_bridge counts the codes by it)
  // Any message.
  NotJson,    // not_json: the frame does not parse as JSON
  NoOp,       // no_op: JSON, but not an object with a string "op"
  UnknownOp,  // unknown_op: an "op" this daemon does not know
  // attach (nothing changes: a trainer already attached stays attached).
  VersionUnsupported,  // version_unsupported: "version" missing or not 1
  BadDim,              // bad_dim: "dim" missing, or not a positive integer
  BadDtype,            // bad_dtype: "dtype" neither float32 nor float64
  DimMismatch,         // dim_mismatch: "dim" is not the size of the daemon's model
  BadLayout,           // bad_layout: "layout" is not a list of [name, [shape...], dtype] adding up to dim
  LayoutMismatch,      // layout_mismatch: the tensors' names, shapes or dtypes differ from the daemon's model
  // init.
  InitUnexpected,  // init_unexpected: init from the attached trainer while the daemon did not ask for one
  NonfiniteInit,   // nonfinite_init: the initial parameters hold a NaN or an infinity
  // mix / grad.
  InitFirst,       // init_first: mix or grad before the init the daemon asked for at attach
  WrongMode,       // wrong_mode: mix to a trainer.mode = "gradient" daemon, grad to a "model" one
  RequestPending,  // request_pending: mix or grad while the previous one still waits for its round
  // The daemon does not know the sender: attach again.
  NotAttached,  // not_attached: init, mix or grad from a socket that is not the attached trainer (it never
                // attached, detached, was replaced, or the daemon restarted and forgot it)
  Replaced,     // replaced: unasked, to a trainer whose mix or grad was waiting when another trainer attached;
                // that request is dropped. Not a reason to re-attach (the two would replace each other).
};

constexpr std::string_view bridgeErrorCode(BridgeError e) {
  switch (e) {
    case BridgeError::NotJson: return "not_json";
    case BridgeError::NoOp: return "no_op";
    case BridgeError::UnknownOp: return "unknown_op";
    case BridgeError::VersionUnsupported: return "version_unsupported";
    case BridgeError::BadDim: return "bad_dim";
    case BridgeError::BadDtype: return "bad_dtype";
    case BridgeError::DimMismatch: return "dim_mismatch";
    case BridgeError::BadLayout: return "bad_layout";
    case BridgeError::LayoutMismatch: return "layout_mismatch";
    case BridgeError::InitUnexpected: return "init_unexpected";
    case BridgeError::NonfiniteInit: return "nonfinite_init";
    case BridgeError::InitFirst: return "init_first";
    case BridgeError::WrongMode: return "wrong_mode";
    case BridgeError::RequestPending: return "request_pending";
    case BridgeError::NotAttached: return "not_attached";
    case BridgeError::Replaced: return "replaced";
  }
  return "";  // not reached: -Wswitch names a missing case
}

// Every code, for tests and documentation checks.
inline constexpr BridgeError kBridgeErrors[] = {
    BridgeError::NotJson,       BridgeError::NoOp,      BridgeError::UnknownOp,      BridgeError::VersionUnsupported,
    BridgeError::BadDim,        BridgeError::BadDtype,  BridgeError::DimMismatch,    BridgeError::BadLayout,
    BridgeError::LayoutMismatch, BridgeError::InitUnexpected,
    BridgeError::NonfiniteInit, BridgeError::InitFirst, BridgeError::WrongMode,      BridgeError::RequestPending,
    BridgeError::NotAttached,   BridgeError::Replaced};

}  // namespace gossip::daemon
