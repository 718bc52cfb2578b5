// CurveZMQ on the transport's sockets (curve_auth.h): the ZAP handler (ZeroMQ RFC 27), the server and
// client keys, the sender check and the self-test. Threads as curve_auth.h says.
#include "transport/zmq/curve_auth.h"

#include <cstring>
#include <utility>
#include <vector>

#include "core/error.h"
#include "engine/frame.h"
#include "transport/zmq/sockets.h"

namespace gossip::peer::detail {

CurveAuth::CurveAuth(zmq::context_t& ctx, std::shared_ptr<const CurveKeys> keys) : ctx_(ctx), keys_(std::move(keys)) {}

void CurveAuth::serve(zmq::socket_t& router) {
  // The handler must be bound before the first connection arrives; libzmq asks it at each handshake.
  zap_ = zmq::socket_t(ctx_, zmq::socket_type::rep);
  zap_.set(zmq::sockopt::linger, 0);
  zap_.bind("inproc://zeromq.zap.01");
  router.set(zmq::sockopt::curve_server, true);
  router.set(zmq::sockopt::curve_secretkey, keys_->cluster.secret_key);
  router.set(zmq::sockopt::zap_domain, "gossipd");
  // Without this libzmq lets every client in when no ZAP handler answers (DESIGN.md §10). Debian's
  // libzmq 4.3.4 accepts the option but declares it only in its draft API: hence the number.
  constexpr int kZapEnforceDomain = 93;  // ZMQ_ZAP_ENFORCE_DOMAIN
  const int enforce = 1;
  if (zmq_setsockopt(router.handle(), kZapEnforceDomain, &enforce, sizeof enforce) != 0)
    throw IoError("zmq: cannot enforce the ZAP domain: " + std::string(zmq_strerror(zmq_errno())));
}

void CurveAuth::setClient(zmq::socket_t& s, const CurveKeyPair& own) const {
  s.set(zmq::sockopt::curve_serverkey, keys_->cluster.public_key);
  s.set(zmq::sockopt::curve_publickey, own.public_key);
  s.set(zmq::sockopt::curve_secretkey, own.secret_key);
}

// One request: frames version, request id, domain, address, routing id, mechanism, then the credentials
// (CURVE: the client's 32-byte public key). A listed key is accepted with its node id as the user id, which
// libzmq attaches to every message of that connection (senderMatchesKey reads it).
void CurveAuth::answer() {
  std::vector<zmq::message_t> req;
  do {
    req.emplace_back();
    if (!zap_.recv(req.back(), zmq::recv_flags::dontwait)) return;
  } while (req.back().more());
  const auto text = [&](std::size_t k) { return k < req.size() ? req[k].to_string() : std::string(); };
  std::string status = "400", reasonText = "unlisted key", user;
  if (req.size() >= 7 && text(5) == "CURVE" && req[6].size() == 32) {
    const auto it = keys_->allowed.find(req[6].to_string());
    if (it != keys_->allowed.end()) {
      status = "200";
      reasonText = "OK";
      user = std::to_string(it->second);
    } else if (req[6].to_string() != selfTestKey_) {
      unlisted_.fetch_add(1, std::memory_order_relaxed);
    }
  } else {
    unlisted_.fetch_add(1, std::memory_order_relaxed);
    reasonText = "CURVE expected";
  }
  const std::string reply[] = {"1.0", text(1), status, reasonText, user, ""};
  for (std::size_t k = 0; k < 6; ++k)
    zap_.send(zmq::buffer(reply[k]), k + 1 < 6 ? zmq::send_flags::sndmore : zmq::send_flags::none);
}

bool CurveAuth::senderMatchesKey(zmq::message_t& header) const {
  const auto sender = engine::peekSender({header.data<std::byte>(), header.size()});
  if (!sender) return true;
  const char* user = zmq_msg_gets(header.handle(), "User-Id");
  if (!user) return false;
  return std::to_string(*sender) == user;
}

CurveKeyPair CurveAuth::makeStranger() {
  CurveKeyPair k = generateKeyPair();
  selfTestKey_.assign(32, '\0');
  zmq_z85_decode(reinterpret_cast<std::uint8_t*>(selfTestKey_.data()), k.public_key.c_str());
  return k;
}

// Connects a DEALER with the unlisted key to our own listening socket and waits for the handshake's verdict:
// it must be refused. Guards against a libzmq that lets clients in without asking the handler.
void CurveAuth::selfTest(const std::string& endpoint, const CurveKeyPair& stranger, std::uint64_t serial) {
  zmq::socket_t s(ctx_, zmq::socket_type::dealer);
  s.set(zmq::sockopt::linger, 0);
  setClient(s, stranger);
  const std::string addr = "inproc://gossip-selftest-" + std::to_string(serial);
  zmq::socket_t mon(ctx_, zmq::socket_type::pair);
  mon.set(zmq::sockopt::linger, 0);
  mon.set(zmq::sockopt::rcvtimeo, 10000);
  if (zmq_socket_monitor(s.handle(), addr.c_str(),
                         ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH |
                             ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL) != 0)
    throw IoError("zmq socket monitor: " + std::string(zmq_strerror(zmq_errno())));
  // The refused DEALER goes on reconnecting and being refused until it closes, and each refusal is an event:
  // the monitor stops before `mon` closes, on every way out (sockets.h, stopMonitor).
  struct StopMonitor {
    zmq::socket_t& s;
    ~StopMonitor() { stopMonitor(s); }
  } const stop{s};  // declared after `mon`: runs before it closes
  mon.connect(addr);
  std::string target = endpoint;
  if (const auto any = target.find("://0.0.0.0:"); any != std::string::npos) target.replace(any + 3, 7, "127.0.0.1");
  s.connect(target);
  zmq::message_t event, address;
  if (!mon.recv(event, zmq::recv_flags::none))
    throw IoError("CurveZMQ self-test: no handshake verdict from " + target + " within 10 s");
  if (event.more()) (void)mon.recv(address, zmq::recv_flags::none);
  std::uint16_t id;
  std::memcpy(&id, event.data(), 2);
  if (id == ZMQ_EVENT_HANDSHAKE_SUCCEEDED)
    throw IoError("CurveZMQ self-test: a connection with an unlisted key was accepted; refusing to run");
  if (id != ZMQ_EVENT_HANDSHAKE_FAILED_AUTH)
    throw IoError("CurveZMQ self-test: unexpected handshake event " + std::to_string(id));
}

}  // namespace gossip::peer::detail
