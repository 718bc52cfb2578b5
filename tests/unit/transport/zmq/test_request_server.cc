// RequestServer (transport/zmq/request_server.h) against raw DEALER clients: requests in, replies out, a reply
// to a client that is gone, the connection events, and a bind that fails. Every wait has a deadline and fails
// naming what it awaited; nothing sleeps as synchronisation.
#include <atomic>
#include <chrono>
#include <csignal>
#include <thread>

#include <pthread.h>
#include <cstdlib>  // mkdtemp
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include <doctest/doctest.h>

#include <zmq.hpp>

#include "core/error.h"
#include "transport/zmq/request_server.h"

using gossip::peer::RequestServer;
using Event = RequestServer::ConnectionEvent;
using namespace std::chrono_literals;

namespace {

constexpr auto kDeadline = 5s;

// A client process's socket: a DEALER with its own context, so closing it closes the connection.
struct Client {
  zmq::context_t ctx{1};
  zmq::socket_t s{ctx, zmq::socket_type::dealer};
  explicit Client(const std::string& endpoint) {
    s.set(zmq::sockopt::linger, 0);
    s.set(zmq::sockopt::rcvtimeo, static_cast<int>(std::chrono::milliseconds(kDeadline).count()));
    s.connect(endpoint);
  }
  void send(const std::string& body) { s.send(zmq::buffer(body), zmq::send_flags::none); }
  // The next reply, waiting at most kDeadline (rcvtimeo); a text naming the timeout when none came.
  std::string reply() {
    zmq::message_t m;
    if (!s.recv(m, zmq::recv_flags::none)) return "<no reply within the deadline>";
    return m.to_string();
  }
};

// The next request, waiting on the server at most kDeadline.
std::optional<RequestServer::Request> nextRequest(RequestServer& server) {
  const auto end = std::chrono::steady_clock::now() + kDeadline;
  for (;;) {
    if (auto r = server.receive()) return r;
    if (std::chrono::steady_clock::now() >= end) return std::nullopt;
    server.wait(10);
  }
}

// The next connection event, waiting on the server at most kDeadline.
std::optional<Event> nextEvent(RequestServer& server) {
  const auto end = std::chrono::steady_clock::now() + kDeadline;
  for (;;) {
    if (auto e = server.takeConnectionEvent()) return e;
    if (std::chrono::steady_clock::now() >= end) return std::nullopt;
    server.wait(10);
  }
}

// An ipc:// endpoint in a directory of its own (the trainer bridge's kind), removed afterwards.
struct IpcEndpoint {
  std::filesystem::path dir;
  std::string endpoint;
  IpcEndpoint() {
    char tmpl[] = "/tmp/gossip-reqsrv-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    dir = tmpl;
    endpoint = "ipc://" + (dir / "server.sock").string();
  }
  ~IpcEndpoint() { std::filesystem::remove_all(dir); }
};

}  // namespace

TEST_CASE("request server: receives (identity - body) - drops extra parts - and replies to that identity") {
  RequestServer server("test server", "tcp://127.0.0.1:*");
  CHECK(server.endpoint().starts_with("tcp://127.0.0.1:"));
  CHECK(server.endpoint() != "tcp://127.0.0.1:*");  // the port libzmq chose
  CHECK_FALSE(server.receive());                     // nothing waits: returns at once
  CHECK_FALSE(server.wait(20));                      // ...and wait() gives up after its timeout

  Client a(server.endpoint()), b(server.endpoint());
  a.send("hello from a");
  const auto ra = nextRequest(server);
  REQUIRE_MESSAGE(ra, "a's request did not arrive within the deadline");
  CHECK(ra->body == "hello from a");
  CHECK_FALSE(ra->identity.empty());

  // Three parts: only the first is the body; the next message still arrives whole.
  a.s.send(zmq::str_buffer("first"), zmq::send_flags::sndmore);
  a.s.send(zmq::str_buffer("second"), zmq::send_flags::sndmore);
  a.s.send(zmq::str_buffer("third"), zmq::send_flags::none);
  a.send("after the extra parts");
  const auto r1 = nextRequest(server);
  REQUIRE_MESSAGE(r1, "the three-part message did not arrive within the deadline");
  CHECK(r1->body == "first");
  const auto r2 = nextRequest(server);
  REQUIRE_MESSAGE(r2, "the message after it did not arrive within the deadline");
  CHECK(r2->body == "after the extra parts");
  CHECK(r2->identity == ra->identity);

  b.send("hello from b");
  const auto rb = nextRequest(server);
  REQUIRE_MESSAGE(rb, "b's request did not arrive within the deadline");
  CHECK(rb->body == "hello from b");
  CHECK(rb->identity != ra->identity);

  // Each reply goes to the identity it names, and only there.
  CHECK(server.reply(rb->identity, "to b"));
  CHECK(server.reply(ra->identity, "to a"));
  CHECK(a.reply() == "to a");
  CHECK(b.reply() == "to b");
}

