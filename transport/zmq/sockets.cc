// The transport's socket options (sockets.h). Pure set-up on sockets the caller owns; no thread of its own.
#include "transport/zmq/sockets.h"

#include <cerrno>
#include <cstring>

#include "core/error.h"
#include "engine/frame.h"

namespace gossip::peer::detail {

namespace {

std::string reason(const zmq::error_t& e) {
  return e.num() == EADDRINUSE ? "address already in use" : e.what();
}

}  // namespace

void setCommon(zmq::socket_t& s, const ZmqOptions& opt) {
  s.set(zmq::sockopt::linger, 0);  // closing never waits for unsent frames: the engine's delivery layer retries
  // No ZMTP heartbeats: libzmq 4.3.4 aborts the process when its heartbeat timer fires on a connection
  // whose input it has stopped (stream_engine_base.cpp: timer_event calls out_event, which asserts
  // !_io_error). Input stops when a message cannot be handed to the socket: a full pipe (hence rcvhwm 0
  // in bindListener), or a pipe being torn down, which ROUTER_HANDOVER did to the old connection of a
  // routing id that connected again (no fixed routing ids now, see makeDealer). Seen here as "Assertion
  // failed: !_io_error (src/stream_engine_base.cpp:331)" in 1 of 8 runs of tests/netns/netns_cut.sh, at
  // shutdown after a cut and a merge; libzmq issue #4841 is the same race. With CurveZMQ the heartbeats
  // also dropped connections at every timeout although traffic flowed (docs/security.md). TCP keepalives
  // find dead connections instead (after about 10 s of silence); the failure detector (SWIM probes)
  // depends on neither.
  s.set(zmq::sockopt::tcp_keepalive, 1);
  s.set(zmq::sockopt::tcp_keepalive_idle, opt.keepalive_idle_s);
  s.set(zmq::sockopt::tcp_keepalive_intvl, 1);
  s.set(zmq::sockopt::tcp_keepalive_cnt, 5);
  s.set(zmq::sockopt::handshake_ivl, opt.handshake_ivl_ms);  // a connection stuck in the handshake is closed
}

void bindListener(zmq::socket_t& router, const std::string& listen) {
  // libzmq checks each part against this; the payload is the largest part a valid frame has.
  router.set(zmq::sockopt::maxmsgsize,
             static_cast<std::int64_t>(engine::kMaxPayloadBytes + engine::kFrameHeaderBytes));
  // No limit on libzmq's per-connection receive pipes: the I/O thread reads every message at once and
  // drops it when the inbox is full (inbox_dropped). A limit would make libzmq stop reading a connection
  // whose pipe is full, and libzmq 4.3.4 mishandles that state: with ZMTP heartbeats on (they are off
  // now, see setCommon) it dropped the connection at the heartbeat timeout and aborted the whole process
  // ("Assertion failed: !_io_error (src/stream_engine_base.cpp:331)", seen here twice in 20 runs of
  // tests/integration/hostile_peer.sh after a SIGSTOP; libzmq PR #4830 traces the same sequence).
  // Memory stays bounded by the inbox, since nothing waits in the pipes longer than one read.
  router.set(zmq::sockopt::rcvhwm, 0);
  // ROUTER_MANDATORY is not set: it only changes how a ROUTER *sends*, and this ROUTER only receives.
  try {
    router.bind(listen);
  } catch (const zmq::error_t& e) {
    throw IoError("listen address " + listen + ": " + reason(e));
  }
}

zmq::socket_t makeDealer(zmq::context_t& ctx, const ZmqOptions& opt, bool model) {
  zmq::socket_t s(ctx, zmq::socket_type::dealer);
  setCommon(s, opt);
  s.set(zmq::sockopt::immediate, true);  // queue only on a live connection; else frames wait in our queue
  // Model frames are big and zero-copy: a few in libzmq's pipe keep the link busy; control frames are small.
  s.set(zmq::sockopt::sndhwm, model ? 4 : 1000);
  s.set(zmq::sockopt::reconnect_ivl, opt.reconnect_ivl_ms);  // first retry soon after a peer restarts
  s.set(zmq::sockopt::reconnect_ivl_max, opt.reconnect_ivl_max_ms);  // then back off exponentially
  // No routing id of our own: the peer's ROUTER gives each connection a fresh one. Fixed ids (channel
  // byte + node id) were shared by two links to one endpoint (a seed link and, once the seed's id is
  // known, the member link), and the ROUTER handed the id to whichever connected last: the two
  // connections evicted each other at every reconnect, model frames on the evicted one were lost (a
  // Prox-LEAD cluster stuck at round 1 in 1 of 10 netns_cut runs, 438 retransmits unanswered), and
  // the torn-down connection is the state in which libzmq 4.3.4 aborts. Senders are named in each
  // frame's header (and bound to their key with CurveZMQ), never by the routing id.
  return s;
}

zmq::socket_t monitorSocket(zmq::context_t& ctx, zmq::socket_t& s, int events, const char* name, std::uint64_t serial) {
  // The PAIR connects to the monitor's inproc address, which zmq_socket_monitor has just bound.
  const std::string addr = std::string("inproc://gossip-") + name + "-" + std::to_string(serial);
  if (zmq_socket_monitor(s.handle(), addr.c_str(), events) != 0)
    throw IoError("zmq socket monitor: " + std::string(zmq_strerror(zmq_errno())));
  zmq::socket_t monitor(ctx, zmq::socket_type::pair);
  monitor.set(zmq::sockopt::linger, 0);
  monitor.connect(addr);
  return monitor;
}

std::optional<MonitorEvent> readMonitorEvent(zmq::socket_t& monitor) {
  zmq::message_t event, address;
  if (!monitor.recv(event, zmq::recv_flags::dontwait)) return std::nullopt;
  if (event.more()) (void)monitor.recv(address, zmq::recv_flags::none);
  MonitorEvent e;
  if (event.size() >= sizeof e.event) std::memcpy(&e.event, event.data(), sizeof e.event);
  if (event.size() >= sizeof e.event + sizeof e.value)
    std::memcpy(&e.value, static_cast<const char*>(event.data()) + sizeof e.event, sizeof e.value);
  e.address = address.to_string();
  return e;
}

HandshakeFailure handshakeFailure(const MonitorEvent& e, std::string endpoint, bool incoming) {
  using Kind = HandshakeFailure::Kind;
  Kind kind = Kind::Vague;
  if (e.event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) kind = Kind::Auth;
  if (e.event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL)
    kind = e.value == ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH ? Kind::Mechanism : Kind::Protocol;
  return {std::move(endpoint), incoming, kind, e.value};
}

void stopMonitor(zmq::socket_t& monitored) noexcept {
  if (monitored) (void)zmq_socket_monitor(monitored.handle(), nullptr, 0);
}

}  // namespace gossip::peer::detail
