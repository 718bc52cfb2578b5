// Boost 1.74's Asio uses std::exchange without including <utility> (GCC 12, C++20): include it first.
#include <utility>

#include "daemon/monitor/http_server.h"

#include <csignal>
#include <functional>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include <pthread.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "core/error.h"

namespace gossip::daemon {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

struct Page {
  std::string type;
  std::shared_ptr<const std::string> body;
};

std::shared_ptr<const std::string> text(std::string s) { return std::make_shared<const std::string>(std::move(s)); }

}  // namespace

namespace httpd {
class Session;
}

struct HttpServer::Impl {
  HttpAddress address;
  std::uint16_t port = 0;
  bool loopback = false;
  logging::Logger log;
  // PUT handlers: written before start(), then only read by the server thread.
  std::map<std::string, std::function<HttpServer::Answer(std::string_view)>, std::less<>> putHandlers;
  // io is destroyed last and on purpose (see stop): destroying it destroys the sessions its pending
  // handlers own, and a session's destructor updates `open` below.
  std::unique_ptr<net::io_context> io = std::make_unique<net::io_context>(1);
  std::optional<tcp::acceptor> acceptor;
  std::optional<net::steady_timer> retry;  // re-arms accept after an accept error (e.g. out of descriptors)
  std::thread thread;
  bool started = false, stopped = false;
  std::size_t open = 0;  // connections open now; server thread only
  std::list<std::weak_ptr<httpd::Session>> sessions;  // oldest first; server thread only

  std::mutex mu;
  std::map<std::string, Page, std::less<>> pages;

  std::optional<Page> page(std::string_view path) {
    std::lock_guard lock(mu);
    const auto it = pages.find(path);
    if (it == pages.end()) return std::nullopt;
    return it->second;
  }

  void accept();
  bool evictIdle();
};

namespace httpd {

// One connection: read a request (bounded in size and time), answer it, repeat while keep-alive.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(HttpServer::Impl& server, tcp::socket socket) : server_(server), stream_(std::move(socket)) { ++server_.open; }
  ~Session() { --server_.open; }

  void start() { read(); }

  // Waiting for (the rest of) a request, i.e. not writing an answer: may be closed to make room.
  bool idle() const { return reading_ && !evicted_; }
  void evict() {
    evicted_ = true;
    stream_.close();  // the pending read ends with operation_aborted and the session goes away
  }

 private:
  void read() {
    parser_.emplace();
    parser_->header_limit(HttpServer::kMaxHeaderBytes);
    parser_->body_limit(HttpServer::kMaxBodyBytes);
    // One deadline for the whole request, however slowly its bytes arrive (beast::tcp_stream cancels
    // the read and closes the socket when it passes).
    stream_.expires_after(HttpServer::kIoTimeout);
    reading_ = true;
    http::async_read(stream_, buffer_, *parser_, beast::bind_front_handler(&Session::onRead, shared_from_this()));
  }

  void onRead(beast::error_code ec, std::size_t) {
    reading_ = false;
    if (evicted_) return;
    if (ec == http::error::header_limit) return reply(http::status::request_header_fields_too_large, "request header too large\n");
    if (ec == http::error::body_limit) return reply(http::status::payload_too_large, "request body too large\n");
    if (ec && ec.category() == http::make_error_code(http::error::bad_target).category() &&
        ec != http::error::end_of_stream && ec != http::error::partial_message)
      return reply(http::status::bad_request, "bad request\n");
    if (ec) return close();  // the client went away or timed out: nothing to answer
    const auto& req = parser_->get();
    version_ = req.version();
    const bool head = req.method() == http::verb::head;
    std::string_view path(req.target().data(), req.target().size());
    const auto q = path.find('?');
    const std::string_view query = q == std::string_view::npos ? std::string_view() : path.substr(q + 1);
    path = path.substr(0, q);
    const auto put = server_.putHandlers.find(path);
    const bool canPut = put != server_.putHandlers.end();
    if (req.method() == http::verb::put && canPut) {
      if (!server_.loopback)
        return reply(http::status::forbidden, "PUT is served only when node.http is a loopback address\n", req.keep_alive());
      const HttpServer::Answer a = put->second(query);
      return reply(static_cast<http::status>(a.status), a.body, req.keep_alive());
    }
    if (req.method() != http::verb::get && !head)
      return reply(http::status::method_not_allowed, canPut ? "only GET, HEAD and PUT\n" : "only GET and HEAD\n",
                   req.keep_alive(), false, canPut ? "GET, HEAD, PUT" : "GET, HEAD");
    const auto p = server_.page(path);
    if (!p) return reply(http::status::not_found, "not found; try /, /metrics, /status or /cluster\n", req.keep_alive(), head);
    respond(http::status::ok, p->type, p->body, req.keep_alive(), head);
  }

  void reply(http::status status, std::string body, bool keepAlive = false, bool head = false,
             const char* allow = nullptr) {
    respond(status, "text/plain; charset=utf-8", text(std::move(body)), keepAlive, head, allow);
  }

