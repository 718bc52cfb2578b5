#pragma once
// How one frame travels as a ZeroMQ multipart message: [header, payload part...], to which the receiving
// ROUTER adds the connection's routing id in front. Part of the wire format (every daemon must agree).
//
// A payload over kPayloadPartBytes travels as several parts of exactly that size, the last one shorter. The
// receiver hands a model frame's parts to the engine as they are (engine::PayloadParts; the fp32 mixes read
// them in place) and copies any other frame's into one buffer (inbox.h). Why: with CurveZMQ libzmq encrypts and decrypts each part whole
// on its I/O thread, which also serves every other connection. A 64 MB part held that thread for long
// enough that the failure detector's probes and acks, waiting behind it, timed out and the two daemons
// declared each other dead (issue 8); 1 MiB parts let the control connection's traffic through between them.
// Plain TCP sends the same parts (zero copy either way), so there is one wire format.
//
// Threading: pure functions on sockets their caller owns (the transport's I/O thread). The free function of
// a zero-copy part runs on libzmq's own I/O thread, whenever libzmq is done with the bytes.
#include <cstddef>
#include <vector>

#include <zmq.hpp>

#include "core/bytes.h"
#include "engine/transport.h"

namespace gossip::peer::detail {

// How many parts a payload of n bytes travels in: at least one (an empty payload is one empty part).
std::size_t partsOf(std::size_t n);

// Sends [header, payload parts...] on `socket` without blocking. False when the socket would block on the
// first part: nothing was sent and the caller keeps the frame. Once the first part is accepted the rest
// never blocks. Payload parts of 4 KiB or more are zero copy: they hold a reference to `payload` until
// libzmq has sent them.
bool sendFrame(zmq::socket_t& socket, const Bytes& header, const engine::SharedBytes& payload);

// Reads one whole message from `socket` into `parts` (empty before, as the caller leaves it) without waiting;
// false when none is waiting. Parts beyond what a well-formed message can have are read and freed, not kept,
// so a hostile sender's extra parts cost no memory; wellFormed() then refuses the message.
bool readMessage(zmq::socket_t& socket, std::vector<zmq::message_t>& parts);

// Whether received parts [routing id, header, payload parts...] have the shape sendFrame gives them: one
// payload part of any size (empty included; libzmq's maxmsgsize bounds it), or several of which all but the
// last are exactly kPayloadPartBytes and the last is not empty, no more than the largest payload needs.
bool wellFormed(const std::vector<zmq::message_t>& parts);

}  // namespace gossip::peer::detail
