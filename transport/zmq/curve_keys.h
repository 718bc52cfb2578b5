#pragma once
// CurveZMQ keys of a gossipd cluster (docs/security.md).
//
// Design: one *cluster* key pair plays the CURVE server on every node's listening socket, and each node
// has its own *node* key pair with which its outgoing connections authenticate. Every node holds the
// allow-list `allow.txt` ("<id> <node public key>" per line). A connection is accepted only when its
// client key is listed (the ZAP handler in curve_auth.cc answers libzmq's authentication requests), and
// every frame that arrives on it must name the id its key is listed under, so a listed node cannot speak
// for another id.
// Why a shared server key rather than one per node: a node reaches its seeds by address before it knows
// their ids, so it could not know which server key to expect. The shared secret only lets its holder
// accept connections; it does not let anyone be accepted (that takes a listed node key), and every holder
// is a cluster member already.
#include <filesystem>
#include <map>
#include <string>

#include "core/types.h"

namespace gossip::peer {

// A key pair in Z85 text (40 characters each), as libzmq's socket options take them.
struct CurveKeyPair {
  std::string public_key;
  std::string secret_key;
};

struct CurveKeys {
  CurveKeyPair cluster;                           // the server key of every node's listening socket
  CurveKeyPair node;                              // this node's own (client) key
  std::map<std::string, PeerId> allowed;          // listed node public keys (32 raw bytes) -> their ids
};

// A fresh key pair from libzmq (zmq_curve_keypair).
CurveKeyPair generateKeyPair();

// Reads <dir>/cluster.key, <dir>/node-<id>.key and <dir>/allow.txt; checks that this node's public key
// is listed under its id. Throws ConfigError naming the file and the problem.
CurveKeys loadCurveKeys(const std::filesystem::path& dir, PeerId id);

// Creates the keys of a cluster of `nodes` nodes in `dir`: cluster.key, node-<id>.key for ids 0..nodes-1
// (secret files are mode 0600) and allow.txt. Keys already in dir are kept, so running it again with a
// larger count adds nodes. Returns how many node keys it created. Throws IoError/ConfigError.
std::size_t writeClusterKeys(const std::filesystem::path& dir, std::size_t nodes);

}  // namespace gossip::peer