  void respond(http::status status, const std::string& type, std::shared_ptr<const std::string> body,
               bool keepAlive, bool head, const char* allow = nullptr) {
    held_ = std::move(body);
    res_ = {};
    res_.version(version_);
    res_.result(status);
    res_.set(http::field::server, "gossipd");
    res_.set(http::field::content_type, type);
    res_.set(http::field::cache_control, "no-store");
    if (allow) res_.set(http::field::allow, allow);
    res_.keep_alive(keepAlive);
    res_.content_length(held_->size());
    // HEAD: the same headers (Content-Length of the page), no body.
    res_.body() = head ? beast::span<const char>() : beast::span<const char>(held_->data(), held_->size());
    keepAlive_ = keepAlive;
    // The whole answer has a deadline too: a client reading one byte a second is cut off.
    stream_.expires_after(HttpServer::kIoTimeout);
    http::async_write(stream_, res_, beast::bind_front_handler(&Session::onWrite, shared_from_this()));
  }

  void onWrite(beast::error_code ec, std::size_t) {
    if (ec || !keepAlive_) return close();
    held_.reset();
    read();
  }

  void close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.close();
  }

  HttpServer::Impl& server_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::span_body<const char>> res_;
  std::shared_ptr<const std::string> held_;  // the page being written (the publisher may swap it meanwhile)
  unsigned version_ = 11;
  bool keepAlive_ = false;
  bool reading_ = false;
  bool evicted_ = false;
};

}  // namespace httpd

// At the connection cap, the oldest connection still waiting for its request (an idle keep-alive, a slow
// or silent client) makes room for the new one: a flood of idle connections cannot lock out a scraper,
// whose request arrives at once and is then being answered (not evictable).
bool HttpServer::Impl::evictIdle() {
  sessions.remove_if([](const std::weak_ptr<httpd::Session>& w) { return w.expired(); });
  for (const auto& w : sessions)
    if (auto s = w.lock(); s && s->idle()) {
      s->evict();
      return true;
    }
  return false;
}

void HttpServer::Impl::accept() {
  acceptor->async_accept([this](beast::error_code ec, tcp::socket socket) {
    if (ec == net::error::operation_aborted) return;
    if (ec) {
      // Out of descriptors or similar: try again shortly instead of spinning.
      retry->expires_after(std::chrono::milliseconds(50));
      retry->async_wait([this](beast::error_code e) {
        if (!e) accept();
      });
      return;
    }
    if (open >= kMaxConnections && !evictIdle()) {
      beast::error_code ignored;
      socket.close(ignored);  // every connection is busy answering: this one is closed at once
    } else {
      if (sessions.size() > 2 * kMaxConnections)
        sessions.remove_if([](const std::weak_ptr<httpd::Session>& w) { return w.expired(); });
      auto session = std::make_shared<httpd::Session>(*this, std::move(socket));
      sessions.push_back(session);
      session->start();
    }
    accept();
  });
}

HttpServer::HttpServer(const HttpAddress& address, logging::Logger log) : impl_(std::make_unique<Impl>()) {
  impl_->address = address;
  impl_->log = log ? std::move(log) : logging::nullLogger("http");
  const std::string where = (address.ip.find(':') != std::string::npos ? "[" + address.ip + "]" : address.ip) + ":" +
                            std::to_string(address.port);
  beast::error_code ec;
  const auto ip = net::ip::make_address(address.ip, ec);
  if (ec) throw ConfigError("node.http: '" + address.ip + "' is not an IP address");
  impl_->loopback = ip.is_loopback();
  const tcp::endpoint ep(ip, address.port);
  impl_->acceptor.emplace(*impl_->io);
  impl_->retry.emplace(*impl_->io);
  auto& a = *impl_->acceptor;
  a.open(ep.protocol(), ec);
  if (!ec) a.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) a.bind(ep, ec);
  if (!ec) a.listen(net::socket_base::max_listen_connections, ec);
  if (ec) throw ConfigError("node.http: cannot listen on " + where + ": " + ec.message());
  impl_->port = a.local_endpoint().port();
}

HttpServer::~HttpServer() { stop(); }

std::uint16_t HttpServer::port() const { return impl_->port; }

std::string HttpServer::url() const {
  const auto& ip = impl_->address.ip;
  return "http://" + (ip.find(':') != std::string::npos ? "[" + ip + "]" : ip) + ":" + std::to_string(impl_->port);
}

void HttpServer::publish(const std::string& path, std::string contentType, std::string body) {
  Page p{std::move(contentType), text(std::move(body))};
  std::lock_guard lock(impl_->mu);
  impl_->pages[path] = std::move(p);  // the old page lives on in any request still writing it
}

void HttpServer::onPut(const std::string& path, std::function<Answer(std::string_view)> handler) {
  GOSSIP_CHECK(!impl_->started, "HttpServer::onPut after start()");
  impl_->putHandlers[path] = std::move(handler);
}

bool HttpServer::loopback() const { return impl_->loopback; }

void HttpServer::start() {
  if (impl_->started || impl_->stopped) return;
  impl_->started = true;
  impl_->accept();
  impl_->thread = std::thread([this] {
    // Stop signals go to the node thread, whose loop checks for them.
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    for (;;) {
      try {
        impl_->io->run();
        return;
      } catch (const std::exception& e) {  // a handler threw (e.g. out of memory): log and keep serving
        impl_->log->error("http server: {}", e.what());
      }
    }
  });
}

void HttpServer::stop() {
  if (impl_->stopped) return;
  impl_->stopped = true;
  impl_->io->stop();
  if (impl_->thread.joinable()) impl_->thread.join();
  // Listener and timer first, then the io_context: destroying it destroys the pending handlers and with
  // them every open session (their sockets close), while this Impl is still whole.
  impl_->retry.reset();
  impl_->acceptor.reset();
  impl_->io.reset();
}

}  // namespace gossip::daemon
