#pragma once
// The daemon's HTTP/1.1 server (docs/monitoring.md): serves pages the node thread publishes (/metrics,
// /status) from its own thread and io_context, so a slow or hostile client never holds up a round. The
// node thread swaps in a new page (an immutable string behind a shared_ptr); a request takes the newest
// page under a short lock and writes it from its own reference, so a page is never copied or rebuilt
// per request.
//
// Control: a path registered with onPut also takes PUT (today PUT /loglevel, docs/daemon.md#logging),
// and only while the server is bound to a loopback address (403 otherwise): anyone who can reach a
// wildcard-bound server may read the pages, but only a user of this machine may change the node.
//
// Limits (each one answered or cut off, never a thread held): GET and HEAD, and PUT where registered
// (405 with Allow otherwise), 404 for unknown paths, request headers at most kMaxHeaderBytes (431), bodies at most
// kMaxBodyBytes (413), at most kMaxConnections open connections (at the cap a new connection closes the
// oldest one still waiting for its request, or is closed itself when every connection is busy
// answering), and kIoTimeout for reading a whole request and for writing a whole answer (a client
// sending or reading one byte a second is disconnected). Keep-alive is supported within those limits.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "daemon/config/http_address.h"
#include "daemon/log/log.h"

namespace gossip::daemon {

class HttpServer {
 public:
  static constexpr std::size_t kMaxHeaderBytes = 8 * 1024;
  static constexpr std::size_t kMaxBodyBytes = 4 * 1024;
  static constexpr std::size_t kMaxConnections = 256;
  static constexpr std::chrono::seconds kIoTimeout{10};

  // Binds and listens at once (so a port in use fails before anything else starts); throws ConfigError
  // naming node.http when it cannot. Serving starts with start(). Errors of the server thread go to log.
  explicit HttpServer(const HttpAddress& address, logging::Logger log = logging::nullLogger("http"));
  ~HttpServer();  // stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  std::uint16_t port() const;  // the bound port (the real one when node.http asked for port 0)
  std::string url() const;     // "http://127.0.0.1:PORT" ("[::1]" for IPv6)

  // Replaces the page served at `path` (e.g. "/metrics"); callable from any thread at any time.
  void publish(const std::string& path, std::string contentType, std::string body);

  // What a PUT handler answers (the body as text/plain, e.g. JSON for a client that parses it).
  struct Answer {
    int status;
    std::string body;
  };
  // Registers PUT on `path`; the handler gets the query (after '?', not decoded) and runs on the server
  // thread. Before start() only: the handlers are not locked.
  void onPut(const std::string& path, std::function<Answer(std::string_view query)> handler);
  bool loopback() const;  // bound to 127.0.0.0/8 or ::1: PUT is served

  void start();  // starts the server thread; once
  void stop();   // closes the listener and every connection, joins the thread; idempotent

  struct Impl;  // defined in http_server.cc (public so that its connection class can name it)

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace gossip::daemon
