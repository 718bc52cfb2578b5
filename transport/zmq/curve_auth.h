#pragma once
// CurveAuth: CurveZMQ on the transport's sockets (docs/security.md; the keys are curve_keys.h's). It makes the
// listening ROUTER a CURVE server with the cluster key, answers libzmq's ZAP authentication requests from
// the allow-list, sets the client keys of outgoing DEALERs, tells whether a frame's header names the id its
// connection's key is listed under (so a listed node cannot speak for another id), and runs the start-up
// self-test: a connection with an unlisted key must be refused, or the transport refuses to run.
//
// Threading: serve() and makeStranger() run on the transport's constructor thread before the I/O thread
// starts (starting the thread orders them before its reads); answer() and senderMatchesKey() on the I/O
// thread, which polls the ZAP socket (handler()); setClient() on whichever thread creates a socket, reading
// only immutable keys; selfTest() on the constructor's thread while the I/O thread answers its ZAP request.
// The count of refused keys is atomic.
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include <zmq.hpp>

#include "transport/zmq/curve_keys.h"

namespace gossip::peer::detail {

class CurveAuth {
 public:
  // `ctx` must outlive this object (it holds the ZAP socket).
  CurveAuth(zmq::context_t& ctx, std::shared_ptr<const CurveKeys> keys);

  // Binds the ZAP handler and makes `router` a CURVE server that refuses everyone when no handler answers.
  // Before `router` binds: libzmq asks the handler at each handshake. Throws IoError.
  void serve(zmq::socket_t& router);
  // Makes `dealer` a CURVE client of the cluster key with the key pair `own`.
  void setClient(zmq::socket_t& dealer, const CurveKeyPair& own) const;
  // The ZAP socket, for the I/O thread's poll set; answer() when it is readable.
  zmq::socket_t& handler() { return zap_; }
  void answer();
  // Whether a received header names the id its connection's key is listed under. Headers too short to name
  // a sender pass (the engine refuses them as "short").
  bool senderMatchesKey(zmq::message_t& header) const;

  // The self-test: makeStranger() makes the unlisted key and records it (its refusal is expected, not counted),
  // before the I/O thread starts; selfTest() then connects with it to our own `endpoint` and throws IoError
  // unless the handshake fails authentication. `serial` names the test's inproc monitor address.
  CurveKeyPair makeStranger();
  void selfTest(const std::string& endpoint, const CurveKeyPair& stranger, std::uint64_t serial);

  std::uint64_t unlisted() const { return unlisted_.load(); }  // connections refused for their key

 private:
  zmq::context_t& ctx_;
  std::shared_ptr<const CurveKeys> keys_;
  zmq::socket_t zap_;       // REP: libzmq sends the authentication requests here
  std::string selfTestKey_;  // raw 32 bytes of the self-test's public key
  std::atomic<std::uint64_t> unlisted_{0};
};

}  // namespace gossip::peer::detail
