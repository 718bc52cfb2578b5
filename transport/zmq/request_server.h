#pragma once
// RequestServer: a ROUTER socket that local client processes send requests to, each client a DEALER (or
// REQ) with a routing id of its own, plus a socket monitor reporting their connections coming and going.
// The daemon's trainer bridge (daemon/bridge/trainer_bridge.h, docs/trainer.md) is its user: it keeps its
// protocol (JSON bodies, which client is the trainer) and leaves the socket here, so that no code outside
// transport/zmq/ includes a ZeroMQ header (docs/design.md, "Targets and their arrows"). No ZeroMQ type appears below.
//
// Contract
//  - One message is (identity, body): the client's routing id and its first part. Parts after the first
//    are not part of any protocol spoken here and are dropped; a message of the routing id alone is skipped.
//  - reply() never throws: a client that is gone (ROUTER_MANDATORY makes that an error rather than a silent
//    drop) is reported as false. It blocks only while that client's queue is full (libzmq's default
//    high-water marks, about a thousand unread messages), as the bridge always has.
//  - Connection events arrive in the order libzmq saw them, one ACCEPTED per accepted connection and one
//    DISCONNECTED per closed one; a client that reconnects gives both again.
//
// Threading: not thread-safe, like the zmq sockets it owns. One thread (the bridge's owner, the daemon's node
// thread) constructs it, calls every method and destroys it. It has a ZeroMQ context of its own (one I/O
// thread), so it shares nothing with the node-to-node transport.
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace gossip::peer {

class RequestServer {
 public:
  struct Request {
    std::string identity;  // the client's routing id: pass it to reply()
    std::string body;
  };
  enum class ConnectionEvent { Accepted, Disconnected };

  // Binds a ROUTER to `endpoint` (ipc:// or tcp://). `name` starts the IoError thrown when the monitor cannot
  // be set up or the endpoint cannot be bound ("<name>: cannot bind <endpoint>: <why>").
  RequestServer(std::string_view name, const std::string& endpoint);
  ~RequestServer();
  RequestServer(const RequestServer&) = delete;
  RequestServer& operator=(const RequestServer&) = delete;

  // The endpoint bound, as libzmq reports it: a tcp:// port given as * is resolved.
  const std::string& endpoint() const;

  // The next waiting request, or nullopt when none is waiting. Never blocks.
  std::optional<Request> receive();
  // Sends `body` to the client with routing id `identity`; false when it was not sent (no client has that
  // routing id: it never connected, or its connection closed; or its queue is full: it stopped reading).
  // Never blocks.
  bool reply(std::string_view identity, std::string_view body);
  // The next connection event, or nullopt when none is waiting. Never blocks.
  std::optional<ConnectionEvent> takeConnectionEvent();
  // Blocks up to timeoutMs until a request or a connection event waits; true if one does. A signal handled
  // on this thread during the wait ends it early with false (the caller checks its stop flag).
  bool wait(int timeoutMs);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gossip::peer