TEST_CASE("request server: a reply to a client that is gone - or never was - reports failure") {
  RequestServer server("test server", "tcp://127.0.0.1:*");
  CHECK_FALSE(server.reply("no such client", "hello"));

  auto client = std::make_unique<Client>(server.endpoint());
  client->send("ping");
  const auto r = nextRequest(server);
  REQUIRE_MESSAGE(r, "the request did not arrive within the deadline");
  REQUIRE(server.reply(r->identity, "pong"));
  CHECK(client->reply() == "pong");

  client.reset();  // the client exits: its connection closes
  // libzmq drops the routing id once the socket has processed the closed pipe's commands, which a send
  // does first; until then a reply may still be queued to the dying pipe, so try until the deadline.
  const auto end = std::chrono::steady_clock::now() + kDeadline;
  bool failed = false;
  while (!failed && std::chrono::steady_clock::now() < end) {
    failed = !server.reply(r->identity, "anyone there?");
    if (!failed) server.wait(10);
  }
  CHECK_MESSAGE(failed, "replies to the closed client still succeeded after the deadline");
}

TEST_CASE("request server: reports each client's connection and disconnection - in order") {
  IpcEndpoint ipc;
  RequestServer server("test server", ipc.endpoint);
  CHECK(server.endpoint() == ipc.endpoint);
  CHECK_FALSE(server.takeConnectionEvent());

  auto first = std::make_unique<Client>(server.endpoint());
  CHECK(nextEvent(server) == std::optional<Event>(Event::Accepted));
  auto second = std::make_unique<Client>(server.endpoint());
  CHECK(nextEvent(server) == std::optional<Event>(Event::Accepted));

  first.reset();
  CHECK(nextEvent(server) == std::optional<Event>(Event::Disconnected));
  second.reset();
  CHECK(nextEvent(server) == std::optional<Event>(Event::Disconnected));

  // A client that comes back is a new connection.
  Client again(server.endpoint());
  CHECK(nextEvent(server) == std::optional<Event>(Event::Accepted));
  again.send("back");
  const auto r = nextRequest(server);
  REQUIRE_MESSAGE(r, "the returning client's request did not arrive within the deadline");
  CHECK(r->body == "back");
  CHECK_FALSE(server.takeConnectionEvent());  // a request is not a connection event
}

TEST_CASE("request server: an endpoint that cannot be bound is an IoError naming the server and the endpoint") {
  RequestServer first("test server", "tcp://127.0.0.1:*");
  try {
    RequestServer second("other server", first.endpoint());
    FAIL("binding a port in use did not throw");
  } catch (const gossip::IoError& e) {
    CHECK(std::string(e.what()).starts_with("other server: cannot bind " + first.endpoint() + ": "));
  }
}

namespace {
extern "C" void ignoreSignal(int) {}
}  // namespace

TEST_CASE("request server: a signal during wait() ends it early with false - not an exception") {
  // The daemon's SIGTERM arrives on whichever thread it likes, often the node thread waiting here for its
  // trainer. A handler without SA_RESTART makes zmq_poll fail with EINTR.
  struct sigaction sa {}, old {};
  sa.sa_handler = ignoreSignal;
  sigemptyset(&sa.sa_mask);
  REQUIRE(sigaction(SIGUSR1, &sa, &old) == 0);
  RequestServer server("test server", "tcp://127.0.0.1:*");
  std::atomic<bool> started{false}, done{false}, threw{false};
  std::thread waiter([&] {
    started = true;
    try {
      (void)server.wait(20000);
    } catch (...) {
      threw = true;
    }
    done = true;
  });
  while (!started) std::this_thread::yield();
  // Signal until the wait ends: a signal that lands before zmq_poll began is simply handled, the next one
  // interrupts it. The deadline is far below the wait's own 20 s.
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (!done && std::chrono::steady_clock::now() < until) {
    pthread_kill(waiter.native_handle(), SIGUSR1);
    std::this_thread::sleep_for(10ms);  // the signalling period, bounded by the deadline
  }
  const bool endedEarly = done.load();
  waiter.join();
  sigaction(SIGUSR1, &old, nullptr);
  CHECK(endedEarly);
  CHECK_FALSE(threw.load());
}
