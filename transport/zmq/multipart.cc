// Sending and reading a frame's multipart message (multipart.h). Called on the transport's I/O thread only.
#include "transport/zmq/multipart.h"

#include <algorithm>
#include <utility>

#include "engine/frame.h"
#include "transport/zmq/zmq_transport.h"

namespace gossip::peer::detail {

namespace {

constexpr std::size_t kCopyBelow = 4096;  // smaller payloads are copied: cheaper than a zero-copy hook

void releaseShared(void*, void* hint) { delete static_cast<engine::SharedBytes*>(hint); }

// Bytes [off, off + n) of a payload as one message part.
zmq::message_t payloadPart(const engine::SharedBytes& p, std::size_t off, std::size_t n) {
  if (n == 0) return zmq::message_t();
  if (n < kCopyBelow) return zmq::message_t(p->data() + off, n);
  // Zero copy: libzmq calls releaseShared from its own I/O thread once the bytes are on the wire.
  return zmq::message_t(const_cast<std::byte*>(p->data() + off), n, &releaseShared, new engine::SharedBytes(p));
}

}  // namespace

std::size_t partsOf(std::size_t n) { return n <= kPayloadPartBytes ? 1 : (n + kPayloadPartBytes - 1) / kPayloadPartBytes; }

bool sendFrame(zmq::socket_t& socket, const Bytes& header, const engine::SharedBytes& payload) {
  zmq::message_t head(header.data(), header.size());
  if (!socket.send(head, zmq::send_flags::sndmore | zmq::send_flags::dontwait)) return false;
  // The rest of a multipart message never blocks once its first part has been accepted.
  const std::size_t size = payload ? payload->size() : 0, parts = partsOf(size);
  for (std::size_t k = 0; k < parts; ++k) {
    const std::size_t off = k * kPayloadPartBytes, n = std::min(kPayloadPartBytes, size - off);
    zmq::message_t body = payloadPart(payload, off, n);
    socket.send(body, k + 1 < parts ? zmq::send_flags::sndmore : zmq::send_flags::none);
  }
  return true;
}

bool readMessage(zmq::socket_t& socket, std::vector<zmq::message_t>& part) {
  part.resize(1);
  if (!socket.recv(part[0], zmq::recv_flags::dontwait)) return false;
  bool more = part[0].more();
  std::size_t n = 1;
  const std::size_t keep = partsOf(engine::kMaxPayloadBytes) + 3;  // one more than wellFormed allows
  while (more) {  // every part of a multipart message is available once its first part is
    zmq::message_t m;
    (void)socket.recv(m, zmq::recv_flags::none);
    more = m.more();
    if (n < keep) part.push_back(std::move(m));  // a hostile sender's extra parts are read and freed
    ++n;
  }
  return true;
}

bool wellFormed(const std::vector<zmq::message_t>& part) {
  if (part.size() < 3) return false;
  const std::size_t payloadParts = part.size() - 2;
  if (payloadParts == 1) return true;
  if (payloadParts > partsOf(engine::kMaxPayloadBytes)) return false;
  for (std::size_t k = 2; k + 1 < part.size(); ++k)
    if (part[k].size() != kPayloadPartBytes) return false;
  return part.back().size() != 0;
}

}  // namespace gossip::peer::detail
