#pragma once
// The options of the transport's sockets, each with the reason it is set: what every socket shares (no
// linger, TCP keepalives instead of ZMTP heartbeats, a handshake deadline), the listening ROUTER, the
// DEALERs towards peers and the socket monitor that reports a DEALER's broken connection. CurveZMQ's
// options are curve_auth.h's.
//
// Threading: functions on sockets their caller owns. The ROUTER is set up before the I/O thread starts;
// DEALERs and monitors on addPeer()'s caller, before the I/O thread takes them over (links.h).
#include <cstdint>
#include <optional>
#include <string>

#include <zmq.hpp>

#include "transport/zmq/zmq_transport.h"

namespace gossip::peer::detail {

// The options every socket of the transport gets first.
void setCommon(zmq::socket_t& s, const ZmqOptions& opt);

// The listening ROUTER's own options, then binds it to `listen`. After setCommon and, with CurveZMQ,
// CurveAuth::serve. Throws IoError naming the address when it cannot bind.
void bindListener(zmq::socket_t& router, const std::string& listen);

// A DEALER for one channel of a link (model or control), with its options; not connected yet.
zmq::socket_t makeDealer(zmq::context_t& ctx, const ZmqOptions& opt, bool model);

// Watches `s` for the socket events in `events` (ZMQ_EVENT_* bits; a link's control DEALER: DISCONNECTED,
// from a RST, FIN or TCP keepalive timeout, and the handshake failures): returns the PAIR socket they
// arrive on, connected to the monitor's inproc address, which `name` and `serial` make unique. Call it
// before `s` connects or binds, so that no event is missed. Throws IoError.
zmq::socket_t monitorSocket(zmq::context_t& ctx, zmq::socket_t& s, int events, const char* name, std::uint64_t serial);

// The handshake failures a monitor reports: a peer speaking another security mechanism (CurveZMQ on one
// side only), another protocol, or refusing our key.
inline constexpr int kHandshakeFailureEvents =
    ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH;

// One event off a monitor's PAIR (its two frames: u16 event and u32 value, then the address); none when
// no event is waiting.
struct MonitorEvent {
  std::uint16_t event = 0;
  std::uint32_t value = 0;
  std::string address;
};
std::optional<MonitorEvent> readMonitorEvent(zmq::socket_t& monitor);
// A handshake failure event (kHandshakeFailureEvents) as the transport reports it.
HandshakeFailure handshakeFailure(const MonitorEvent& e, std::string endpoint, bool incoming);

// Stops the socket monitor of `monitored` (zmq_socket_monitor with no address). Must run before the PAIR
// that reads the events closes, and before `monitored` closes: libzmq 4.3.4 sends each event from its own
// I/O thread with a blocking send, and a monitor whose reading PAIR is gone blocks that send forever. The
// I/O thread serves every socket of the context, so the whole transport froze: no connect, no send (seen
// in 11 of 200 runs of the transport's restart test under load; the removed link's DEALER reported the
// disconnect of its dead peer while closing, after its PAIR had closed). A socket without a monitor is
// left as it is.
void stopMonitor(zmq::socket_t& monitored) noexcept;

}  // namespace gossip::peer::detail
