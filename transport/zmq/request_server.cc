// RequestServer (request_server.h): the ROUTER and its monitor. No thread of its own; the owner's thread
// does every call.
#include "transport/zmq/request_server.h"

#include <cerrno>

#include <chrono>
#include <cstdint>
#include <cstring>

#include <zmq.hpp>

#include "core/error.h"
#include "transport/zmq/sockets.h"

namespace gossip::peer {

struct RequestServer::Impl {
  // A context per server: its inproc monitor address below is then unique without a serial, and the
  // node-to-node transport's I/O thread never carries a client's traffic.
  zmq::context_t ctx{1};
  zmq::socket_t router{ctx, zmq::socket_type::router};
  zmq::socket_t monitor{ctx, zmq::socket_type::pair};
  std::string endpoint;
  // The monitor stops before the PAIR and the ROUTER close: a client's disconnect reported while the ROUTER
  // closes would otherwise block the context's I/O thread for good, and the context's destructor with it
  // (sockets.h, stopMonitor).
  ~Impl() { detail::stopMonitor(router); }
};

RequestServer::RequestServer(std::string_view name, const std::string& endpoint) : impl_(std::make_unique<Impl>()) {
  Impl& i = *impl_;
  const std::string who(name);
  // Closing never waits to deliver replies that a client may never read (it was killed, or stopped reading).
  i.router.set(zmq::sockopt::linger, 0);
  // A reply to a routing id with no connection fails (EHOSTUNREACH) instead of vanishing, so reply() can say so.
  i.router.set(zmq::sockopt::router_mandatory, 1);
  // The monitor is set up before the bind so that no client's ACCEPTED is missed.
  const std::string monitorAddress = "inproc://request-server-monitor";
  if (zmq_socket_monitor(i.router.handle(), monitorAddress.c_str(), ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED) != 0)
    throw IoError(who + ": zmq socket monitor: " + std::string(zmq_strerror(zmq_errno())));
  i.monitor.set(zmq::sockopt::linger, 0);
  i.monitor.connect(monitorAddress);
  try {
    i.router.bind(endpoint);
  } catch (const zmq::error_t& e) {
    throw IoError(who + ": cannot bind " + endpoint + ": " + e.what());
  }
  i.endpoint = i.router.get(zmq::sockopt::last_endpoint);
}

RequestServer::~RequestServer() = default;

const std::string& RequestServer::endpoint() const { return impl_->endpoint; }

std::optional<RequestServer::Request> RequestServer::receive() {
  zmq::socket_t& router = impl_->router;
  for (;;) {
    zmq::message_t identity, body;
    if (!router.recv(identity, zmq::recv_flags::dontwait)) return std::nullopt;
    if (!identity.more()) continue;  // the routing id with nothing after it: no request to answer
    // The rest of a message is already queued once its first part is: these receives do not block.
    (void)router.recv(body, zmq::recv_flags::none);
    while (body.more()) {  // extra parts are not part of the protocol: drop them
      zmq::message_t extra;
      (void)router.recv(extra, zmq::recv_flags::none);
      if (!extra.more()) break;
    }
    return Request{identity.to_string(), body.to_string()};
  }
}

bool RequestServer::reply(std::string_view identity, std::string_view body) {
  zmq::socket_t& router = impl_->router;
  try {
    // Never blocks: with router_mandatory a send to a client whose queue is full waits until it drains,
    // and a stopped (SIGSTOP) or dying client never drains it; the node thread that replies hung there
    // (seen as a unit test stuck in zmq_send under load). A full queue fails the reply like a gone client.
    if (!router.send(zmq::buffer(identity), zmq::send_flags::sndmore | zmq::send_flags::dontwait)) return false;
    return router.send(zmq::buffer(body), zmq::send_flags::dontwait).has_value();
  } catch (const zmq::error_t&) {
    // EHOSTUNREACH (router_mandatory): the client's connection is gone; the monitor reports it too.
    return false;
  }
}

std::optional<RequestServer::ConnectionEvent> RequestServer::takeConnectionEvent() {
  zmq::socket_t& monitor = impl_->monitor;
  for (;;) {
    // A monitor event is two parts: the event (16-bit id, 32-bit value) and the peer's address.
    zmq::message_t event, address;
    if (!monitor.recv(event, zmq::recv_flags::dontwait)) return std::nullopt;
    if (event.more()) (void)monitor.recv(address, zmq::recv_flags::none);
    if (event.size() < 2) continue;
    std::uint16_t kind = 0;
    std::memcpy(&kind, event.data(), sizeof kind);
    if (kind == ZMQ_EVENT_ACCEPTED) return ConnectionEvent::Accepted;
    if (kind == ZMQ_EVENT_DISCONNECTED) return ConnectionEvent::Disconnected;
  }
}

bool RequestServer::wait(int timeoutMs) {
  zmq::pollitem_t items[] = {{impl_->router.handle(), 0, ZMQ_POLLIN, 0}, {impl_->monitor.handle(), 0, ZMQ_POLLIN, 0}};
  try {
    return zmq::poll(items, 2, std::chrono::milliseconds(timeoutMs)) > 0;
  } catch (const zmq::error_t& e) {
    // A signal handled on this thread (the daemon's SIGTERM) ends the wait early; the caller's loop then
    // sees the stop flag. Thrown on, it ended a daemon waiting on its trainer with "internal error:
    // Interrupted system call" and exit 1 instead of a clean stop (3 of 4 SIGTERMs).
    if (e.num() == EINTR) return false;
    throw;
  }
}

}  // namespace gossip::peer
